//===- Scan.cpp - The bare fast-weight scan, compiled ---------------------===//
//
//   func.func @fwp_scan(%q, %k, %v, [%beta], [%initial],
//                       %y: memref, %final_state: memref)
//   func.func @fwp_scan_grad(%q, %k, %v, [%beta], [%initial], %dy,
//                            [%d_final_state], %dq: memref, %dk, %dv,
//                            [%dbeta], %d_initial)
//
// with T, B and H dynamic, compiled into one kernel.so (a compiled module
// directory, docs/compiled-modules.md) that the disk cache keeps, and called
// through the runtime's HostLibrary.
//
//===----------------------------------------------------------------------===//

#include "fwp/JIT/Scan.h"

#include "CompileSupport.h"
#include "CpuCompiler.h"
#include "DiskCache.h"
#include "Kernel.h"

#include "fwp/Runtime/HostLibrary.h"

#include "fwp/Dialect/FwpOps.h"

#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <sstream>
#include <stdexcept>

using namespace mlir;

namespace fwp::jit {

namespace {

[[noreturn]] void invalid(const std::string &what) {
  throw std::invalid_argument("invalid scan description: " + what);
}

constexpr const char *kForwardName = "fwp_scan";
constexpr const char *kBackwardName = "fwp_scan_grad";

void buildModule(ModuleOp module, const ScanDesc &desc) {
  OpBuilder b(module.getContext());
  Location loc = NameLoc::get(b.getStringAttr("fwp-jit scan"));
  b.setInsertionPointToEnd(module.getBody());
  Type t = elementType(b, desc.dtype);
  int64_t dyn = ShapedType::kDynamic;
  bool delta = desc.rule == Rule::Delta;
  fwp::Rule rule = delta ? fwp::Rule::Delta : fwp::Rule::Sum;
  auto in = RankedTensorType::get({dyn, dyn, dyn, desc.dInput}, t);
  auto values = RankedTensorType::get({dyn, dyn, dyn, desc.dValue}, t);
  auto beta = RankedTensorType::get({dyn, dyn, dyn}, t);
  auto state =
      RankedTensorType::get({dyn, dyn, desc.dValue, desc.dFeature()}, t);
  IntegerAttr nu = desc.nu > 0 ? b.getI64IntegerAttr(desc.nu) : IntegerAttr();
  FloatAttr eps = desc.nu > 0 ? b.getF64FloatAttr(desc.eps) : FloatAttr();

  // Operands shared by both: q, k, v, [beta], [initial].
  SmallVector<Type> common = {in, in, values};
  if (delta)
    common.push_back(beta);
  if (desc.initial)
    common.push_back(state);
  auto split = [&](ValueRange a) {
    unsigned next = 3;
    Value betaValue = delta ? a[next++] : Value();
    Value initial = desc.initial ? a[next++] : Value();
    return std::tuple{betaValue, initial, next};
  };

  buildEntryFunction(b, loc, kForwardName, common, {values, state},
                     [&](OpBuilder &b, ValueRange a) -> SmallVector<Value> {
                       auto [betaValue, initial, next] = split(a);
                       (void)next;
                       auto scan = fwp::ScanOp::create(
                           b, loc, values, state, rule, a[0], a[1], a[2],
                           betaValue, initial, nu, eps);
                       return {scan.getY(), scan.getFinalState()};
                     });

  SmallVector<Type> gradInputs = common;
  gradInputs.push_back(values); // dy
  if (desc.dFinalState)
    gradInputs.push_back(state);
  SmallVector<Type> gradOutputs = {in, in, values};
  if (delta)
    gradOutputs.push_back(beta);
  gradOutputs.push_back(state);
  buildEntryFunction(b, loc, kBackwardName, gradInputs, gradOutputs,
                     [&](OpBuilder &b, ValueRange a) -> SmallVector<Value> {
                       auto [betaValue, initial, next] = split(a);
                       Value dy = a[next++];
                       Value dFinal = desc.dFinalState ? a[next++] : Value();
                       auto grad = fwp::ScanGradOp::create(
                           b, loc, in, in, values, delta ? Type(beta) : Type(),
                           state, /*y=*/Type(), rule, a[0], a[1], a[2],
                           betaValue, initial, dy, dFinal, nu, eps);
                       return SmallVector<Value>(grad->getResults());
                     });
}

/// The scan's buffers, in the order of the entry functions' arguments.
class ScanBuffers {
public:
  ScanBuffers(const ScanDesc &desc, int64_t seqLen, int64_t batch,
              int64_t heads)
      : desc(desc), seqLen(seqLen), batch(batch), heads(heads) {}

