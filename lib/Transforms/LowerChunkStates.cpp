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

#include "mlir/IR/Dominance.h"

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

/// The results of a fwp.chunk_states kernel; the start states and the
/// writes null where not stored, the outputs null without a fused output.
struct StatesKernel {
  Value finalState, starts, writes, outputs;
};

/// `op` lowered, and with `output` a fwp.chunk_output of its start states
/// and writes made in the same loop; `storeStarts` and `storeWrites`: whether
/// the start states and the writes are stored (others read them).
StatesKernel lowerStates(PatternRewriter &rewriter, ChunkStatesOp op,
                         ChunkOutputOp output, bool storeStarts,
                         bool storeWrites) {
  ImplicitLocOpBuilder b(op.getLoc(), rewriter);
  ChunkTiles tiles(b, op.getArithmeticType(), op.getChunkSize(),
                   op.getBatchFirst());
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

  // The final state first, then what the chunk loop carries after the
  // state: the start states, the writes, the outputs (as asked for).
  SmallVector<Value> outputs = {
      tiles.emptyState(op.getFinalState(), {batch, heads})};
  if (storeStarts)
    outputs.push_back(tiles.emptyState(op.getH(), {batch, heads, chunks}));
  if (storeWrites)
    outputs.push_back(
        tiles.emptyLike(op.getValues(), getElementTypeOrSelf(op.getU())));
  if (output)
    outputs.push_back(
        tiles.emptyLike(op.getValues(), getElementTypeOrSelf(output.getY())));

  OpFoldResult zero = b.getIndexAttr(0), one = b.getIndexAttr(1);
  OpFoldResult blockSize = b.getIndexAttr(block),
               featuresSize = b.getIndexAttr(features);
  auto forall = buildForall(
      b, output ? "chunk_states_output" : "chunk_states", bounds, outputs,
      [&](ValueRange point, ValueRange outs) {
        Value bi = point[0], h = point[1];
        OpFoldResult v0 = tiles.blockStart(point, block, values);
        ValueBlock columns{v0, block};
        SmallVector<ChunkTiles::View> views;
        ValueRange carriedOuts = outs.drop_front();
        if (storeStarts)
          views.push_back(tiles.headStates(carriedOuts[views.size()], bi, h,
                                           chunks, block, features, v0));
        for (bool rows : {storeWrites, bool(output)})
          if (rows)
            views.push_back(tiles.headRows(carriedOuts[views.size()], bi, h,
                                           steps, block, v0));
        ChunkTiles::Slice finalSlice =
            tiles.perHead(bi, h, {blockSize, featuresSize}, {v0});
        SmallVector<Value> init = {
            tiles.startState(op.getInitial(), finalSlice, block, features)};
        for (const ChunkTiles::View &view : views)
          init.push_back(view.tile);

        auto loop = scf::ForOp::create(
            b, tiles.index(0), chunks, tiles.index(1), init,
            [&](OpBuilder &nb, Location loc, Value c, ValueRange carried) {
              ImplicitLocOpBuilder cb(loc, nb);
              ChunkTiles chunkTiles(cb, tiles);
              Value s = carried[0];
              SmallVector<Value> yielded = {Value()};
              auto next = [&]() { return carried[yielded.size()]; };
              if (storeStarts)
                yielded.push_back(chunkTiles.place(
                    s, next(),
                    chunkTiles.region({c, zero, zero},
                                      {one, blockSize, featuresSize})));
              auto [t0, len] = chunkTiles.span(c, steps);
              Value keys = chunkTiles.loadRows(op.getK(), bi, h, t0, len);
              Value wt;
              if (op.getWt())
                wt = chunkTiles.loadRows(op.getWt(), bi, h, t0, len);
              Value u = chunkWrites(
                  chunkTiles,
                  chunkTiles.loadRows(op.getValues(), bi, h, t0, len, columns),
                  wt, s);
              ChunkTiles::Slice rows =
                  chunkTiles.region({t0, zero}, {len, blockSize});
              if (storeWrites)
                yielded.push_back(chunkTiles.place(chunkTiles.firstRows(u, len),
                                                   next(), rows));
              if (output) {
                Value queries =
                    chunkTiles.loadRows(output.getQ(), bi, h, t0, len);
                Value y = chunkOutput(chunkTiles, queries, KeyTile(keys), u,
                                      StateTile(s));
                yielded.push_back(chunkTiles.place(chunkTiles.firstRows(y, len),
                                                   next(), rows));
              }
              // Last: the next state accumulates into the state's tile,
              // which nothing may read after it.
              yielded[0] = chunkNextState(chunkTiles, u, keys, s);
              scf::YieldOp::create(cb, yielded);
            });
        SmallVector<ParallelStore> stores = {
            {tiles.copyTo(loop.getResult(0), outs[0], finalSlice), outs[0],
             finalSlice}};
        for (auto [i, view] : llvm::enumerate(views))
          stores.push_back({loop.getResult(i + 1), carriedOuts[i], view.slice});
        return stores;
      });
  StatesKernel kernel{forall.getResult(0), {}, {}, {}};
  ValueRange carried = forall.getResults().drop_front();
  size_t i = 0;
  if (storeStarts)
    kernel.starts = carried[i++];
  if (storeWrites)
    kernel.writes = carried[i++];
  if (output)
    kernel.outputs = carried[i++];
  return kernel;
}

