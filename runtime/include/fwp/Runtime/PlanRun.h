//===- PlanRun.h - Carrying out launch plans on a device --------*- C++ -*-===//
//
// Carries a launch plan (Plan.h) out on a PlanDevice: binds the arguments,
// computes the values, allocates, copies, launches and hands the results
// over (PlanRun, execute).
//
// Who owns what: arguments belong to the caller. Every `alloc` belongs to
// the run (PlanRun) and is freed when it ends, except the buffers its
// `result` steps name: those are handed to the caller (PlanRun::takeResults,
// execute's return value, CompiledPlan::run's DeviceResults), who frees them.
//
// Why a device interface: everything a plan decides - argument checking,
// integer arithmetic, buffer sizes, the exact bytes of every kernel parameter,
// launch ranges, freeing - is independent of CUDA. Putting the device behind
// four calls (alloc, free, copy, launch) lets all of it be tested on machines
// without a GPU with a fake device that records the calls; CudaPlanDevice
// (PlanCuda.h) is the real one, built on Cuda.h.
//
// Errors: a plan that cannot be carried out with the given arguments throws
// PlanError "<source>:<line>: <step>: <problem>" naming the step (or the
// argument); a failing CUDA call throws CudaError naming the call, prefixed
// likewise.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_RUNTIME_PLANRUN_H
#define FWP_RUNTIME_PLANRUN_H

#include "fwp/Runtime/Cuda.h"
#include "fwp/Runtime/Plan.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace fwp::rt {

/// What a plan needs from a device. Pointers are device addresses.
struct PlanDevice {
  /// A new zero-filled allocation (bytes may be 0).
  virtual uint64_t alloc(size_t bytes) = 0;
  /// Frees an allocation made by alloc; must not throw for those.
  virtual void free(uint64_t ptr) = 0;
  virtual void copy(uint64_t dst, uint64_t src, size_t bytes) = 0;
  /// Launches a kernel; `params` holds one little-endian byte vector per
  /// kernel parameter.
  virtual void launch(const std::string &module, const std::string &kernel,
                      Dim3 grid, Dim3 block, unsigned shared,
                      const std::vector<std::vector<uint8_t>> &params) = 0;
  /// Waits for all work issued so far (called once after the last step, so
  /// asynchronous failures surface before the plan's buffers are freed).
  virtual void synchronize() {}
  virtual ~PlanDevice() = default;
};

/// A buffer given to or made by a plan: a dense row-major array on the
/// device.
struct BufferRef {
  uint64_t ptr = 0;
  std::vector<int64_t> sizes;
  DType dtype = DType::F32;

  /// rt::elementCount of the sizes.
  std::optional<int64_t> elementCount() const;
  /// "f32 [3, 2, 4]"
  std::string shapeStr() const;
};

/// A launch's grid (in blocks) or block (in threads): x, y, z.
using LaunchExtent = std::array<int64_t, 3>;

/// The row-major strides of `sizes` (wrapping on overflow).
std::vector<int64_t> rowMajorStrides(const std::vector<int64_t> &sizes);

/// `value` as an integer of `bits` (32 or 64) bits, little-endian.
std::vector<uint8_t> indexBytes(int64_t value, unsigned bits);

/// The kernel parameters of `buffer` passed as a memref descriptor: allocated
/// and aligned pointer (u64 each), offset 0, the sizes and the row-major
/// strides (each `indexBits` bits). Throws PlanError naming `what` if a size
/// or stride does not fit a signed index of `indexBits` bits.
std::vector<std::vector<uint8_t>> memrefParams(const BufferRef &buffer,
                                               unsigned indexBits,
                                               const std::string &what);

