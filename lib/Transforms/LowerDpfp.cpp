//===- LowerDpfp.cpp - fwp.dpfp not fused into a scan, as linalg ----------===//
//
// fwp-fuse-dpfp folds the DPFP maps of a scan's q and k into the scan; a map
// used anywhere else is lowered here, in three linalg.generic ops over
// [..., D]: the products phi (each gathering its two inputs with
// tensor.extract), their sum per vector, and phi / (sum + eps). A map inside
// a kernel (a chunk's rows, fused there by fwp-lower-chunks) takes its
// products as elementwise products of column ranges instead, which the
// kernels' vectorizer takes (it has no gathers).
//
//===----------------------------------------------------------------------===//

#include "AttentionBuilders.h"
#include "DpfpBuilders.h"
#include "WidenStorage.h"

#include "fwp/Dialect/FwpOps.h"
#include "fwp/Transforms/Passes.h"

#include "mlir/Dialect/Utils/StructuredOpsUtils.h"

namespace fwp {
#define GEN_PASS_DEF_FWPLOWERDPFP
#include "fwp/Transforms/Passes.h.inc"
} // namespace fwp

using namespace mlir;

namespace fwp {

/// x[j] = relu([k, -k])[j] of the vector of `input` at `position` (its
/// leading indices), j in [0, 2d).
Value reluAt(OpBuilder &nb, Location nloc, Value input,
             ArrayRef<Value> position, Value jj, int64_t d) {
  auto index = [&](int64_t v) {
    return arith::ConstantIndexOp::create(nb, nloc, v).getResult();
  };
  Type elementType = cast<RankedTensorType>(input.getType()).getElementType();
  Value zero = arith::ConstantOp::create(nb, nloc, nb.getZeroAttr(elementType));
  SmallVector<Value> at(position);
  at.push_back(arith::RemUIOp::create(nb, nloc, jj, index(d)));
  Value k = tensor::ExtractOp::create(nb, nloc, input, at);
  Value firstHalf =
      arith::CmpIOp::create(nb, nloc, arith::CmpIPredicate::ult, jj, index(d));
  Value signed_ = arith::SelectOp::create(nb, nloc, firstHalf, k,
                                          arith::NegFOp::create(nb, nloc, k));
  Value positive =
      arith::CmpFOp::create(nb, nloc, arith::CmpFPredicate::OGT, signed_, zero);
  return arith::SelectOp::create(nb, nloc, positive, signed_, zero).getResult();
}

/// phi[..., (i-1)*2d + j] = x[j] * x[(j - i) mod 2d], x = relu([k, -k]).
Value createProducts(OpBuilder &b, Location loc, Value input,
                     RankedTensorType resultType, ArrayRef<OpFoldResult> sizes,
                     int64_t d) {
  unsigned rank = resultType.getRank();
  Value init =
      tensor::EmptyOp::create(b, loc, sizes, resultType.getElementType());
  SmallVector<AffineMap> maps = {
      AffineMap::getMultiDimIdentityMap(rank, b.getContext())};
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      b, loc, resultType, ValueRange{}, ValueRange{init}, maps, iterators,
      [&](OpBuilder &nb, Location nloc, ValueRange) {
        auto index = [&](int64_t v) {
          return arith::ConstantIndexOp::create(nb, nloc, v).getResult();
        };
        SmallVector<Value> position;
        for (unsigned dim = 0; dim + 1 < rank; ++dim)
          position.push_back(linalg::IndexOp::create(nb, nloc, dim));
        Value f = linalg::IndexOp::create(nb, nloc, rank - 1);
        Value twoD = index(2 * d);
        Value i = arith::AddIOp::create(
            nb, nloc, arith::DivUIOp::create(nb, nloc, f, twoD), index(1));
        Value j = arith::RemUIOp::create(nb, nloc, f, twoD);
        Value rolled = arith::RemUIOp::create(
            nb, nloc,
            arith::SubIOp::create(nb, nloc,
                                  arith::AddIOp::create(nb, nloc, j, twoD), i),
            twoD);
        auto relu = [&](Value jj) {
          return reluAt(nb, nloc, input, position, jj, d);
        };
        Value product = arith::MulFOp::create(nb, nloc, relu(j), relu(rolled));
        linalg::YieldOp::create(nb, nloc, product);
      });
  return generic.getResult(0);
}

/// sum over the last dimension of `phi`, [...].
Value createRowSums(OpBuilder &b, Location loc, Value phi,
                    ArrayRef<OpFoldResult> sizes, Type elementType) {
  unsigned rank = sizes.size();
  Value zeros = createZeros(b, loc, sizes.drop_back(), elementType);
  MLIRContext *ctx = b.getContext();
  SmallVector<AffineMap> maps = {
      AffineMap::getMultiDimIdentityMap(rank, ctx),
      AffineMap::getMultiDimIdentityMap(rank, ctx).dropResult(rank - 1)};
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  iterators.back() = utils::IteratorType::reduction;
  auto generic = linalg::GenericOp::create(
      b, loc, zeros.getType(), ValueRange{phi}, ValueRange{zeros}, maps,
      iterators, [](OpBuilder &nb, Location nloc, ValueRange args) {
        Value sum = arith::AddFOp::create(nb, nloc, args[1], args[0]);
        linalg::YieldOp::create(nb, nloc, sum);
      });
  return generic.getResult(0);
}

