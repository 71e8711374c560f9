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
#include "mlir/Rewrite/FrozenRewritePatternSet.h"

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

/// The pattern sets of lowerVectors' phases, frozen once per pass (a pass
/// runs on every function, and the first set holds every operation's
/// canonicalizations).
struct VectorLowering {
  explicit VectorLowering(mlir::MLIRContext *ctx);

  mlir::FrozenRewritePatternSet folding, contractions, oneDimensional;
};

/// Lowers the vector code under `root`: transfers fold into the buffers,
/// accumulators are hoisted out of their k loops, contractions become outer
/// products, and everything becomes 1-D vector loads, stores and FMAs.
mlir::LogicalResult lowerVectors(mlir::Operation *root,
                                 const VectorLowering &patterns);

} // namespace fwp

#endif // FWP_LIB_CONVERSION_VECTORTILES_H
