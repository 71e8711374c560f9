//===- LowerChunkStatesGrad.cpp - fwp.chunk_states_grad to linalg ---------===//
//
// One point of an scf.forall over (batch, head, value block) per sequence,
// and in it the chunks last to first (scf.for), the block's rows of the
// state's gradient dS an iter_arg (they need only the block's columns of dY):
//
//   dh[c] = dS;   dU = tril(Q K^T)^T dY + K dS^T;
//   dS = dS + dY^T Q - dU^T Wt       (no dU^T Wt without wt)
//
// docs/delta-rule-math.md, section 5.
//
//===----------------------------------------------------------------------===//

#include "ChunkLowering.h"

using namespace mlir;

namespace fwp {

Value chunkWritesGrad(ChunkTiles &tiles, Value queries, Value keys, Value dy,
                      Value endGrad) {
  int64_t values = cast<RankedTensorType>(dy.getType()).getDimSize(1);
  Value scores = tiles.lowerTriangle(
      tiles.lowerProduct(ProductForm::NT, Triangular::Result, queries, keys,
                         tiles.zeros({tiles.chunk, tiles.chunk})));
  Value du = tiles.product(ProductForm::TN, scores, dy,
                           tiles.zeros({tiles.chunk, values}));
  return tiles.product(ProductForm::NT, keys, endGrad, du);
}

Value chunkStartGrad(ChunkTiles &tiles, Value queries, Value dy, Value du,
                     Value wt, Value endGrad) {
  Value start = tiles.product(ProductForm::TN, dy, queries, endGrad);
  if (!wt)
    return start;
  return tiles.product(ProductForm::TN, du, wt, start, /*subtract=*/true);
}

namespace {

struct LowerChunkStatesGrad : OpRewritePattern<ChunkStatesGradOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ChunkStatesGradOp op,
                                PatternRewriter &rewriter) const override {
    if (failed(requireStaticWidth(rewriter, op, op.getK(), "k")) ||
        failed(requireStaticWidth(rewriter, op, op.getDy(), "dy")))
      return failure();
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    auto kType = cast<RankedTensorType>(op.getK().getType());
    ChunkTiles tiles(b, op.getArithmeticType(), op.getChunkSize(),
                     op.getBatchFirst());
    int64_t features = kType.getDimSize(3);
    int64_t values = cast<RankedTensorType>(op.getDy().getType()).getDimSize(3);
    int64_t block = valueBlockWidth(op, values, features);
    Value steps = tiles.stepDim(op.getK(), 0);
    Value chunks = tiles.numChunks(steps);
    SmallVector<Value> bounds = {tiles.stepDim(op.getK(), 1),
                                 tiles.stepDim(op.getK(), 2)};
    Value outputs[] = {
        tiles.emptyLike(op.getDy(), getElementTypeOrSelf(op.getDu())),
        tiles.emptyState(op.getDh(), {bounds[0], bounds[1], chunks}),
        tiles.emptyState(op.getDInitial(), bounds)};
    if (block < values)
      bounds.push_back(tiles.index(values / block));

    OpFoldResult zero = b.getIndexAttr(0), one = b.getIndexAttr(1);
    OpFoldResult blockSize = b.getIndexAttr(block),
                 featuresSize = b.getIndexAttr(features);
    auto forall = buildForall(
        b, "chunk_states_grad", bounds, outputs,
        [&](ValueRange point, ValueRange outs) {
          Value bi = point[0], h = point[1];
          OpFoldResult v0 = tiles.blockStart(point, block, values);
          ValueBlock columns{v0, block};
          ChunkTiles::View grads =
              tiles.headStates(outs[1], bi, h, chunks, block, features, v0);
          ChunkTiles::View headRows =
              tiles.headRows(outs[0], bi, h, steps, block, v0);
          ChunkTiles::Slice stateSlice =
              tiles.perHead(bi, h, {blockSize, featuresSize}, {v0});
          Value stateGrad =
              tiles.startState(op.getDFinal(), stateSlice, block, features);

          auto loop = scf::ForOp::create(
              b, tiles.index(0), chunks, tiles.index(1),
              ValueRange{stateGrad, grads.tile, headRows.tile},
              [&](OpBuilder &nb, Location loc, Value i, ValueRange carried) {
                ImplicitLocOpBuilder cb(loc, nb);
                ChunkTiles t(cb, tiles);
                Value c = t.fromLast(i, chunks);
                Value ds = carried[0];
                Value grads = t.place(
                    ds, carried[1],
                    t.region({c, zero, zero}, {one, blockSize, featuresSize}));
                auto [t0, len] = t.span(c, steps);
                Value queries = t.loadRows(op.getQ(), bi, h, t0, len);
                Value keys = t.loadRows(op.getK(), bi, h, t0, len);
                Value dy = t.loadRows(op.getDy(), bi, h, t0, len, columns);
                Value du = chunkWritesGrad(t, queries, keys, dy, ds);
                Value wt;
                if (op.getWt())
                  wt = t.loadRows(op.getWt(), bi, h, t0, len);
                Value next = chunkStartGrad(t, queries, dy, du, wt, ds);
                Value rows = t.place(t.firstRows(du, len), carried[2],
                                     t.region({t0, zero}, {len, blockSize}));
                scf::YieldOp::create(cb, ValueRange{next, grads, rows});
              });
          return SmallVector<ParallelStore>{
              {loop.getResult(2), outs[0], headRows.slice},
              {loop.getResult(1), outs[1], grads.slice},
              {tiles.copyTo(loop.getResult(0), outs[2], stateSlice), outs[2],
               stateSlice}};
        });
    rewriter.replaceOp(op, forall.getResults());
    return success();
  }
};

} // namespace

void populateLowerChunkStatesGradPattern(RewritePatternSet &patterns) {
  patterns.add<LowerChunkStatesGrad>(patterns.getContext());
}

} // namespace fwp
