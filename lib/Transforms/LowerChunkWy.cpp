//===- LowerChunkWy.cpp - fwp.chunk_wy to linalg on tensors ---------------===//
//
// One point of an scf.forall over (batch, head, chunk) per chunk:
//
//   M  = diag(b) (K K^T)        only M's part below the diagonal is read
//   Wt = diag(b) K, Ut = diag(b) V, then row r from the rows above it:
//   X_r = (diag(b) Base)_r - M[r, :] X     (rows r.. of X still zero)
//
// the forward substitution of docs/delta-rule-math.md, section 4, with
// Base = K for Wt and V for Ut, computed into zero tiles a row at a time.
//
//===----------------------------------------------------------------------===//

#include "ChunkLowering.h"

using namespace mlir;

namespace fwp {

WyTiles chunkWy(ChunkTiles &tiles, KeyTile keys, Value values, Value gates) {
  // Only M's part below the diagonal is read.
  Value m = tiles.scaleRows(gates, lowerScores(tiles, keys.rows, keys));
  Value gatedKeys = tiles.scaleRows(gates, keys.rows);
  Value gatedValues = tiles.scaleRows(gates, values);
  // The CPU's substitution skips the work above the diagonal; on the GPU its
  // rows are dependent steps that leave the tensor cores idle, so A is
  // formed first (by 16 x 16 blocks, ChunkTiles::inverse) and then applied
  // in two whole products.
  if (tiles.rowBlocks)
    return {tiles.substitute(m, gatedKeys), tiles.substitute(m, gatedValues)};
  Value a = tiles.inverse(m);
  auto apply = [&](Value gated) {
    auto type = cast<RankedTensorType>(gated.getType());
    return tiles.product(ProductForm::NN, a, gated,
                         tiles.zeros(type.getShape()));
  };
  return {apply(gatedKeys), apply(gatedValues)};
}

namespace {

struct LowerChunkWy : OpRewritePattern<ChunkWyOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ChunkWyOp op,
                                PatternRewriter &rewriter) const override {
    if (failed(requireStaticWidth(rewriter, op, op.getK(), "k")) ||
        failed(requireStaticWidth(rewriter, op, op.getV(), "v")))
      return failure();
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    ChunkTiles tiles(b, op.getArithmeticType(), op.getChunkSize(),
                     op.getBatchFirst());
    Value steps = tiles.stepDim(op.getK(), 0);
    SmallVector<Value> bounds = tiles.chunkGrid(op.getK(), steps);
    Value outputs[] = {tiles.emptyLike(op.getK(), op.getArithmeticType()),
                       tiles.emptyLike(op.getV(), op.getArithmeticType())};
    int64_t features = op.getK().getType().getDimSize(3);
    int64_t values = op.getV().getType().getDimSize(3);
    auto forall = buildForall(
        b, "chunk_wy", bounds, outputs, [&](ValueRange point, ValueRange outs) {
          auto [t0, len] = tiles.span(point[2], steps);
          Value keys = tiles.loadRows(op.getK(), point[0], point[1], t0, len);
          Value vals = tiles.loadRows(op.getV(), point[0], point[1], t0, len);
          Value gates =
              tiles.loadRows(op.getBeta(), point[0], point[1], t0, len);
          auto [wt, ut] = chunkWy(tiles, keys, vals, gates);
          return SmallVector<ParallelStore>{
              storeRows(tiles, wt, outs[0], point[0], point[1], t0, len,
                        features),
              storeRows(tiles, ut, outs[1], point[0], point[1], t0, len,
                        values)};
        });
    rewriter.replaceOp(op, forall.getResults());
    return success();
  }
};

} // namespace

void populateLowerChunkWyPattern(RewritePatternSet &patterns) {
  patterns.add<LowerChunkWy>(patterns.getContext());
}

} // namespace fwp
