//===- PlanRun.cpp - Carrying out launch plans on a PlanDevice ------------===//
//
// Everything here is device independent: the device only allocates, frees,
// copies and launches what this file computes.
//
//===----------------------------------------------------------------------===//

#include "fwp/Runtime/Plan.h"

#include <cstring>
#include <limits>

namespace fwp::rt {
namespace {

constexpr int64_t kMaxGridX = std::numeric_limits<int32_t>::max();
constexpr int64_t kMaxGridYZ = 65535;
constexpr int64_t kMaxBlockThreads = 1024;
constexpr int64_t kMaxBlock[3] = {1024, 1024, 64};
const char *const kAxes[3] = {"x", "y", "z"};

int64_t maxIndex(unsigned bits) {
  return bits == 32 ? std::numeric_limits<int32_t>::max()
                    : std::numeric_limits<int64_t>::max();
}

bool fitsSigned(int64_t value, unsigned bits) {
  return bits == 64 || (value >= std::numeric_limits<int32_t>::min() &&
                        value <= std::numeric_limits<int32_t>::max());
}

std::string indexName(unsigned bits) {
  return "a signed " + std::to_string(bits) + "-bit index";
}

template <typename T> std::vector<uint8_t> littleEndian(T bits) {
  std::vector<uint8_t> bytes(sizeof(T));
  for (size_t i = 0; i < sizeof(T); ++i)
    bytes[i] = static_cast<uint8_t>(bits >> (8 * i));
  return bytes;
}

std::string sizesStr(const std::vector<int64_t> &sizes) {
  std::string out = "[";
  for (size_t i = 0; i < sizes.size(); ++i)
    out += (i ? ", " : "") + std::to_string(sizes[i]);
  return out + "]";
}

/// Why `arg` does not match its declaration, or "" if it does.
std::string argumentMismatch(const PlanArg &decl, const BufferRef &arg) {
  if (arg.dtype != decl.dtype)
    return "dtype differs";
  if (arg.sizes.size() != decl.sizes.size())
    return "rank " + std::to_string(arg.sizes.size()) + " instead of " +
           std::to_string(decl.sizes.size());
  for (size_t i = 0; i < arg.sizes.size(); ++i) {
    if (arg.sizes[i] < 0)
      return "size " + std::to_string(i) + " is negative";
    if (decl.sizes[i] && *decl.sizes[i] != arg.sizes[i])
      return "size " + std::to_string(i) + " differs";
  }
  return "";
}

/// The element count of `buffer` if it fits a signed index of `bits` bits;
/// otherwise throws PlanError naming `what`.
int64_t checkedCount(const BufferRef &buffer, unsigned bits,
                     const std::string &what) {
  std::optional<int64_t> count = buffer.elementCount();
  std::string limit = indexName(bits) + " can hold (at most " +
                      std::to_string(maxIndex(bits)) + ")";
  if (!count)
    throw PlanError(what + " " + buffer.shapeStr() +
                    " has more elements than " + limit);
  if (*count > maxIndex(bits))
    throw PlanError(what + " " + buffer.shapeStr() + " has " +
                    std::to_string(*count) + " elements, more than " + limit);
  return *count;
}

size_t byteCount(const BufferRef &buffer, int64_t count,
                 const std::string &what) {
  size_t elementBytes = dtypeBytes(buffer.dtype);
  if (static_cast<uint64_t>(count) >
      std::numeric_limits<size_t>::max() / elementBytes)
    throw PlanError(what + " " + buffer.shapeStr() + " is too large");
  return static_cast<size_t>(count) * elementBytes;
}

} // namespace

//===----------------------------------------------------------------------===//
// Buffers and parameters
//===----------------------------------------------------------------------===//

std::optional<int64_t> BufferRef::elementCount() const {
  int64_t count = 1;
  for (int64_t size : sizes) {
    if (size < 0)
      return std::nullopt;
    if (size != 0 && count > std::numeric_limits<int64_t>::max() / size)
      return std::nullopt;
    count *= size;
  }
  // A zero size makes the product 0 even if other sizes would overflow.
  for (int64_t size : sizes)
    if (size == 0)
      return 0;
  return count;
}

std::string BufferRef::shapeStr() const {
  return std::string(dtypeName(dtype)) + " " + sizesStr(sizes);
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
        throw PlanError(what + " " + buffer.shapeStr() + ": " + field + " " +
                        std::to_string(i) + " = " +
                        std::to_string(static_cast<uint64_t>(value)) +
                        " does not fit " + indexName(indexBits));
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
  return plan_.sourceName + ":" + std::to_string(line) + ": ";
}

void PlanRun::bindArguments(const std::vector<BufferRef> &args) {
  const std::vector<PlanArg> &decls = plan_.args;
  if (args.size() != decls.size()) {
    std::string names;
    for (const PlanArg &decl : decls)
      names += (names.empty() ? "" : ", ") + decl.name;
    throw PlanError(plan_.sourceName + ": the plan takes " +
                    std::to_string(decls.size()) + " argument(s) (" +
                    (names.empty() ? "none" : names) + ") but " +
                    std::to_string(args.size()) + " were given");
  }
  for (size_t i = 0; i < args.size(); ++i) {
    const PlanArg &decl = decls[i];
    std::string what = "argument " + std::to_string(i) + " '" + decl.name + "'";
    std::string mismatch = argumentMismatch(decl, args[i]);
    if (!mismatch.empty())
      throw PlanError(where(decl.line) + what + " is " + args[i].shapeStr() +
                      " but the plan expects " + decl.shapeStr() + " (" +
                      mismatch + ")");
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
    throw CudaError(plan_.sourceName + ": " + e.what());
  }
}

void PlanRun::runStep(const PlanStep &step) {
  std::string prefix = where(step.line) + step.describe() + ": ";
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
      throw PlanError(expr.str() + ": '" + expr.name + "' has rank " +
                      std::to_string(ref.sizes.size()));
    return ref.sizes[expr.constant];
  }
  case PlanExpr::Kind::Op: {
    if (expr.operands.size() != 2)
      throw PlanError(expr.str() + ": expected 2 operands");
    int64_t lhs = evaluate(expr.operands[0]);
    int64_t rhs = evaluate(expr.operands[1]);
    try {
      return applyPlanOp(expr.op, lhs, rhs);
    } catch (const PlanError &e) {
      throw PlanError(std::string(e.what()) + " in " + expr.str() + " (" +
                      planOpName(expr.op) + " " + std::to_string(lhs) + " " +
                      std::to_string(rhs) + ")");
    }
  }
  }
  return 0;
}