/// One execution of a plan: the arguments bound, the values computed, the
/// buffers allocated and the results named so far. Destroying it frees every
/// buffer it allocated (in reverse order; free's failures are ignored)
/// except the results taken with takeResults(), so a plan that fails half
/// way leaks nothing, and results nobody takes are freed too.
class PlanRun {
public:
  PlanRun(const Plan &plan, PlanDevice &device);
  ~PlanRun();
  PlanRun(const PlanRun &) = delete;
  PlanRun &operator=(const PlanRun &) = delete;

  /// Checks `args` against the plan's `arg` lines (count, dtype, rank,
  /// static sizes, element count) and binds them, `?` sizes included.
  void bindArguments(const std::vector<BufferRef> &args);
  /// Carries out one step; errors name it.
  void runStep(const PlanStep &step);
  /// bindArguments, every step, then PlanDevice::synchronize.
  void run(const std::vector<BufferRef> &args);
  /// Frees every buffer allocated so far except the results already taken
  /// (the destructor does it too), and forgets the results not taken.
  void freeAll() noexcept;

  /// The results named so far by `result` steps (in order) and not taken
  /// yet: each with the sizes and dtype of the buffer named (a view's own)
  /// and the address of the allocation it belongs to.
  const std::vector<BufferRef> &results() const { return results_; }
  /// Hands results() to the caller: their allocations are no longer freed by
  /// this run; the caller frees each through the device (PlanDevice::free)
  /// once. Results with equal pointers share one allocation (the plan
  /// returned it twice): free it once.
  std::vector<BufferRef> takeResults();

  /// `expr` with the values and buffers defined so far; throws PlanError
  /// for an unknown name or a division by zero.
  int64_t evaluate(const PlanExpr &expr) const;
  /// The value `name` computed so far; throws PlanError if there is none.
  int64_t value(const std::string &name) const;
  /// The argument, allocation or view `name`; throws PlanError if none.
  const BufferRef &buffer(const std::string &name) const;
  /// The number of launches skipped because a grid dimension was 0.
  int skippedLaunches() const { return skipped_; }

private:
  /// "<source>:<line>: "
  std::string where(int line) const;
  void runAlloc(const PlanStep &step);
  void runView(const PlanStep &step);
  void runCopy(const PlanStep &step);
  void runLaunch(const PlanStep &step);
  void runResult(const PlanStep &step);
  std::vector<int64_t> evaluateSizes(const PlanStep &step) const;
  std::vector<uint8_t> scalarParam(const PlanLaunchArg &arg,
                                   size_t index) const;
  /// `exprs` evaluated; throws PlanError naming `what` ("grid", "block")
  /// and the axis if one is outside [min, max].
  LaunchExtent launchExtent(const std::array<PlanExpr, 3> &exprs,
                            const char *what, int64_t min,
                            const int64_t (&max)[3]) const;
  unsigned sharedBytes(const PlanExpr &expr) const;
  /// The kernel parameters of a launch's arguments, memrefs expanded.
  std::vector<std::vector<uint8_t>> launchParams(const PlanStep &step) const;

  const Plan &plan_;
  PlanDevice &device_;
  std::map<std::string, int64_t> values_;
  std::map<std::string, BufferRef> buffers_;
  struct Allocation {
    uint64_t ptr = 0;
    bool handedOver = false; // a result taken by the caller
  };
  std::vector<Allocation> allocated_;
  /// The allocation (index in allocated_) of each alloc and of each view of
  /// one; arguments and their views have none.
  std::map<std::string, size_t> allocationOf_;
  std::vector<BufferRef> results_;
  std::vector<size_t> resultAllocations_; // parallel to results_
  int skipped_ = 0;
};

/// Carries out `plan` on `device` with `args` (one per `arg` line, in
/// order) and returns its results (PlanRun::takeResults), which the caller
/// now owns and frees through `device`; frees everything else it allocated,
/// also when it throws (results included, then).
std::vector<BufferRef> execute(const Plan &plan, PlanDevice &device,
                               const std::vector<BufferRef> &args);

} // namespace fwp::rt

#endif // FWP_RUNTIME_PLANRUN_H
