//===- PlanCuda.h - Launch plans on a CUDA GPU ------------------*- C++ -*-===//
//
// The CUDA side of launch plans: a PlanDevice on the CUDA driver
// (CudaPlanDevice), device buffers handed to the caller (DeviceResult), a
// compiled module directory loaded for running (CompiledPlan), and a plan
// run inside a caller's stream and memory (DeviceCall, DevicePlan): how
// frameworks such as PyTorch call fwp on their own tensors.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_RUNTIME_PLANCUDA_H
#define FWP_RUNTIME_PLANCUDA_H

#include "fwp/Runtime/Cuda.h"
#include "fwp/Runtime/PlanRun.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace fwp::rt {

/// A PlanDevice on the primary CUDA context of the device current when it is
/// made (DeviceScope; Cuda.h), which its modules and memory belong to. Work
/// is issued in order on one stream (by default the legacy default stream,
/// which orders it with other blocking streams, e.g. PyTorch's default
/// stream).
class CudaPlanDevice : public PlanDevice {
public:
  /// Loads each module's PTX (module name -> PTX text). Throws CudaError
  /// (with the JIT log) if one does not load.
  explicit CudaPlanDevice(const std::map<std::string, std::string> &ptx,
                          CUstream stream = nullptr);
  /// Loads `<dir>/<module>.ptx` for each of `modules`.
  static CudaPlanDevice fromDirectory(const std::string &dir,
                                      const std::vector<std::string> &modules,
                                      CUstream stream = nullptr);
  ~CudaPlanDevice() override;
  CudaPlanDevice(CudaPlanDevice &&) = default;
  CudaPlanDevice &operator=(CudaPlanDevice &&) = default;

  uint64_t alloc(size_t bytes) override;
  void free(uint64_t ptr) override;
  void copy(uint64_t dst, uint64_t src, size_t bytes) override;
  void launch(const std::string &module, const std::string &kernel, Dim3 grid,
              Dim3 block, unsigned shared,
              const std::vector<std::vector<uint8_t>> &params) override;
  void synchronize() override;
  /// Gives up the allocation at `ptr` (made by alloc and not freed): the
  /// DeviceBuffer returned owns it and frees it, even after this device is
  /// gone. An empty DeviceBuffer for a 0-byte allocation (address 0) or an
  /// address this device does not own. Does not wait for pending work.
  DeviceBuffer release(uint64_t ptr);

  CUstream stream() const { return stream_; }

  /// The kernel `kernel` of the loaded module `module` (looked up once);
  /// throws PlanError if no such module is loaded.
  CUfunction function(const std::string &module, const std::string &kernel);

private:
  explicit CudaPlanDevice(CUstream stream) : stream_(stream) {}
  void loadModule(const std::string &name, const std::string &ptx,
                  const std::string &sourceName);

  int ordinal_ = DeviceScope::current();
  CUstream stream_ = nullptr;
  std::map<std::string, Module> modules_;
  std::map<std::pair<std::string, std::string>, CUfunction> functions_;
  std::map<uint64_t, DeviceBuffer> buffers_;
  bool pending_ = false; // work issued since the last synchronisation
};

/// A result of CompiledPlan::run: a device buffer that belongs to the
/// caller, independent of the CompiledPlan (it may outlive it). Its memory is
/// freed (cuMemFree) when the last DeviceResult holding it goes; results
/// share memory only when the plan returns one allocation twice. Copies
/// share the memory.
class DeviceResult {
public:
  DeviceResult() = default;
  DeviceResult(BufferRef ref, std::shared_ptr<DeviceBuffer> memory)
      : ref_(std::move(ref)), memory_(std::move(memory)) {}

  /// The buffer: device address, sizes (a view's own) and dtype, e.g. to
  /// pass as another plan's argument.
  const BufferRef &ref() const { return ref_; }
  uint64_t ptr() const { return ref_.ptr; }
  const std::vector<int64_t> &sizes() const { return ref_.sizes; }
  DType dtype() const { return ref_.dtype; }

  /// The elements, copied to the host (synchronously). T must have the
  /// dtype's size (float for f32, double for f64); throws Error otherwise.
  template <typename T> std::vector<T> toHost() const {
    checkElementBytes(sizeof(T));
    return memory_ ? memory_->toHost<T>() : std::vector<T>();
  }

private:
  /// Throws Error unless `bytes` is the size of the dtype's elements.
  void checkElementBytes(size_t bytes) const;

  BufferRef ref_;
  std::shared_ptr<DeviceBuffer> memory_;
};

/// A compiled module directory loaded for running: "an application needs
/// only the runtime, the PTX and the plan".
class CompiledPlan {
public:
  /// Reads `<dir>/plan.fwp` and the PTX of each module it names, and loads
  /// the PTX. Errors name the file.
  static CompiledPlan load(const std::string &dir, CUstream stream = nullptr);
  /// A plan and its modules' PTX (module name -> PTX text).
  CompiledPlan(Plan plan, const std::map<std::string, std::string> &ptx,
               CUstream stream = nullptr);

