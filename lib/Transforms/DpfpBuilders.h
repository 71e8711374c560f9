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

/// fwp.dpfp_grad lowered to linalg (LowerDpfpGrad.cpp), for fwp-lower-dpfp.
void populateLowerDpfpGradPattern(mlir::RewritePatternSet &patterns);

} // namespace fwp

#endif // FWP_LIB_TRANSFORMS_DPFPBUILDERS_H
