//===- Cuda.h - Small RAII wrappers over the CUDA driver --------*- C++ -*-===//
//
// Just enough of the CUDA driver API to load PTX and run kernels: a context,
// streams, device buffers, modules and a launch call. No MLIR, no LLVM, no
// CUDA headers; the driver is loaded at run time (see Driver.h for why).
//
// Why the primary context of device 0: it is the context the CUDA runtime
// (and so PyTorch) uses, so device pointers and streams are interchangeable
// with theirs, and retaining it instead of creating our own context avoids a
// second context's memory and the need to juggle which one is current.
// The runtime retains it once per process and never releases it (releasing
// during static destruction races the driver's own teardown). Every wrapper
// makes it current on the calling thread before calling the driver, so
// objects can be used from any thread and in any order of destruction.
//
// All failures throw CudaError (Error.h) naming the failing driver call and
// its CUresult; destructors never throw.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_RUNTIME_CUDA_H
#define FWP_RUNTIME_CUDA_H

#include "fwp/Runtime/Driver.h"

#include <cstddef>
#include <string>
#include <vector>

namespace fwp::rt {

/// Launch dimensions (grid in blocks, block in threads).
struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

/// A device's primary context, retained for the life of the process.
class Context {
public:
  /// The primary context of the device this thread works on (DeviceScope;
  /// device 0 unless told otherwise). Loads the driver and retains the
  /// context on first use; thread-safe.
  static Context &primary();
  /// The primary context of device `ordinal`; throws CudaError naming the
  /// device if there is no such device.
  static Context &forDevice(int ordinal);

  void makeCurrent() const;
  /// Waits for all work on the device (cuCtxSynchronize).
  void synchronize() const;
  std::string deviceName() const;
  /// True on fwp's stand-in driver (the PTX emulator, emulator/), whose
  /// device is named "fwp PTX emulator (sm_NN)": correct, but no GPU.
  bool isEmulator() const;
  /// Compute capability as major * 10 + minor, e.g. 90 for sm_90.
  int computeCapability() const;
  CUcontext handle() const { return context_; }
  CUdevice device() const { return device_; }

  Context(const Context &) = delete;
  Context &operator=(const Context &) = delete;

private:
  explicit Context(int ordinal);
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
};

/// The device (ordinal) whose primary context this thread's runtime calls
/// use, for the scope's lifetime: frameworks' tensors live on any of a
/// machine's GPUs, and modules and memory belong to one device's context.
class DeviceScope {
public:
  explicit DeviceScope(int ordinal);
  ~DeviceScope();
  DeviceScope(const DeviceScope &) = delete;
  DeviceScope &operator=(const DeviceScope &) = delete;

  /// The ordinal of the innermost scope on this thread (0 outside any).
  static int current();

private:
  int previous_;
};

/// The driver, with the primary context of DeviceScope::current() current
/// on this thread.
const Driver &boundDriver();
/// Like boundDriver(), for destructors: false if the driver is unusable.
bool boundDriverQuietly();

/// An owned CUDA stream.
class Stream {
public:
  /// `flags` as for cuStreamCreate (0: default, 1: non-blocking).
  explicit Stream(unsigned flags = 0);
  ~Stream();
  Stream(Stream &&other) noexcept;
  Stream &operator=(Stream &&other) noexcept;
  Stream(const Stream &) = delete;
  Stream &operator=(const Stream &) = delete;

  void synchronize() const;
  CUstream handle() const { return stream_; }

private:
  CUstream stream_ = nullptr;
};

/// An owned device allocation of a fixed number of bytes.
class DeviceBuffer {
public:
  DeviceBuffer() = default;
  /// Allocates `bytes` (uninitialised); zero bytes allocates nothing.
  explicit DeviceBuffer(size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer &&other) noexcept;
  DeviceBuffer &operator=(DeviceBuffer &&other) noexcept;
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;

  size_t size() const { return size_; }
  CUdeviceptr ptr() const { return ptr_; }

  /// Copies `bytes` to / from the start of the buffer; throws if they do not
  /// fit. The async forms are ordered on `stream`; the host memory must stay
  /// valid until the stream is synchronised.
  void copyFromHost(const void *src, size_t bytes);
  void copyToHost(void *dst, size_t bytes) const;
  void copyFromHostAsync(const void *src, size_t bytes, const Stream &stream);
  void copyToHostAsync(void *dst, size_t bytes, const Stream &stream) const;
  void zero();
  void zeroAsync(const Stream &stream);

  /// A buffer holding a copy of `values`.
  template <typename T>
  static DeviceBuffer fromHost(const std::vector<T> &values) {
    DeviceBuffer buffer(values.size() * sizeof(T));
    buffer.copyFromHost(values.data(), buffer.size());
    return buffer;
  }
  /// The whole buffer, read back as size() / sizeof(T) values.
  template <typename T> std::vector<T> toHost() const {
    std::vector<T> values(size_ / sizeof(T));
    copyToHost(values.data(), values.size() * sizeof(T));
    return values;
  }

private:
  void checkFits(size_t bytes, const char *operation) const;
  CUdeviceptr ptr_ = 0;
  size_t size_ = 0;
};

/// A loaded PTX module.
class Module {
public:
  /// JIT-compiles `ptx` for the device; on failure the CudaError carries the
  /// JIT error log. `sourceName` (e.g. a file name) is used in messages.
  explicit Module(const std::string &ptx,
                  const std::string &sourceName = "<ptx>");
  ~Module();
  Module(Module &&other) noexcept;
  Module &operator=(Module &&other) noexcept;
  Module(const Module &) = delete;
  Module &operator=(const Module &) = delete;

  /// The kernel `name`; throws CudaError naming it if the module lacks it.
  CUfunction function(const std::string &name) const;
  CUmodule handle() const { return module_; }
  const std::string &sourceName() const { return sourceName_; }

private:
  CUmodule module_ = nullptr;
  std::string sourceName_;
};

/// Launches `function` on `stream` (nullptr: the default stream). `args`
/// points to one pointer per kernel parameter, each to that parameter's
/// value. Above 48 KiB of dynamic shared memory, the function is first
/// allowed to use that much (cuFuncSetAttribute).
void launch(CUfunction function, Dim3 grid, Dim3 block, unsigned sharedBytes,
            CUstream stream, void **args);

} // namespace fwp::rt

#endif // FWP_RUNTIME_CUDA_H
