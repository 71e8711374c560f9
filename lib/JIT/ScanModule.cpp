//===- ScanModule.cpp - The bare scan's module, built and compiled --------===//
//
//   func.func @fwp_scan(%q, %k, %v, [%beta], [%initial],
//                       %y: memref, %final_state: memref)
//   func.func @fwp_scan_grad(%q, %k, %v, [%beta], [%initial], %dy,
//                            [%d_final_state], %dq: memref, %dk, %dv,
//                            [%dbeta], %d_initial)
//
// with T, B and H dynamic: for the CPU both in one kernel.so, for CUDA each
// function's launch plan in a directory of its own. The MLIR side of
// Scan.cpp.
//
//===----------------------------------------------------------------------===//

#include "ScanKernel.h"

#include "CompileSupport.h"
#include "CpuCompiler.h"
#include "CudaCompiler.h"

#include "fwp/Dialect/FwpVocabulary.h"

#include <fmt/format.h>

using namespace mlir;

namespace fwp::jit {

namespace {

/// `fwp_scan` and/or `fwp_scan_grad` (the entry points `entries` names).
void buildScanModule(ModuleOp module, const ScanDesc &desc, bool forward,
                     bool backward) {
  OpBuilder b(module.getContext());
  Location loc = NameLoc::get(b.getStringAttr("fwp-jit scan"));
  b.setInsertionPointToEnd(module.getBody());
  Type t = elementType(b, desc.dtype);
  int64_t dyn = ShapedType::kDynamic;
  bool delta = desc.rule == Rule::Delta;
  fwp::Rule rule = toDialectRule(desc.rule);
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

  if (forward)
    buildEntryFunction(b, loc, kScanForwardName, common, {values, state},
                       [&](OpBuilder &b, ValueRange a) -> SmallVector<Value> {
                         auto [betaValue, initial, next] = split(a);
                         (void)next;
                         auto scan = fwp::ScanOp::create(
                             b, loc, values, state, rule, a[0], a[1], a[2],
                             betaValue, initial, nu, eps, desc.batchFirst);
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
  if (backward)
    buildEntryFunction(b, loc, kScanBackwardName, gradInputs, gradOutputs,
                       [&](OpBuilder &b, ValueRange a) -> SmallVector<Value> {
                         auto [betaValue, initial, next] = split(a);
                         Value dy = a[next++];
                         Value dFinal = desc.dFinalState ? a[next++] : Value();
                         auto grad = fwp::ScanGradOp::create(
                             b, loc, in, in, values,
                             delta ? Type(beta) : Type(), state, /*y=*/Type(),
                             rule, a[0], a[1], a[2], betaValue, initial, dy,
                             dFinal, nu, eps, desc.batchFirst);
                         return SmallVector<Value>(grad->getResults());
                       });
}

/// The manifest of a scan's compiled module.
rt::ModuleInfo scanModuleInfo(const ScanDesc &desc, EntryPoint entry,
                              const std::string &key) {
  rt::ModuleInfo info = entryInfo(desc.backend, entry, desc.dtype, key);
  info.dModel = desc.dValue;
  return info;
}

} // namespace

void compileCpuScan(const ScanDesc &desc, const std::string &key,
                    const std::string &dir) {
  compileCpuLibrary(
      desc.str(), desc.chunkSize,
      [&](ModuleOp m) { buildScanModule(m, desc, true, true); }, dir,
      kDefaultCpuOptLevel);
  rt::writeModuleInfo(dir, scanModuleInfo(desc, EntryPoint::Forward, key),
                      {"kernel.so"});
}

void compileCudaScan(const ScanDesc &desc, EntryPoint entry,
                     const std::string &key, const std::string &dir) {
  bool forward = entry == EntryPoint::Forward;
  compileCudaModule(
      fmt::format("the {} of {}", rt::entryPointName(entry), desc.str()),
      desc.chunkSize, desc.targetChip(), desc.gpuStages,
      [&](ModuleOp m) { buildScanModule(m, desc, forward, !forward); },
      forward ? kScanForwardName : kScanBackwardName, dir,
      scanModuleInfo(desc, entry, key));
}

} // namespace fwp::jit
