//===- FuseChunkBackward.cpp - The backward's gradients as one kernel -----===//
//
// fwp.chunk_qk_grad -> fwp.chunk_wy_grad (delta rule), where dWt goes to
// the WY gradient only and the two key gradients are summed and nothing
// else, as one scf.forall over (batch, head, chunk): each chunk's
// gradients through Q and K, then through the WY form, on tiles that never
// leave the kernel:
//
//   dQ, dK1, dWt = QkGrad(Q, K, U, dY, dU, S, dS);
//   dK2, dV, db  = WyGrad(K, V, b, dU, dWt);  dK = dK1 + dK2
//
// Where the pair's dU and end-state gradients dS come from a
// fwp.chunk_states_grad that nothing else reads, the three are one
// scf.forall over (batch, head) instead, the chunks last to first, dS
// carried (the CPU's choice, for the same reason as the fused forward: a
// chunk's tiles stay in its core's caches, and neither dU nor the
// per-chunk dS is ever stored):
//
//   dU = tril(Q K^T)^T dY + K dS^T;  the pair's gradients;
//   dS = dS + dY^T Q - dU^T Wt
//
// and dQ and dK taken back through DPFP there (fwp.dpfp_grad on the chunk's
// rows) where the map's gradient alone reads them. The sum rule's states
// and fwp.chunk_qk_grad become the same kernel, with no WY gradient and dU
// stored as the value gradient it is.
//
// The steps are those of the operations' own lowerings (ChunkLowering.h).
//
//===----------------------------------------------------------------------===//

#include "ChunkLowering.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Dominance.h"

using namespace mlir;

namespace fwp {
namespace {

/// The backward's per-chunk gradients: `qk`, and for the delta rule the
/// `wy` that its dWt feeds alone and the `sum` of their key gradients, which
/// nothing else reads (both null for the sum rule, whose value gradient is
/// dU itself).
struct BackwardPair {
  ChunkQkGradOp qk;
  ChunkWyGradOp wy;
  linalg::LinalgOp sum;
};

FailureOr<BackwardPair> matchBackwardPair(ChunkWyGradOp wy,
                                          PatternRewriter &rewriter) {
  auto qk = wy.getDwt().getDefiningOp<ChunkQkGradOp>();
  if (!qk || qk.getDwt() != wy.getDwt() || !onlyUsedBy(qk.getDwt(), wy) ||
      qk.getK() != wy.getK() || qk.getDu() != wy.getDu() ||
      qk.getChunkSize() != wy.getChunkSize() ||
      qk.getBatchFirst() != wy.getBatchFirst())
    return rewriter.notifyMatchFailure(wy, "dWt not from chunk_qk_grad");
  Operation *user = *wy.getDk().getUsers().begin();
  auto sum = dyn_cast<linalg::LinalgOp>(user);
  if (!wy.getDk().hasOneUse() || !qk.getDk().hasOneUse() || !sum ||
      !isKeyGradientSum(user) ||
      !llvm::is_contained(sum.getDpsInputs(), qk.getDk()))
    return rewriter.notifyMatchFailure(wy, "key gradients not only summed");
  // The kernel takes the qk gradient's place, before every use of dQ.
  DominanceInfo dominance(qk->getParentOp());
  for (Value operand : {wy.getV(), wy.getBeta()})
    if (!dominance.properlyDominates(operand, qk))
      return rewriter.notifyMatchFailure(wy, "values or gates after dQ");
  if (failed(requireStaticWidth(rewriter, wy, qk.getQ(), "q")) ||
      failed(requireStaticWidth(rewriter, wy, wy.getV(), "v")))
    return failure();
  return BackwardPair{qk, wy, sum};
}

/// What the kernels share: the pair's sizes, tiles and gradients, and the
/// pair replaced by a kernel's results.
struct PairKernel {
  PairKernel(ImplicitLocOpBuilder &b, const BackwardPair &pair)
      : qk(pair.qk), wy(pair.wy), sum(pair.sum),
        tiles(b, qk.getArithmeticType(), qk.getChunkSize(), qk.getBatchFirst()),
        features(qk.getQ().getType().getDimSize(3)),
        values((wy ? wy.getV() : qk.getU()).getType().getDimSize(3)),
        steps(tiles.stepDim(qk.getQ(), 0)) {}

