//===- LowerChunkStates.cpp - fwp.chunk_states to linalg on tensors -------===//
//
// One point of an scf.forall over (batch, head, value block) per sequence,
// and in it the chunks in order (scf.for), the block's rows of the state S
// (d_v x D) an iter_arg (a block of the values and the same rows of S are
// all that a block's U and S need):
//
//   h[c] = S;   U = values - Wt S^T (values without wt);   S = S + U^T K
//
// docs/delta-rule-math.md, section 4. The point's start states, its rows of
// U and its final state are iter_args too, written back at the end.
//
//===----------------------------------------------------------------------===//

#include "ChunkLowering.h"

using namespace mlir;

namespace fwp {

Value chunkWrites(ChunkTiles &tiles, Value values, Value wt, StateTile state) {
  if (!wt)
    return values;
  return tiles.product(state.transposed ? ProductForm::NN : ProductForm::NT, wt,
                       state.tile, values, /*subtract=*/true);
}

Value chunkNextState(ChunkTiles &tiles, Value writes, KeyTile keys,
                     StateTile state) {
  if (!state.transposed)
    return tiles.product(ProductForm::TN, writes, keys.rows, state.tile);
  if (keys.transposed)
    return tiles.product(ProductForm::NN, keys.transposed, writes, state.tile);
  return tiles.product(ProductForm::TN, keys.rows, writes, state.tile);
}

namespace {

struct LowerChunkStates : OpRewritePattern<ChunkStatesOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ChunkStatesOp op,
                                PatternRewriter &rewriter) const override {
    if (failed(requireStaticWidth(rewriter, op, op.getK(), "k")) ||
        failed(requireStaticWidth(rewriter, op, op.getValues(), "values")))
      return failure();
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    Type element = op.getK().getType().getElementType();
    ChunkTiles tiles(b, element, op.getChunkSize(), op.getBatchFirst());
    int64_t features = op.getK().getType().getDimSize(3);
    int64_t values = op.getValues().getType().getDimSize(3);
    int64_t block = valueBlockWidth(op, values, features);
    Value steps = tiles.stepDim(op.getK(), 0);
    Value chunks = tiles.numChunks(steps);
    SmallVector<Value> bounds = {tiles.stepDim(op.getK(), 1),
                                 tiles.stepDim(op.getK(), 2)};
    Value batch = bounds[0], heads = bounds[1];
    if (block < values)
      bounds.push_back(tiles.index(values / block));

    Value outputs[] = {tiles.emptyState(op.getH(), {batch, heads, chunks}),
                       tiles.emptyLike(op.getValues()),
                       tiles.emptyState(op.getFinalState(), {batch, heads})};

    OpFoldResult zero = b.getIndexAttr(0), one = b.getIndexAttr(1);
    OpFoldResult blockSize = b.getIndexAttr(block),
                 featuresSize = b.getIndexAttr(features);
    auto forall = buildForall(
        b, "chunk_states", bounds, outputs,
        [&](ValueRange point, ValueRange outs) {
          Value bi = point[0], h = point[1];
          OpFoldResult v0 = tiles.blockStart(point, block, values);
          ValueBlock columns{v0, block};
          ChunkTiles::View starts =
              tiles.headStates(outs[0], bi, h, chunks, block, features, v0);
          ChunkTiles::View headRows =
              tiles.headRows(outs[1], bi, h, steps, block, v0);
          ChunkTiles::Slice finalSlice =
              tiles.perHead(bi, h, {blockSize, featuresSize}, {v0});
          Value state =
              tiles.startState(op.getInitial(), finalSlice, block, features);

          auto loop = scf::ForOp::create(
              b, tiles.index(0), chunks, tiles.index(1),
              ValueRange{state, starts.tile, headRows.tile},
              [&](OpBuilder &nb, Location loc, Value c, ValueRange carried) {
                ImplicitLocOpBuilder cb(loc, nb);
                ChunkTiles chunkTiles(cb, tiles);
                Value s = carried[0];
                Value starts = chunkTiles.place(
                    s, carried[1],
                    chunkTiles.region({c, zero, zero},
                                      {one, blockSize, featuresSize}));
                auto [t0, len] = chunkTiles.span(c, steps);
                Value keys = chunkTiles.loadRows(op.getK(), bi, h, t0, len);
                Value wt;
                if (op.getWt())
                  wt = chunkTiles.loadRows(op.getWt(), bi, h, t0, len);
                Value u = chunkWrites(chunkTiles,
                                      chunkTiles.loadRows(op.getValues(), bi, h,
                                                          t0, len, columns),
                                      wt, s);
                Value rows = chunkTiles.place(
                    chunkTiles.firstRows(u, len), carried[2],
                    chunkTiles.region({t0, zero}, {len, blockSize}));
                Value next = chunkNextState(chunkTiles, u, keys, s);
                scf::YieldOp::create(cb, ValueRange{next, starts, rows});
              });
          return SmallVector<ParallelStore>{
              {loop.getResult(1), outs[0], starts.slice},
              {loop.getResult(2), outs[1], headRows.slice},
              {tiles.copyTo(loop.getResult(0), outs[2], finalSlice), outs[2],
               finalSlice}};
        });
    rewriter.replaceOp(op, forall.getResults());
    return success();
  }
};

} // namespace

void populateLowerChunkStatesPattern(RewritePatternSet &patterns) {
  patterns.add<LowerChunkStates>(patterns.getContext());
}

} // namespace fwp
