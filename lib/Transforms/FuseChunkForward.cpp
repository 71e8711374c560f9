//===- FuseChunkForward.cpp - The forward's stages as one kernel ----------===//
//
// fwp.chunk_wy -> fwp.chunk_states -> fwp.chunk_output as one scf.forall
// over (batch, head) and in it the chunks in order, each chunk's steps (the
// WY form, its writes, its outputs, the next state) on tiles that stay in
// the kernel:
//
//   Wt, Ut = WY(K, V, b);  U = Ut - Wt S^T;  Y = Q S^T + tril(Q K^T) U;
//   S = S + U^T K
//
// The CPU's choice: a chunk's tiles stay in its core's caches from one step
// to the next. What other operations read as well (in a training step the
// gradients read Wt, U and the start states) the kernel also stores; the
// rest (Ut, and in the forward everything) never leaves it. The steps are
// those of the three operations' own lowerings (ChunkLowering.h).
//
//===----------------------------------------------------------------------===//

#include "ChunkLowering.h"

#include "mlir/IR/Dominance.h"

using namespace mlir;

namespace fwp {
namespace {

/// The forward's three stages as one chain: `wy` (delta rule only) feeds
/// `states`, which feeds `output`, all with one chunk size and layout.
struct ForwardChain {
  ChunkWyOp wy;
  ChunkStatesOp states;
  /// The per-step values V: through the WY form (delta), or the writes
  /// themselves (sum).
  Value values;
  /// The chain's products that operations outside it read too, which the
  /// kernel stores: Wt, the writes U, the start states h.
  Value wt, writes, starts;
};

/// Whether every user of `value` but `anchor`, where the kernel will stand,
/// comes after it.
bool readAfter(Value value, Operation *anchor) {
  DominanceInfo dominance(anchor->getParentOp());
  return llvm::all_of(value.getUsers(), [&](Operation *user) {
    return user == anchor || dominance.properlyDominates(anchor, user);
  });
}

FailureOr<ForwardChain> matchForwardChain(ChunkOutputOp output,
                                          PatternRewriter &rewriter) {
  auto states = output.getH().getDefiningOp<ChunkStatesOp>();
  if (!states || output.getU() != states.getU() ||
      output.getK() != states.getK() ||
      states.getChunkSize() != output.getChunkSize() ||
      states.getBatchFirst() != output.getBatchFirst())
    return rewriter.notifyMatchFailure(output, "not the states' outputs");
  ForwardChain chain{ChunkWyOp(), states, states.getValues(), {}, {}, {}};
  if (!onlyUsedBy(states.getH(), output))
    chain.starts = states.getH();
  if (!onlyUsedBy(states.getU(), output))
    chain.writes = states.getU();
  if (states.getWt()) {
    auto wy = states.getWt().getDefiningOp<ChunkWyOp>();
    if (!wy || states.getValues() != wy.getUt() ||
        states.getWt() != wy.getWt() || wy.getK() != states.getK() ||
        !onlyUsedBy(wy.getUt(), states) || !readAfter(wy.getWt(), states) ||
        wy.getChunkSize() != states.getChunkSize() ||
        wy.getBatchFirst() != states.getBatchFirst())
      return rewriter.notifyMatchFailure(output, "not the WY form's states");
    chain.wy = wy;
    chain.values = wy.getV();
    if (!onlyUsedBy(wy.getWt(), states))
      chain.wt = wy.getWt();
  }
  if (cast<RankedTensorType>(chain.values.getType()).getShape() !=
      output.getType().getShape())
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

/// What one chunk's steps make in the fused kernel.
struct ForwardStep {
  KeyTile keys;
  Value wt, writes, y;
};

/// One chunk through the chain, from its rows [t0, t0 + len) of (bi, h) and
/// the state at its start, `held` transposed.
ForwardStep forwardStep(ChunkTiles &chunk, ForwardChain chain,
                        ChunkOutputOp output, StateTile held, Value bi, Value h,
                        Value t0, Value len) {
  auto load = [&](Value perStep) {
    return chunk.loadRows(perStep, bi, h, t0, len);
  };
  Value keyTile = load(chain.states.getK());
  ForwardStep step{KeyTile(keyTile, chunk.transpose(keyTile)), {}, {}, {}};
  Value vals = load(chain.values);
  if (chain.wy) {
    WyTiles form = chunkWy(chunk, step.keys, vals, load(chain.wy.getBeta()));
    step.wt = form.wt;
    vals = form.ut;
  }
  step.writes = chunkWrites(chunk, vals, step.wt, held);
  step.y =
      chunkOutput(chunk, load(output.getQ()), step.keys, step.writes, held);
  return step;
}

/// A per-step result the kernel stores a chunk's rows at a time: the value
/// it replaces, its empty shared out, its width, and which of a step's
/// tiles it is.
struct StoredRows {
  Value replaced, empty;
  int64_t width;
  Value ForwardStep::*tile;
};

struct FuseChunkForward : OpRewritePattern<ChunkOutputOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ChunkOutputOp output,
                                PatternRewriter &rewriter) const override {
    FailureOr<ForwardChain> chain = matchForwardChain(output, rewriter);
    if (failed(chain))
      return failure();
    ChunkStatesOp states = chain->states;
    Value v = chain->values;

    rewriter.setInsertionPoint(states);
    ImplicitLocOpBuilder b(output.getLoc(), rewriter);
    auto keysType = cast<RankedTensorType>(states.getK().getType());
    ChunkTiles tiles(b, states.getArithmeticType(), output.getChunkSize(),
                     output.getBatchFirst());
    int64_t features = keysType.getDimSize(3);
    int64_t values = output.getU().getType().getDimSize(3);
    Value steps = tiles.stepDim(states.getK(), 0);
    Value chunks = tiles.numChunks(steps);
    SmallVector<Value> bounds = {tiles.stepDim(states.getK(), 1),
                                 tiles.stepDim(states.getK(), 2)};
    // Y, then what the gradients read (sized from the chain's operands:
    // the stored values' own uses are about to be replaced).
    auto emptyFor = [&](Value replaced, Value like) {
      return tiles.emptyLike(like, getElementTypeOrSelf(replaced));
    };
    SmallVector<StoredRows> rows = {{output->getResult(0),
                                     emptyFor(output->getResult(0), v), values,
                                     &ForwardStep::y}};
    if (chain->wt)
      rows.push_back({chain->wt, emptyFor(chain->wt, states.getK()), features,
                      &ForwardStep::wt});
    if (chain->writes)
      rows.push_back({chain->writes, emptyFor(chain->writes, v), values,
                      &ForwardStep::writes});
    // Shared outs: the rows, the start states if stored, the final state.
    SmallVector<Value> outputs;
    for (const StoredRows &row : rows)
      outputs.push_back(row.empty);
    if (chain->starts)
      outputs.push_back(
          tiles.emptyState(chain->starts, {bounds[0], bounds[1], chunks}));
    const size_t finalIndex = outputs.size();
    outputs.push_back(
        tiles.emptyState(states.getFinalState(), {bounds[0], bounds[1]}));
    OpFoldResult zero = b.getIndexAttr(0), one = b.getIndexAttr(1);

    auto forall = buildForall(
        b, "chunk_forward", bounds, outputs,
        [&](ValueRange point, ValueRange outs) {
          Value bi = point[0], h = point[1];
          // The (batch, head) parts of the stored results, carried through
          // the chunk loop after the state.
          SmallVector<ChunkTiles::View> heads;
          for (auto [row, out] : llvm::zip(rows, outs))
            heads.push_back(tiles.headRows(out, bi, h, steps, row.width));
          if (chain->starts)
            heads.push_back(tiles.headStates(outs[rows.size()], bi, h, chunks,
                                             values, features));
          ChunkTiles::Slice finalSlice = tiles.perHead(
              bi, h, {b.getIndexAttr(values), b.getIndexAttr(features)});
          // The state held transposed (StateTile): once per (batch, head)
          // on the way in and out.
          SmallVector<Value> init = {tiles.transpose(tiles.startState(
              states.getInitial(), finalSlice, values, features))};
          for (const ChunkTiles::View &head : heads)
            init.push_back(head.tile);

          auto loop = scf::ForOp::create(
              b, tiles.index(0), chunks, tiles.index(1), init,
              [&](OpBuilder &nb, Location loc, Value c, ValueRange carried) {
                ImplicitLocOpBuilder cb(loc, nb);
                ChunkTiles chunk(cb, tiles);
                Value s = carried[0];
                auto [t0, len] = chunk.span(c, steps);
                StateTile held(s, /*transposed=*/true);
                ForwardStep step =
                    forwardStep(chunk, *chain, output, held, bi, h, t0, len);
                SmallVector<Value> yielded = {Value()};
                for (auto [row, rowsSoFar] :
                     llvm::zip(rows, carried.drop_front()))
                  yielded.push_back(chunk.place(
                      chunk.firstRows(step.*row.tile, len), rowsSoFar,
                      chunk.region({t0, zero},
                                   {len, cb.getIndexAttr(row.width)})));
                if (chain->starts)
                  yielded.push_back(chunk.placeTransposed(
                      s, carried.back(),
                      chunk.region({c, zero, zero},
                                   {one, cb.getIndexAttr(values),
                                    cb.getIndexAttr(features)})));
                // Last: the next state accumulates into the state's tile,
                // which nothing may read after it.
                yielded[0] =
                    chunkNextState(chunk, step.writes, step.keys, held);
                scf::YieldOp::create(cb, yielded);
              });
          SmallVector<ParallelStore> stores;
          for (auto [i, head] : llvm::enumerate(heads))
            stores.push_back({loop.getResult(i + 1), outs[i], head.slice});
          Value finalState = tiles.transpose(loop.getResult(0));
          stores.push_back(
              {tiles.copyTo(finalState, outs[finalIndex], finalSlice),
               outs[finalIndex], finalSlice});
          return stores;
        });
    for (auto [i, row] : llvm::enumerate(rows))
      rewriter.replaceAllUsesWith(row.replaced, forall.getResult(i));
    if (chain->starts)
      rewriter.replaceAllUsesWith(chain->starts, forall.getResult(rows.size()));
    rewriter.replaceAllUsesWith(states.getFinalState(),
                                forall.getResult(finalIndex));
    rewriter.eraseOp(output);
    rewriter.eraseOp(states);
    if (chain->wy)
      rewriter.eraseOp(chain->wy);
    return success();
  }
};

} // namespace

void populateFuseChunkForwardPattern(RewritePatternSet &patterns) {
  patterns.add<FuseChunkForward>(patterns.getContext());
}

} // namespace fwp