  /// Empty dQ and dK, and for the delta rule dV and dbeta.
  SmallVector<Value> gradients() {
    SmallVector<Value> empty = {emptyFor(qk.getDq(), qk.getQ()),
                                emptyFor(keyGradient(), qk.getK())};
    if (wy) {
      empty.push_back(emptyFor(wy.getDv(), wy.getV()));
      empty.push_back(emptyFor(wy.getDbeta(), wy.getBeta()));
    }
    return empty;
  }
  /// The widths of their rows (0: a scalar a step).
  SmallVector<int64_t, 4> widths() const {
    if (!wy)
      return {features, features};
    return {features, features, values, 0};
  }
  /// dQ, the (summed) dK, and for the delta rule dV and dbeta replaced by
  /// the first `results`; the pair erased.
  void replace(PatternRewriter &rewriter, ValueRange results) {
    rewriter.replaceAllUsesWith(qk.getDq(), results[0]);
    rewriter.replaceAllUsesWith(keyGradient(), results[1]);
    if (wy) {
      rewriter.replaceAllUsesWith(wy.getDv(), results[2]);
      rewriter.replaceAllUsesWith(wy.getDbeta(), results[3]);
      rewriter.eraseOp(sum);
      rewriter.eraseOp(wy);
    }
    rewriter.eraseOp(qk);
  }
  /// An empty tensor for `replaced`, shaped like `like`.
  Value emptyFor(Value replaced, Value like) {
    return tiles.emptyLike(like, getElementTypeOrSelf(replaced));
  }
  /// The keys' whole gradient.
  Value keyGradient() { return sum ? sum->getResult(0) : Value(qk.getDk()); }

