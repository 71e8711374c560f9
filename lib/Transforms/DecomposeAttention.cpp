//===- DecomposeAttention.cpp - Split fwp.attention into its parts --------===//
//
// Rewrites each fwp.attention into the steps of the FastWeightsAttention
// module (docs/delta-rule-math.md, section 1): the projections x W^T as
// linalg contractions, heads split with tensor.expand_shape, fwp.dpfp on q
// and k, fwp.gate for beta (delta rule only), one fwp.scan, heads merged
// with tensor.collapse_shape, and the output layer o W_o^T + b_o.
//
// Every contraction accumulates in the element type, as the reference does.
// The sequence and batch sizes may be dynamic; d_model must be static,
// because the scan's feature sizes (d_k, 2 d_k nu) have to be.
//
//===----------------------------------------------------------------------===//

#include "AttentionBuilders.h"

#include "fwp/Dialect/FwpOps.h"
#include "fwp/Transforms/Passes.h"

#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace fwp {
#define GEN_PASS_DEF_FWPDECOMPOSEATTENTION
#include "fwp/Transforms/Passes.h.inc"
} // namespace fwp

using namespace mlir;
using namespace fwp;

namespace {

/// DPFP on the per-head q and k ([T, B, H, d_k] -> [T, B, H, 2 d_k nu]),
/// the gate for the delta rule, and the scan from a zero state; returns the
/// per-head outputs [T, B, H, d_k].
Value createHeadScan(OpBuilder &b, AttentionOp op, Value q, Value k, Value v) {
  Location loc = op.getLoc();
  auto headType = cast<RankedTensorType>(q.getType());
  ArrayRef<int64_t> shape = headType.getShape();
  Type elementType = headType.getElementType();
  int64_t nu = op.getNu();
  auto featureType = RankedTensorType::get(
      {shape[0], shape[1], shape[2], 2 * shape[3] * nu}, elementType);
  Value qFeatures = DpfpOp::create(b, loc, featureType, q, nu, op.getEps());
  Value kFeatures = DpfpOp::create(b, loc, featureType, k, nu, op.getEps());

  // Only the delta rule has a write strength.
  Value beta;
  if (op.getRule() == Rule::Delta) {
    auto betaType = RankedTensorType::get(shape.drop_back(), elementType);
    beta = GateOp::create(b, loc, betaType, op.getX(), op.getWBeta());
  }
  return ScanOp::create(b, loc, v.getType(), /*final_state=*/Type(),
                        op.getRule(), qFeatures, kFeatures, v, beta,
                        /*initial=*/Value(), /*dpfp_nu=*/IntegerAttr(),
                        /*dpfp_eps=*/FloatAttr())
      .getY();
}

/// Rewrites one fwp.attention into projections, DPFP, gate, scan and the
/// output layer.
struct DecomposeAttentionPattern : OpRewritePattern<AttentionOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AttentionOp op,
                                PatternRewriter &rewriter) const override {
    std::optional<int64_t> dModel = staticModelSize(op);
    if (!dModel)
      return rewriter.notifyMatchFailure(op, "d_model is not static");
    Location loc = op.getLoc();
    Value x = op.getX();

    SmallVector<OpFoldResult> sizes = modelSizes(rewriter, loc, x, *dModel);
    HeadProjections heads =
        createHeadProjections(rewriter, loc, x, op.getWQ(), op.getWK(),
                              op.getWV(), sizes, op.getHeads());
    Value headOutputs = createHeadScan(rewriter, op, heads.q, heads.k, heads.v);

    // Concatenate the heads in head order, then the output layer.
    Value merged = mergeHeads(rewriter, loc, headOutputs);
    Value bias = createBiasInit(rewriter, loc, op.getBO(), sizes);
    Value y = createProjection(rewriter, loc, merged, op.getWO(), bias);
    // The op's result type may know more static sizes than x does.
    if (y.getType() != op.getY().getType())
      y = tensor::CastOp::create(rewriter, loc, op.getY().getType(), y);
    rewriter.replaceOp(op, y);
    return success();
  }
};

struct FwpDecomposeAttention
    : fwp::impl::FwpDecomposeAttentionBase<FwpDecomposeAttention> {
  using FwpDecomposeAttentionBase::FwpDecomposeAttentionBase;

  void runOnOperation() override {
    // Report ops the pattern cannot take instead of leaving them silently.
    WalkResult unsupported = getOperation()->walk([](Operation *op) {
      std::optional<int64_t> dModel;
      if (auto attention = dyn_cast<AttentionOp>(op))
        dModel = staticModelSize(attention);
      else if (auto grad = dyn_cast<AttentionGradOp>(op))
        dModel = staticModelSize(grad);
      else
        return WalkResult::advance();
      if (dModel)
        return WalkResult::advance();
      op->emitOpError() << "cannot be decomposed: d_model must be static";
      return WalkResult::interrupt();
    });
    if (unsupported.wasInterrupted())
      return signalPassFailure();

    RewritePatternSet patterns(&getContext());
    patterns.add<DecomposeAttentionPattern>(&getContext());
    populateDecomposeAttentionGradPatterns(patterns);
    if (failed(applyPatternsOnly(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
