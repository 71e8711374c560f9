//===- ScanKernelForTesting.cpp - fwp.scan and fwp.scan_grad alone --------===//
//
//   func.func @fwp_scan(%q, %k, %v, [%beta], [%initial],
//                       %y: memref, %final_state: memref)
//   func.func @fwp_scan_grad(%q, %k, %v, [%beta], [%initial], %dy,
//                            [%d_final_state], %dq: memref, %dk, %dv,
//                            [%dbeta], %d_initial)
//
// with T, B and H dynamic. The functions' arity depends on the description,
// so they are called through the engine's packed interface.
//
//===----------------------------------------------------------------------===//

#include "ScanKernelForTesting.h"

#include "CompileSupport.h"
#include "CpuCompiler.h"

#include "fwp/Dialect/FwpOps.h"

#include <chrono>
#include <deque>
#include <stdexcept>

using namespace mlir;

namespace fwp::jit::testing {

namespace {

constexpr const char *kForwardName = "fwp_scan";
constexpr const char *kBackwardName = "fwp_scan_grad";

std::string describe(const ScanKernelDesc &d) {
  return std::string("the test scan (") +
         (d.rule == Rule::Delta ? "delta" : "sum") +
         (d.dtype == DType::F32 ? " f32" : " f64") +
         " d_in=" + std::to_string(d.dInput) +
         " d_v=" + std::to_string(d.dValue) + " nu=" + std::to_string(d.nu) +
         " chunk=" + std::to_string(d.chunkSize) +
         (d.initial ? " initial" : "") + (d.dFinalState ? " d_final" : "") +
         ")";
}

void buildModule(ModuleOp module, const ScanKernelDesc &desc) {
  OpBuilder b(module.getContext());
  Location loc = NameLoc::get(b.getStringAttr("fwp-jit test scan"));
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
                           state, rule, a[0], a[1], a[2], betaValue, initial,
                           dy, dFinal, nu, eps);
                       return SmallVector<Value>(grad->getResults());
                     });
}

template <typename T> class ScanKernel final : public CompiledScan {
public:
  ScanKernel(const ScanKernelDesc &desc, CpuModule module)
      : desc(desc), module(std::move(module)) {}

  void forward(int64_t seqLen, int64_t batch, int64_t heads, const void *q,
               const void *k, const void *v, const void *beta,
               const void *initial, void *y, void *finalState) const override {
    Arguments args(seqLen, batch, heads, desc);
    args.common(q, k, v, beta, initial);
    args.steps(y, desc.dValue);
    args.state(finalState);
    call(kForwardName, args);
  }

  void backward(int64_t seqLen, int64_t batch, int64_t heads, const void *q,
                const void *k, const void *v, const void *beta,
                const void *initial, const void *dy, const void *dFinalState,
                void *dq, void *dk, void *dv, void *dbeta,
                void *dInitial) const override {
    Arguments args(seqLen, batch, heads, desc);
    args.common(q, k, v, beta, initial);
    args.steps(dy, desc.dValue);
    if (desc.dFinalState)
      args.state(dFinalState);
    args.steps(dq, desc.dInput);
    args.steps(dk, desc.dInput);
    args.steps(dv, desc.dValue);
    if (desc.rule == Rule::Delta)
      args.gates(dbeta);
    args.state(dInitial);
    call(kBackwardName, args);
  }

private:
  /// Memref descriptors of one call, in the functions' argument order.
  class Arguments {
  public:
    Arguments(int64_t seqLen, int64_t batch, int64_t heads,
              const ScanKernelDesc &desc)
        : seqLen(seqLen), batch(batch), heads(heads), desc(desc) {}

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
      ranked4.push_back(view<T, 4>(data, {seqLen, batch, heads, width}));
      order.push_back(&ranked4.back());
    }
    void gates(const void *data) {
      ranked3.push_back(view<T, 3>(data, {seqLen, batch, heads}));
      order.push_back(&ranked3.back());
    }
    void state(const void *data) {
      ranked4.push_back(
          view<T, 4>(data, {batch, heads, desc.dValue, desc.dFeature()}));
      order.push_back(&ranked4.back());
    }

    /// The packed interface's arguments: one pointer to each argument,
    /// here a pointer to a descriptor.
    SmallVector<void *> packed() {
      SmallVector<void *> args;
      for (void *&descriptor : order)
        args.push_back(&descriptor);
      return args;
    }

  private:
    int64_t seqLen, batch, heads;
    const ScanKernelDesc &desc;
    // Deques: pushing keeps the addresses in `order` valid.
    std::deque<StridedMemRefType<T, 4>> ranked4;
    std::deque<StridedMemRefType<T, 3>> ranked3;
    SmallVector<void *> order;
  };

  void call(const char *name, Arguments &args) const {
    SmallVector<void *> packed = args.packed();
    if (llvm::Error error = module.engine->invokePacked(
            std::string("_mlir_ciface_") + name, packed))
      throw std::runtime_error(llvm::toString(std::move(error)));
  }

  ScanKernelDesc desc;
  CpuModule module;
};

} // namespace

