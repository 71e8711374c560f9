//===- Plan.h - Launch plans: parsing and carrying them out -----*- C++ -*-===//
//
// A launch plan (docs/launch-plan.md, format version 1) is the host side of a
// compiled fwp function written out as text: which buffers to allocate, which
// integer values to compute, which kernels to launch with which arguments.
// This header reads plans (Plan::parse), prints them back (Plan::str) and
// carries them out (execute) on a PlanDevice.
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
// (PlanCuda.cpp) is the real one, built on Cuda.h.
//
// Errors: a malformed plan throws PlanError "<source>:<line>: <problem>"; a
// plan that cannot be carried out with the given arguments throws PlanError
// "<source>:<line>: <step>: <problem>" naming the step (or the argument);
// a failing CUDA call throws CudaError naming the call, prefixed likewise.
//
// Syntax details the format document leaves open, as this runtime reads them:
// - Expressions may contain blanks: `dim(arg0, 0)`, `(add v0 (mul v1 2))`.
//   Integers are decimal with an optional '-'. `dim(NAME, I)` takes an
//   integer literal I in [0, rank of NAME).
// - Names (values, buffers) are [A-Za-z_][A-Za-z0-9_.$]*; module and kernel
//   names may also contain '-' (never '/').
// - f32 / f64 literals are anything C's strtod reads completely (decimal,
//   hexadecimal floats such as 0x1.8p+1, inf, nan); they are printed back as
//   written. Writers wanting exact values should print hexadecimal floats
//   (%a) or 9 / 17 significant digits.
// - index-bits is required, right after the header. `module` lines come
//   before `arg` lines, and both before the steps.
// - A `copy` needs SRC and DST of the same dtype (checked when parsing).
// - `result NAME` must name an earlier `alloc` or a view (through any chain
//   of views) of one; an argument, a view of an argument or a value is
//   refused when parsing. A result may come anywhere among the steps, and
//   later steps may still use its buffer. The result is the buffer as NAME
//   sees it: a view's sizes, its allocation's address. Two results may name
//   the same allocation (a function returning one buffer twice); they then
//   share its memory, which is handed over once.
// - i32 and index launch arguments must fit their signed width at run time.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_RUNTIME_PLAN_H
#define FWP_RUNTIME_PLAN_H

#include "fwp/Runtime/Cuda.h"
#include "fwp/Runtime/Error.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace fwp::rt {

/// A malformed plan, or a plan that cannot run with the arguments given.
class PlanError : public Error {
public:
  using Error::Error;
};

//===----------------------------------------------------------------------===//
// The plan
//===----------------------------------------------------------------------===//

enum class DType { F32, F64 };

/// "f32", "f64".
const char *dtypeName(DType dtype);
/// 4, 8.
size_t dtypeBytes(DType dtype);
/// The dtype called `name`, if any.
std::optional<DType> parseDType(const std::string &name);

/// The integer operators of expressions, named as in the format.
enum class PlanOp {
  Add,
  Sub,
  Mul,
  DivS,
  DivU,
  RemS,
  RemU,
  CeilDiv,
  FloorDiv,
  MinS,
  MaxS,
  MinU,
  MaxU
};

/// "add", "ceildiv", ...
const char *planOpName(PlanOp op);
std::optional<PlanOp> parsePlanOp(const std::string &name);

/// `a OP b` as MLIR's arith dialect computes it on i64: add, sub and mul wrap
/// around; divs / rems truncate toward zero; ceildiv / floordiv are
/// arith.ceildivsi / arith.floordivsi; divu, remu, minu, maxu treat both
/// operands as unsigned. Throws PlanError("division by zero") for a zero
/// divisor and PlanError("... overflows") for INT64_MIN / -1 (which MLIR
/// leaves undefined).
int64_t applyPlanOp(PlanOp op, int64_t a, int64_t b);

/// An integer expression.
struct PlanExpr {
  enum class Kind { Constant, Value, Dim, Op };
  Kind kind = Kind::Constant;
  int64_t constant = 0;           // Constant; Dim: the dimension index
  std::string name;               // Value: the value; Dim: the buffer
  PlanOp op = PlanOp::Add;        // Op
  std::vector<PlanExpr> operands; // Op: two

  static PlanExpr literal(int64_t value);
  static PlanExpr value(const std::string &name);
  static PlanExpr dim(const std::string &buffer, int64_t index);
  static PlanExpr apply(PlanOp op, PlanExpr lhs, PlanExpr rhs);

