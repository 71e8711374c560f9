//===- Kernels.h - What marks an fwp kernel ---------------------*- C++ -*-===//
//
// fwp-lower-chunks and fwp-tile-scan write each kernel as an scf.forall
// tagged with the `fwp.kernel` attribute, whose value names the kernel
// (chunk_wy, scan_prepare, ...).
// The lowerings of the tile level act on what is inside such a forall.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_TRANSFORMS_KERNELS_H
#define FWP_TRANSFORMS_KERNELS_H

#include "fwp/Dialect/FwpDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

namespace fwp {

/// The attribute that tags a kernel's scf.forall with the kernel's name
/// (verified by the fwp dialect).
constexpr llvm::StringLiteral kKernelAttrName = FwpDialect::kKernelAttrName;

/// Whether `op` is inside a kernel: inside its forall, or in a function
/// that holds one of its tiles (fwp-outline-tiles).
inline bool isInsideKernel(mlir::Operation *op) {
  for (mlir::Operation *parent = op->getParentOp(); parent;
       parent = parent->getParentOp())
    if (mlir::isa<mlir::scf::ForallOp, mlir::func::FuncOp>(parent) &&
        parent->hasAttr(kKernelAttrName))
      return true;
  return false;
}

/// The mapping of a kernel's forall of `rank` dimensions onto the GPU's
/// grid, one instance a thread block (fwp-kernels-to-gpu): #gpu.block<x>,
/// <y>, <z> in turn.
inline mlir::ArrayAttr blockMapping(mlir::MLIRContext *context, size_t rank) {
  llvm::SmallVector<mlir::Attribute> blocks;
  for (size_t d = 0; d < rank; ++d)
    blocks.push_back(mlir::gpu::GPUBlockMappingAttr::get(
        context, static_cast<mlir::gpu::MappingId>(d)));
  return mlir::ArrayAttr::get(context, blocks);
}

/// The kernels under `root`, outermost first.
inline llvm::SmallVector<mlir::scf::ForallOp>
collectKernels(mlir::Operation *root) {
  llvm::SmallVector<mlir::scf::ForallOp> kernels;
  root->walk<mlir::WalkOrder::PreOrder>([&](mlir::scf::ForallOp op) {
    if (op->hasAttr(kKernelAttrName))
      kernels.push_back(op);
  });
  return kernels;
}

} // namespace fwp

#endif // FWP_TRANSFORMS_KERNELS_H
