//===- LowerChunkQkGrad.cpp - fwp.chunk_qk_grad to linalg on tensors ------===//
//
// One point of an scf.forall over (batch, head, chunk) per chunk, with S its
// start state and dS its end state's gradient:
//
//   dP = tril(dY U^T);  dQ = dY S + dP K;  dK = dP^T Q + U dS;  dWt = -dU S
//
// docs/delta-rule-math.md, section 5.
//
//===----------------------------------------------------------------------===//

#include "ChunkLowering.h"

using namespace mlir;

namespace fwp {

QkGradTiles chunkQkGrad(ChunkTiles &tiles, Value queries, Value keys,
                        Value written, Value dy, Value du, Value start,
                        Value endGrad) {
  int64_t features = cast<RankedTensorType>(keys.getType()).getDimSize(1);
  Value dp = tiles.lowerTriangle(
      tiles.lowerProduct(ProductForm::NT, Triangular::Result, dy, written,
                         tiles.zeros({tiles.chunk, tiles.chunk})));
  QkGradTiles grads;
  grads.dq = tiles.product(ProductForm::NN, dy, start,
                           tiles.zeros({tiles.chunk, features}));
  grads.dq =
      tiles.lowerProduct(ProductForm::NN, Triangular::Lhs, dp, keys, grads.dq);
  grads.dk = tiles.product(ProductForm::TN, dp, queries,
                           tiles.zeros({tiles.chunk, features}));
  grads.dk = tiles.product(ProductForm::NN, written, endGrad, grads.dk);
  if (du)
    grads.dwt = tiles.product(ProductForm::NN, du, start,
                              tiles.zeros({tiles.chunk, features}),
                              /*subtract=*/true);
  return grads;
}

namespace {

struct LowerChunkQkGrad : OpRewritePattern<ChunkQkGradOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ChunkQkGradOp op,
                                PatternRewriter &rewriter) const override {
    if (failed(requireStaticWidth(rewriter, op, op.getQ(), "q")) ||
        failed(requireStaticWidth(rewriter, op, op.getU(), "u")))
      return failure();
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    auto qType = cast<RankedTensorType>(op.getQ().getType());
    ChunkTiles tiles(b, op.getArithmeticType(), op.getChunkSize(),
                     op.getBatchFirst());
    int64_t features = qType.getDimSize(3);
    int64_t values = cast<RankedTensorType>(op.getU().getType()).getDimSize(3);
    Value steps = tiles.stepDim(op.getQ(), 0);
    SmallVector<Value> bounds = tiles.chunkGrid(op.getQ(), steps);
    SmallVector<Value> outputs = {
        tiles.emptyLike(op.getQ(), getElementTypeOrSelf(op.getDq())),
        tiles.emptyLike(op.getK(), getElementTypeOrSelf(op.getDk()))};
    if (op.getDwt())
      outputs.push_back(
          tiles.emptyLike(op.getK(), getElementTypeOrSelf(op.getDwt())));
    auto forall = buildForall(
        b, "chunk_qk_grad", bounds, outputs,
        [&](ValueRange point, ValueRange outs) {
          Value bi = point[0], h = point[1], c = point[2];
          auto [t0, len] = tiles.span(c, steps);
          Value queries = tiles.loadRows(op.getQ(), bi, h, t0, len);
          Value keys = tiles.loadRows(op.getK(), bi, h, t0, len);
          Value written = tiles.loadRows(op.getU(), bi, h, t0, len);
          Value dy = tiles.loadRows(op.getDy(), bi, h, t0, len);
          Value start = tiles.chunkState(op.getH(), bi, h, c, values, features);
          Value endGrad =
              tiles.chunkState(op.getDh(), bi, h, c, values, features);
          Value du;
          if (op.getDwt())
            du = tiles.loadRows(op.getDu(), bi, h, t0, len);
          QkGradTiles grads = chunkQkGrad(tiles, queries, keys, written, dy, du,
                                          start, endGrad);
          SmallVector<Value> results = {grads.dq, grads.dk};
          if (grads.dwt)
            results.push_back(grads.dwt);
          SmallVector<ParallelStore> stores;
          for (auto [result, out] : llvm::zip_equal(results, outs))
            stores.push_back(
                storeRows(tiles, result, out, bi, h, t0, len, features));
          return stores;
        });
    rewriter.replaceOp(op, forall.getResults());
    return success();
  }
};

} // namespace

void populateLowerChunkQkGradPattern(RewritePatternSet &patterns) {
  patterns.add<LowerChunkQkGrad>(patterns.getContext());
}

} // namespace fwp
