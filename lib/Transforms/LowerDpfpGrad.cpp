//===- LowerDpfpGrad.cpp - fwp.dpfp_grad as linalg ------------------------===//
//
// DPFP's backward (docs/delta-rule-math.md, section 2) in five generics over
// the vectors: the products phi again, their sum and their dot product with
// the gradient g, then dL/dphi, dL/dx (a sum over the nu shifts) and dL/dk.
// dL/dphi_m = (g_m s - g . phi) / s^2 with s = sum(phi) + eps is computed
// as (g_m (eps + (sum - phi_m)) - (g . phi - g_m phi_m)) / s^2, which leaves
// phi_m out of both differences rather than cancelling it. Inside a kernel
// the products and dL/dx go by column ranges instead (DpfpColumns.cpp).
//
//===----------------------------------------------------------------------===//

#include "DpfpBuilders.h"

#include "fwp/Dialect/FwpOps.h"
#include "fwp/Transforms/Kernels.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"

using namespace mlir;

namespace fwp {
namespace {

using BodyFn = function_ref<Value(OpBuilder &, Location, ValueRange)>;

/// A generic over `rank` dimensions (the last `reductions` of them reduced)
/// from `inputs` (identity maps unless `maps` says otherwise) into `init`.
Value generic(OpBuilder &b, Location loc, ValueRange inputs, Value init,
              ArrayRef<AffineMap> maps, unsigned rank, unsigned reductions,
              BodyFn body) {
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  for (unsigned i = rank - reductions; i < rank; ++i)
    iterators[i] = utils::IteratorType::reduction;
  return linalg::GenericOp::create(
             b, loc, init.getType(), inputs, ValueRange{init}, maps, iterators,
             [&](OpBuilder &nb, Location nloc, ValueRange args) {
               linalg::YieldOp::create(nb, nloc, body(nb, nloc, args));
             })
      .getResult(0);
}

/// The indices of the dimensions before `count`, inside a linalg body.
SmallVector<Value> leadingIndices(OpBuilder &nb, Location loc, unsigned count) {
  SmallVector<Value> position;
  for (unsigned dim = 0; dim < count; ++dim)
    position.push_back(linalg::IndexOp::create(nb, loc, dim));
  return position;
}

struct LowerDpfpGrad : OpRewritePattern<DpfpGradOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(DpfpGradOp op,
                                PatternRewriter &rewriter) const override {
    auto inputType = cast<RankedTensorType>(op.getInput().getType());
    unsigned rank = inputType.getRank();
    if (inputType.isDynamicDim(rank - 1))
      return rewriter.notifyMatchFailure(op, "the vector size is dynamic");
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    Type element = inputType.getElementType();
    int64_t d = inputType.getDimSize(rank - 1), nu = op.getNu();
    double eps = op.getEps().convertToDouble();
    Value input = op.getInput(), g = op.getDFeatures();

    SmallVector<OpFoldResult> sizes =
        tensor::getMixedSizes(rewriter, loc, input);
    auto withLast = [&](int64_t last) {
      SmallVector<OpFoldResult> s = sizes;
      s.back() = rewriter.getIndexAttr(last);
      return s;
    };
    auto typeWithLast = [&](int64_t last) {
      SmallVector<int64_t> shape(inputType.getShape());
      shape.back() = last;
      return RankedTensorType::get(shape, element);
    };
    auto empty = [&](int64_t last) -> Value {
      return tensor::EmptyOp::create(rewriter, loc, withLast(last), element);
    };
    auto zeros = [&](ArrayRef<OpFoldResult> s) -> Value {
      Value zero = arith::ConstantOp::create(rewriter, loc,
                                             rewriter.getZeroAttr(element));
      Value init = tensor::EmptyOp::create(rewriter, loc, s, element);
      return linalg::FillOp::create(rewriter, loc, zero, init).getResult(0);
    };
    AffineMap all = AffineMap::getMultiDimIdentityMap(rank, ctx);
    AffineMap rows = all.dropResult(rank - 1);
    auto constant = [&](OpBuilder &nb, Location nloc, double v) -> Value {
      return arith::ConstantOp::create(nb, nloc, nb.getFloatAttr(element, v));
    };

    int64_t features = 2 * d * nu;
    // Inside a kernel (a chunk's rows): column ranges, which vectorize (and
    // on the GPU need no tile of the gathering form's shifts).
    bool inKernel = isInsideKernel(op);
    Value x = inKernel ? createRelus(rewriter, loc, input, d) : Value();
    Value phi =
        inKernel ? createProductsByColumns(rewriter, loc, x, withLast(features),
                                           d, nu)
                 : createProducts(rewriter, loc, input, typeWithLast(features),
                                  withLast(features), d);
    Value sums = createRowSums(rewriter, loc, phi, withLast(features), element);
    ArrayRef<OpFoldResult> leading = ArrayRef<OpFoldResult>(sizes).drop_back();
    Value dots = generic(
        rewriter, loc, ValueRange{g, phi}, zeros(leading), {all, all, rows},
        rank, 1, [](OpBuilder &nb, Location nloc, ValueRange a) -> Value {
          return arith::AddFOp::create(
              nb, nloc, a[2], arith::MulFOp::create(nb, nloc, a[0], a[1]));
        });
    Value dphi = generic(
        rewriter, loc, ValueRange{g, phi, sums, dots}, empty(features),
        {all, all, rows, rows, all}, rank, 0,
        [&](OpBuilder &nb, Location nloc, ValueRange a) -> Value {
          Value gm = a[0], phiM = a[1], total = a[2], gDotPhi = a[3];
          Value epsilon = constant(nb, nloc, eps);
          Value s = arith::AddFOp::create(nb, nloc, total, epsilon);
          Value othersSum = arith::AddFOp::create(
              nb, nloc, epsilon, arith::SubFOp::create(nb, nloc, total, phiM));
          Value othersDot = arith::SubFOp::create(
              nb, nloc, gDotPhi, arith::MulFOp::create(nb, nloc, gm, phiM));
          Value scaled = arith::MulFOp::create(nb, nloc, gm, othersSum);
          return arith::DivFOp::create(
              nb, nloc, arith::SubFOp::create(nb, nloc, scaled, othersDot),
              arith::MulFOp::create(nb, nloc, s, s));
        });

    if (inKernel) {
      rewriter.replaceOp(
          op, createInputGradByColumns(rewriter, loc, input, x, dphi, d, nu));
      return success();
    }

    // dx[j] = sum over shifts i of dphi_i[j] x[j - i] + dphi_i[j + i] x[j + i]
    // (mod 2d): a generic over [..., 2d, nu], the shifts reduced.
    // dphi as [..., nu, 2d], read at (..., i, j): the loop over the shifts
    // takes its bounds from it.
    SmallVector<ReassociationIndices> groups;
    for (unsigned dim = 0; dim + 1 < rank; ++dim)
      groups.push_back({static_cast<int64_t>(dim)});
    groups.push_back(
        {static_cast<int64_t>(rank - 1), static_cast<int64_t>(rank)});
    SmallVector<int64_t> byShiftShape(inputType.getShape().drop_back());
    byShiftShape.append({nu, 2 * d});
    SmallVector<OpFoldResult> byShiftSizes(leading);
    byShiftSizes.append(
        {rewriter.getIndexAttr(nu), rewriter.getIndexAttr(2 * d)});
    Value byShift = tensor::ExpandShapeOp::create(
        rewriter, loc, RankedTensorType::get(byShiftShape, element), dphi,
        groups, byShiftSizes);
    SmallVector<AffineExpr> shiftMajor;
    for (unsigned dim = 0; dim + 1 < rank; ++dim)
      shiftMajor.push_back(getAffineDimExpr(dim, ctx));
    shiftMajor.append(
        {getAffineDimExpr(rank, ctx), getAffineDimExpr(rank - 1, ctx)});
    AffineMap widened = AffineMap::getMultiDimIdentityMap(rank + 1, ctx);
    Value dx = generic(
        rewriter, loc, ValueRange{byShift}, zeros(withLast(2 * d)),
        {AffineMap::get(rank + 1, 0, shiftMajor, ctx),
         widened.dropResult(rank)},
        rank + 1, 1, [&](OpBuilder &nb, Location nloc, ValueRange a) -> Value {
          auto index = [&](int64_t v) -> Value {
            return arith::ConstantIndexOp::create(nb, nloc, v);
          };
          SmallVector<Value> position = leadingIndices(nb, nloc, rank - 1);
          Value j = linalg::IndexOp::create(nb, nloc, rank - 1);
          Value shift = arith::AddIOp::create(
              nb, nloc, linalg::IndexOp::create(nb, nloc, rank), index(1));
          Value twoD = index(2 * d);
          Value before = arith::RemUIOp::create(
              nb, nloc,
              arith::SubIOp::create(
                  nb, nloc, arith::AddIOp::create(nb, nloc, j, twoD), shift),
              twoD);
          Value after = arith::RemUIOp::create(
              nb, nloc, arith::AddIOp::create(nb, nloc, j, shift), twoD);
          Value block = arith::MulIOp::create(
              nb, nloc, arith::SubIOp::create(nb, nloc, shift, index(1)), twoD);
          auto dphiAt = [&](Value column) -> Value {
            SmallVector<Value> at(position);
            at.push_back(arith::AddIOp::create(nb, nloc, block, column));
            return tensor::ExtractOp::create(nb, nloc, dphi, at);
          };
          Value own = arith::MulFOp::create(
              nb, nloc, a[0], reluAt(nb, nloc, input, position, before, d));
          Value partner = arith::MulFOp::create(
              nb, nloc, dphiAt(after),
              reluAt(nb, nloc, input, position, after, d));
          return arith::AddFOp::create(
              nb, nloc, a[1], arith::AddFOp::create(nb, nloc, own, partner));
        });

    // dk[n] = dx[n] where k[n] > 0, -dx[n + d] where k[n] < 0.
    Value dk = generic(
        rewriter, loc, ValueRange{input}, empty(d), {all, all}, rank, 0,
        [&](OpBuilder &nb, Location nloc, ValueRange a) -> Value {
          SmallVector<Value> position = leadingIndices(nb, nloc, rank - 1);
          Value n = linalg::IndexOp::create(nb, nloc, rank - 1);
          auto dxAt = [&](Value column) -> Value {
            SmallVector<Value> at(position);
            at.push_back(column);
            return tensor::ExtractOp::create(nb, nloc, dx, at);
          };
          Value zero = constant(nb, nloc, 0.0);
          Value positive = arith::CmpFOp::create(
              nb, nloc, arith::CmpFPredicate::OGT, a[0], zero);
          Value negative = arith::CmpFOp::create(
              nb, nloc, arith::CmpFPredicate::OLT, a[0], zero);
          Value shifted = arith::AddIOp::create(
              nb, nloc, n, arith::ConstantIndexOp::create(nb, nloc, d));
          Value plus =
              arith::SelectOp::create(nb, nloc, positive, dxAt(n), zero);
          Value minus =
              arith::SelectOp::create(nb, nloc, negative, dxAt(shifted), zero);
          return arith::SubFOp::create(nb, nloc, plus, minus);
        });
    if (dk.getType() != op.getDInput().getType())
      dk = tensor::CastOp::create(rewriter, loc, op.getDInput().getType(), dk);
    rewriter.replaceOp(op, dk);
    return success();
  }
};

} // namespace

void populateLowerDpfpGradPattern(RewritePatternSet &patterns) {
  patterns.add<LowerDpfpGrad>(patterns.getContext());
}

} // namespace fwp
