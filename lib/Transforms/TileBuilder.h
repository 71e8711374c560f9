//===- TileBuilder.h - The tile level of fwp's kernels ----------*- C++ -*-===//
//
// Inside a kernel, the chunked scan is written as operations on tiles:
// static-shape 2-D views of the workspace (chunk x features, chunk x value
// block, value block x features, chunk x chunk) and upstream linalg
// operations on them: products with the accumulator in the element type
// (linalg.matmul, transposes through its indexing maps), elementwise maps,
// causal masks, fills and copies (linalg.generic). This is the level both
// backends lower from (fwp-lower-tiles): to loops that accumulate in
// registers today, per op family to tensor cores and vector units next.
//
// Tiles never cross the sequence end: the workspace is padded to whole
// chunks with zero rows, so only the loads of a chunk from the inputs and
// the stores of its outputs are masked (ScanForward.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef FWP_LIB_TRANSFORMS_TILEBUILDER_H
#define FWP_LIB_TRANSFORMS_TILEBUILDER_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace fwp {

/// Whether a tile product reads an operand transposed. (The workspace's
/// transposed right operands are laid out once with transpose() instead, so
/// that the CPU's products read their right operand by rows; Rhs is for a
/// kernel-local tile the GPU's tensor cores read in place, the state.)
enum class Transposed { None, Lhs, Rhs };

class TileBuilder {
public:
  TileBuilder(mlir::ImplicitLocOpBuilder &b, mlir::Type elementType)
      : b(b), elementType(elementType) {}

  /// The static [rows, cols] tile of `buffer` whose first element is at
  /// `offsets` (one per dimension of `buffer`); the leading dimensions are
  /// dropped. cols = 0 gives a 1-D tile of `rows` along the last dimension.
  mlir::Value tile(mlir::Value buffer, llvm::ArrayRef<mlir::Value> offsets,
                   int64_t rows, int64_t cols = 0);

  /// The [rows, cols] tile at `offsets` = (t, b, h, c) of a contiguous
  /// [T, B, H, W] input or output, or of a [B, T, H, W] one if
  /// `batchFirst`: `rows` steps of one head.
  mlir::Value stepTile(mlir::Value buffer, llvm::ArrayRef<mlir::Value> offsets,
                       int64_t rows, int64_t cols, bool batchFirst = false);

  /// A rows x cols tile of the kernel instance's own: a memref.alloca at the
  /// insertion point (the kernel's start) in `memorySpace` (null: the
  /// default, the instance's stack on the CPU), whose rows are cols +
  /// `rowPadding` elements apart.
  mlir::Value localTile(int64_t rows, int64_t cols, mlir::Attribute memorySpace,
                        int64_t rowPadding);

  /// tile = value.
  void fill(mlir::Value tile, double value);
  /// tile = I (square).
  void identity(mlir::Value tile);

  /// out = op(lhs) op(rhs), or out += op(lhs) op(rhs) with `accumulate`:
  /// linalg.matmul, its operands read transposed as `transposed` says.
  void product(mlir::Value lhs, mlir::Value rhs, mlir::Value out,
               Transposed transposed = Transposed::None,
               bool accumulate = false);

  /// Zeroes tile[i, j] above the diagonal (j > i), or on and above it
  /// (j >= i) if `strict`: the causal masks.
  void maskLower(mlir::Value tile, bool strict);

  /// out = lhs - rhs, elementwise (out may be either operand).
  void subtract(mlir::Value lhs, mlir::Value rhs, mlir::Value out);

  /// out = lhs + rhs, elementwise (out may be either operand).
  void add(mlir::Value lhs, mlir::Value rhs, mlir::Value out);

  /// out = lhs * rhs, elementwise.
  void multiply(mlir::Value lhs, mlir::Value rhs, mlir::Value out);

  /// out += lhs * rhs, elementwise.
  void multiplyAdd(mlir::Value lhs, mlir::Value rhs, mlir::Value out);

  /// sums[i] += sum_j lhs[i, j] rhs[i, j] (1-D sums): the rows' dot
  /// products.
  void addRowDots(mlir::Value lhs, mlir::Value rhs, mlir::Value sums);

