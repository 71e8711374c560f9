//===- KernelConfig.h - The kernels' configuration per target ---*- C++ -*-===//
//
// The tile and kernel choices of each target in one place
// (lib/Transforms/KernelConfig.cpp), chosen once by fwp-configure-kernels,
// recorded on each function as #fwp.kernel_config and read from there by
// the lowerings.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_TRANSFORMS_KERNELCONFIG_H
#define FWP_TRANSFORMS_KERNELCONFIG_H

#include "fwp/ChunkSize.h"
#include "fwp/Dialect/FwpAttrs.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Operation.h"
#include "llvm/Support/CommandLine.h"

namespace fwp {

/// Threads per block of the GPU's scan kernels where none is asked for.
constexpr int64_t kDefaultBlockSize = 128;

/// How the GPU's f32 products run where nothing else is asked for: about
/// f32's accuracy on the tensor cores.
constexpr ProductPrecision kDefaultProductPrecision = ProductPrecision::Tf32x3;

/// The spellings of ProductPrecision as a pass or pipeline option takes
/// them (fwp-configure-kernels' products, fwp-to-ptx's f32-products).
inline llvm::cl::ValuesClass productPrecisionValues() {
  return llvm::cl::values(
      clEnumValN(ProductPrecision::Tf32x3, "tf32x3",
                 "tensor cores, each operand split into two tf32 parts, "
                 "three MMAs: about f32's accuracy"),
      clEnumValN(ProductPrecision::Tf32, "tf32",
                 "one MMA of operands rounded to tf32"),
      clEnumValN(ProductPrecision::CudaCores, "cuda-cores",
                 "no tensor cores: every product to fwp-lower-tiles"));
}

/// The spellings of KernelTarget (fwp-configure-kernels' target).
inline llvm::cl::ValuesClass kernelTargetValues() {
  return llvm::cl::values(
      clEnumValN(KernelTarget::Cpu, "cpu",
                 "the host's cores: the scan's fused chunk kernels"),
      clEnumValN(KernelTarget::Gpu, "gpu", "the GPU's kernels"),
      clEnumValN(KernelTarget::GpuOnHost, "gpu-on-host",
                 "the GPU's kernels run on the host, their local tiles on "
                 "the stack"));
}

/// What a pipeline asks of the configuration: the target, and what a user
/// may choose (the rest is the target's).
struct KernelConfigRequest {
  KernelTarget target = KernelTarget::Cpu;
  int64_t chunkSize = kDefaultChunkSize;
  int64_t blockSize = kDefaultBlockSize;
  ProductPrecision products = kDefaultProductPrecision;
};

/// The configuration of `request`'s target; null, with a diagnostic from
/// `emitError`, if what it asks for is out of range.
KernelConfigAttr
chooseKernelConfig(llvm::function_ref<mlir::InFlightDiagnostic()> emitError,
                   mlir::MLIRContext *context,
                   const KernelConfigRequest &request);

/// The configuration recorded on the function that is or holds `op`, or,
/// where none is (a pass run on its own), `fallback`'s default one.
KernelConfigAttr kernelConfigOf(mlir::Operation *op, KernelTarget fallback);

/// kernelConfigOf(`kernel`) for a pass that lowers to the GPU (`pass`
/// names it): null, with an error on `kernel`, unless it is the GPU's.
KernelConfigAttr gpuKernelConfigOf(mlir::Operation *kernel,
                                   llvm::StringRef pass);

} // namespace fwp

#endif // FWP_TRANSFORMS_KERNELCONFIG_H
