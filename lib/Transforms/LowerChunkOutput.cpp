//===- LowerChunkOutput.cpp - fwp.chunk_output to linalg on tensors -------===//
//
// One point of an scf.forall over (batch, head, chunk) per chunk:
//
//   Y = Q h[c]^T + tril(Q K^T) U
//
// docs/delta-rule-math.md, section 4: the start state read by the queries,
// then the chunk's own writes up to and including each row.
//
//===----------------------------------------------------------------------===//

#include "ChunkLowering.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"

using namespace mlir;

namespace fwp {

Value chunkOutput(ChunkTiles &tiles, Value queries, KeyTile keys, Value writes,
                  StateTile state) {
  int64_t values = cast<RankedTensorType>(writes.getType()).getDimSize(1);
  Value scores = tiles.lowerTriangle(lowerScores(tiles, queries, keys));
  Value y =
      tiles.product(state.transposed ? ProductForm::NN : ProductForm::NT,
                    queries, state.tile, tiles.zeros({tiles.chunk, values}));
  return tiles.lowerProduct(ProductForm::NN, Triangular::Lhs, scores, writes,
                            y);
}

namespace {

struct LowerChunkOutput : OpRewritePattern<ChunkOutputOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ChunkOutputOp op,
                                PatternRewriter &rewriter) const override {
    if (failed(requireStaticWidth(rewriter, op, op.getQ(), "q")) ||
        failed(requireStaticWidth(rewriter, op, op.getU(), "u")))
      return failure();
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    ChunkTiles tiles(b, op.getArithmeticType(), op.getChunkSize(),
                     op.getBatchFirst());
    int64_t features =
        cast<RankedTensorType>(op.getQ().getType()).getDimSize(3);
    int64_t values = cast<RankedTensorType>(op.getU().getType()).getDimSize(3);
    Value steps = tiles.stepDim(op.getQ(), 0);
    SmallVector<Value> bounds = tiles.chunkGrid(op.getQ(), steps);
    Value outputs[] = {
        tiles.emptyLike(op.getU(), getElementTypeOrSelf(op.getY()))};
    auto forall = buildForall(
        b, "chunk_output", bounds, outputs,
        [&](ValueRange point, ValueRange outs) {
          Value bi = point[0], h = point[1], c = point[2];
          auto [t0, len] = tiles.span(c, steps);
          Value queries = tiles.loadRows(op.getQ(), bi, h, t0, len);
          Value keys = tiles.loadRows(op.getK(), bi, h, t0, len);
          Value written = tiles.loadRows(op.getU(), bi, h, t0, len);
          Value start = tiles.chunkState(op.getH(), bi, h, c, values, features);
          Value y = chunkOutput(tiles, queries, keys, written, start);
          return SmallVector<ParallelStore>{
              storeRows(tiles, y, outs[0], bi, h, t0, len, values)};
        });
    rewriter.replaceOp(op, forall.getResults());
    return success();
  }
};

} // namespace

void populateLowerChunkOutputPattern(RewritePatternSet &patterns) {
  patterns.add<LowerChunkOutput>(patterns.getContext());
}

} // namespace fwp