  ChunkQkGradOp qk;
  ChunkWyGradOp wy;
  linalg::LinalgOp sum;
  ChunkTiles tiles;
  int64_t features, values;
  Value steps;
};

/// The sum rule's fwp.chunk_qk_grad (no dWt) as a pair of its own.
FailureOr<BackwardPair> matchSumRulePair(ChunkQkGradOp qk,
                                         PatternRewriter &rewriter) {
  if (qk.getDwt())
    return rewriter.notifyMatchFailure(qk, "the delta rule's gradient");
  if (failed(requireStaticWidth(rewriter, qk, qk.getQ(), "q")) ||
      failed(requireStaticWidth(rewriter, qk, qk.getU(), "u")))
    return failure();
  return BackwardPair{qk, {}, {}};
}

/// The states' gradient whose dU and dS feed `pair`, with the same inputs,
/// chunk size and layout, and Wt exactly for the delta rule. dS feeds the
/// pair alone, and so does the delta rule's dU; the sum rule's dU is its
/// value gradient, which the kernel stores.
FailureOr<ChunkStatesGradOp> matchStatesGrad(const BackwardPair &pair,
                                             Operation *anchor,
                                             PatternRewriter &rewriter) {
  ChunkQkGradOp qk = pair.qk;
  ChunkWyGradOp wy = pair.wy;
  auto states = qk.getDh().getDefiningOp<ChunkStatesGradOp>();
  auto inPair = [&](Operation *user) { return user == qk || user == wy; };
  if (!states || states.getDu() != qk.getDu() ||
      static_cast<bool>(states.getWt()) != static_cast<bool>(wy) ||
      !onlyUsedBy(states.getDh(), qk) ||
      (wy && !llvm::all_of(states.getDu().getUsers(), inPair)) ||
      states.getQ() != qk.getQ() || states.getK() != qk.getK() ||
      states.getDy() != qk.getDy() ||
      states.getChunkSize() != qk.getChunkSize() ||
      states.getBatchFirst() != qk.getBatchFirst())
    return rewriter.notifyMatchFailure(anchor, "dU and dS not from the states");
  // The kernel takes the states' gradient's place.
  DominanceInfo dominance(states->getParentOp());
  SmallVector<Value> operands = {qk.getU(), qk.getH()};
  if (wy)
    operands.append({wy.getV(), wy.getBeta()});
  for (Value operand : operands)
    if (!dominance.properlyDominates(operand, states))
      return rewriter.notifyMatchFailure(anchor, "operands after the states");
  return states;
}

/// The fwp.dpfp_grad that alone reads the feature gradient `grad`, its input
/// of static width and defined before `anchor`: the kernel then takes each
/// chunk's rows back through the map and stores the input's gradient, 2 nu
/// times narrower than the features'.
DpfpGradOp mapGradientOf(Value grad, Operation *anchor) {
  if (!grad.hasOneUse())
    return {};
  auto map = dyn_cast<DpfpGradOp>(*grad.getUsers().begin());
  if (!map || map.getDFeatures() != grad ||
      cast<RankedTensorType>(map.getInput().getType()).isDynamicDim(3) ||
      !DominanceInfo(anchor->getParentOp())
           .properlyDominates(map.getInput(), anchor))
    return {};
  return map;
}

/// The states' gradient and `pair` as one kernel over (batch, head), the
/// chunks last to first: its gradients, for the sum rule dU, and the initial
/// state's gradient.
LogicalResult fuseWithStates(const BackwardPair &pair, Operation *anchor,
                             PatternRewriter &rewriter) {
  FailureOr<ChunkStatesGradOp> statesGrad =
      matchStatesGrad(pair, anchor, rewriter);
  if (failed(statesGrad))
    return failure();
  ChunkStatesGradOp states = *statesGrad;
  rewriter.setInsertionPoint(states);
  ImplicitLocOpBuilder b(anchor->getLoc(), rewriter);
  PairKernel kernel(b, pair);
  ChunkQkGradOp qk = pair.qk;
  ChunkWyGradOp wy = pair.wy;
  ChunkTiles &tiles = kernel.tiles;
  Type element = tiles.element;
  int64_t features = kernel.features, values = kernel.values;
  Value steps = kernel.steps;
  Value chunks = tiles.numChunks(steps);
  SmallVector<Value> bounds = {tiles.stepDim(qk.getQ(), 1),
                               tiles.stepDim(qk.getQ(), 2)};
  SmallVector<Value> outputs = kernel.gradients();
  SmallVector<int64_t, 4> widths = kernel.widths();
  if (!wy) {
    // Shaped as dY: dU itself is replaced by the kernel's result.
    outputs.push_back(kernel.emptyFor(states.getDu(), qk.getDy()));
    widths.push_back(values);
  }
  // The per-step gradients, then the initial state's.
  const size_t stateIndex = outputs.size();
  outputs.push_back(tiles.emptyState(states.getDInitial(), bounds));
  // dQ and dK through their feature maps where those alone read them.
  DpfpGradOp maps[] = {mapGradientOf(qk.getDq(), states),
                       mapGradientOf(kernel.keyGradient(), states)};
  for (int j = 0; j < 2; ++j) {
    if (!maps[j])
      continue;
    outputs[j] = kernel.emptyFor(maps[j].getDInput(), maps[j].getInput());
    widths[j] = maps[j].getInput().getType().getDimSize(3);
  }
  OpFoldResult zero = b.getIndexAttr(0);

  auto forall = buildForall(
      b, "chunk_backward", bounds, outputs,
      [&](ValueRange point, ValueRange outs) {
        Value bi = point[0], h = point[1];
        // The per-step gradients of (batch, head), then the state's.
        SmallVector<ChunkTiles::View> heads;
        SmallVector<Value> init;
        for (size_t i = 0; i < stateIndex; ++i) {
          heads.push_back(tiles.headRows(outs[i], bi, h, steps, widths[i]));
          init.push_back(heads.back().tile);
        }
        ChunkTiles::Slice stateSlice = tiles.perHead(
            bi, h, {b.getIndexAttr(values), b.getIndexAttr(features)});
        init.push_back(
            tiles.startState(states.getDFinal(), stateSlice, values, features));

        auto loop = scf::ForOp::create(
            b, tiles.index(0), chunks, tiles.index(1), init,
            [&](OpBuilder &nb, Location loc, Value i, ValueRange carried) {
              ImplicitLocOpBuilder cb(loc, nb);
              ChunkTiles t(cb, tiles);
              Value c = t.fromLast(i, chunks);
              Value ds = carried[stateIndex];
              auto [t0, len] = t.span(c, steps);
              auto load = [&](Value perStep) {
                return t.loadRows(perStep, bi, h, t0, len);
              };
              Value queries = load(qk.getQ()), keys = load(qk.getK());
              Value dy = load(qk.getDy());
              Value du = chunkWritesGrad(t, queries, keys, dy, ds);
              QkGradTiles qkGrads = chunkQkGrad(
                  t, queries, keys, load(qk.getU()), dy, wy ? du : Value(),
                  t.chunkState(qk.getH(), bi, h, c, values, features), ds);
              SmallVector<Value> grads = {qkGrads.dq, qkGrads.dk};
              if (wy) {
                WyGradTiles wyGrads =
                    chunkWyGrad(t, keys, load(wy.getV()), load(wy.getBeta()),
                                du, qkGrads.dwt);
                grads[1] = t.add(qkGrads.dk, wyGrads.dk);
                grads.append({wyGrads.dv, wyGrads.dbeta});
              } else {
                grads.push_back(du);
              }
              for (int j = 0; j < 2; ++j)
                if (maps[j])
                  grads[j] = DpfpGradOp::create(
                      cb, RankedTensorType::get({t.chunk, widths[j]}, element),
                      load(maps[j].getInput()), grads[j], maps[j].getNuAttr(),
                      maps[j].getEpsAttr());
              SmallVector<Value> yielded;
              for (size_t j = 0; j < stateIndex; ++j) {
                SmallVector<OpFoldResult> offsets = {t0}, sizes = {len};
                if (widths[j]) {
                  offsets.push_back(zero);
                  sizes.push_back(cb.getIndexAttr(widths[j]));
                }
                yielded.push_back(t.place(t.firstRows(grads[j], len),
                                          carried[j],
                                          t.region(offsets, sizes)));
              }
              // Last: it accumulates into dS's tile.
              Value wt = wy ? load(states.getWt()) : Value();
              yielded.push_back(chunkStartGrad(t, queries, dy, du, wt, ds));
              scf::YieldOp::create(cb, yielded);
            });
        SmallVector<ParallelStore> stores;
        for (size_t j = 0; j < stateIndex; ++j)
          stores.push_back({loop.getResult(j), outs[j], heads[j].slice});
        Value state = loop.getResult(stateIndex);
        stores.push_back({tiles.copyTo(state, outs[stateIndex], stateSlice),
                          outs[stateIndex], stateSlice});
        return stores;
      });
  rewriter.replaceAllUsesWith(states.getDInitial(),
                              forall.getResult(stateIndex));
  for (int j = 0; j < 2; ++j) {
    if (!maps[j])
      continue;
    rewriter.replaceAllUsesWith(maps[j].getDInput(), forall.getResult(j));
    rewriter.eraseOp(maps[j]);
  }
  if (!wy)
    rewriter.replaceAllUsesWith(states.getDu(), forall.getResult(2));
  kernel.replace(rewriter, forall.getResults());
  rewriter.eraseOp(states);
  return success();
}

/// The delta rule's states' gradient and pair as one kernel.
struct FuseStatesBackward : OpRewritePattern<ChunkWyGradOp> {
  FuseStatesBackward(MLIRContext *context)
      : OpRewritePattern(context, /*benefit=*/2) {}