  /// As written in a plan: `42`, `v0`, `dim(arg0, 1)`, `(ceildiv v0 64)`.
  std::string str() const;
  bool operator==(const PlanExpr &other) const;
  bool operator!=(const PlanExpr &other) const { return !(*this == other); }
};

/// `arg NAME DTYPE D0 D1 ...`: a function argument; nullopt sizes are `?`.
struct PlanArg {
  std::string name;
  DType dtype = DType::F32;
  std::vector<std::optional<int64_t>> sizes;
  int line = 0; // not compared

  /// "f32 [?, 2, 4]"
  std::string shapeStr() const;
  bool operator==(const PlanArg &other) const {
    return name == other.name && dtype == other.dtype && sizes == other.sizes;
  }
};

/// One argument of a `launch`.
struct PlanLaunchArg {
  enum class Kind { Memref, Index, I32, I64, F32, F64 };
  Kind kind = Kind::Memref;
  std::string buffer; // Memref
  PlanExpr expr;      // Index, I32, I64
  double real = 0;    // F32, F64: the literal's value
  std::string text;   // F32, F64: the literal as written

  /// "memref", "index", "i32", ...
  static const char *kindName(Kind kind);
  std::string str() const;
  bool operator==(const PlanLaunchArg &other) const;
};

/// One step of a plan (value, alloc, view, copy, launch or result).
struct PlanStep {
  enum class Kind { Value, Alloc, View, Copy, Launch, Result };
  Kind kind = Kind::Value;
  int line = 0; // not compared

  std::string name;            // Value, Alloc, View: the name defined
  PlanExpr expr;               // Value
  DType dtype = DType::F32;    // Alloc (View: the source's, for reference)
  std::vector<PlanExpr> sizes; // Alloc, View
  std::string source;          // View, Copy, Result: the buffer used
  std::string dest;            // Copy

  std::string module, kernel;      // Launch
  std::array<PlanExpr, 3> grid;    // Launch
  std::array<PlanExpr, 3> block;   // Launch
  PlanExpr shared;                 // Launch
  std::vector<PlanLaunchArg> args; // Launch

  /// The directive: "value", "alloc", ...
  static const char *kindName(Kind kind);
  /// How errors name the step: "value v1", "alloc b0", "copy b0 arg1",
  /// "launch MODULE KERNEL", "result b0".
  std::string describe() const;
  /// The step as a plan line (no newline).
  std::string str() const;
  bool operator==(const PlanStep &other) const;
};

struct Plan {
  static constexpr int kVersion = 1;
  std::string sourceName; // not compared
  unsigned indexBits = 64;
  std::vector<std::string> modules;
  std::vector<PlanArg> args;
  std::vector<PlanStep> steps;

  /// Parses plan `text`; errors throw PlanError "<sourceName>:<line>: ...".
  static Plan parse(const std::string &text, const std::string &sourceName);
  /// The plan as text (canonical spacing, no comments) that parse() reads
  /// back to an equal plan.
  std::string str() const;
  bool operator==(const Plan &other) const {
    return indexBits == other.indexBits && modules == other.modules &&
           args == other.args && steps == other.steps;
  }
  bool operator!=(const Plan &other) const { return !(*this == other); }
};

/// The contents of the file at `path`, byte for byte; throws Error naming
/// the file if it cannot be read.
std::string readTextFile(const std::string &path);

/// Parses the plan file at `path`; errors name the file.
Plan loadPlanFile(const std::string &path);

/// Writes a compiled module directory: `<dir>/plan.fwp` (planText) and
/// `<dir>/<module>.ptx` for each entry of `ptx`, creating `dir` if needed.
/// The plan is parsed first and every module it names must be in `ptx`;
/// throws PlanError otherwise and Error if a file cannot be written.
void writePlanDirectory(const std::string &dir, const std::string &planText,
                        const std::map<std::string, std::string> &ptx);

//===----------------------------------------------------------------------===//
// Carrying a plan out
//===----------------------------------------------------------------------===//

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

  /// The product of the sizes (1 for rank 0); nullopt on overflow or a
  /// negative size.
  std::optional<int64_t> elementCount() const;
  /// "f32 [3, 2, 4]"
  std::string shapeStr() const;
};

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

//===----------------------------------------------------------------------===//
// CUDA
//===----------------------------------------------------------------------===//

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
    if (sizeof(T) != dtypeBytes(ref_.dtype))
      throw Error(std::string("DeviceResult::toHost: element type of ") +
                  std::to_string(sizeof(T)) + " bytes for a " +
                  ref_.shapeStr() + " buffer");
    return memory_ ? memory_->toHost<T>() : std::vector<T>();
  }

private:
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

#endif // FWP_RUNTIME_PLAN_H
