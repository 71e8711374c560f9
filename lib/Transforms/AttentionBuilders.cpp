//===- AttentionBuilders.cpp - linalg pieces of fwp.attention -------------===//
//
// Every contraction accumulates in the element type, as the reference does.
//
//===----------------------------------------------------------------------===//

#include "AttentionBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;

namespace fwp {

Value createZeros(OpBuilder &b, Location loc, ArrayRef<OpFoldResult> sizes,
                  Type elementType) {
  Value empty = tensor::EmptyOp::create(b, loc, sizes, elementType);
  Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(elementType));
  return linalg::FillOp::create(b, loc, zero, empty).getResult(0);
}

Value createContraction(OpBuilder &b, Location loc, Value lhs, Value rhs,
                        Value init, ArrayRef<AffineMap> maps,
                        unsigned parallel) {
  SmallVector<utils::IteratorType> iterators(maps[0].getNumDims(),
                                             utils::IteratorType::reduction);
  std::fill_n(iterators.begin(), parallel, utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      b, loc, init.getType(), ValueRange{lhs, rhs}, ValueRange{init}, maps,
      iterators, [](OpBuilder &nb, Location nloc, ValueRange args) {
        // Reassociable, so that LLVM may vectorise the reduction.
        auto flags =
            arith::FastMathFlags::reassoc | arith::FastMathFlags::contract;
        Value product =
            arith::MulFOp::create(nb, nloc, args[0], args[1], flags);
        Value sum = arith::AddFOp::create(nb, nloc, args[2], product, flags);
        linalg::YieldOp::create(nb, nloc, sum);
      });
  return generic.getResult(0);
}

Value createProjection(OpBuilder &b, Location loc, Value x, Value weight,
                       Value init) {
  MLIRContext *ctx = b.getContext();
  AffineExpr t, bt, o, m;
  bindDims(ctx, t, bt, o, m);
  return createContraction(b, loc, x, weight, init,
                           {AffineMap::get(4, 0, {t, bt, m}, ctx),
                            AffineMap::get(4, 0, {o, m}, ctx),
                            AffineMap::get(4, 0, {t, bt, o}, ctx)},
                           3);
}

Value createInputGradient(OpBuilder &b, Location loc, Value g, Value weight,
                          Value init) {
  MLIRContext *ctx = b.getContext();
  AffineExpr t, bt, m, o;
  bindDims(ctx, t, bt, m, o);
  return createContraction(b, loc, g, weight, init,
                           {AffineMap::get(4, 0, {t, bt, o}, ctx),
                            AffineMap::get(4, 0, {o, m}, ctx),
                            AffineMap::get(4, 0, {t, bt, m}, ctx)},
                           3);
}

Value createWeightGradient(OpBuilder &b, Location loc, Value g, Value x,
                           Value init) {
  MLIRContext *ctx = b.getContext();
  AffineExpr o, m, t, bt;
  bindDims(ctx, o, m, t, bt);
  return createContraction(b, loc, g, x, init,
                           {AffineMap::get(4, 0, {t, bt, o}, ctx),
                            AffineMap::get(4, 0, {t, bt, m}, ctx),
                            AffineMap::get(4, 0, {o, m}, ctx)},
                           2);
}

Value createBiasGradient(OpBuilder &b, Location loc, Value g, Value init) {
  MLIRContext *ctx = b.getContext();
  AffineExpr o, t, bt;
  bindDims(ctx, o, t, bt);
  SmallVector<AffineMap> maps = {AffineMap::get(3, 0, {t, bt, o}, ctx),
                                 AffineMap::get(3, 0, {o}, ctx)};
  SmallVector<utils::IteratorType> iterators = {utils::IteratorType::parallel,
                                                utils::IteratorType::reduction,
                                                utils::IteratorType::reduction};
  auto generic = linalg::GenericOp::create(
      b, loc, init.getType(), ValueRange{g}, ValueRange{init}, maps, iterators,
      [](OpBuilder &nb, Location nloc, ValueRange args) {
        Value sum = arith::AddFOp::create(nb, nloc, args[1], args[0],
                                          arith::FastMathFlags::reassoc);
        linalg::YieldOp::create(nb, nloc, sum);
      });
  return generic.getResult(0);
}

