//===- PlanRun.cpp - Carrying out launch plans on a PlanDevice ------------===//
//
// Everything here is device independent: the device only allocates, frees,
// copies and launches what this file computes.
//
//===----------------------------------------------------------------------===//

#include "fwp/Runtime/PlanRun.h"

#include <fmt/format.h>

#include <cstring>
#include <limits>

namespace fwp::rt {
namespace {

// CUDA's limits on launches.
constexpr int64_t kMaxGrid[3] = {std::numeric_limits<int32_t>::max(), 65535,
                                 65535};
constexpr int64_t kMaxBlockThreads = 1024;
constexpr int64_t kMaxBlock[3] = {1024, 1024, 64};
const char *const kAxes[3] = {"x", "y", "z"};

void checkBlockThreads(const LaunchExtent &block) {
  int64_t threads = block[0] * block[1] * block[2];
  if (threads > kMaxBlockThreads)
    throw PlanError(fmt::format("a block of {} x {} x {} = {} threads is more "
                                "than {}",
                                block[0], block[1], block[2], threads,
                                kMaxBlockThreads));
}

Dim3 toDim3(const LaunchExtent &extent) {
  return Dim3{static_cast<unsigned>(extent[0]),
              static_cast<unsigned>(extent[1]),
              static_cast<unsigned>(extent[2])};
}

int64_t maxIndex(unsigned bits) {
  return bits == 32 ? std::numeric_limits<int32_t>::max()
                    : std::numeric_limits<int64_t>::max();
}

bool fitsSigned(int64_t value, unsigned bits) {
  return bits == 64 || (value >= std::numeric_limits<int32_t>::min() &&
                        value <= std::numeric_limits<int32_t>::max());
}

std::string indexName(unsigned bits) {
  return fmt::format("a signed {}-bit index", bits);
}

template <typename T> std::vector<uint8_t> littleEndian(T bits) {
  std::vector<uint8_t> bytes(sizeof(T));
  for (size_t i = 0; i < sizeof(T); ++i)
    bytes[i] = static_cast<uint8_t>(bits >> (8 * i));
  return bytes;
}

/// Why `arg` does not match its declaration, or "" if it does.
std::string argumentMismatch(const PlanArg &decl, const BufferRef &arg) {
  if (arg.dtype != decl.dtype)
    return "dtype differs";
  if (arg.sizes.size() != decl.sizes.size())
    return fmt::format("rank {} instead of {}", arg.sizes.size(),
                       decl.sizes.size());
  for (size_t i = 0; i < arg.sizes.size(); ++i) {
    if (arg.sizes[i] < 0)
      return fmt::format("size {} is negative", i);
    if (decl.sizes[i] && *decl.sizes[i] != arg.sizes[i])
      return fmt::format("size {} differs", i);
  }
  return "";
}

/// The element count of `buffer` if it fits a signed index of `bits` bits;
/// otherwise throws PlanError naming `what`.
int64_t checkedCount(const BufferRef &buffer, unsigned bits,
                     const std::string &what) {
  std::optional<int64_t> count = buffer.elementCount();
  std::string limit =
      fmt::format("{} can hold (at most {})", indexName(bits), maxIndex(bits));
  if (!count)
    throw PlanError(fmt::format("{} {} has more elements than {}", what,
                                buffer.shapeStr(), limit));
  if (*count > maxIndex(bits))
    throw PlanError(fmt::format("{} {} has {} elements, more than {}", what,
                                buffer.shapeStr(), *count, limit));
  return *count;
}

size_t byteCount(const BufferRef &buffer, int64_t count,
                 const std::string &what) {
  size_t elementBytes = dtypeBytes(buffer.dtype);
  if (static_cast<uint64_t>(count) >
      std::numeric_limits<size_t>::max() / elementBytes)
    throw PlanError(fmt::format("{} {} is too large", what, buffer.shapeStr()));
  return static_cast<size_t>(count) * elementBytes;
}

} // namespace

//===----------------------------------------------------------------------===//
// Buffers and parameters
//===----------------------------------------------------------------------===//

std::optional<int64_t> BufferRef::elementCount() const {
  return rt::elementCount(sizes);
}

std::string BufferRef::shapeStr() const {
  return fmt::format("{} [{}]", dtypeName(dtype), fmt::join(sizes, ", "));
}

std::vector<int64_t> rowMajorStrides(const std::vector<int64_t> &sizes) {
  std::vector<int64_t> strides(sizes.size());
  uint64_t stride = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    strides[i] = static_cast<int64_t>(stride);
    stride *= static_cast<uint64_t>(sizes[i]);
  }
  return strides;
}

