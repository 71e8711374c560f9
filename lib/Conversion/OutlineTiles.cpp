//===- OutlineTiles.cpp - The CPU kernels' tiles as functions of their own ===//
//
// LLVM's loop passes cost more than linearly in the size of a function:
// scalar evolution's caches are cleared and rebuilt for every loop a pass
// changes, across the whole function. A fused scan kernel holds every tile
// of a chunk, a hundred loop nests in one function, and the passes spent
// most of a cold compile there. Each static tile becomes a call to a small
// function instead; tiles that are the same operation on the same types
// share one. The functions are noinline, or LLVM's inliner would rebuild
// the large function.
//
//===----------------------------------------------------------------------===//

#include "TileFunctions.h"

#include "fwp/Conversion/Passes.h"
#include "fwp/Transforms/Kernels.h"

namespace fwp {
#define GEN_PASS_DEF_FWPOUTLINETILES
#include "fwp/Conversion/Passes.h.inc"
} // namespace fwp

using namespace mlir;

namespace fwp {
namespace {

/// The name of the kernel whose forall holds `op`.
StringAttr kernelOf(Operation *op) {
  auto forall = op->getParentOfType<scf::ForallOp>();
  while (forall && !forall->hasAttr(kKernelAttrName))
    forall = forall->getParentOfType<scf::ForallOp>();
  return forall->getAttrOfType<StringAttr>(kKernelAttrName);
}

/// Whether fwp-tiles-to-vectors vectorizes `op`, and so whether it is
/// outlined: a tile of buffers with a static iteration space.
bool isStaticTile(linalg::LinalgOp op) {
  return isInsideKernel(op) && op.hasPureBufferSemantics() &&
         !ShapedType::isDynamicShape(op.getStaticLoopRanges());
}

struct OutlineTilesPass : impl::FwpOutlineTilesBase<OutlineTilesPass> {
  void runOnOperation() override {
    SmallVector<linalg::LinalgOp> tiles;
    getOperation().walk([&](linalg::LinalgOp op) {
      auto fn = op->getParentOfType<func::FuncOp>();
      if (isStaticTile(op) && !fn->hasAttr(kKernelAttrName))
        tiles.push_back(op);
    });
    TileFunctions functions(getOperation());
    for (linalg::LinalgOp op : tiles)
      functions.outline(op, kernelOf(op));
  }
};

} // namespace
} // namespace fwp