Value createBiasInit(OpBuilder &b, Location loc, Value bias,
                     ArrayRef<OpFoldResult> sizes) {
  MLIRContext *ctx = b.getContext();
  Type elementType = cast<RankedTensorType>(bias.getType()).getElementType();
  Value empty = tensor::EmptyOp::create(b, loc, sizes, elementType);
  AffineExpr t, bt, o;
  bindDims(ctx, t, bt, o);
  SmallVector<AffineMap> maps = {AffineMap::get(3, 0, {o}, ctx),
                                 AffineMap::getMultiDimIdentityMap(3, ctx)};
  SmallVector<utils::IteratorType> iterators(3, utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      b, loc, empty.getType(), ValueRange{bias}, ValueRange{empty}, maps,
      iterators, [](OpBuilder &nb, Location nloc, ValueRange args) {
        linalg::YieldOp::create(nb, nloc, args[0]);
      });
  return generic.getResult(0);
}

/// The static sizes in `sizes`, with ShapedType::kDynamic for the others.
static SmallVector<int64_t> staticShape(ArrayRef<OpFoldResult> sizes) {
  SmallVector<int64_t> shape;
  for (OpFoldResult size : sizes) {
    std::optional<int64_t> known = getConstantIntValue(size);
    shape.push_back(known ? *known : ShapedType::kDynamic);
  }
  return shape;
}

Value splitHeads(OpBuilder &b, Location loc, Value value,
                 ArrayRef<OpFoldResult> sizes, int64_t heads, int64_t dHead) {
  SmallVector<OpFoldResult> outputShape = {
      sizes[0], sizes[1], b.getIndexAttr(heads), b.getIndexAttr(dHead)};
  auto type = RankedTensorType::get(
      staticShape(outputShape),
      cast<RankedTensorType>(value.getType()).getElementType());
  return tensor::ExpandShapeOp::create(
      b, loc, type, value, ArrayRef<ReassociationIndices>{{0}, {1}, {2, 3}},
      outputShape);
}

Value mergeHeads(OpBuilder &b, Location loc, Value value) {
  return tensor::CollapseShapeOp::create(
      b, loc, value, ArrayRef<ReassociationIndices>{{0}, {1}, {2, 3}});
}

SmallVector<OpFoldResult> modelSizes(OpBuilder &b, Location loc, Value x,
                                     int64_t dModel) {
  return {tensor::getMixedSize(b, loc, x, 0),
          tensor::getMixedSize(b, loc, x, 1), b.getIndexAttr(dModel)};
}

HeadProjections createHeadProjections(OpBuilder &b, Location loc, Value x,
                                      Value wQ, Value wK, Value wV,
                                      ArrayRef<OpFoldResult> sizes,
                                      int64_t heads) {
  int64_t dHead = *getConstantIntValue(sizes[2]) / heads;
  Type elementType = cast<ShapedType>(x.getType()).getElementType();
  auto project = [&](Value weight) {
    Value zeros = createZeros(b, loc, sizes, elementType);
    Value projected = createProjection(b, loc, x, weight, zeros);
    return splitHeads(b, loc, projected, sizes, heads, dHead);
  };
  // Named values fix the order of the ops (argument order is unspecified).
  HeadProjections p;
  p.q = project(wQ);
  p.k = project(wK);
  p.v = project(wV);
  return p;
}

LogicalResult applyPatternsOnly(Operation *op, RewritePatternSet &&patterns) {
  GreedyRewriteConfig config;
  config.enableFolding(false).setRegionSimplificationLevel(
      GreedySimplifyRegionLevel::Disabled);
  return applyPatternsGreedily(op, std::move(patterns), config);
}

} // namespace fwp