struct LowerChunkStates : OpRewritePattern<ChunkStatesOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ChunkStatesOp op,
                                PatternRewriter &rewriter) const override {
    if (failed(requireStaticWidth(rewriter, op, op.getK(), "k")) ||
        failed(requireStaticWidth(rewriter, op, op.getValues(), "values")))
      return failure();
    StatesKernel kernel = lowerStates(rewriter, op, ChunkOutputOp(),
                                      /*storeStarts=*/true,
                                      /*storeWrites=*/true);
    rewriter.replaceOp(op, {kernel.starts, kernel.writes, kernel.finalState});
    return success();
  }
};

/// A fwp.chunk_output of a fwp.chunk_states' start states and writes, made
/// in the states' loop over the chunks: the chunk's keys and writes, and
/// the state, are at hand there. The states' kernel, over (batch, head,
/// value block), then writes the outputs; the start states and the writes
/// are stored only where others read them.
struct FuseChunkStatesOutput : OpRewritePattern<ChunkOutputOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ChunkOutputOp output,
                                PatternRewriter &rewriter) const override {
    auto states = output.getH().getDefiningOp<ChunkStatesOp>();
    if (!states || output.getU() != states.getU() ||
        output.getK() != states.getK() ||
        states.getChunkSize() != output.getChunkSize() ||
        states.getBatchFirst() != output.getBatchFirst() ||
        output.getType().getShape() != states.getValues().getType().getShape())
      return rewriter.notifyMatchFailure(output, "not the states' outputs");
    if (failed(requireStaticWidth(rewriter, states, states.getK(), "k")) ||
        failed(requireStaticWidth(rewriter, states, states.getValues(),
                                  "values")) ||
        failed(requireStaticWidth(rewriter, output, output.getQ(), "q")))
      return failure();
    // The kernel takes the states' place, before every use of their
    // results: the queries must be there already.
    if (!DominanceInfo(states->getParentOp())
             .properlyDominates(output.getQ(), states))
      return rewriter.notifyMatchFailure(output, "queries after the states");
    bool storeStarts = !onlyUsedBy(states.getH(), output);
    bool storeWrites = !onlyUsedBy(states.getU(), output);
    rewriter.setInsertionPoint(states);
    StatesKernel kernel =
        lowerStates(rewriter, states, output, storeStarts, storeWrites);
    if (storeStarts)
      rewriter.replaceAllUsesWith(states.getH(), kernel.starts);
    if (storeWrites)
      rewriter.replaceAllUsesWith(states.getU(), kernel.writes);
    rewriter.replaceAllUsesWith(states.getFinalState(), kernel.finalState);
    rewriter.replaceAllUsesWith(output.getResult(), kernel.outputs);
    rewriter.eraseOp(output);
    rewriter.eraseOp(states);
    return success();
  }
};

} // namespace

void populateLowerChunkStatesPattern(RewritePatternSet &patterns) {
  patterns.add<LowerChunkStates>(patterns.getContext());
}

void populateFuseChunkStatesOutputPattern(RewritePatternSet &patterns) {
  patterns.add<FuseChunkStatesOutput>(patterns.getContext());
}

} // namespace fwp