  LogicalResult matchAndRewrite(ChunkWyGradOp wy,
                                PatternRewriter &rewriter) const override {
    FailureOr<BackwardPair> pair = matchBackwardPair(wy, rewriter);
    if (failed(pair))
      return failure();
    return fuseWithStates(*pair, wy, rewriter);
  }
};

/// The sum rule's states' gradient and fwp.chunk_qk_grad as one kernel.
struct FuseSumRuleStatesBackward : OpRewritePattern<ChunkQkGradOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ChunkQkGradOp qk,
                                PatternRewriter &rewriter) const override {
    FailureOr<BackwardPair> pair = matchSumRulePair(qk, rewriter);
    if (failed(pair))
      return failure();
    return fuseWithStates(*pair, qk, rewriter);
  }
};

struct FuseChunkBackward : OpRewritePattern<ChunkWyGradOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ChunkWyGradOp wy,
                                PatternRewriter &rewriter) const override {
    FailureOr<BackwardPair> pair = matchBackwardPair(wy, rewriter);
    if (failed(pair))
      return failure();
    rewriter.setInsertionPoint(pair->qk);
    ImplicitLocOpBuilder b(wy.getLoc(), rewriter);
    PairKernel kernel(b, *pair);
    ChunkQkGradOp qk = kernel.qk;
    ChunkTiles &tiles = kernel.tiles;
    int64_t features = kernel.features, values = kernel.values;
    Value steps = kernel.steps;
    SmallVector<Value> bounds = tiles.chunkGrid(qk.getQ(), steps);
    SmallVector<Value> outputs = kernel.gradients();
    auto forall = buildForall(
        b, "chunk_qk_wy_grad", bounds, outputs,
        [&](ValueRange point, ValueRange outs) {
          Value bi = point[0], h = point[1], c = point[2];
          auto [t0, len] = tiles.span(c, steps);
          auto load = [&](Value perStep) {
            return tiles.loadRows(perStep, bi, h, t0, len);
          };
          Value keys = load(qk.getK()), du = load(qk.getDu());
          QkGradTiles qkGrads = chunkQkGrad(
              tiles, load(qk.getQ()), keys, load(qk.getU()), load(qk.getDy()),
              du, tiles.chunkState(qk.getH(), bi, h, c, values, features),
              tiles.chunkState(qk.getDh(), bi, h, c, values, features));
          WyGradTiles wyGrads =
              chunkWyGrad(tiles, keys, load(wy.getV()), load(wy.getBeta()), du,
                          qkGrads.dwt);
          Value dk = tiles.add(qkGrads.dk, wyGrads.dk);

          auto store = [&](Value tile, Value out, int64_t width) {
            return storeRows(tiles, tile, out, bi, h, t0, len, width);
          };
          return SmallVector<ParallelStore>{
              store(qkGrads.dq, outs[0], features),
              store(dk, outs[1], features), store(wyGrads.dv, outs[2], values),
              store(wyGrads.dbeta, outs[3], 0)};
        });
    kernel.replace(rewriter, forall.getResults());
    return success();
  }
};

} // namespace

void populateFuseChunkGradientsPattern(RewritePatternSet &patterns) {
  patterns.add<FuseChunkBackward>(patterns.getContext());
}

void populateFuseChunkBackwardPattern(RewritePatternSet &patterns) {
  patterns
      .add<FuseStatesBackward, FuseSumRuleStatesBackward, FuseChunkBackward>(
          patterns.getContext());
}

} // namespace fwp