  /// q, k, v, [beta], [initial]: what both functions read first.
  void common(const void *q, const void *k, const void *v, const void *beta,
              const void *initial) {
    steps(q, desc.dInput);
    steps(k, desc.dInput);
    steps(v, desc.dValue);
    if (desc.rule == Rule::Delta)
      gates(beta);
    if (desc.initial)
      state(initial);
  }
  void steps(const void *data, int64_t width) {
    list.push_back({data, {seqLen, batch, heads, width}});
  }
  void gates(const void *data) {
    list.push_back({data, {seqLen, batch, heads}});
  }
  void state(const void *data) {
    list.push_back({data, {batch, heads, desc.dValue, desc.dFeature()}});
  }

  const std::vector<rt::HostBuffer> &buffers() const { return list; }

private:
  const ScanDesc &desc;
  int64_t seqLen, batch, heads;
  std::vector<rt::HostBuffer> list;
};

/// A scan whose kernels are a host library (a compiled module directory's
/// kernel.so) with both functions.
class LibraryScan final : public CompiledScan {
public:
  LibraryScan(const ScanDesc &desc, std::unique_ptr<rt::HostLibrary> library)
      : CompiledScan(desc), library(std::move(library)) {}

private:
  void runForward(int64_t seqLen, int64_t batch, int64_t heads, const void *q,
                  const void *k, const void *v, const void *beta,
                  const void *initial, void *y,
                  void *finalState) const override {
    ScanBuffers args(desc(), seqLen, batch, heads);
    args.common(q, k, v, beta, initial);
    args.steps(y, desc().dValue);
    args.state(finalState);
    library->call(0, args.buffers());
  }

  void runBackward(int64_t seqLen, int64_t batch, int64_t heads, const void *q,
                   const void *k, const void *v, const void *beta,
                   const void *initial, const void *dy, const void *dFinalState,
                   void *dq, void *dk, void *dv, void *dbeta,
                   void *dInitial) const override {
    const ScanDesc &d = desc();
    ScanBuffers args(d, seqLen, batch, heads);
    args.common(q, k, v, beta, initial);
    args.steps(dy, d.dValue);
    if (d.dFinalState)
      args.state(dFinalState);
    args.steps(dq, d.dInput);
    args.steps(dk, d.dInput);
    args.steps(dv, d.dValue);
    if (d.rule == Rule::Delta)
      args.gates(dbeta);
    args.state(dInitial);
    library->call(1, args.buffers());
  }

