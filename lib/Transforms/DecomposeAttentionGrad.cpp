//===- DecomposeAttentionGrad.cpp - Split fwp.attention_grad --------------===//
//
// The backward of FastWeightsAttention (docs/delta-rule-math.md, end of
// section 5): recompute the projections and the gate, then
//
//   do      = dy W_o
//   dq, dk, dv, dbeta, o = fwp.scan_grad(q, k, v, beta, do)  (DPFP fused;
//                          o, the scan's outputs, from its own forward)
//   dW_o    = dy^T o            db_o = sum dy
//   dlogit  = dbeta * beta * (1 - beta)
//   dW_*    = d*^T x            dx = dq W_q + dk W_k + dv W_v + dlogit W_beta
//
// The scans take the raw q and k with DPFP fused: their gradients are then
// with respect to the projections, which is what the chain rule needs next.
//
//===----------------------------------------------------------------------===//

#include "AttentionBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"

using namespace mlir;

namespace fwp {
namespace {

/// dbeta * beta * (1 - beta), elementwise: the sigmoid's backward.
Value createSigmoidGradient(OpBuilder &b, Location loc, Value dbeta,
                            Value beta) {
  auto type = cast<RankedTensorType>(beta.getType());
  unsigned rank = type.getRank();
  SmallVector<AffineMap> maps(
      3, AffineMap::getMultiDimIdentityMap(rank, b.getContext()));
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  Value init = tensor::EmptyOp::create(
      b, loc, tensor::getMixedSizes(b, loc, beta), type.getElementType());
  Type elementType = type.getElementType();
  auto generic = linalg::GenericOp::create(
      b, loc, type, ValueRange{dbeta, beta}, ValueRange{init}, maps, iterators,
      [elementType](OpBuilder &nb, Location nloc, ValueRange args) {
        Value one = arith::ConstantOp::create(
            nb, nloc, nb.getFloatAttr(elementType, 1.0));
        Value complement = arith::SubFOp::create(nb, nloc, one, args[1]);
        Value slope = arith::MulFOp::create(nb, nloc, args[1], complement);
        Value grad = arith::MulFOp::create(nb, nloc, args[0], slope);
        linalg::YieldOp::create(nb, nloc, grad);
      });
  return generic.getResult(0);
}

struct DecomposeAttentionGradPattern : OpRewritePattern<AttentionGradOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AttentionGradOp op,
                                PatternRewriter &rewriter) const override {
    std::optional<int64_t> dModel = staticModelSize(op);
    if (!dModel)
      return rewriter.notifyMatchFailure(op, "d_model is not static");
    Location loc = op.getLoc();
    int64_t heads = op.getHeads(), dHead = *dModel / heads;
    bool delta = op.getRule() == Rule::Delta;
    Value x = op.getX();
    Type elementType = op.getDx().getType().getElementType();
    SmallVector<OpFoldResult> sizes = modelSizes(rewriter, loc, x, *dModel);
    // Zeros for each accumulator of x's shape: a shared one would be copied.
    auto zeros = [&] { return createZeros(rewriter, loc, sizes, elementType); };

    // The forward again: per-head projections, gate and outputs o.
    auto [q, k, v] = createHeadProjections(
        rewriter, loc, x, op.getWQ(), op.getWK(), op.getWV(), sizes, heads);
    auto headType = cast<RankedTensorType>(v.getType());
    Value beta;
    if (delta)
      beta = GateOp::create(
          rewriter, loc,
          RankedTensorType::get(headType.getShape().drop_back(), elementType),
          x, op.getWBeta());
    IntegerAttr nu = op.getNuAttr();
    FloatAttr eps = op.getEpsAttr();

    // The output layer's input gradient, then the scan's gradient, which
    // also returns the scan's outputs o (its forward runs once).
    Value dy = op.getDy();
    Value dOut = createInputGradient(rewriter, loc, dy, op.getWO(), zeros());
    Type betaType = delta ? beta.getType() : Type();
    auto scanGrad = ScanGradOp::create(
        rewriter, loc, headType, headType, headType, betaType,
        /*d_initial=*/Type(), /*y=*/headType, op.getRule(), q, k, v, beta,
        /*initial=*/Value(),
        splitHeads(rewriter, loc, dOut, sizes, heads, dHead),
        /*d_final_state=*/Value(), nu, eps);
    Value o = mergeHeads(rewriter, loc, scanGrad.getY());

    // The output layer's weight and bias gradients.
    auto weightZeros = [&](Value weight) {
      return createZeros(rewriter, loc,
                         tensor::getMixedSizes(rewriter, loc, weight),
                         elementType);
    };
    Value dwO =
        createWeightGradient(rewriter, loc, dy, o, weightZeros(op.getWO()));
    Value dbO = createBiasGradient(rewriter, loc, dy, weightZeros(op.getBO()));

    // The projections and the gate.
    Value dq = mergeHeads(rewriter, loc, scanGrad.getDq());
    Value dk = mergeHeads(rewriter, loc, scanGrad.getDk());
    Value dv = mergeHeads(rewriter, loc, scanGrad.getDv());
    Value dx = createInputGradient(rewriter, loc, dq, op.getWQ(), zeros());
    dx = createInputGradient(rewriter, loc, dk, op.getWK(), dx);
    dx = createInputGradient(rewriter, loc, dv, op.getWV(), dx);
    Value dwQ =
        createWeightGradient(rewriter, loc, dq, x, weightZeros(op.getWQ()));
    Value dwK =
        createWeightGradient(rewriter, loc, dk, x, weightZeros(op.getWK()));
    Value dwV =
        createWeightGradient(rewriter, loc, dv, x, weightZeros(op.getWV()));
    Value dwBeta = weightZeros(op.getWBeta());
    if (delta) {
      Value dLogit =
          createSigmoidGradient(rewriter, loc, scanGrad.getDbeta(), beta);
      dx = createInputGradient(rewriter, loc, dLogit, op.getWBeta(), dx);
      dwBeta = createWeightGradient(rewriter, loc, dLogit, x, dwBeta);
    }

    // Result types may know static sizes that the operands leave open.
    SmallVector<Value> results = {dx, dwQ, dwK, dwV, dwBeta, dwO, dbO};
    for (auto [value, result] : llvm::zip(results, op.getResults()))
      if (value.getType() != result.getType())
        value = tensor::CastOp::create(rewriter, loc, result.getType(), value);
    rewriter.replaceOp(op, results);
    return success();
  }
};

} // namespace

void populateDecomposeAttentionGradPatterns(RewritePatternSet &patterns) {
  patterns.add<DecomposeAttentionGradPattern>(patterns.getContext());
}

} // namespace fwp