std::unique_ptr<CompiledScan> compileScan(const ScanKernelDesc &desc) {
  auto start = std::chrono::steady_clock::now();
  CpuModule module = compileCpuModule(describe(desc), desc.chunkSize,
                                      [&](ModuleOp m) { buildModule(m, desc); },
                                      {kForwardName, kBackwardName});
  std::unique_ptr<CompiledScan> scan;
  if (desc.dtype == DType::F32)
    scan = std::make_unique<ScanKernel<float>>(desc, std::move(module));
  else
    scan = std::make_unique<ScanKernel<double>>(desc, std::move(module));
  scan->compileSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return scan;
}

namespace {

template <typename T> class DpfpKernel final : public CompiledDpfp {
public:
  DpfpKernel(int64_t dInput, int64_t dFeature, CpuModule module)
      : dInput(dInput), dFeature(dFeature), module(std::move(module)) {}

  void run(int64_t rows, const void *k, void *features) const override {
    using M2 = StridedMemRefType<T, 2>;
    M2 in = view<T, 2>(k, {rows, dInput});
    M2 out = view<T, 2>(features, {rows, dFeature});
    reinterpret_cast<void (*)(M2 *, M2 *)>(module.entries[0])(&in, &out);
  }

private:
  int64_t dInput, dFeature;
  CpuModule module;
};

} // namespace

std::unique_ptr<CompiledDpfp> compileDpfp(int64_t dInput, int64_t nu,
                                          double eps, DType dtype) {
  int64_t dFeature = 2 * dInput * nu;
  auto build = [&](ModuleOp m) {
    OpBuilder b(m.getContext());
    b.setInsertionPointToEnd(m.getBody());
    Type t = dtype == DType::F32 ? Type(b.getF32Type()) : b.getF64Type();
    int64_t dyn = ShapedType::kDynamic;
    auto in = RankedTensorType::get({dyn, dInput}, t);
    auto out = RankedTensorType::get({dyn, dFeature}, t);
    buildEntryFunction(b, m.getLoc(), "dpfp", {in}, {out},
                       [&](OpBuilder &b, ValueRange a) -> SmallVector<Value> {
                         return {DpfpOp::create(b, m.getLoc(), out, a[0], nu,
                                                llvm::APFloat(eps))};
                       });
  };
  CpuModule module =
      compileCpuModule("fwp.dpfp alone", /*chunkSize=*/64, build, {"dpfp"});
  if (dtype == DType::F32)
    return std::make_unique<DpfpKernel<float>>(dInput, dFeature,
                                               std::move(module));
  return std::make_unique<DpfpKernel<double>>(dInput, dFeature,
                                              std::move(module));
}

} // namespace fwp::jit::testing
