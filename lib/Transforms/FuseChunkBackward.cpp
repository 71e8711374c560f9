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
// carried (as fwp-tile-scan's fused backward, and the CPU's choice for the
// same reason as the fused forward: a chunk's tiles stay in its core's
// caches, and neither dU nor the per-chunk dS is ever stored):
//
//   dU = tril(Q K^T)^T dY + K dS^T;  the pair's gradients;
//   dS = dS + dY^T Q - dU^T Wt
//
// and dQ and dK taken back through DPFP there (fwp.dpfp_grad on the chunk's
// rows) where the map's gradient alone reads them.
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

/// The backward's per-chunk pair: `qk` feeds dWt to `wy` only, and `sum`
/// adds their key gradients, which nothing else reads.
struct BackwardPair {
  ChunkQkGradOp qk;
  linalg::AddOp sum;
};

FailureOr<BackwardPair> matchBackwardPair(ChunkWyGradOp wy,
                                          PatternRewriter &rewriter) {
  auto qk = wy.getDwt().getDefiningOp<ChunkQkGradOp>();
  if (!qk || qk.getDwt() != wy.getDwt() || !onlyUsedBy(qk.getDwt(), wy) ||
      qk.getK() != wy.getK() || qk.getDu() != wy.getDu() ||
      qk.getChunkSize() != wy.getChunkSize() ||
      qk.getBatchFirst() != wy.getBatchFirst())
    return rewriter.notifyMatchFailure(wy, "dWt not from chunk_qk_grad");
  auto sum = dyn_cast<linalg::AddOp>(*wy.getDk().getUsers().begin());
  if (!wy.getDk().hasOneUse() || !qk.getDk().hasOneUse() || !sum ||
      !llvm::is_contained(sum.getInputs(), qk.getDk()))
    return rewriter.notifyMatchFailure(wy, "key gradients not only summed");
  // The kernel takes the qk gradient's place, before every use of dQ.
  DominanceInfo dominance(qk->getParentOp());
  for (Value operand : {wy.getV(), wy.getBeta()})
    if (!dominance.properlyDominates(operand, qk))
      return rewriter.notifyMatchFailure(wy, "values or gates after dQ");
  if (failed(requireStaticWidth(rewriter, wy, qk.getQ(), "q")) ||
      failed(requireStaticWidth(rewriter, wy, wy.getV(), "v")))
    return failure();
  return BackwardPair{qk, sum};
}

/// What both kernels share: the pair's sizes, tiles and gradients, and the
/// pair replaced by a kernel's results.
struct PairKernel {
  PairKernel(ImplicitLocOpBuilder &b, const BackwardPair &pair,
             ChunkWyGradOp wy)
      : qk(pair.qk), wy(wy), sum(pair.sum),
        tiles(b, qk.getQ().getType().getElementType(), wy.getChunkSize(),
              wy.getBatchFirst()),
        features(qk.getQ().getType().getDimSize(3)),
        values(wy.getV().getType().getDimSize(3)),
        steps(tiles.stepDim(qk.getQ(), 0)) {}

  /// Empty dQ, dK, dV and dbeta.
  SmallVector<Value> gradients() {
    return {tiles.emptyLike(qk.getQ()), tiles.emptyLike(qk.getK()),
            tiles.emptyLike(wy.getV()), tiles.emptyLike(wy.getBeta())};
  }
  /// The widths of dQ, dK, dV and dbeta's rows (0: a scalar a step).
  std::array<int64_t, 4> widths() const {
    return {features, features, values, 0};
  }
  /// dQ, the summed dK, dV and dbeta replaced by the first four of
  /// `results`; the pair erased.
  void replace(PatternRewriter &rewriter, ValueRange results) {
    rewriter.replaceAllUsesWith(qk.getDq(), results[0]);
    rewriter.replaceAllUsesWith(sum.getResult(0), results[1]);
    rewriter.replaceAllUsesWith(wy.getDv(), results[2]);
    rewriter.replaceAllUsesWith(wy.getDbeta(), results[3]);
    rewriter.eraseOp(sum);
    rewriter.eraseOp(wy);
    rewriter.eraseOp(qk);
  }

  ChunkQkGradOp qk;
  ChunkWyGradOp wy;
  linalg::AddOp sum;
  ChunkTiles tiles;
  int64_t features, values;
  Value steps;
};

