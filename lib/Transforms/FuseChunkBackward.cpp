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
// The steps are those of the two operations' own lowerings
// (ChunkLowering.h).
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

struct FuseChunkBackward : OpRewritePattern<ChunkWyGradOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ChunkWyGradOp wy,
                                PatternRewriter &rewriter) const override {
    FailureOr<BackwardPair> pair = matchBackwardPair(wy, rewriter);
    if (failed(pair))
      return failure();
    ChunkQkGradOp qk = pair->qk;

    rewriter.setInsertionPoint(qk);
    ImplicitLocOpBuilder b(wy.getLoc(), rewriter);
    auto qType = cast<RankedTensorType>(qk.getQ().getType());
    Type element = qType.getElementType();
    ChunkTiles tiles(b, element, wy.getChunkSize(), wy.getBatchFirst());
    int64_t features = qType.getDimSize(3);
    int64_t values = cast<RankedTensorType>(wy.getV().getType()).getDimSize(3);
    Value steps = tiles.stepDim(qk.getQ(), 0);
    SmallVector<Value> bounds = tiles.chunkGrid(qk.getQ(), steps);
    Value outputs[] = {tiles.emptyLike(qk.getQ()), tiles.emptyLike(qk.getK()),
                       tiles.emptyLike(wy.getV()),
                       tiles.emptyLike(wy.getBeta())};
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
    rewriter.replaceAllUsesWith(qk.getDq(), forall.getResult(0));
    rewriter.replaceAllUsesWith(pair->sum.getResult(0), forall.getResult(1));
    rewriter.replaceAllUsesWith(wy.getDv(), forall.getResult(2));
    rewriter.replaceAllUsesWith(wy.getDbeta(), forall.getResult(3));
    rewriter.eraseOp(pair->sum);
    rewriter.eraseOp(wy);
    rewriter.eraseOp(qk);
    return success();
  }
};

} // namespace

void populateFuseChunkBackwardPattern(RewritePatternSet &patterns) {
  patterns.add<FuseChunkBackward>(patterns.getContext());
}

} // namespace fwp
