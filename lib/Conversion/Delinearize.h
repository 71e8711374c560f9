//===- Delinearize.h - Points of a loop nest from a linear index -*- C++
//-*-===//
//
// Both GPU mappings number the points of a parallel loop row-major, so that
// consecutive threads take consecutive points of the innermost dimension,
// and turn a thread's linear index back into one index per dimension.
// Internal to lib/Conversion.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_LIB_CONVERSION_DELINEARIZE_H
#define FWP_LIB_CONVERSION_DELINEARIZE_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace fwp {

/// The row-major indices of point `linear` of a nest of `counts` points per
/// dimension (the innermost varies fastest).
inline llvm::SmallVector<mlir::Value> delinearize(mlir::ImplicitLocOpBuilder &b,
                                                  mlir::Value linear,
                                                  mlir::ValueRange counts) {
  llvm::SmallVector<mlir::Value> indices(counts.size());
  mlir::Value rest = linear;
  for (int64_t d = counts.size() - 1; d >= 0; --d) {
    indices[d] =
        d == 0 ? rest : mlir::arith::RemUIOp::create(b, rest, counts[d]);
    if (d > 0)
      rest = mlir::arith::DivUIOp::create(b, rest, counts[d]);
  }
  return indices;
}

} // namespace fwp

#endif // FWP_LIB_CONVERSION_DELINEARIZE_H