std::vector<uint8_t> indexBytes(int64_t value, unsigned bits) {
  if (bits == 32)
    return littleEndian(static_cast<uint32_t>(value));
  return littleEndian(static_cast<uint64_t>(value));
}

std::vector<std::vector<uint8_t>> memrefParams(const BufferRef &buffer,
                                               unsigned indexBits,
                                               const std::string &what) {
  std::vector<std::vector<uint8_t>> params;
  params.push_back(littleEndian(buffer.ptr)); // allocated pointer
  params.push_back(littleEndian(buffer.ptr)); // aligned pointer
  params.push_back(indexBytes(0, indexBits)); // offset
  const std::vector<int64_t> strides = rowMajorStrides(buffer.sizes);
  for (const std::vector<int64_t> *fields : {&buffer.sizes, &strides}) {
    const char *field = fields == &strides ? "stride" : "size";
    for (size_t i = 0; i < fields->size(); ++i) {
      int64_t value = (*fields)[i];
      if (value < 0 || !fitsSigned(value, indexBits))
        throw PlanError(fmt::format(
            "{} {}: {} {} = {} does not fit {}", what, buffer.shapeStr(), field,
            i, static_cast<uint64_t>(value), indexName(indexBits)));
      params.push_back(indexBytes(value, indexBits));
    }
  }
  return params;
}

//===----------------------------------------------------------------------===//
// PlanRun
//===----------------------------------------------------------------------===//

PlanRun::PlanRun(const Plan &plan, PlanDevice &device)
    : plan_(plan), device_(device) {}

PlanRun::~PlanRun() { freeAll(); }

void PlanRun::freeAll() noexcept {
  for (size_t i = allocated_.size(); i-- > 0;) {
    if (allocated_[i].handedOver)
      continue;
    try {
      device_.free(allocated_[i].ptr);
    } catch (...) {
      // Nothing sensible to do; keep freeing the others.
    }
  }
  allocated_.clear();
  allocationOf_.clear();
  results_.clear();
  resultAllocations_.clear();
}

std::vector<BufferRef> PlanRun::takeResults() {
  for (size_t index : resultAllocations_)
    allocated_[index].handedOver = true;
  resultAllocations_.clear();
  std::vector<BufferRef> results = std::move(results_);
  results_.clear();
  return results;
}

std::string PlanRun::where(int line) const {
  return fmt::format("{}:{}: ", plan_.sourceName, line);
}

void PlanRun::bindArguments(const std::vector<BufferRef> &args) {
  const std::vector<PlanArg> &decls = plan_.args;
  if (args.size() != decls.size()) {
    std::vector<std::string> names;
    for (const PlanArg &decl : decls)
      names.push_back(decl.name);
    throw PlanError(fmt::format(
        "{}: the plan takes {} argument(s) ({}) but {} were given",
        plan_.sourceName, decls.size(),
        names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", ")),
        args.size()));
  }
  for (size_t i = 0; i < args.size(); ++i) {
    const PlanArg &decl = decls[i];
    std::string what = fmt::format("argument {} '{}'", i, decl.name);
    std::string mismatch = argumentMismatch(decl, args[i]);
    if (!mismatch.empty())
      throw PlanError(fmt::format("{}{} is {} but the plan expects {} ({})",
                                  where(decl.line), what, args[i].shapeStr(),
                                  decl.shapeStr(), mismatch));
    try {
      checkedCount(args[i], plan_.indexBits, what);
    } catch (const PlanError &e) {
      throw PlanError(where(decl.line) + e.what());
    }
    buffers_[decl.name] = args[i];
  }
}

void PlanRun::run(const std::vector<BufferRef> &args) {
  bindArguments(args);
  for (const PlanStep &step : plan_.steps)
    runStep(step);
  try {
    device_.synchronize();
  } catch (const CudaError &e) {
    throw CudaError(fmt::format("{}: {}", plan_.sourceName, e.what()));
  }
}

