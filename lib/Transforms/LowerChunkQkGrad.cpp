//===- LowerChunkQkGrad.cpp - fwp.chunk_qk_grad to linalg on tensors ------===//
//
// One point of an scf.forall over (batch, head, chunk) per chunk, with S its
// start state and dS its end state's gradient:
//
//   dP = tril(dY U^T);  dQ = dY S + dP K;  dK = dP^T Q + U dS;  dWt = -dU S
//
// docs/delta-rule-math.md, section 5.
//
//===----------------------------------------------------------------------===//

#include "ChunkLowering.h"

using namespace mlir;

namespace fwp {
namespace {

struct LowerChunkQkGrad : OpRewritePattern<ChunkQkGradOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ChunkQkGradOp op,
                                PatternRewriter &rewriter) const override {
    if (failed(requireStaticWidth(rewriter, op, op.getQ(), "q")) ||
        failed(requireStaticWidth(rewriter, op, op.getU(), "u")))
      return failure();
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    auto qType = cast<RankedTensorType>(op.getQ().getType());
    Type element = qType.getElementType();
    ChunkTiles tiles(b, element, op.getChunkSize(), op.getBatchFirst());
    int64_t features = qType.getDimSize(3);
    int64_t values = cast<RankedTensorType>(op.getU().getType()).getDimSize(3);
    Value steps = tiles.stepDim(op.getQ(), 0);
    SmallVector<Value> bounds = {tiles.stepDim(op.getQ(), 1),
                                 tiles.stepDim(op.getQ(), 2),
                                 tiles.numChunks(steps)};
    SmallVector<Value> outputs = {tiles.emptyLike(op.getQ()),
                                  tiles.emptyLike(op.getK())};
    if (op.getDwt())
      outputs.push_back(tiles.emptyLike(op.getK()));
    OpFoldResult zero = b.getIndexAttr(0), one = b.getIndexAttr(1);
    auto stateType = RankedTensorType::get({values, features}, element);
    auto forall = buildForall(
        b, "chunk_qk_grad", bounds, outputs,
        [&](ValueRange point, ValueRange outs) {
          Value bi = point[0], h = point[1], c = point[2];
          auto [t0, len] = tiles.span(c, steps);
          Value queries = tiles.loadRows(op.getQ(), bi, h, t0, len);
          Value keys = tiles.loadRows(op.getK(), bi, h, t0, len);
          Value written = tiles.loadRows(op.getU(), bi, h, t0, len);
          Value dy = tiles.loadRows(op.getDy(), bi, h, t0, len);
          ChunkTiles::Slice chunkState = tiles.region(
              {bi, h, c, zero, zero}, {one, one, one, b.getIndexAttr(values),
                                       b.getIndexAttr(features)});
          auto state = [&](Value states) -> Value {
            return tensor::ExtractSliceOp::create(
                b, stateType, states, chunkState.offsets, chunkState.sizes,
                chunkState.strides);
          };
          Value start = state(op.getH()), endGrad = state(op.getDh());
          Value dp = tiles.lowerTriangle(tiles.lowerProduct(
              ProductForm::NT, Triangular::Result, dy, written,
              tiles.zeros({tiles.chunk, tiles.chunk})));
          Value dq = tiles.product(ProductForm::NN, dy, start,
                                   tiles.zeros({tiles.chunk, features}));
          dq = tiles.lowerProduct(ProductForm::NN, Triangular::Lhs, dp, keys,
                                  dq);
          Value dk = tiles.product(ProductForm::TN, dp, queries,
                                   tiles.zeros({tiles.chunk, features}));
          dk = tiles.product(ProductForm::NN, written, endGrad, dk);
          SmallVector<Value> results = {dq, dk};
          if (op.getDwt()) {
            Value du = tiles.loadRows(op.getDu(), bi, h, t0, len);
            results.push_back(
                tiles.product(ProductForm::NN, du, start,
                              tiles.zeros({tiles.chunk, features}),
                              /*subtract=*/true));
          }
          ChunkTiles::Slice rows = tiles.rowsSlice(bi, h, t0, len, features);
          SmallVector<ParallelStore> stores;
          for (auto [result, out] : llvm::zip_equal(results, outs))
            stores.push_back(
                {tiles.copyTo(tiles.firstRows(result, len), out, rows), out,
                 rows});
          return stores;
        });
    rewriter.replaceOp(op, forall.getResults());
    return success();
  }
};

} // namespace

void populateLowerChunkQkGradPattern(RewritePatternSet &patterns) {
  patterns.add<LowerChunkQkGrad>(patterns.getContext());
}

} // namespace fwp
