//===- NVGPUToNVVM.cpp - nvgpu to NVVM at the kernels' index width --------===//
//
// Upstream's convert-nvgpu-to-nvvm always lowers with 64-bit indices, so a
// memref that an nvgpu op reads (cp.async's source) is cast to a 64-bit
// descriptor that convert-gpu-to-nvvm, lowering fwp's kernels with 32-bit
// indices, cannot reconcile with its own. This pass applies upstream's
// patterns with the index width the rest of the kernel is lowered with.
//
//===----------------------------------------------------------------------===//

#include "fwp/Conversion/Passes.h"

#include "mlir/Conversion/LLVMCommon/ConversionTarget.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Conversion/NVGPUToNVVM/NVGPUToNVVM.h"
#include "mlir/Transforms/DialectConversion.h"

namespace fwp {
#define GEN_PASS_DEF_FWPNVGPUTONVVM
#include "fwp/Conversion/Passes.h.inc"
} // namespace fwp

using namespace mlir;

namespace fwp {
namespace {

struct NVGPUToNVVMPass : impl::FwpNVGPUToNVVMBase<NVGPUToNVVMPass> {
  using FwpNVGPUToNVVMBase::FwpNVGPUToNVVMBase;

  void runOnOperation() override {
    MLIRContext *context = &getContext();
    LowerToLLVMOptions options(context);
    options.overrideIndexBitwidth(indexBitwidth);
    LLVMTypeConverter converter(context, options);
    nvgpu::populateCommonGPUTypeAndAttributeConversions(converter);
    // Device-side async tokens only order the copies; they become a dummy
    // i32 that nothing uses (as upstream does).
    converter.addConversion([&](nvgpu::DeviceAsyncTokenType type) -> Type {
      return converter.convertType(IntegerType::get(type.getContext(), 32));
    });
    RewritePatternSet patterns(context);
    populateNVGPUToNVVMConversionPatterns(converter, patterns);
    LLVMConversionTarget target(*context);
    target.addLegalDialect<NVVM::NVVMDialect>();
    target.addIllegalDialect<nvgpu::NVGPUDialect>();
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
} // namespace fwp
