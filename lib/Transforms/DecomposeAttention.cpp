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

/// The static d_model of `op`, taken from whichever operand or result knows
/// it (the verifier has checked that they agree).
std::optional<int64_t> staticModelSize(AttentionOp op) {
  SmallVector<std::pair<Value, int64_t>> dims = {
      {op.getX(), 2}, {op.getWBeta(), 1}, {op.getBO(), 0}, {op.getY(), 2}};
  for (Value square : {op.getWQ(), op.getWK(), op.getWV(), op.getWO()})
    dims.append({{square, 0}, {square, 1}});
  for (auto [value, dim] : dims) {
    int64_t size = cast<RankedTensorType>(value.getType()).getDimSize(dim);
    if (!ShapedType::isDynamic(size))
      return size;
  }
  return std::nullopt;
}

/// The static sizes in `sizes`, with ShapedType::kDynamic for the others.
SmallVector<int64_t> staticShape(ArrayRef<OpFoldResult> sizes) {
  SmallVector<int64_t> shape;
  for (OpFoldResult size : sizes) {
    std::optional<int64_t> known = getConstantIntValue(size);
    shape.push_back(known ? *known : ShapedType::kDynamic);
  }
  return shape;
}

/// A zero-filled tensor of the given sizes: the accumulator of a
/// projection.
Value createZeros(OpBuilder &b, Location loc, ArrayRef<OpFoldResult> sizes,
                  Type elementType) {
  Value empty = tensor::EmptyOp::create(b, loc, sizes, elementType);
  Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(elementType));
  return linalg::FillOp::create(b, loc, zero, empty).getResult(0);
}

/// `init + x W^T` for x [t, b, m] and an nn.Linear weight W [o, m], as one
/// linalg.generic accumulating into `init` [t, b, o].
Value createProjection(OpBuilder &b, Location loc, Value x, Value weight,
                       Value init) {
  MLIRContext *ctx = b.getContext();
  AffineExpr t, bt, o, m;
  bindDims(ctx, t, bt, o, m);
  SmallVector<AffineMap> maps = {
      AffineMap::get(4, 0, {t, bt, m}, ctx),
      AffineMap::get(4, 0, {o, m}, ctx),
      AffineMap::get(4, 0, {t, bt, o}, ctx),
  };
  SmallVector<utils::IteratorType> iterators(3, utils::IteratorType::parallel);
  iterators.push_back(utils::IteratorType::reduction);
  auto generic = linalg::GenericOp::create(
      b, loc, init.getType(), ValueRange{x, weight}, ValueRange{init}, maps,
      iterators, [](OpBuilder &nb, Location nloc, ValueRange args) {
        Value product = arith::MulFOp::create(nb, nloc, args[0], args[1]);
        Value sum = arith::AddFOp::create(nb, nloc, args[2], product);
        linalg::YieldOp::create(nb, nloc, sum);
      });
  return generic.getResult(0);
}

/// The bias b [o] broadcast to [t, b, o]: the output layer accumulates onto
/// it, which saves a separate elementwise pass over the result.
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

/// [T, B, d_model] -> [T, B, heads, d_k]; head h owns rows h*d_k ..
/// (h+1)*d_k-1 of each weight, so this is a plain reshape.
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
    int64_t heads = op.getHeads();
    Location loc = op.getLoc();
    Value x = op.getX();

    // [T, B, d_model], with T and B taken from x when dynamic.
    SmallVector<OpFoldResult> sizes = {
        tensor::getMixedSize(rewriter, loc, x, 0),
        tensor::getMixedSize(rewriter, loc, x, 1),
        rewriter.getIndexAttr(*dModel)};

    // One zero accumulator serves the three projections: tensors are values.
    Value zeros =
        createZeros(rewriter, loc, sizes, op.getY().getType().getElementType());
    auto projectHeads = [&](Value weight) {
      Value projected = createProjection(rewriter, loc, x, weight, zeros);
      return splitHeads(rewriter, loc, projected, sizes, heads,
                        *dModel / heads);
    };
    // Named values fix the order of the ops (argument order is unspecified).
    Value q = projectHeads(op.getWQ());
    Value k = projectHeads(op.getWK());
    Value v = projectHeads(op.getWV());
    Value headOutputs = createHeadScan(rewriter, op, q, k, v);

    // Concatenate the heads in head order, then the output layer.
    Value merged = tensor::CollapseShapeOp::create(
        rewriter, loc, headOutputs,
        ArrayRef<ReassociationIndices>{{0}, {1}, {2, 3}});
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
    WalkResult unsupported = getOperation()->walk([](AttentionOp op) {
      if (staticModelSize(op))
        return WalkResult::advance();
      op.emitOpError() << "cannot be decomposed: d_model must be static";
      return WalkResult::interrupt();
    });
    if (unsupported.wasInterrupted())
      return signalPassFailure();

    RewritePatternSet patterns(&getContext());
    patterns.add<DecomposeAttentionPattern>(&getContext());
    // Rewrite only what the pattern matches: no folding or region
    // simplification of unrelated IR.
    GreedyRewriteConfig config;
    config.enableFolding(false).setRegionSimplificationLevel(
        GreedySimplifyRegionLevel::Disabled);
    if (failed(
            applyPatternsGreedily(getOperation(), std::move(patterns), config)))
      signalPassFailure();
  }
};

} // namespace