void PlanRun::runStep(const PlanStep &step) {
  std::string prefix = fmt::format("{}{}: ", where(step.line), step.describe());
  try {
    switch (step.kind) {
    case PlanStep::Kind::Value:
      values_[step.name] = evaluate(step.expr);
      break;
    case PlanStep::Kind::Alloc:
      runAlloc(step);
      break;
    case PlanStep::Kind::View:
      runView(step);
      break;
    case PlanStep::Kind::Copy:
      runCopy(step);
      break;
    case PlanStep::Kind::Launch:
      runLaunch(step);
      break;
    case PlanStep::Kind::Result:
      runResult(step);
      break;
    }
  } catch (const CudaError &e) {
    throw CudaError(prefix + e.what());
  } catch (const Error &e) {
    throw PlanError(prefix + e.what());
  }
}

int64_t PlanRun::evaluate(const PlanExpr &expr) const {
  switch (expr.kind) {
  case PlanExpr::Kind::Constant:
    return expr.constant;
  case PlanExpr::Kind::Value:
    return value(expr.name);
  case PlanExpr::Kind::Dim: {
    const BufferRef &ref = buffer(expr.name);
    if (expr.constant < 0 ||
        static_cast<uint64_t>(expr.constant) >= ref.sizes.size())
      throw PlanError(fmt::format("{}: '{}' has rank {}", expr.str(), expr.name,
                                  ref.sizes.size()));
    return ref.sizes[expr.constant];
  }
  case PlanExpr::Kind::Op: {
    if (expr.operands.size() != 2)
      throw PlanError(fmt::format("{}: expected 2 operands", expr.str()));
    int64_t lhs = evaluate(expr.operands[0]);
    int64_t rhs = evaluate(expr.operands[1]);
    try {
      return applyPlanOp(expr.op, lhs, rhs);
    } catch (const PlanError &e) {
      throw PlanError(fmt::format("{} in {} ({} {} {})", e.what(), expr.str(),
                                  planOpName(expr.op), lhs, rhs));
    }
  }
  }
  return 0;
}

int64_t PlanRun::value(const std::string &name) const {
  auto it = values_.find(name);
  if (it == values_.end())
    throw PlanError(fmt::format("unknown value '{}'", name));
  return it->second;
}

const BufferRef &PlanRun::buffer(const std::string &name) const {
  auto it = buffers_.find(name);
  if (it == buffers_.end())
    throw PlanError(fmt::format("unknown buffer '{}'", name));
  return it->second;
}

std::vector<int64_t> PlanRun::evaluateSizes(const PlanStep &step) const {
  std::vector<int64_t> sizes;
  for (size_t i = 0; i < step.sizes.size(); ++i) {
    int64_t size = evaluate(step.sizes[i]);
    if (size < 0)
      throw PlanError(
          fmt::format("size {} '{}' is {}", i, step.sizes[i].str(), size));
    sizes.push_back(size);
  }
  return sizes;
}

void PlanRun::runAlloc(const PlanStep &step) {
  BufferRef ref;
  ref.dtype = step.dtype;
  ref.sizes = evaluateSizes(step);
  std::string what = fmt::format("buffer '{}'", step.name);
  int64_t count = checkedCount(ref, plan_.indexBits, what);
  size_t bytes = byteCount(ref, count, what);
  ref.ptr = device_.alloc(bytes);
  allocated_.push_back({ref.ptr, false});
  allocationOf_[step.name] = allocated_.size() - 1;
  buffers_[step.name] = ref;
}

void PlanRun::runView(const PlanStep &step) {
  const BufferRef &source = buffer(step.source);
  BufferRef ref;
  ref.ptr = source.ptr;
  ref.dtype = source.dtype;
  ref.sizes = evaluateSizes(step);
  std::optional<int64_t> count = ref.elementCount();
  int64_t sourceCount = *source.elementCount(); // checked when made
  if (count != sourceCount)
    throw PlanError(fmt::format(
        "view '{}' {} has {} elements but its source '{}' {} has {}", step.name,
        ref.shapeStr(), count ? fmt::format("{}", *count) : "too many",
        step.source, source.shapeStr(), sourceCount));
  auto allocation = allocationOf_.find(step.source);
  if (allocation != allocationOf_.end())
    allocationOf_[step.name] = allocation->second;
  buffers_[step.name] = ref;
}

void PlanRun::runResult(const PlanStep &step) {
  const BufferRef &ref = buffer(step.source);
  auto allocation = allocationOf_.find(step.source);
  if (allocation == allocationOf_.end())
    throw PlanError(fmt::format(
        "'{}' is not allocated by the plan (an argument or a view of one); a "
        "result must be an alloc or a view of one",
        step.source));
  results_.push_back(ref);
  resultAllocations_.push_back(allocation->second);
}

