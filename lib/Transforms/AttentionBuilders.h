//===- AttentionBuilders.h - linalg pieces of fwp.attention -----*- C++ -*-===//
//
// The dense parts of the module and of its gradient, as linalg ops on
// tensors: projections, their transposes, weight and bias gradients, and
// the pieces that split and merge heads. Shared by the decompositions of
// fwp.attention and fwp.attention_grad and by the gate's lowering.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_LIB_TRANSFORMS_ATTENTIONBUILDERS_H
#define FWP_LIB_TRANSFORMS_ATTENTIONBUILDERS_H

#include "fwp/Dialect/FwpOps.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

namespace fwp {

/// A zero-filled tensor of the given sizes.
mlir::Value createZeros(mlir::OpBuilder &b, mlir::Location loc,
                        llvm::ArrayRef<mlir::OpFoldResult> sizes,
                        mlir::Type elementType);

/// init + sum over the reduction dimensions of lhs * rhs, one
/// linalg.generic; `maps` are those of lhs, rhs and init, `parallel` counts
/// the leading parallel dimensions, the rest being reductions.
mlir::Value createContraction(mlir::OpBuilder &b, mlir::Location loc,
                              mlir::Value lhs, mlir::Value rhs,
                              mlir::Value init,
                              llvm::ArrayRef<mlir::AffineMap> maps,
                              unsigned parallel);

/// init + x W^T for x [t, b, m] and an nn.Linear weight W [o, m]: [t, b, o].
mlir::Value createProjection(mlir::OpBuilder &b, mlir::Location loc,
                             mlir::Value x, mlir::Value weight,
                             mlir::Value init);

/// init + g W for g [t, b, o] and W [o, m]: [t, b, m], the gradient of a
/// projection with respect to its input.
mlir::Value createInputGradient(mlir::OpBuilder &b, mlir::Location loc,
                                mlir::Value g, mlir::Value weight,
                                mlir::Value init);

/// init + sum_{t,b} g[t, b, o] x[t, b, m]: [o, m], the gradient of a
/// projection with respect to its weight.
mlir::Value createWeightGradient(mlir::OpBuilder &b, mlir::Location loc,
                                 mlir::Value g, mlir::Value x,
                                 mlir::Value init);

/// init + sum_{t,b} g[t, b, o]: [o], the gradient of a bias.
mlir::Value createBiasGradient(mlir::OpBuilder &b, mlir::Location loc,
                               mlir::Value g, mlir::Value init);

/// The bias [o] broadcast to [t, b, o] of the given sizes.
mlir::Value createBiasInit(mlir::OpBuilder &b, mlir::Location loc,
                           mlir::Value bias,
                           llvm::ArrayRef<mlir::OpFoldResult> sizes);

/// [T, B, d_model] -> [T, B, heads, d_k] (head h owns rows h*d_k..).
mlir::Value splitHeads(mlir::OpBuilder &b, mlir::Location loc,
                       mlir::Value value,
                       llvm::ArrayRef<mlir::OpFoldResult> sizes, int64_t heads,
                       int64_t dHead);

/// [T, B, heads, d_k] -> [T, B, d_model].
mlir::Value mergeHeads(mlir::OpBuilder &b, mlir::Location loc,
                       mlir::Value value);

/// The per-head q, k, v = x W^T of an attention-like op, [T, B, H, d_k],
/// with `sizes` = [T, B, d_model] of x. Each accumulates from zeros of its
/// own: one shared init would be copied three times by bufferization.
struct HeadProjections {
  mlir::Value q, k, v;
};
HeadProjections createHeadProjections(mlir::OpBuilder &b, mlir::Location loc,
                                      mlir::Value x, mlir::Value wQ,
                                      mlir::Value wK, mlir::Value wV,
                                      llvm::ArrayRef<mlir::OpFoldResult> sizes,
                                      int64_t heads);

/// [T, B, d_model] of x, with T and B from x when dynamic.
llvm::SmallVector<mlir::OpFoldResult> modelSizes(mlir::OpBuilder &b,
                                                 mlir::Location loc,
                                                 mlir::Value x, int64_t dModel);

/// Applies `patterns` greedily to what they match only: no folding and no
/// region simplification of unrelated IR (fwp's rewriting passes).
mlir::LogicalResult applyPatternsOnly(mlir::Operation *op,
                                      mlir::RewritePatternSet &&patterns);

/// The static d_model of an attention-like op, from whichever operand knows
/// it (the verifier checked that they agree).
template <typename AttentionLikeOp>
std::optional<int64_t> staticModelSize(AttentionLikeOp op) {
  mlir::Value squares[] = {op.getWQ(), op.getWK(), op.getWV(), op.getWO()};
  llvm::SmallVector<std::pair<mlir::Value, int64_t>> dims = {
      {op.getX(), 2}, {op.getWBeta(), 1}, {op.getBO(), 0}};
  for (mlir::Value square : squares)
    dims.append({{square, 0}, {square, 1}});
  for (auto [value, dim] : dims) {
    int64_t size =
        mlir::cast<mlir::RankedTensorType>(value.getType()).getDimSize(dim);
    if (!mlir::ShapedType::isDynamic(size))
      return size;
  }
  return std::nullopt;
}

/// Rewrites fwp.attention_grad into projections, the forward scan, the
/// gate, fwp.scan_grad and the dense gradients.
void populateDecomposeAttentionGradPatterns(mlir::RewritePatternSet &patterns);

} // namespace fwp

#endif // FWP_LIB_TRANSFORMS_ATTENTIONBUILDERS_H