namespace {

/// phi / (sum + eps), [..., D].
Value createNormalized(OpBuilder &b, Location loc, Value phi, Value sums,
                       ArrayRef<OpFoldResult> sizes, double eps) {
  auto type = cast<RankedTensorType>(phi.getType());
  unsigned rank = type.getRank();
  MLIRContext *ctx = b.getContext();
  Value init = tensor::EmptyOp::create(b, loc, sizes, type.getElementType());
  SmallVector<AffineMap> maps = {
      AffineMap::getMultiDimIdentityMap(rank, ctx),
      AffineMap::getMultiDimIdentityMap(rank, ctx).dropResult(rank - 1),
      AffineMap::getMultiDimIdentityMap(rank, ctx)};
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  Type elementType = type.getElementType();
  auto generic = linalg::GenericOp::create(
      b, loc, type, ValueRange{phi, sums}, ValueRange{init}, maps, iterators,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        Value epsilon = arith::ConstantOp::create(
            nb, nloc, nb.getFloatAttr(elementType, eps));
        Value norm = arith::AddFOp::create(nb, nloc, args[1], epsilon);
        Value feature = arith::DivFOp::create(nb, nloc, args[0], norm);
        linalg::YieldOp::create(nb, nloc, feature);
      });
  return generic.getResult(0);
}

struct LowerDpfpPattern : OpRewritePattern<DpfpOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(DpfpOp op,
                                PatternRewriter &rewriter) const override {
    auto inputType = op.getInput().getType();
    int64_t last = inputType.getRank() - 1;
    if (inputType.isDynamicDim(last))
      return rewriter.notifyMatchFailure(op, "the vector size is dynamic");
    Location loc = op.getLoc();
    int64_t d = inputType.getDimSize(last), nu = op.getNu();
    SmallVector<OpFoldResult> sizes =
        tensor::getMixedSizes(rewriter, loc, op.getInput());
    sizes.back() = rewriter.getIndexAttr(2 * d * nu);
    auto resultType = RankedTensorType::get(
        SmallVector<int64_t>(inputType.getShape().drop_back()),
        inputType.getElementType());
    resultType = RankedTensorType::get(
        llvm::to_vector(llvm::concat<const int64_t>(
            resultType.getShape(), ArrayRef<int64_t>{2 * d * nu})),
        inputType.getElementType());
    Value phi =
        mapsByColumns(op)
            ? createProductsByColumns(
                  rewriter, loc, createRelus(rewriter, loc, op.getInput(), d),
                  sizes, d, nu)
            : createProducts(rewriter, loc, op.getInput(), resultType, sizes,
                             d);
    Value sums =
        createRowSums(rewriter, loc, phi, sizes, inputType.getElementType());
    Value features = createNormalized(rewriter, loc, phi, sums, sizes,
                                      op.getEps().convertToDouble());
    if (features.getType() != op.getResult().getType())
      features = tensor::CastOp::create(rewriter, loc, op.getResult().getType(),
                                        features);
    rewriter.replaceOp(op, features);
    return success();
  }
};

struct FwpLowerDpfp : fwp::impl::FwpLowerDpfpBase<FwpLowerDpfp> {
  using FwpLowerDpfpBase::FwpLowerDpfpBase;

  void runOnOperation() override {
    WalkResult dynamic = getOperation()->walk([](Operation *op) {
      Value input;
      if (auto map = dyn_cast<DpfpOp>(op))
        input = map.getInput();
      if (auto grad = dyn_cast<DpfpGradOp>(op))
        input = grad.getInput();
      auto type = input ? cast<RankedTensorType>(input.getType()) : nullptr;
      if (!type || !type.isDynamicDim(type.getRank() - 1))
        return WalkResult::advance();
      op->emitOpError("cannot be lowered: the vector size must be static");
      return WalkResult::interrupt();
    });
    if (dynamic.wasInterrupted())
      return signalPassFailure();
    // A map of 16-bit vectors to f32 features (or its gradient) outside the
    // chunk operations' kernels, which extend the rows they load: on
    // extended vectors.
    SmallVector<Operation *> mixed;
    getOperation()->walk([&](DpfpOp map) {
      if (getElementTypeOrSelf(map.getInput()) !=
          getElementTypeOrSelf(map.getResult()))
        mixed.push_back(map);
    });
    getOperation()->walk([&](DpfpGradOp grad) {
      if (getElementTypeOrSelf(grad.getInput()) !=
          getElementTypeOrSelf(grad.getDFeatures()))
        mixed.push_back(grad);
    });
    for (Operation *op : mixed)
      runInFloat32(op);
    RewritePatternSet patterns(&getContext());
    patterns.add<LowerDpfpPattern>(&getContext());
    populateLowerDpfpGradPattern(patterns);
    if (failed(applyPatternsOnly(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
} // namespace fwp
