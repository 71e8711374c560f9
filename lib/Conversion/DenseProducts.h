//===- DenseProducts.h - The dense layers' contractions -------*- C++ -*-===//
//
// The module's projections, output layer and their gradients reach the
// buffer level as linalg.generic contractions over the T x B rows
// (nn.Linear's layout, W is [out, in]). fwp-dense-to-vectors (CPU) and
// fwp-dense-to-tiles (GPU) both start from these matches and from the
// same static views of the rows.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_LIB_CONVERSION_DENSEPRODUCTS_H
#define FWP_LIB_CONVERSION_DENSEPRODUCTS_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

#include <optional>

namespace fwp {

/// y[rows..., o] += x[rows..., i] W[o, i]: rows and o parallel, i the one
/// reduction, every buffer with the identity layout (so the rows collapse
/// into one dimension), o and i static.
struct DenseProduct {
  mlir::Value x, w, y;
  int64_t in, out;
  /// W is stored [in, out] (the input gradient dx = dy W reads nn.Linear's
  /// W that way).
  bool wIsTransposed = false;
};

std::optional<DenseProduct> matchDenseProduct(mlir::linalg::GenericOp op);

/// dW[o, i] += sum over the rows of g[rows..., o] x[rows..., i]: a dense
/// layer's weight gradient (g, x with the identity layout, dW static).
struct WeightGradient {
  mlir::Value g, x, dw;
  int64_t out, in;
};

std::optional<WeightGradient> matchWeightGradient(mlir::linalg::GenericOp op);

/// sums[o] += sum over the rows of g[rows..., o]: a bias's gradient (g with
/// the identity layout, o static, the body an addition).
struct ColumnSum {
  mlir::Value g, sums;
  int64_t out;
};

std::optional<ColumnSum> matchColumnSum(mlir::linalg::GenericOp op);

/// [rows..., n] -> [prod(rows), n].
mlir::Value collapseRows(mlir::ImplicitLocOpBuilder &b, mlir::Value buffer);

/// The static [width] piece of a 1-D buffer at c0.
mlir::Value pieceOf(mlir::ImplicitLocOpBuilder &b, mlir::Value buffer,
                    mlir::Value c0, int64_t width);

/// The static [height, width] block of a 2-D buffer at (r0, c0).
mlir::Value blockOf(mlir::ImplicitLocOpBuilder &b, mlir::Value buffer,
                    mlir::Value r0, mlir::Value c0, int64_t height,
                    int64_t width);

/// acc += lhs op(rhs): lhs [m, k]; rhs [k, n], or [n, k] read transposed
/// when `rhsTransposed`.
mlir::linalg::LinalgOp product(mlir::ImplicitLocOpBuilder &b, mlir::Value lhs,
                               mlir::Value rhs, mlir::Value acc,
                               bool rhsTransposed = false);

/// acc += lhs^T rhs: lhs [k, m] read transposed, rhs [k, n].
mlir::linalg::LinalgOp transposedProduct(mlir::ImplicitLocOpBuilder &b,
                                         mlir::Value lhs, mlir::Value rhs,
                                         mlir::Value acc);

/// The dense layers outside the kernels under `root`, in walk order.
struct DenseLayers {
  llvm::SmallVector<std::pair<mlir::linalg::GenericOp, DenseProduct>> products;
  llvm::SmallVector<std::pair<mlir::linalg::GenericOp, WeightGradient>>
      gradients;
  llvm::SmallVector<std::pair<mlir::linalg::GenericOp, ColumnSum>> columnSums;
};

DenseLayers collectDenseLayers(mlir::Operation *root);

/// The buffer `value` is a view of (through view-like ops), and every
/// view of it: what may read or write the same memory as `value`.
llvm::SmallVector<mlir::Value> aliasesOf(mlir::Value value);

/// The operations of `block` that use `buffer` or a view of it, directly
/// or in their regions (views, and operations without memory effects such
/// as memref.dim, aside).
llvm::SmallVector<mlir::Operation *> usersInBlock(mlir::Value buffer,
                                                  mlir::Block *block);

/// The operation of `op`'s block nearest to `op`, before it or after it,
/// that uses `buffer` or a view of it (views, and operations without
/// memory effects such as memref.dim, aside).
mlir::Operation *nearestUser(mlir::Operation *op, mlir::Value buffer,
                             bool before);

/// What fills the whole of a dense layer's output `out` before the layer
/// accumulates into it (a linalg.fill, or an elementwise generic: the bias
/// broadcast), and what maps it after (an elementwise generic: the gate's
/// sigmoid), where they can move to the layer's product `op`: nothing
/// between touches `out` or what they read. Null members: nothing to move.
struct TileEpilogues {
  mlir::Operation *init = nullptr;
  mlir::linalg::GenericOp map;
};

TileEpilogues findEpilogues(mlir::Operation *op, mlir::Value out);

/// Erases the product `op` and the init and map that moved into its tiles.
void eraseWithEpilogues(mlir::Operation *op, const TileEpilogues &epilogues);

/// `op` (a TileEpilogues member) on `tile`, a static [height, width] piece
/// of its output (or a buffer standing in for it) at (r0, c0) of the
/// output's collapsed rows: the fill's value, or the generic's body on the
/// inputs' matching pieces.
mlir::linalg::LinalgOp onTile(mlir::ImplicitLocOpBuilder &b,
                              mlir::Operation *op, mlir::Value tile,
                              mlir::Value r0, mlir::Value c0);

/// The largest of limit, limit / 2, limit / 4, ... 1 that divides `size`.
int64_t largestBlockDividing(int64_t size, int64_t limit);

} // namespace fwp

#endif // FWP_LIB_CONVERSION_DENSEPRODUCTS_H
