//===- VectorTiles.h - Static tiles onto the CPU's vector units -*- C++ -*-===//
//
// What the CPU's vector lowerings share (fwp-tiles-to-vectors for the
// kernels' tiles, fwp-dense-to-vectors for the dense layers): cutting a
// static linalg operation into register tiles and vectorizing them, then
// lowering the vector code to 1-D loads, stores, broadcasts and FMAs.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_LIB_CONVERSION_VECTORTILES_H
#define FWP_LIB_CONVERSION_VECTORTILES_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/PatternMatch.h"

#include "fwp/RegisterTile.h"

namespace fwp {

/// Tiles `op` (buffers) into register tiles, vectorizes each and erases
/// `op`: a product (linalg.matmul, static shapes) into blocks of up to
/// `tile` accumulators (powers of two dividing its sides) and single k steps,
/// anything else into rows. An operation other than a product with a dynamic
/// size is left as it is.
mlir::LogicalResult tileAndVectorize(mlir::RewriterBase &rewriter,
                                     mlir::linalg::LinalgOp op,
                                     RegisterTile tile);

/// Lowers the vector code under `root`: transfers fold into the buffers,
/// accumulators are hoisted out of their k loops, contractions become outer
/// products, and everything becomes 1-D vector loads, stores and FMAs.
mlir::LogicalResult lowerVectors(mlir::Operation *root);

} // namespace fwp

#endif // FWP_LIB_CONVERSION_VECTORTILES_H
