//===- ChunkTriangles.cpp - The chunk tiles' triangular products ----------===//
//
// Within a chunk, what comes after a step never reaches it: the scores
// Q K^T and the Gram matrix K K^T are read below their diagonal only, and
// the WY form's substitution reads only the rows it has solved. These
// products go by row blocks of kTriangleBlock rows, each only as wide (or
// as deep) as the blocks on and below the diagonal: at C = 64, 10 blocks of
// 16 rather than 16 (on the CPU; the GPU's kernels take whole products).
//
//===----------------------------------------------------------------------===//

#include "ChunkLowering.h"

#include "fwp/Transforms/KernelConfig.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"

using namespace mlir;

namespace fwp {

/// A map over a chunk x chunk tile (`square`, or none) that yields
/// `value(row, col, element)`.
static Value mapSquare(
    ImplicitLocOpBuilder &b, Value init, Value square,
    function_ref<Value(OpBuilder &, Location, Value, Value, Value)> value) {
  MLIRContext *context = b.getContext();
  AffineMap identity = AffineMap::getMultiDimIdentityMap(2, context);
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps = {identity};
  if (square) {
    inputs.push_back(square);
    maps.push_back(identity);
  }
  auto generic = linalg::GenericOp::create(
      b, init.getType(), inputs, ValueRange{init}, maps,
      SmallVector<utils::IteratorType>(2, utils::IteratorType::parallel),
      [&](OpBuilder &nb, Location loc, ValueRange args) {
        Value row = linalg::IndexOp::create(nb, loc, 0);
        Value col = linalg::IndexOp::create(nb, loc, 1);
        linalg::YieldOp::create(nb, loc,
                                value(nb, loc, row, col, args.front()));
      });
  return generic.getResult(0);
}

Value ChunkTiles::lowerTriangle(Value square, bool strict) {
  auto type = cast<RankedTensorType>(square.getType());
  Value init = tensor::EmptyOp::create(b, type.getShape(), element);
  return mapSquare(
      b, init, square,
      [&](OpBuilder &nb, Location loc, Value row, Value col,
          Value entry) -> Value {
        Value below = arith::CmpIOp::create(nb, loc,
                                            strict ? arith::CmpIPredicate::ult
                                                   : arith::CmpIPredicate::ule,
                                            col, row);
        Value zero =
            arith::ConstantOp::create(nb, loc, nb.getZeroAttr(entry.getType()));
        return arith::SelectOp::create(nb, loc, below, entry, zero);
      });
}

Value ChunkTiles::identity(int64_t size) {
  Value init = tensor::EmptyOp::create(b, {size, size}, element);
  return mapSquare(
      b, init, nullptr,
      [&](OpBuilder &nb, Location loc, Value row, Value col, Value) -> Value {
        Value diagonal =
            arith::CmpIOp::create(nb, loc, arith::CmpIPredicate::eq, row, col);
        Value one =
            arith::ConstantOp::create(nb, loc, nb.getFloatAttr(element, 1.0));
        Value zero =
            arith::ConstantOp::create(nb, loc, nb.getZeroAttr(element));
        return arith::SelectOp::create(nb, loc, diagonal, one, zero);
      });
}

// Triangular products go by row blocks on the CPU, where that saves the work
// above the diagonal. On the GPU's targets a product takes the whole chunk:
// the block's warps share one 64 x 64 product of tensor-core tiles better
// than four thin ones, and with fewer registers.
ChunkTiles::ChunkTiles(ImplicitLocOpBuilder &b, Type element, int64_t chunk,
                       bool batchFirst)
    : b(b), element(element), chunk(chunk), batchFirst(batchFirst),
      rowBlocks(!kernelConfigOf(b.getInsertionBlock()->getParentOp(),
                                KernelTarget::Cpu)
                     .isGpuTiling()) {}

/// Whether `tiles`' chunks split into row blocks (two or more).
static bool hasTriangleBlocks(const ChunkTiles &tiles) {
  return tiles.chunk % kTriangleBlock == 0 && tiles.chunk > kTriangleBlock;
}

Value ChunkTiles::block(Value tile, ArrayRef<int64_t> offsets,
                        ArrayRef<int64_t> sizes) {
  SmallVector<OpFoldResult> at, extent;
  for (auto [offset, size] : llvm::zip_equal(offsets, sizes)) {
    at.push_back(b.getIndexAttr(offset));
    extent.push_back(b.getIndexAttr(size));
  }
  return extract(tile, sizes, region(at, extent));
}

Value lowerScores(ChunkTiles &tiles, Value lhs, KeyTile keys) {
  Value zeros = tiles.zeros({tiles.chunk, tiles.chunk});
  if (keys.transposed)
    return tiles.lowerProduct(ProductForm::NN, Triangular::Result, lhs,
                              keys.transposed, zeros);
  return tiles.lowerProduct(ProductForm::NT, Triangular::Result, lhs, keys.rows,
                            zeros);
}

Value ChunkTiles::lowerProduct(ProductForm form, Triangular which, Value lhs,
                               Value rhs, Value acc) {
  if (!rowBlocks || !hasTriangleBlocks(*this))
    return product(form, lhs, rhs, acc);
  auto shape = [](Value tile) {
    return cast<RankedTensorType>(tile.getType()).getShape();
  };
  int64_t step = kTriangleBlock, inner = shape(lhs)[1], cols = shape(acc)[1];
  for (int64_t row = 0; row < chunk; row += step) {
    int64_t span = row + step;
    Value lhsBlock, rhsBlock, out;
    if (which == Triangular::Result) {
      // Rows [row, row + step) of the result, its columns up to the block
      // on the diagonal.
      lhsBlock = block(lhs, {row, 0}, {step, inner});
      rhsBlock = form == ProductForm::NT ? block(rhs, {0, 0}, {span, inner})
                                         : block(rhs, {0, 0}, {inner, span});
      out = block(acc, {row, 0}, {step, span});
    } else {
      // Rows [row, row + step) of a lower triangular left operand, its
      // columns (and the right operand's rows) up to the diagonal.
      lhsBlock = block(lhs, {row, 0}, {step, span});
      rhsBlock = block(rhs, {0, 0}, {span, cols});
      out = block(acc, {row, 0}, {step, cols});
    }
    Value updated = product(form, lhsBlock, rhsBlock, out);
    SmallVector<OpFoldResult> at = {b.getIndexAttr(row), b.getIndexAttr(0)};
    SmallVector<OpFoldResult> extent = {b.getIndexAttr(step),
                                        b.getIndexAttr(shape(updated)[1])};
    acc = tensor::InsertSliceOp::create(b, updated, acc, at, extent,
                                        {b.getIndexAttr(1), b.getIndexAttr(1)});
  }
  return acc;
}

Value ChunkTiles::substitute(Value m, Value base) {
  auto type = cast<RankedTensorType>(base.getType());
  int64_t height = type.getDimSize(0), width = type.getDimSize(1);
  int64_t step = height % kTriangleBlock == 0 && height > kTriangleBlock
                     ? kTriangleBlock
                     : height;
  Value solved = zeros(type.getShape());
  // Row r reads the rows above it only: those of its own block and the
  // blocks before, `span` rows in all.
  for (int64_t first = 0; first < height; first += step) {
    int64_t span = first + step;
    auto rows = scf::ForOp::create(
        b, index(first), index(span), index(1), ValueRange{solved},
        [&](OpBuilder &nb, Location loc, Value r, ValueRange iterArgs) {
          ImplicitLocOpBuilder rb(loc, nb);
          ChunkTiles rowTiles(rb, *this);
          OpFoldResult one = rb.getIndexAttr(1), zero = rb.getIndexAttr(0);
          auto row = [&](Value tile, int64_t cols) {
            return rowTiles.extract(
                tile, {1, cols},
                rowTiles.region({r, zero}, {one, rb.getIndexAttr(cols)}));
          };
          Value x = rowTiles.product(
              ProductForm::NN, row(m, span),
              rowTiles.block(iterArgs[0], {0, 0}, {span, width}),
              row(base, width), /*subtract=*/true);
          Value updated = rowTiles.place(
              x, iterArgs[0],
              rowTiles.region({r, zero}, {one, rb.getIndexAttr(width)}));
          scf::YieldOp::create(rb, updated);
        });
    solved = rows.getResult(0);
  }
  return solved;
}

/// A by one loop over its block rows, each row block's products taking the
/// whole chunk: M_i A (16 x C) reads zeros from the rows of A not solved
/// yet, so A_ij = -A_ii (M_i A)_j comes out for every j < i at once, and
/// zero at and past the diagonal, where A_ii then goes. One loop body
/// rather than one piece of code per block row: on the GPU each piece's
/// addresses, computed once before the kernel's loop over its chunks,
/// held registers across the whole kernel.
static Value inverseInOneLoop(ChunkTiles &tiles, Value m) {
  int64_t step = kTriangleBlock, chunk = tiles.chunk;
  ImplicitLocOpBuilder &b = tiles.b;
  Value unit = tiles.identity(step);
  auto rows = scf::ForOp::create(
      b, tiles.index(0), tiles.index(chunk), tiles.index(step),
      ValueRange{tiles.zeros({chunk, chunk})},
      [&](OpBuilder &nb, Location loc, Value row, ValueRange iterArgs) {
        ImplicitLocOpBuilder rb(loc, nb);
        ChunkTiles t(rb, tiles);
        OpFoldResult zero = rb.getIndexAttr(0);
        OpFoldResult rowSize = rb.getIndexAttr(step);
        OpFoldResult width = rb.getIndexAttr(chunk);
        auto blockRow = t.region({row, zero}, {rowSize, width});
        auto diagonalBlock = t.region({row, row}, {rowSize, rowSize});
        Value diagonal =
            t.substitute(t.extract(m, {step, step}, diagonalBlock), unit);
        Value sum =
            t.product(ProductForm::NN, t.extract(m, {step, chunk}, blockRow),
                      iterArgs[0], t.zeros({step, chunk}));
        Value left = t.product(ProductForm::NN, diagonal, sum,
                               t.zeros({step, chunk}), /*subtract=*/true);
        Value inverse = t.place(left, iterArgs[0], blockRow);
        scf::YieldOp::create(rb, t.place(diagonal, inverse, diagonalBlock));
      });
  return rows.getResult(0);
}

Value ChunkTiles::inverse(Value m) {
  if (!hasTriangleBlocks(*this))
    return substitute(m, identity(chunk));
  if (!rowBlocks)
    return inverseInOneLoop(*this, m);
  int64_t step = kTriangleBlock;
  Value unit = identity(step);
  Value inverse = zeros({chunk, chunk});
  auto at = [&](int64_t row, int64_t col, int64_t rows, int64_t cols) {
    return region({b.getIndexAttr(row), b.getIndexAttr(col)},
                  {b.getIndexAttr(rows), b.getIndexAttr(cols)});
  };
  for (int64_t row = 0; row < chunk; row += step) {
    Value diagonal = substitute(block(m, {row, row}, {step, step}), unit);
    if (row > 0) {
      // A_ij = -A_ii sum_{k = j .. i-1} M_ik A_kj for every j < i at once:
      // A's rows above are finished and zero above their diagonal.
      Value sum =
          product(ProductForm::NN, block(m, {row, 0}, {step, row}),
                  block(inverse, {0, 0}, {row, row}), zeros({step, row}));
      Slice left = at(row, 0, step, row);
      Value blocks = product(ProductForm::NN, diagonal, sum,
                             extract(inverse, {step, row}, left),
                             /*subtract=*/true);
      inverse = tensor::InsertSliceOp::create(b, blocks, inverse, left.offsets,
                                              left.sizes, left.strides);
    }
    inverse = place(diagonal, inverse, at(row, row, step, step));
  }
  return inverse;
}

} // namespace fwp
