//===- PlanCuda.h - Launch plans on a CUDA GPU ------------------*- C++ -*-===//
//
// The CUDA side of launch plans: a PlanDevice on the CUDA driver
// (CudaPlanDevice), device buffers handed to the caller (DeviceResult), and a
// compiled module directory loaded for running (CompiledPlan).
//
//===----------------------------------------------------------------------===//

#ifndef FWP_RUNTIME_PLANCUDA_H
#define FWP_RUNTIME_PLANCUDA_H

#include "fwp/Runtime/Cuda.h"
#include "fwp/Runtime/PlanRun.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace fwp::rt {

/// A PlanDevice on the primary CUDA context (Cuda.h). Work is issued in
/// order on one stream (by default the legacy default stream, which orders
/// it with other blocking streams, e.g. PyTorch's default stream).
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

private:
  explicit CudaPlanDevice(CUstream stream) : stream_(stream) {}
  void loadModule(const std::string &name, const std::string &ptx,
                  const std::string &sourceName);
  CUfunction function(const std::string &module, const std::string &kernel);

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

} // namespace fwp::rt

#endif // FWP_RUNTIME_PLANCUDA_H