void PlanRun::runCopy(const PlanStep &step) {
  const BufferRef &source = buffer(step.source);
  const BufferRef &dest = buffer(step.dest);
  int64_t count = *source.elementCount(), destCount = *dest.elementCount();
  if (count != destCount || source.dtype != dest.dtype)
    throw PlanError(fmt::format(
        "source '{}' {} has {} elements but destination '{}' {} has {}",
        step.source, source.shapeStr(), count, step.dest, dest.shapeStr(),
        destCount));
  size_t bytes =
      byteCount(source, count, fmt::format("buffer '{}'", step.source));
  if (bytes != 0 && source.ptr != dest.ptr)
    device_.copy(dest.ptr, source.ptr, bytes);
}

std::vector<uint8_t> PlanRun::scalarParam(const PlanLaunchArg &arg,
                                          size_t index) const {
  using Kind = PlanLaunchArg::Kind;
  if (arg.kind == Kind::F32) {
    float value = static_cast<float>(arg.real);
    uint32_t bits;
    std::memcpy(&bits, &value, sizeof(bits));
    return littleEndian(bits);
  }
  if (arg.kind == Kind::F64) {
    uint64_t bits;
    std::memcpy(&bits, &arg.real, sizeof(bits));
    return littleEndian(bits);
  }
  int64_t value = evaluate(arg.expr);
  unsigned bits = arg.kind == Kind::Index ? plan_.indexBits
                  : arg.kind == Kind::I32 ? 32
                                          : 64;
  if (!fitsSigned(value, bits))
    throw PlanError(fmt::format(
        "argument {} ({}) = {} does not fit {}", index, arg.str(), value,
        arg.kind == Kind::Index ? indexName(bits) : "a signed 32-bit integer"));
  return indexBytes(value, bits);
}

LaunchExtent PlanRun::launchExtent(const std::array<PlanExpr, 3> &exprs,
                                   const char *what, int64_t min,
                                   const int64_t (&max)[3]) const {
  LaunchExtent extent;
  for (int i = 0; i < 3; ++i) {
    extent[i] = evaluate(exprs[i]);
    if (extent[i] < min || extent[i] > max[i])
      throw PlanError(fmt::format("{} {} '{}' = {} is outside [{}, {}]", what,
                                  kAxes[i], exprs[i].str(), extent[i], min,
                                  max[i]));
  }
  return extent;
}

unsigned PlanRun::sharedBytes(const PlanExpr &expr) const {
  int64_t shared = evaluate(expr);
  if (shared < 0 || shared > std::numeric_limits<unsigned>::max())
    throw PlanError(fmt::format("shared memory size '{}' = {} is out of range",
                                expr.str(), shared));
  return static_cast<unsigned>(shared);
}

std::vector<std::vector<uint8_t>>
PlanRun::launchParams(const PlanStep &step) const {
  std::vector<std::vector<uint8_t>> params;
  for (size_t i = 0; i < step.args.size(); ++i) {
    const PlanLaunchArg &arg = step.args[i];
    if (arg.kind != PlanLaunchArg::Kind::Memref) {
      params.push_back(scalarParam(arg, i));
      continue;
    }
    for (std::vector<uint8_t> &field :
         memrefParams(buffer(arg.buffer), plan_.indexBits,
                      fmt::format("argument {} ({})", i, arg.str())))
      params.push_back(std::move(field));
  }
  return params;
}

void PlanRun::runLaunch(const PlanStep &step) {
  LaunchExtent grid = launchExtent(step.grid, "grid", 0, kMaxGrid);
  LaunchExtent block = launchExtent(step.block, "block", 1, kMaxBlock);
  checkBlockThreads(block);
  unsigned shared = sharedBytes(step.shared);
  std::vector<std::vector<uint8_t>> params = launchParams(step);
  if (grid[0] == 0 || grid[1] == 0 || grid[2] == 0) {
    ++skipped_; // an empty grid: nothing to do
    return;
  }
  device_.launch(step.module, step.kernel, toDim3(grid), toDim3(block), shared,
                 params);
}

std::vector<BufferRef> execute(const Plan &plan, PlanDevice &device,
                               const std::vector<BufferRef> &args) {
  PlanRun run(plan, device);
  run.run(args);
  return run.takeResults();
}

} // namespace fwp::rt
