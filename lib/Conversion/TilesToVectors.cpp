//===- TilesToVectors.cpp - The tile level on the CPU's vector units ------===//
//
// Each tile operation inside an fwp kernel is cut into register tiles and
// vectorized; the vectors are then lowered to what LLVM maps onto the
// host's vector instructions. Products become the classic register-blocked
// micro-kernel: an M x N block of accumulators (fwp/RegisterTile.h: half
// the vector registers) kept in registers across the k loop, each k step an
// outer product (broadcasts of the left column times loads of the right row).
// Elementwise tiles (masks, maps, fills, copies) become one vector per row.
// VectorTiles.h does the work.
//
//===----------------------------------------------------------------------===//

#include "fwp/Conversion/Passes.h"
#include "fwp/Transforms/Kernels.h"

#include "VectorTiles.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"

namespace fwp {
#define GEN_PASS_DEF_FWPTILESTOVECTORS
#include "fwp/Conversion/Passes.h.inc"
} // namespace fwp

using namespace mlir;

namespace fwp {
namespace {

struct TilesToVectorsPass : impl::FwpTilesToVectorsBase<TilesToVectorsPass> {
  using FwpTilesToVectorsBase::FwpTilesToVectorsBase;

  void runOnOperation() override {
    Operation *root = getOperation();
    MLIRContext *ctx = &getContext();
    SmallVector<linalg::LinalgOp> tiles;
    root->walk([&](linalg::LinalgOp op) {
      if (isInsideKernel(op))
        tiles.push_back(op);
    });
    IRRewriter rewriter(ctx);
    for (linalg::LinalgOp op : tiles) {
      if (!op.hasPureBufferSemantics()) {
        op.emitOpError("fwp-tiles-to-vectors expects tiles of buffers");
        return signalPassFailure();
      }
      if (failed(tileAndVectorize(rewriter, op, {registerRows, registerCols})))
        return signalPassFailure();
    }

    if (failed(lowerVectors(root)))
      return signalPassFailure();
  }
};

} // namespace
} // namespace fwp