int64_t PlanRun::value(const std::string &name) const {
  auto it = values_.find(name);
  if (it == values_.end())
    throw PlanError("unknown value '" + name + "'");
  return it->second;
}

const BufferRef &PlanRun::buffer(const std::string &name) const {
  auto it = buffers_.find(name);
  if (it == buffers_.end())
    throw PlanError("unknown buffer '" + name + "'");
  return it->second;
}

std::vector<int64_t> PlanRun::evaluateSizes(const PlanStep &step) const {
  std::vector<int64_t> sizes;
  for (size_t i = 0; i < step.sizes.size(); ++i) {
    int64_t size = evaluate(step.sizes[i]);
    if (size < 0)
      throw PlanError("size " + std::to_string(i) + " '" + step.sizes[i].str() +
                      "' is " + std::to_string(size));
    sizes.push_back(size);
  }
  return sizes;
}

void PlanRun::runAlloc(const PlanStep &step) {
  BufferRef ref;
  ref.dtype = step.dtype;
  ref.sizes = evaluateSizes(step);
  std::string what = "buffer '" + step.name + "'";
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
    throw PlanError("view '" + step.name + "' " + ref.shapeStr() + " has " +
                    (count ? std::to_string(*count) : std::string("too many")) +
                    " elements but its source '" + step.source + "' " +
                    source.shapeStr() + " has " + std::to_string(sourceCount));
  auto allocation = allocationOf_.find(step.source);
  if (allocation != allocationOf_.end())
    allocationOf_[step.name] = allocation->second;
  buffers_[step.name] = ref;
}

