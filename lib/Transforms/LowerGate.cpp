//===- LowerGate.cpp - Lower fwp.gate to linalg ---------------------------===//
//
// beta = sigmoid(x W_beta^T): a linalg.generic contraction into a
// zero-filled [T, B, H] tensor, then an elementwise linalg.generic that
// applies the sigmoid in place on the contraction's result.
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
#define GEN_PASS_DEF_FWPLOWERGATE
#include "fwp/Transforms/Passes.h.inc"
} // namespace fwp

using namespace mlir;
using namespace fwp;

namespace {

/// z[t, b, h] = sum_m x[t, b, m] * w[h, m], accumulated in the element type
/// from zero: a projection whose outputs are the heads.
Value createLogits(OpBuilder &b, Location loc, Value x, Value w) {
  Type elementType = cast<RankedTensorType>(x.getType()).getElementType();
  SmallVector<OpFoldResult> sizes = {tensor::getMixedSize(b, loc, x, 0),
                                     tensor::getMixedSize(b, loc, x, 1),
                                     tensor::getMixedSize(b, loc, w, 0)};
  return createProjection(b, loc, x, w,
                          createZeros(b, loc, sizes, elementType));
}

/// sigmoid(z) = 1 / (1 + exp(-z)), elementwise and in place. This is the
/// reference's formula; for z below about -88 (float32) exp(-z) is inf and
/// the result 0, while the true value is under 1e-38 anyway.
Value createSigmoid(OpBuilder &b, Location loc, Value logits) {
  auto type = cast<RankedTensorType>(logits.getType());
  SmallVector<AffineMap> maps = {
      AffineMap::getMultiDimIdentityMap(type.getRank(), b.getContext())};
  SmallVector<utils::IteratorType> iterators(type.getRank(),
                                             utils::IteratorType::parallel);
  Type elementType = type.getElementType();
  auto generic = linalg::GenericOp::create(
      b, loc, type, ValueRange{}, ValueRange{logits}, maps, iterators,
      [elementType](OpBuilder &nb, Location nloc, ValueRange args) {
        Value one = arith::ConstantOp::create(
            nb, nloc, nb.getFloatAttr(elementType, 1.0));
        Value negated = arith::NegFOp::create(nb, nloc, args[0]);
        Value exp = math::ExpOp::create(nb, nloc, negated);
        Value denominator = arith::AddFOp::create(nb, nloc, one, exp);
        Value beta = arith::DivFOp::create(nb, nloc, one, denominator);
        linalg::YieldOp::create(nb, nloc, beta);
      });
  return generic.getResult(0);
}

struct LowerGatePattern : OpRewritePattern<GateOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(GateOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value logits = createLogits(rewriter, loc, op.getX(), op.getWBeta());
    Value beta = createSigmoid(rewriter, loc, logits);
    // The result type may know static sizes that x and w_beta leave open.
    if (beta.getType() != op.getBeta().getType())
      beta =
          tensor::CastOp::create(rewriter, loc, op.getBeta().getType(), beta);
    rewriter.replaceOp(op, beta);
    return success();
  }
};

struct FwpLowerGate : fwp::impl::FwpLowerGateBase<FwpLowerGate> {
  using FwpLowerGateBase::FwpLowerGateBase;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<LowerGatePattern>(&getContext());
    if (failed(applyPatternsOnly(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
