//===- ScanKernelForTesting.cpp - fwp.dpfp alone --------------------------===//

#include "ScanKernelForTesting.h"

#include "CompileSupport.h"
#include "CpuCompiler.h"

#include "fwp/Dialect/FwpOps.h"

using namespace mlir;

namespace fwp::jit::testing {

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