  /// sums[i] = offset + sum_j in[i, j] (1-D sums).
  void rowSums(mlir::Value in, mlir::Value sums, double offset);

  /// sums[i] = sum_j lhs[i, j] rhs[i, j] with every product rounded on its
  /// own (no FMA): the terms are then exactly what a later lhs * rhs
  /// subtracts from the sum.
  void rowDotsOfRoundedProducts(mlir::Value lhs, mlir::Value rhs,
                                mlir::Value sums);

  /// out[i, j] = body(ins[0][i, j], ..., rows[0][i], ...): an elementwise
  /// map of 2-D tiles and of 1-D per-row values, whose body builds plain
  /// arithmetic (no reassociation or contraction unless it asks).
  void mapRows(mlir::ValueRange ins, mlir::ValueRange rows, mlir::Value out,
               llvm::function_ref<mlir::Value(mlir::OpBuilder &, mlir::Location,
                                              mlir::ValueRange elements,
                                              mlir::ValueRange rowValues)>
                   body);

  /// tile[i, j] /= divisors[i] (1-D divisors).
  void divideRows(mlir::Value tile, mlir::Value divisors);

  /// out[i, j] = in[i, j] * scale[j] (1-D scale).
  void scaleColumns(mlir::Value in, mlir::Value scale, mlir::Value out);

  /// out[i, j] = in[i, j] * scale[i] (1-D scale).
  void scaleRows(mlir::Value in, mlir::Value scale, mlir::Value out);

  /// tile = -tile.
  void negate(mlir::Value tile);

  /// row = row - scale * delta, for 1-row tiles row and delta and a scalar.
  void subtractScaled(mlir::Value row, mlir::Value scale, mlir::Value delta);

  /// out = in, converted to out's element type (16-bit storage).
  void copy(mlir::Value in, mlir::Value out);

  /// out = max(in, 0), or max(-in, 0) if `negated`: DPFP's x = relu([k, -k])
  /// in two halves (`in` may be 16-bit storage).
  void relu(mlir::Value in, mlir::Value out, bool negated);

  /// out = in^T (2-D): a product's transposed operand laid out once, so
  /// that its rows are contiguous where the product walks them.
  void transpose(mlir::Value in, mlir::Value out);

  /// out += in elementwise, each addition atomic: kernel instances adding
  /// their shares of one sum into `out` (global memory).
  void atomicAdd(mlir::Value in, mlir::Value out);

private:
  /// out = combine(lhs, rhs), elementwise.
  void
  elementwise(mlir::Value lhs, mlir::Value rhs, mlir::Value out,
              llvm::function_ref<mlir::Value(mlir::OpBuilder &, mlir::Location,
                                             mlir::Value, mlir::Value)>
                  combine);
  /// sums[i] += sum_j lhs[i, j] rhs[i, j]; the products are contracted into
  /// the sum (FMA) only with `contract`.
  void accumulateRowDots(mlir::Value lhs, mlir::Value rhs, mlir::Value sums,
                         bool contract);
  /// out[i, j] = in[i, j] * scale[dim == 0 ? i : j].
  void scaleAlong(mlir::Value in, mlir::Value scale, mlir::Value out,
                  unsigned dim);
  /// The subview of `buffer` at `offsets` with `sizes`, rank-reduced to
  /// `shape`.
  mlir::Value view(mlir::Value buffer, llvm::ArrayRef<mlir::Value> offsets,
                   llvm::ArrayRef<int64_t> sizes,
                   llvm::ArrayRef<int64_t> shape);
  int64_t rank(mlir::Value tile) const;
  llvm::ArrayRef<int64_t> shape(mlir::Value tile) const;
  mlir::AffineMap identityMap(int64_t rank) const;
  llvm::SmallVector<mlir::utils::IteratorType> parallel(int64_t rank) const;

  mlir::ImplicitLocOpBuilder &b;
  mlir::Type elementType;
};

} // namespace fwp

#endif // FWP_LIB_TRANSFORMS_TILEBUILDER_H
