//===- FuseChunkForward.cpp - The forward's stages as one kernel ----------===//
//
// fwp.chunk_wy -> fwp.chunk_states -> fwp.chunk_output, where nothing else
// reads the WY form, the start states or the writes, as one scf.forall over
// (batch, head) and in it the chunks in order, each chunk's steps (the WY
// form, its writes, its outputs, the next state) on tiles that never leave
// the kernel:
//
//   Wt, Ut = WY(K, V, b);  U = Ut - Wt S^T;  Y = Q S^T + tril(Q K^T) U;
//   S = S + U^T K
//
// The CPU's choice: a chunk's tiles stay in its core's caches from one step
// to the next, and the start states are never stored. The steps are those
// of the three operations' own lowerings (ChunkLowering.h).
//
//===----------------------------------------------------------------------===//

#include "ChunkLowering.h"

#include "mlir/IR/Dominance.h"

using namespace mlir;

namespace fwp {
namespace {

/// The forward's three stages as one chain: `wy` (delta rule only) feeds
/// `states`, which feeds `output` and nothing else, all with one chunk size
/// and layout.
struct ForwardChain {
  ChunkWyOp wy;
  ChunkStatesOp states;
  /// The per-step values V: through the WY form (delta), or the writes
  /// themselves (sum).
  Value values;
};

FailureOr<ForwardChain> matchForwardChain(ChunkOutputOp output,
                                          PatternRewriter &rewriter) {
  auto states = output.getH().getDefiningOp<ChunkStatesOp>();
  if (!states || output.getU() != states.getU() ||
      output.getK() != states.getK() || !onlyUsedBy(states.getH(), output) ||
      !onlyUsedBy(states.getU(), output) ||
      states.getChunkSize() != output.getChunkSize() ||
      states.getBatchFirst() != output.getBatchFirst())
    return rewriter.notifyMatchFailure(output, "not the states' outputs");
  ForwardChain chain{ChunkWyOp(), states, states.getValues()};
  if (states.getWt()) {
    auto wy = states.getWt().getDefiningOp<ChunkWyOp>();
    if (!wy || states.getValues() != wy.getUt() ||
        states.getWt() != wy.getWt() || wy.getK() != states.getK() ||
        !onlyUsedBy(wy.getWt(), states) || !onlyUsedBy(wy.getUt(), states) ||
        wy.getChunkSize() != states.getChunkSize() ||
        wy.getBatchFirst() != states.getBatchFirst())
      return rewriter.notifyMatchFailure(output, "not the WY form's states");
    chain.wy = wy;
    chain.values = wy.getV();
  }
  if (chain.values.getType() != output.getType())
    return rewriter.notifyMatchFailure(output, "values unlike the outputs");
  // The kernel takes the states' place, so that it comes before every use
  // of the final state.
  if (!DominanceInfo(states->getParentOp())
           .properlyDominates(output.getQ(), states))
    return rewriter.notifyMatchFailure(output, "queries after the states");
  if (failed(requireStaticWidth(rewriter, output, output.getQ(), "q")) ||
      failed(requireStaticWidth(rewriter, output, output.getU(), "u")))
    return failure();
  return chain;
}

struct FuseChunkForward : OpRewritePattern<ChunkOutputOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ChunkOutputOp output,
                                PatternRewriter &rewriter) const override {
    FailureOr<ForwardChain> chain = matchForwardChain(output, rewriter);
    if (failed(chain))
      return failure();
    ChunkWyOp wy = chain->wy;
    ChunkStatesOp states = chain->states;
    Value v = chain->values;

    rewriter.setInsertionPoint(states);
    ImplicitLocOpBuilder b(output.getLoc(), rewriter);
    auto keysType = cast<RankedTensorType>(states.getK().getType());
    Type element = keysType.getElementType();
    ChunkTiles tiles(b, element, output.getChunkSize(), output.getBatchFirst());
    int64_t features = keysType.getDimSize(3);
    int64_t values = output.getU().getType().getDimSize(3);
    Value steps = tiles.stepDim(states.getK(), 0);
    Value chunks = tiles.numChunks(steps);
    SmallVector<Value> bounds = {tiles.stepDim(states.getK(), 1),
                                 tiles.stepDim(states.getK(), 2)};
    Value outputs[] = {
        tiles.emptyLike(v),
        tiles.emptyState(states.getFinalState(), {bounds[0], bounds[1]})};
    OpFoldResult zero = b.getIndexAttr(0);

    auto forall = buildForall(
        b, "chunk_forward", bounds, outputs,
        [&](ValueRange point, ValueRange outs) {
          Value bi = point[0], h = point[1];
          ChunkTiles::View headRows =
              tiles.headRows(outs[0], bi, h, steps, values);
          ChunkTiles::Slice finalSlice = tiles.perHead(
              bi, h, {b.getIndexAttr(values), b.getIndexAttr(features)});
          // The state held transposed (StateTile): once per (batch, head)
          // on the way in and out.
          Value state = tiles.transpose(tiles.startState(
              states.getInitial(), finalSlice, values, features));

          auto loop = scf::ForOp::create(
              b, tiles.index(0), chunks, tiles.index(1),
              ValueRange{state, headRows.tile},
              [&](OpBuilder &nb, Location loc, Value c, ValueRange carried) {
                ImplicitLocOpBuilder cb(loc, nb);
                ChunkTiles chunk(cb, element, tiles.chunk, tiles.batchFirst);
                Value s = carried[0];
                auto [t0, len] = chunk.span(c, steps);
                Value keyTile = chunk.loadRows(states.getK(), bi, h, t0, len);
                KeyTile keys(keyTile, chunk.transpose(keyTile));
                Value vals = chunk.loadRows(v, bi, h, t0, len);
                Value wt;
                if (wy) {
                  WyTiles form =
                      chunkWy(chunk, keys, vals,
                              chunk.loadRows(wy.getBeta(), bi, h, t0, len));
                  wt = form.wt;
                  vals = form.ut;
                }
                StateTile held(s, /*transposed=*/true);
                Value u = chunkWrites(chunk, vals, wt, held);
                Value y = chunkOutput(
                    chunk, chunk.loadRows(output.getQ(), bi, h, t0, len), keys,
                    u, held);
                Value rows = chunk.place(
                    chunk.firstRows(y, len), carried[1],
                    chunk.region({t0, zero}, {len, cb.getIndexAttr(values)}));
                scf::YieldOp::create(
                    cb, ValueRange{chunkNextState(chunk, u, keys, held), rows});
              });
          return SmallVector<ParallelStore>{
              {loop.getResult(1), outs[0], headRows.slice},
              {tiles.copyTo(tiles.transpose(loop.getResult(0)), outs[1],
                            finalSlice),
               outs[1], finalSlice}};
        });
    rewriter.replaceAllUsesWith(states.getFinalState(), forall.getResult(1));
    rewriter.replaceOp(output, forall.getResult(0));
    rewriter.eraseOp(states);
    if (wy)
      rewriter.eraseOp(wy);
    return success();
  }
};

} // namespace

void populateFuseChunkForwardPattern(RewritePatternSet &patterns) {
  patterns.add<FuseChunkForward>(patterns.getContext());
}

} // namespace fwp