void PlanRun::runResult(const PlanStep &step) {
  const BufferRef &ref = buffer(step.source);
  auto allocation = allocationOf_.find(step.source);
  if (allocation == allocationOf_.end())
    throw PlanError("'" + step.source +
                    "' is not allocated by the plan (an argument or a view "
                    "of one); a result must be an alloc or a view of one");
  results_.push_back(ref);
  resultAllocations_.push_back(allocation->second);
}

void PlanRun::runCopy(const PlanStep &step) {
  const BufferRef &source = buffer(step.source);
  const BufferRef &dest = buffer(step.dest);
  int64_t count = *source.elementCount(), destCount = *dest.elementCount();
  if (count != destCount || source.dtype != dest.dtype)
    throw PlanError("source '" + step.source + "' " + source.shapeStr() +
                    " has " + std::to_string(count) +
                    " elements but destination '" + step.dest + "' " +
                    dest.shapeStr() + " has " + std::to_string(destCount));
  size_t bytes = byteCount(source, count, "buffer '" + step.source + "'");
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
    throw PlanError("argument " + std::to_string(index) + " (" +
                    PlanLaunchArg::kindName(arg.kind) + " " + arg.expr.str() +
                    ") = " + std::to_string(value) + " does not fit " +
                    (arg.kind == Kind::Index ? indexName(bits)
                                             : "a signed 32-bit integer"));
  return indexBytes(value, bits);
}

void PlanRun::runLaunch(const PlanStep &step) {
  int64_t grid[3], block[3];
  for (int i = 0; i < 3; ++i) {
    grid[i] = evaluate(step.grid[i]);
    int64_t limit = i == 0 ? kMaxGridX : kMaxGridYZ;
    if (grid[i] < 0 || grid[i] > limit)
      throw PlanError(std::string("grid ") + kAxes[i] + " '" +
                      step.grid[i].str() + "' = " + std::to_string(grid[i]) +
                      " is outside [0, " + std::to_string(limit) + "]");
  }
  for (int i = 0; i < 3; ++i) {
    block[i] = evaluate(step.block[i]);
    if (block[i] < 1 || block[i] > kMaxBlock[i])
      throw PlanError(std::string("block ") + kAxes[i] + " '" +
                      step.block[i].str() + "' = " + std::to_string(block[i]) +
                      " is outside [1, " + std::to_string(kMaxBlock[i]) + "]");
  }
  int64_t threads = block[0] * block[1] * block[2];
  if (threads > kMaxBlockThreads)
    throw PlanError("a block of " + std::to_string(block[0]) + " x " +
                    std::to_string(block[1]) + " x " +
                    std::to_string(block[2]) + " = " + std::to_string(threads) +
                    " threads is more than " +
                    std::to_string(kMaxBlockThreads));
  int64_t shared = evaluate(step.shared);
  if (shared < 0 || shared > std::numeric_limits<unsigned>::max())
    throw PlanError("shared memory size '" + step.shared.str() +
                    "' = " + std::to_string(shared) + " is out of range");

  std::vector<std::vector<uint8_t>> params;
  for (size_t i = 0; i < step.args.size(); ++i) {
    const PlanLaunchArg &arg = step.args[i];
    if (arg.kind != PlanLaunchArg::Kind::Memref) {
      params.push_back(scalarParam(arg, i));
      continue;
    }
    for (std::vector<uint8_t> &field : memrefParams(
             buffer(arg.buffer), plan_.indexBits,
             "argument " + std::to_string(i) + " (memref " + arg.buffer + ")"))
      params.push_back(std::move(field));
  }
  if (grid[0] == 0 || grid[1] == 0 || grid[2] == 0) {
    ++skipped_; // an empty grid: nothing to do
    return;
  }
  auto dim3 = [](const int64_t(&d)[3]) {
    return Dim3{static_cast<unsigned>(d[0]), static_cast<unsigned>(d[1]),
                static_cast<unsigned>(d[2])};
  };
  device_.launch(step.module, step.kernel, dim3(grid), dim3(block),
                 static_cast<unsigned>(shared), params);
}

std::vector<BufferRef> execute(const Plan &plan, PlanDevice &device,
                               const std::vector<BufferRef> &args) {
  PlanRun run(plan, device);
  run.run(args);
  return run.takeResults();
}

} // namespace fwp::rt