  std::unique_ptr<rt::HostLibrary> library;
};

/// Everything that changes the scan's code: the description, the host CPU,
/// the optimisation level and the compiler's build id.
std::string scanCacheKey(const ScanDesc &desc) {
  return desc.str() + " target=" + hostTargetDescription() + " O" +
         std::to_string(kDefaultCpuOptLevel) + " compiler=" + compilerBuildId();
}

/// Compiles both functions into `dir`'s kernel.so, with its manifest.
void compileScanInto(const ScanDesc &desc, const std::string &key,
                     const std::string &dir) {
  compileCpuLibrary(
      desc.str(), desc.chunkSize, [&](ModuleOp m) { buildModule(m, desc); },
      dir, kDefaultCpuOptLevel);
  rt::ModuleInfo info;
  info.key = key;
  info.backend = rt::ModuleBackend::Cpu;
  info.dtype = desc.dtype;
  info.dModel = desc.dValue;
  rt::writeModuleInfo(dir, info, {"kernel.so"});
}

std::unique_ptr<CompiledScan> compileScanIn(const ScanDesc &desc,
                                            const std::string &cacheDir) {
  desc.validate();
  auto start = std::chrono::steady_clock::now();
  std::string key = scanCacheKey(desc);
  std::unique_ptr<rt::HostLibrary> library;
  CachedEntry where = findOrCompile(
      cacheDir, key,
      [&](const std::string &dir) { compileScanInto(desc, key, dir); },
      [&](const std::string &dir) {
        library = rt::HostLibrary::load(
            dir, {std::string("_mlir_ciface_") + kForwardName,
                  std::string("_mlir_ciface_") + kBackwardName});
      });
  if (where.temporary)
    removeTree(where.dir);
  auto scan = std::make_unique<LibraryScan>(desc, std::move(library));
  scan->fromDiskCache = where.hit;
  scan->compileSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return scan;
}

} // namespace

void ScanDesc::validate() const {
  // Wide enough for any model; small enough that the workspaces' sizes
  // cannot overflow.
  constexpr int64_t kMaxWidth = 1 << 16;
  if (rule != Rule::Delta && rule != Rule::Sum)
    invalid("unknown rule");
  if (dtype != DType::F32 && dtype != DType::F64 && dtype != DType::BF16 &&
      dtype != DType::F16)
    invalid("unknown dtype");
  if (dInput < 1 || dInput > kMaxWidth)
    invalid("d_in = " + std::to_string(dInput) + ", expected 1.." +
            std::to_string(kMaxWidth));
  if (dValue < 1 || dValue > kMaxWidth)
    invalid("d_v = " + std::to_string(dValue) + ", expected 1.." +
            std::to_string(kMaxWidth));
  if (nu < 0 || nu > 2 * dInput - 1)
    invalid("nu = " + std::to_string(nu) + ", expected 0 (no DPFP) or 1.." +
            std::to_string(2 * dInput - 1) + " (2 d_in - 1)");
  if (nu > 0 && dFeature() > kMaxWidth)
    invalid("DPFP features 2 d_in nu = " + std::to_string(dFeature()) +
            ", expected at most " + std::to_string(kMaxWidth));
  if (nu > 0 && !(std::isfinite(eps) && eps > 0))
    invalid("eps must be finite and > 0");
  if (chunkSize < 1 || chunkSize > kMaxChunkSize)
    invalid("chunk = " + std::to_string(chunkSize) + ", expected 1.." +
            std::to_string(kMaxChunkSize));
}

std::string ScanDesc::str() const {
  std::ostringstream out;
  out << "scan " << rt::dtypeName(dtype) << ' '
      << (rule == Rule::Delta ? "delta" : "sum") << " d_in=" << dInput
      << " d_v=" << dValue << " nu=" << nu;
  if (nu > 0)
    out << " eps=" << roundTrip(eps);
  out << " chunk=" << chunkSize << (initial ? " initial" : "")
      << (dFinalState ? " d_final" : "");
  return out.str();
}

namespace {

void checkSizes(const char *what, int64_t seqLen, int64_t batch,
                int64_t heads) {
  if (seqLen < 0 || batch < 0 || heads < 0)
    throw std::invalid_argument(
        std::string(what) + ": sizes T = " + std::to_string(seqLen) +
        ", B = " + std::to_string(batch) + ", H = " + std::to_string(heads) +
        " must not be negative");
  // Every buffer's element count must fit in int64 (T B H 2^16 at most).
  constexpr int64_t kLimit = int64_t(1) << 46;
  if ((seqLen && batch > kLimit / seqLen) ||
      (seqLen && batch && heads > kLimit / (seqLen * batch)) ||
      (batch && heads > kLimit / batch))
    throw std::invalid_argument(std::string(what) +
                                ": sizes T, B, H too large");
}

void checkBuffers(
    const char *what,
    std::initializer_list<std::pair<const char *, const void *>> buffers) {
  for (auto [name, data] : buffers)
    if (!data)
      throw std::invalid_argument(std::string(what) + ": buffer " + name +
                                  " is null");
}

/// `target` = `source` ([B, H, d_v, D]), or zero where there is none.
void copyState(const ScanDesc &desc, int64_t batch, int64_t heads,
               const void *source, void *target) {
  size_t bytes =
      static_cast<size_t>(batch * heads * desc.dValue * desc.dFeature()) *
      rt::dtypeBytes(desc.dtype);
  if (source)
    std::memmove(target, source, bytes);
  else
    std::memset(target, 0, bytes); // +0.0 in every dtype
}

} // namespace

void CompiledScan::forward(int64_t seqLen, int64_t batch, int64_t heads,
                           const void *q, const void *k, const void *v,
                           const void *beta, const void *initial, void *y,
                           void *finalState) const {
  const ScanDesc &d = desc();
  checkSizes("scan forward", seqLen, batch, heads);
  if (batch == 0 || heads == 0)
    return;
  checkBuffers("scan forward", {{"finalState", finalState}});
  if (d.initial)
    checkBuffers("scan forward", {{"initial", initial}});
  if (seqLen == 0)
    return copyState(d, batch, heads, d.initial ? initial : nullptr,
                     finalState);
  checkBuffers("scan forward", {{"q", q}, {"k", k}, {"v", v}, {"y", y}});
  if (d.rule == Rule::Delta)
    checkBuffers("scan forward", {{"beta", beta}});
  runForward(seqLen, batch, heads, q, k, v, beta, initial, y, finalState);
}

void CompiledScan::backward(int64_t seqLen, int64_t batch, int64_t heads,
                            const void *q, const void *k, const void *v,
                            const void *beta, const void *initial,
                            const void *dy, const void *dFinalState, void *dq,
                            void *dk, void *dv, void *dbeta,
                            void *dInitial) const {
  const ScanDesc &d = desc();
  checkSizes("scan backward", seqLen, batch, heads);
  if (batch == 0 || heads == 0)
    return;
  checkBuffers("scan backward", {{"dInitial", dInitial}});
  if (d.dFinalState)
    checkBuffers("scan backward", {{"dFinalState", dFinalState}});
  // With no steps the initial state is the final one.
  if (seqLen == 0)
    return copyState(d, batch, heads, d.dFinalState ? dFinalState : nullptr,
                     dInitial);
  checkBuffers("scan backward", {{"q", q},
                                 {"k", k},
                                 {"v", v},
                                 {"dy", dy},
                                 {"dq", dq},
                                 {"dk", dk},
                                 {"dv", dv}});
  if (d.rule == Rule::Delta)
    checkBuffers("scan backward", {{"beta", beta}, {"dbeta", dbeta}});
  if (d.initial)
    checkBuffers("scan backward", {{"initial", initial}});
  runBackward(seqLen, batch, heads, q, k, v, beta, initial, dy, dFinalState, dq,
              dk, dv, dbeta, dInitial);
}

std::unique_ptr<CompiledScan>
compileScanUncached(const ScanDesc &desc, const std::string &cacheDirectory) {
  return compileScanIn(desc, cacheDirectory);
}

std::shared_ptr<const CompiledScan> compileScan(const ScanDesc &desc) {
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<const CompiledScan>> scans;
  std::lock_guard<std::mutex> lock(mutex);
  auto &scan = scans[desc.str()];
  if (!scan) // a compilation that throws keeps nothing
    scan = compileScanIn(desc, cacheDirectoryFromEnvironment());
  return scan;
}

} // namespace fwp::jit