/// The states' gradient whose dU and dS feed `pair` alone, with the same
/// inputs, chunk size and layout.
FailureOr<ChunkStatesGradOp> matchStatesGrad(const BackwardPair &pair,
                                             ChunkWyGradOp wy,
                                             PatternRewriter &rewriter) {
  ChunkQkGradOp qk = pair.qk;
  auto states = qk.getDh().getDefiningOp<ChunkStatesGradOp>();
  if (!states || states.getDu() != qk.getDu() || !states.getWt() ||
      !onlyUsedBy(states.getDh(), qk) ||
      llvm::any_of(states.getDu().getUsers(),
                   [&](Operation *user) { return user != qk && user != wy; }) ||
      states.getQ() != qk.getQ() || states.getK() != qk.getK() ||
      states.getDy() != qk.getDy() ||
      states.getChunkSize() != qk.getChunkSize() ||
      states.getBatchFirst() != qk.getBatchFirst())
    return rewriter.notifyMatchFailure(wy, "dU and dS not from the states");
  // The kernel takes the states' gradient's place.
  DominanceInfo dominance(states->getParentOp());
  for (Value operand : {qk.getU(), qk.getH(), wy.getV(), wy.getBeta()})
    if (!dominance.properlyDominates(operand, states))
      return rewriter.notifyMatchFailure(wy, "operands after the states");
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

/// Lowers the states' gradient and the pair as one kernel over (batch,
/// head).
struct FuseStatesBackward : OpRewritePattern<ChunkWyGradOp> {
  FuseStatesBackward(MLIRContext *context)
      : OpRewritePattern(context, /*benefit=*/2) {}

  LogicalResult matchAndRewrite(ChunkWyGradOp wy,
                                PatternRewriter &rewriter) const override {
    FailureOr<BackwardPair> pair = matchBackwardPair(wy, rewriter);
    if (failed(pair))
      return failure();
    FailureOr<ChunkStatesGradOp> statesGrad =
        matchStatesGrad(*pair, wy, rewriter);
    if (failed(statesGrad))
      return failure();
    ChunkStatesGradOp states = *statesGrad;
    rewriter.setInsertionPoint(states);
    ImplicitLocOpBuilder b(wy.getLoc(), rewriter);
    PairKernel kernel(b, *pair, wy);
    ChunkQkGradOp qk = kernel.qk;
    ChunkTiles &tiles = kernel.tiles;
    Type element = tiles.element;
    int64_t features = kernel.features, values = kernel.values;
    Value steps = kernel.steps;
    Value chunks = tiles.numChunks(steps);
    SmallVector<Value> bounds = {tiles.stepDim(qk.getQ(), 1),
                                 tiles.stepDim(qk.getQ(), 2)};
    SmallVector<Value> outputs = kernel.gradients();
    outputs.push_back(tiles.emptyState(states.getDInitial(), bounds));
    std::array<int64_t, 4> widths = kernel.widths();
    // dQ and dK through their feature maps where those alone read them.
    DpfpGradOp maps[] = {mapGradientOf(qk.getDq(), states),
                         mapGradientOf(kernel.sum.getResult(0), states)};
    for (int j = 0; j < 2; ++j) {
      if (!maps[j])
        continue;
      outputs[j] = tiles.emptyLike(maps[j].getInput());
      widths[j] = maps[j].getInput().getType().getDimSize(3);
    }
    OpFoldResult zero = b.getIndexAttr(0);

    auto forall = buildForall(
        b, "chunk_backward", bounds, outputs,
        [&](ValueRange point, ValueRange outs) {
          Value bi = point[0], h = point[1];
          // dQ, dK, dV and db of (batch, head), then the state's gradient.
          SmallVector<ChunkTiles::View> heads;
          SmallVector<Value> init;
          for (int i = 0; i < 4; ++i) {
            heads.push_back(tiles.headRows(outs[i], bi, h, steps, widths[i]));
            init.push_back(heads.back().tile);
          }
          ChunkTiles::Slice stateSlice = tiles.perHead(
              bi, h, {b.getIndexAttr(values), b.getIndexAttr(features)});
          init.push_back(tiles.startState(states.getDFinal(), stateSlice,
                                          values, features));

          auto loop = scf::ForOp::create(
              b, tiles.index(0), chunks, tiles.index(1), init,
              [&](OpBuilder &nb, Location loc, Value i, ValueRange carried) {
                ImplicitLocOpBuilder cb(loc, nb);
                ChunkTiles t(cb, element, tiles.chunk, tiles.batchFirst);
                Value c = t.fromLast(i, chunks);
                Value ds = carried[4];
                auto [t0, len] = t.span(c, steps);
                auto load = [&](Value perStep) {
                  return t.loadRows(perStep, bi, h, t0, len);
                };
                Value queries = load(qk.getQ()), keys = load(qk.getK());
                Value dy = load(qk.getDy());
                Value du = chunkWritesGrad(t, queries, keys, dy, ds);
                QkGradTiles qkGrads = chunkQkGrad(
                    t, queries, keys, load(qk.getU()), dy, du,
                    t.chunkState(qk.getH(), bi, h, c, values, features), ds);
                WyGradTiles wyGrads =
                    chunkWyGrad(t, keys, load(wy.getV()), load(wy.getBeta()),
                                du, qkGrads.dwt);
                Value grads[] = {qkGrads.dq, t.add(qkGrads.dk, wyGrads.dk),
                                 wyGrads.dv, wyGrads.dbeta};
                for (int j = 0; j < 2; ++j)
                  if (maps[j])
                    grads[j] = DpfpGradOp::create(
                        cb,
                        RankedTensorType::get({t.chunk, widths[j]}, element),
                        load(maps[j].getInput()), grads[j], maps[j].getNuAttr(),
                        maps[j].getEpsAttr());
                SmallVector<Value> yielded;
                for (int j = 0; j < 4; ++j) {
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
                yielded.push_back(chunkStartGrad(t, queries, dy, du,
                                                 load(states.getWt()), ds));
                scf::YieldOp::create(cb, yielded);
              });
          SmallVector<ParallelStore> stores;
          for (int j = 0; j < 4; ++j)
            stores.push_back({loop.getResult(j), outs[j], heads[j].slice});
          stores.push_back(
              {tiles.copyTo(loop.getResult(4), outs[4], stateSlice), outs[4],
               stateSlice});
          return stores;
        });
    rewriter.replaceAllUsesWith(states.getDInitial(), forall.getResult(4));
    for (int j = 0; j < 2; ++j) {
      if (!maps[j])
        continue;
      rewriter.replaceAllUsesWith(maps[j].getDInput(), forall.getResult(j));
      rewriter.eraseOp(maps[j]);
    }
    kernel.replace(rewriter, forall.getResults());
    rewriter.eraseOp(states);
    return success();
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
    PairKernel kernel(b, *pair, wy);
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

void populateFuseChunkBackwardPattern(RewritePatternSet &patterns) {
  patterns.add<FuseStatesBackward, FuseChunkBackward>(patterns.getContext());
}

} // namespace fwp
