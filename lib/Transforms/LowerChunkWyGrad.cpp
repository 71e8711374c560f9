//===- LowerChunkWyGrad.cpp - fwp.chunk_wy_grad to linalg on tensors ------===//
//
// One point of an scf.forall over (batch, head, chunk) per chunk; A made
// again (by blocks, ChunkTriangles.cpp), then (docs/delta-rule-math.md, section
// 5)
//
//   dV  = diag(b) A^T dU
//   dA  = dU (diag(b) V)^T + dWt (diag(b) K)^T
//   dM  = -stril(A^T dA A^T),  G = diag(b) dM
//   dK  = diag(b) A^T dWt + G K + G^T K
//   db  = rowsum((A^T dU) * V) + rowsum((A^T dWt) * K) + rowsum(dM * K K^T)
//
// with stril(A^T dA A^T) kept positive and subtracted where dM is used.
//
//===----------------------------------------------------------------------===//

#include "ChunkLowering.h"

using namespace mlir;

namespace fwp {

WyGradTiles chunkWyGrad(ChunkTiles &tiles, Value keys, Value vals, Value gates,
                        Value du, Value dwt) {
  int64_t chunk = tiles.chunk;
  int64_t features = cast<RankedTensorType>(keys.getType()).getDimSize(1);
  int64_t values = cast<RankedTensorType>(vals.getType()).getDimSize(1);
  Value gram =
      tiles.product(ProductForm::NT, keys, keys, tiles.zeros({chunk, chunk}));
  Value inverse = tiles.inverse(tiles.scaleRows(gates, gram));
  Value atdu =
      tiles.product(ProductForm::TN, inverse, du, tiles.zeros({chunk, values}));
  Value atdw = tiles.product(ProductForm::TN, inverse, dwt,
                             tiles.zeros({chunk, features}));
  Value dv = tiles.scaleRows(gates, atdu);
  Value dk = tiles.scaleRows(gates, atdw);

  Value da = tiles.product(ProductForm::NT, du, tiles.scaleRows(gates, vals),
                           tiles.zeros({chunk, chunk}));
  da = tiles.product(ProductForm::NT, dwt, tiles.scaleRows(gates, keys), da);
  Value atda =
      tiles.product(ProductForm::TN, inverse, da, tiles.zeros({chunk, chunk}));
  // -dM = stril(A^T dA A^T).
  Value negDm =
      tiles.lowerTriangle(tiles.product(ProductForm::NT, atda, inverse,
                                        tiles.zeros({chunk, chunk})),
                          /*strict=*/true);
  Value negG = tiles.scaleRows(gates, negDm);
  dk = tiles.product(ProductForm::NN, negG, keys, dk, /*subtract=*/true);
  dk = tiles.product(ProductForm::TN, negG, keys, dk, /*subtract=*/true);

  Value db = tiles.rowDots(atdu, vals, tiles.zeros({chunk}));
  db = tiles.rowDots(atdw, keys, db);
  db = tiles.rowDots(negDm, gram, db, /*subtract=*/true);

  return {dk, dv, db};
}

namespace {

struct LowerChunkWyGrad : OpRewritePattern<ChunkWyGradOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ChunkWyGradOp op,
                                PatternRewriter &rewriter) const override {
    if (failed(requireStaticWidth(rewriter, op, op.getK(), "k")) ||
        failed(requireStaticWidth(rewriter, op, op.getV(), "v")))
      return failure();
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    auto kType = cast<RankedTensorType>(op.getK().getType());
    ChunkTiles tiles(b, op.getArithmeticType(), op.getChunkSize(),
                     op.getBatchFirst());
    int64_t features = kType.getDimSize(3);
    int64_t values = cast<RankedTensorType>(op.getV().getType()).getDimSize(3);
    Value steps = tiles.stepDim(op.getK(), 0);
    SmallVector<Value> bounds = tiles.chunkGrid(op.getK(), steps);
    Value outputs[] = {
        tiles.emptyLike(op.getK(), getElementTypeOrSelf(op.getDk())),
        tiles.emptyLike(op.getV(), getElementTypeOrSelf(op.getDv())),
        tiles.emptyLike(op.getBeta(), getElementTypeOrSelf(op.getDbeta()))};
    auto forall = buildForall(
        b, "chunk_wy_grad", bounds, outputs,
        [&](ValueRange point, ValueRange outs) {
          Value bi = point[0], h = point[1];
          auto [t0, len] = tiles.span(point[2], steps);
          auto load = [&](Value perStep) {
            return tiles.loadRows(perStep, bi, h, t0, len);
          };
          Value keys = load(op.getK()), vals = load(op.getV());
          Value gates = load(op.getBeta());
          Value du = load(op.getDu()), dwt = load(op.getDwt());

          WyGradTiles grads = chunkWyGrad(tiles, keys, vals, gates, du, dwt);
          Value dk = grads.dk, dv = grads.dv, db = grads.dbeta;

          auto store = [&](Value tile, Value out, int64_t width) {
            return storeRows(tiles, tile, out, bi, h, t0, len, width);
          };
          return SmallVector<ParallelStore>{store(dk, outs[0], features),
                                            store(dv, outs[1], values),
                                            store(db, outs[2], 0)};
        });
    rewriter.replaceOp(op, forall.getResults());
    return success();
  }
};

} // namespace

void populateLowerChunkWyGradPattern(RewritePatternSet &patterns) {
  patterns.add<LowerChunkWyGrad>(patterns.getContext());
}

} // namespace fwp
