//===- DpfpBuilders.h - DPFP's map and gradient as linalg -------*- C++ -*-===//

#ifndef FWP_LIB_TRANSFORMS_DPFPBUILDERS_H
#define FWP_LIB_TRANSFORMS_DPFPBUILDERS_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/PatternMatch.h"

namespace fwp {

/// x[j] = relu([k, -k])[j] of the vector of `input` at `position` (its
/// leading indices), j in [0, 2d); for use inside a linalg body.
mlir::Value reluAt(mlir::OpBuilder &nb, mlir::Location nloc, mlir::Value input,
                   llvm::ArrayRef<mlir::Value> position, mlir::Value jj,
                   int64_t d);

/// phi[..., (i-1)*2d + j] = x[j] * x[(j - i) mod 2d], x = relu([k, -k]).
mlir::Value createProducts(mlir::OpBuilder &b, mlir::Location loc,
                           mlir::Value input, mlir::RankedTensorType resultType,
                           llvm::ArrayRef<mlir::OpFoldResult> sizes, int64_t d);

/// sum over the last dimension of `phi`, [...].
mlir::Value createRowSums(mlir::OpBuilder &b, mlir::Location loc,
                          mlir::Value phi,
                          llvm::ArrayRef<mlir::OpFoldResult> sizes,
                          mlir::Type elementType);

/// The column-range forms for a chunk's rows inside a kernel
/// (DpfpColumns.cpp): no gathers, so they vectorize.

/// Whether the map `op` goes by column ranges: inside a kernel for the
/// host's vector units (the GPU's kernels on the host too). The GPU's
/// kernels take the gathering form, one pass of the block's threads over
/// the features rather than one per column range, each through shared
/// memory. (The gradient goes by column ranges in every kernel.)
bool mapsByColumns(mlir::Operation *op);

/// Columns [offset, offset + width) of `value`, [..., W], all its rows.
mlir::Value columns(mlir::OpBuilder &b, mlir::Location loc, mlir::Value value,
                    int64_t offset, int64_t width);
/// `dest` with its columns from `offset` on overwritten by `source`.
mlir::Value placeColumns(mlir::OpBuilder &b, mlir::Location loc,
                         mlir::Value source, mlir::Value dest, int64_t offset);
/// `combine` of the elements of `inputs` (all of one shape), elementwise.
mlir::Value
elementwise(mlir::OpBuilder &b, mlir::Location loc, mlir::ValueRange inputs,
            llvm::function_ref<mlir::Value(mlir::OpBuilder &, mlir::Location,
                                           mlir::ValueRange)>
                combine);
/// x = relu([k, -k]) of `input` [..., d], as [..., 2d].
mlir::Value createRelus(mlir::OpBuilder &b, mlir::Location loc,
                        mlir::Value input, int64_t d);
/// phi [..., 2 d nu] (`sizes`) from x: for each i, phi[(i-1) 2d + j] =
/// x[j] x[j - i] for j >= i and x[j] x[j - i + 2d] for j < i.
mlir::Value createProductsByColumns(mlir::OpBuilder &b, mlir::Location loc,
                                    mlir::Value x,
                                    llvm::ArrayRef<mlir::OpFoldResult> sizes,
                                    int64_t d, int64_t nu);
/// dL/dk from dL/dphi: dx[j] = sum over i of dphi_i[j] x[j - i] +
/// dphi_i[j + i] x[j + i] (mod 2d), then through the relus.
mlir::Value createInputGradByColumns(mlir::OpBuilder &b, mlir::Location loc,
                                     mlir::Value input, mlir::Value x,
                                     mlir::Value dphi, int64_t d, int64_t nu);

/// fwp.dpfp_grad lowered to linalg (LowerDpfpGrad.cpp), for fwp-lower-dpfp.
void populateLowerDpfpGradPattern(mlir::RewritePatternSet &patterns);

} // namespace fwp

#endif // FWP_LIB_TRANSFORMS_DPFPBUILDERS_H