  /// Carries out the plan with `args` (device buffers, one per `arg` line),
  /// waits for it to finish and returns its results, one per `result` step
  /// in order; everything else the plan allocated is freed.
  std::vector<DeviceResult> run(const std::vector<BufferRef> &args);

  const Plan &plan() const { return plan_; }
  CudaPlanDevice &device() { return device_; }

private:
  CompiledPlan(CudaPlanDevice device, Plan plan);
  Plan plan_;
  CudaPlanDevice device_;
};

/// Where one call's GPU work goes: the stream it is ordered on, and where
/// its scratch memory comes from.
///
/// With `allocate` and `release` set (a stream-ordered allocator such as
/// PyTorch's caching allocator on `stream`), the call only enqueues work: it
/// returns before the GPU is done, its scratch is given back in stream
/// order, and errors of the kernels themselves surface at the caller's next
/// synchronisation, as for the framework's own operations. Without them,
/// scratch comes from cuMemAlloc and the call waits for its work before
/// freeing it.
struct DeviceCall {
  int device = 0;            // the device (ordinal) of the call's memory
  CUstream stream = nullptr; // nullptr: the legacy default stream
  /// `bytes` (> 0) of device memory, usable in `stream`'s order, at an
  /// address aligned to 16 bytes; 0 if there is none (the call then fails
  /// naming the size).
  std::function<uint64_t(size_t bytes)> allocate;
  std::function<void(uint64_t ptr)> release;

  bool streamOrdered() const { return bool(allocate) && bool(release); }
};

/// dst = src (`bytes` of device memory), or zeros where src is 0, ordered on
/// call.stream; waits for the stream unless the call is stream-ordered.
void copyOrZeroOnDevice(const DeviceCall &call, uint64_t dst, uint64_t src,
                        size_t bytes);

/// Zero-filled device scratch of one call (DeviceCall): taken from the
/// call's allocator, or from cuMemAlloc, and given back when destroyed (in
/// stream order, or after waiting for the stream).
class DeviceScratch {
public:
  DeviceScratch(const DeviceCall &call, size_t bytes);
  ~DeviceScratch();
  DeviceScratch(const DeviceScratch &) = delete;
  DeviceScratch &operator=(const DeviceScratch &) = delete;

  uint64_t ptr() const { return ptr_; }

private:
  const DeviceCall &call_;
  uint64_t ptr_ = 0;
  DeviceBuffer owned_;
};

/// A PlanDevice for one call: the kernels of an already loaded
/// CudaPlanDevice, launched on the call's stream, with scratch from the
/// call's allocator (DeviceCall).
class CudaCallDevice final : public PlanDevice {
public:
  CudaCallDevice(CudaPlanDevice &modules, const DeviceCall &call)
      : modules_(modules), call_(call) {}

  uint64_t alloc(size_t bytes) override;
  void free(uint64_t ptr) override;
  void copy(uint64_t dst, uint64_t src, size_t bytes) override;
  void launch(const std::string &module, const std::string &kernel, Dim3 grid,
              Dim3 block, unsigned shared,
              const std::vector<std::vector<uint8_t>> &params) override;
  /// Waits for the stream, unless the call's allocator is stream-ordered
  /// (then nothing needs the work finished before returning).
  void synchronize() override;

private:
  CudaPlanDevice &modules_;
  const DeviceCall &call_;
  std::map<uint64_t, std::unique_ptr<DeviceScratch>> scratch_;
};

/// A launch plan and its modules' PTX, loaded on a GPU on the first run
/// there (each device loads its own copy), so that making one (e.g. from
/// the disk cache) needs no GPU. Runs may come from several threads; they
/// are serialised.
class DevicePlan {
public:
  DevicePlan(Plan plan, std::map<std::string, std::string> ptx);
  /// Reads `<dir>/plan.fwp` and the PTX of each module it names (no GPU).
  static std::unique_ptr<DevicePlan> load(const std::string &dir);

  /// Carries the plan out on `args`, device buffers (one per `arg` line),
  /// as `call` says. The plan's `result` steps, if any, are freed.
  void run(const std::vector<BufferRef> &args,
           const DeviceCall &call = {}) const;

  /// One buffer of a run on host memory (runOnHost).
  struct HostArg {
    const void *data; // read if an input; null: not copied in
    void *out;        // written back after the run if an output
    BufferRef shape;  // sizes and dtype (ptr unused)
  };
  /// Copies `args` to the device, runs, and copies the outputs back.
  void runOnHost(const std::vector<HostArg> &args) const;

  const Plan &plan() const { return plan_; }

private:
  /// The modules loaded on device `ordinal` (loaded on first use).
  CudaPlanDevice &device(int ordinal) const;

  Plan plan_;
  std::map<std::string, std::string> ptx_;
  mutable std::mutex mutex_;
  mutable std::map<int, std::unique_ptr<CudaPlanDevice>> loaded_;
};

} // namespace fwp::rt

#endif // FWP_RUNTIME_PLANCUDA_H
