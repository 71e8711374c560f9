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
// of the three operations' own lowerings (ChunkLowering.h). Features that
// fwp.dpfp makes for this chain alone are made in the kernel, a chunk at a
// time, from the rows of the map's input: 2 nu times fewer bytes read and
// none written.
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

/// The feature map whose features `features` are, when the chain's
/// operations are their only readers.
DpfpOp fusableMap(Value features, const ForwardChain &chain,
                  ChunkOutputOp output) {
  auto map = features.getDefiningOp<DpfpOp>();
  auto inChain = [&](Operation *user) {
    return user == output || user == chain.states || user == chain.wy;
  };
  if (!map || !llvm::all_of(features.getUsers(), inChain))
    return nullptr;
  return map;
}

/// Rows [t0, t0 + len) of per-step features, through `map` (when fused) from
/// the rows of its input. Rows past the sequence are zero either way: the
/// map takes a zero vector to zero.
Value loadFeatureRows(ChunkTiles &chunk, Value features, DpfpOp map, Value bi,
                      Value h, Value t0, Value len) {
  if (!map)
    return chunk.loadRows(features, bi, h, t0, len);
  Value rows = chunk.loadRows(map.getInput(), bi, h, t0, len);
  auto width = cast<RankedTensorType>(features.getType()).getDimSize(3);
  auto type = RankedTensorType::get({chunk.chunk, width}, chunk.element);
  return DpfpOp::create(chunk.b, type, rows, map.getNuAttr(), map.getEpsAttr());
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
    // The sizes from the map's input, when fused: the features go away.
    DpfpOp queryMap = fusableMap(output.getQ(), *chain, output);
    DpfpOp keyMap = fusableMap(states.getK(), *chain, output);
    Value keyRows = keyMap ? keyMap.getInput() : states.getK();

    rewriter.setInsertionPoint(states);
    ImplicitLocOpBuilder b(output.getLoc(), rewriter);
    auto keysType = cast<RankedTensorType>(states.getK().getType());
    Type element = keysType.getElementType();
    ChunkTiles tiles(b, element, output.getChunkSize(), output.getBatchFirst());
    int64_t features = keysType.getDimSize(3);
    int64_t values = output.getU().getType().getDimSize(3);
    Value steps = tiles.stepDim(keyRows, 0);
    Value chunks = tiles.numChunks(steps);
    SmallVector<Value> bounds = {tiles.stepDim(keyRows, 1),
                                 tiles.stepDim(keyRows, 2)};
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
                Value keyTile = loadFeatureRows(chunk, states.getK(), keyMap,
                                                bi, h, t0, len);
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
                Value y = chunkOutput(chunk,
                                      loadFeatureRows(chunk, output.getQ(),
                                                      queryMap, bi, h, t0, len),
                                      keys, u, held);
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
    if (queryMap && queryMap->use_empty())
      rewriter.eraseOp(queryMap);
    if (keyMap && keyMap != queryMap && keyMap->use_empty())
      rewriter.eraseOp(keyMap);
    return success();
  }
};

} // namespace

void populateFuseChunkForwardPattern(RewritePatternSet &patterns) {
  patterns.add<FuseChunkForward>(patterns.getContext());
}

} // namespace fwp
