//===- DenseToTiles.cpp - The dense layers as kernels of tile products ----===//
//
// The GPU's form of the module's dense layers (the projections, the output
// layer and their gradients): each contraction outside the scan kernels
// becomes kernels of static tile products, as the scan's kernels are, so
// that fwp-products-to-mma puts them on the tensor cores and
// fwp-kernels-to-gpu launches them.
//
//   y[R, out] += x[R, in] W^T   (W [out, in]; or x W with W [in, out]):
//     dense_rows       grid (R / rows, out / cols): one rows x cols tile of
//                      y, one product over the whole of `in`;
//     dense_rows_tail  grid (R mod rows, out / cols): the last rows one at
//                      a time (1 x cols products, on the CUDA cores).
//   Products of the same x in a row (q, k, v and the gate's logits) share
//   one dense_rows and one dense_rows_tail: x against the stacked weights
//   [W_q; W_k; W_v; W_beta], whose column tiles each land in their own
//   layer's output (no stacked copy of the weights, none of the output).
//   sums[out] += sum over the rows of g[R, out] (a bias's gradient):
//     dense_column_partials grid (R / rows, out / wide): each block sums a
//                      rows x wide tile of g down its columns, into a row
//                      of partial sums (wide = 4 cols: a thread a column);
//     dense_column_sums grid (out / wide): the partial sums and the rows
//                      past the last whole tile added up.
//   dW[out, in] += g[R, out]^T x[R, in]:
//     dense_weight_grad grid (out / rows, in / cols): one tile of dW, summed
//                      over the rows `rows` at a time (g read transposed),
//                      then the last rows one at a time.
//
// What a layer's output starts from and what is applied to it afterwards
// move into its tiles: a fill (the zeros a product accumulates onto) or a
// bias broadcast along the rows right before the product, and an
// elementwise map of the output right after it (the gate's sigmoid). Each
// tile then starts from its share of the init, accumulates, and applies
// the map while it is still in cache: no kernel of their own, one thread an
// element, and no second pass over the output.
//
// A tile that does not divide its dimension is narrowed to the largest
// power-of-two fraction that does (the gate's H outputs, say), and products
// that do not fit the tensor cores stay on the CUDA cores
// (fwp-lower-tiles). Each kernel is one scf.forall mapped to #gpu.block,
// tagged with its fwp.kernel name.
//
//===----------------------------------------------------------------------===//

#include "fwp/Conversion/Passes.h"
#include "fwp/Transforms/Kernels.h"

#include "DenseProducts.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace fwp {
#define GEN_PASS_DEF_FWPDENSETOTILES
#include "fwp/Conversion/Passes.h.inc"
} // namespace fwp

using namespace mlir;

namespace fwp {
namespace {

/// A kernel named `name` over the grid `bounds`, one instance a thread
/// block; its body is built by `body(ids)`.
void kernel(ImplicitLocOpBuilder &b, StringRef name,
            ArrayRef<OpFoldResult> bounds,
            function_ref<void(ValueRange)> body) {
  auto forall = scf::ForallOp::create(
      b, bounds, ValueRange{}, blockMapping(b.getContext(), bounds.size()));
  forall->setAttr(kKernelAttrName, b.getStringAttr(name));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(forall.getBody()->getTerminator());
  body(forall.getInductionVars());
}

Value index(ImplicitLocOpBuilder &b, int64_t value) {
  return arith::ConstantIndexOp::create(b, value);
}

/// The rows of `x` (collapsed), and how many of them whole blocks of
/// `block` rows cover.
struct Rows {
  Value count, whole;
};

Rows splitRows(ImplicitLocOpBuilder &b, Value rows2d, int64_t block) {
  Value count = memref::DimOp::create(b, rows2d, 0);
  Value whole = arith::SubIOp::create(
      b, count, arith::RemUIOp::create(b, count, index(b, block)));
  return {count, whole};
}

/// sums[c] += sum_r tile[r, c] for a [rows, width] tile and sums [width],
/// columns outermost: on the GPU a thread a column, each summing its column
/// in a register.
void addColumnSums(ImplicitLocOpBuilder &b, Value tile, Value sums) {
  MLIRContext *ctx = b.getContext();
  AffineExpr c, r;
  bindDims(ctx, c, r);
  SmallVector<AffineMap> maps = {AffineMap::get(2, 0, {r, c}, ctx),
                                 AffineMap::get(2, 0, {c}, ctx)};
  SmallVector<utils::IteratorType> iterators = {utils::IteratorType::parallel,
                                                utils::IteratorType::reduction};
  linalg::GenericOp::create(
      b, TypeRange{}, ValueRange{tile}, ValueRange{sums}, maps, iterators,
      [](OpBuilder &nb, Location loc, ValueRange args) {
        Value sum = arith::AddFOp::create(nb, loc, args[1], args[0]);
        linalg::YieldOp::create(nb, loc, sum);
      });
}

/// The static [width] piece of row r of a 2-D buffer at column c0.
Value rowPieceOf(ImplicitLocOpBuilder &b, Value buffer, Value r, Value c0,
                 int64_t width) {
  SmallVector<OpFoldResult> offsets = {r, c0};
  SmallVector<OpFoldResult> sizes = {b.getIndexAttr(1), b.getIndexAttr(width)};
  SmallVector<OpFoldResult> strides = {b.getIndexAttr(1), b.getIndexAttr(1)};
  auto type = memref::SubViewOp::inferRankReducedResultType(
      {width}, cast<MemRefType>(buffer.getType()), offsets, sizes, strides);
  return memref::SubViewOp::create(b, type, buffer, offsets, sizes, strides);
}

/// A dense product with what moves into its tiles.
struct Layer {
  Operation *op;
  DenseProduct p;
  TileEpilogues epilogues;
};

/// Whether `layer`'s product can move down to `to`, a later operation of
/// its block, together with its init: nothing between reads or writes its
/// output or writes what it reads (products in `group`, which only read x,
/// aside), it has no map (which would have to follow it), and its init is
/// none or a fill (which reads no buffer).
bool canMoveDown(const Layer &layer, Operation *to, ArrayRef<Layer> group) {
  if (layer.epilogues.map ||
      (layer.epilogues.init && !isa<linalg::FillOp>(layer.epilogues.init)))
    return false;
  Operation *from = layer.op;
  Block *block = from->getBlock();
  if (to->getBlock() != block || !from->isBeforeInBlock(to))
    return false;
  auto isGroupProduct = [&](Operation *op) {
    return llvm::any_of(group, [&](const Layer &l) { return l.op == op; });
  };
  for (Value buffer : {layer.p.y, layer.p.x, layer.p.w})
    for (Operation *user : usersInBlock(buffer, block)) {
      bool between = from->isBeforeInBlock(user) && user->isBeforeInBlock(to);
      if (between && (buffer == layer.p.y || !isGroupProduct(user)))
        return false;
    }
  return true;
}

/// The products in runs that read the same x (q, k, v and the gate's
/// logits: one product of x against the stacked weights), each run in
/// order; a product that cannot join the run before it starts a new one.
SmallVector<SmallVector<Layer>> groupByInput(ArrayRef<Layer> products) {
  SmallVector<SmallVector<Layer>> groups;
  for (const Layer &layer : products) {
    if (!groups.empty()) {
      SmallVector<Layer> &group = groups.back();
      SmallVector<Layer> joined(group);
      joined.push_back(layer);
      bool joins = group.front().p.x == layer.p.x && !layer.p.wIsTransposed &&
                   !group.front().p.wIsTransposed &&
                   llvm::all_of(group, [&](const Layer &member) {
                     return canMoveDown(member, layer.op, joined);
                   });
      if (joins) {
        group.push_back(layer);
        continue;
      }
    }
    groups.push_back({layer});
  }
  return groups;
}

struct DenseToTilesPass : impl::FwpDenseToTilesBase<DenseToTilesPass> {
  using FwpDenseToTilesBase::FwpDenseToTilesBase;

  void runOnOperation() override {
    if (rowBlock < 1 || colBlock < 1) {
      getOperation()->emitError("fwp-dense-to-tiles: row-block and col-block "
                                "must be positive, got ")
          << rowBlock << " and " << colBlock;
      return signalPassFailure();
    }
    DenseLayers layers = collectDenseLayers(getOperation());
    SmallVector<Layer> products;
    for (auto &[op, p] : layers.products)
      products.push_back({op, p, findEpilogues(op, p.y)});
    for (ArrayRef<Layer> group : groupByInput(products))
      tileProducts(group);
    for (auto &[op, w] : layers.gradients)
      tileWeightGradient(op, w);
    for (auto &[op, c] : layers.columnSums)
      tileColumnSum(op, c);
  }

  /// y += x op(W) for each layer of `group` (products of the same x, in
  /// order), as one dense_rows and one dense_rows_tail: x against the
  /// layers' weights side by side, each column tile in its own layer's
  /// output. The kernels go where the last layer's product was.
  void tileProducts(ArrayRef<Layer> group) {
    Operation *last = group.back().op;
    ImplicitLocOpBuilder b(last->getLoc(), last);
    Value x = collapseRows(b, group.front().p.x);
    Rows rows = splitRows(b, x, rowBlock);
    Value zero = index(b, 0);
    // Each layer's output rows, tile width and first column tile.
    SmallVector<Value> outputs;
    SmallVector<int64_t> widths, firstTiles = {0};
    for (const Layer &layer : group) {
      outputs.push_back(collapseRows(b, layer.p.y));
      widths.push_back(largestBlockDividing(layer.p.out, colBlock));
      firstTiles.push_back(firstTiles.back() + layer.p.out / widths.back());
    }
    // height x cols of layer i's y at (r0, c0): its init, x's rows times
    // W's columns c0.. (W [out, in] is read transposed), its map.
    auto tile = [&](size_t i, Value r0, Value c0, int64_t height) {
      const Layer &layer = group[i];
      const DenseProduct &p = layer.p;
      int64_t cols = widths[i];
      // Named values fix the order of the ops (argument order is
      // unspecified). The init writes the product's own view of y, so that
      // fwp-products-to-mma sees a product starting from a fill of zeros.
      Value out = blockOf(b, outputs[i], r0, c0, height, cols);
      if (layer.epilogues.init)
        onTile(b, layer.epilogues.init, out, r0, c0);
      Value w = p.wIsTransposed ? blockOf(b, p.w, zero, c0, p.in, cols)
                                : blockOf(b, p.w, c0, zero, cols, p.in);
      Value lhs = blockOf(b, x, r0, zero, height, p.in);
      product(b, lhs, w, out, /*rhsTransposed=*/!p.wIsTransposed);
      if (layer.epilogues.map)
        onTile(b, layer.epilogues.map, out, r0, c0);
    };
    // The tile of column tile `id` (of all the layers) at rows r0...
    auto dispatch = [&](Value id, Value r0, int64_t height) {
      for (size_t i = 0; i < group.size(); ++i) {
        Value first = index(b, firstTiles[i]);
        OpBuilder::InsertionGuard guard(b);
        if (group.size() > 1) {
          Value from =
              arith::CmpIOp::create(b, arith::CmpIPredicate::uge, id, first);
          Value below = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, id,
                                              index(b, firstTiles[i + 1]));
          auto inLayer = scf::IfOp::create(
              b, arith::AndIOp::create(b, from, below), /*withElse=*/false);
          b.setInsertionPoint(inLayer.thenBlock()->getTerminator());
        }
        Value c0 = arith::MulIOp::create(b, arith::SubIOp::create(b, id, first),
                                         index(b, widths[i]));
        tile(i, r0, c0, height);
      }
    };
    OpFoldResult colTiles = b.getIndexAttr(firstTiles.back());
    Value rowTiles = arith::DivUIOp::create(b, rows.whole, index(b, rowBlock));
    kernel(b, "dense_rows", {rowTiles, colTiles}, [&](ValueRange ids) {
      dispatch(ids[1], arith::MulIOp::create(b, ids[0], index(b, rowBlock)),
               rowBlock);
    });
    Value rest = arith::SubIOp::create(b, rows.count, rows.whole);
    kernel(b, "dense_rows_tail", {rest, colTiles}, [&](ValueRange ids) {
      dispatch(ids[1], arith::AddIOp::create(b, rows.whole, ids[0]), 1);
    });
    for (const Layer &layer : group)
      eraseWithEpilogues(layer.op, layer.epilogues);
  }

  /// sums += the column sums of g as dense_column_partials and
  /// dense_column_sums. A fill of the sums right before moves into the
  /// second kernel.
  void tileColumnSum(linalg::GenericOp op, const ColumnSum &c) {
    TileEpilogues epilogues = findEpilogues(op, c.sums);
    auto fill = dyn_cast_or_null<linalg::FillOp>(epilogues.init);
    ImplicitLocOpBuilder b(op.getLoc(), op);
    Value g = collapseRows(b, c.g);
    Rows rows = splitRows(b, g, rowBlock);
    int64_t wide = largestBlockDividing(c.out, 4 * colBlock);
    OpFoldResult colTiles = b.getIndexAttr(c.out / wide);
    Value rowTiles = arith::DivUIOp::create(b, rows.whole, index(b, rowBlock));
    Type elementType = cast<MemRefType>(g.getType()).getElementType();
    auto partialType =
        MemRefType::get({ShapedType::kDynamic, c.out}, elementType);
    Value partial = memref::AllocOp::create(b, partialType, rowTiles);
    Value zero = arith::ConstantOp::create(b, b.getZeroAttr(elementType));
    kernel(b, "dense_column_partials", {rowTiles, colTiles},
           [&](ValueRange ids) {
             Value r0 = arith::MulIOp::create(b, ids[0], index(b, rowBlock));
             Value c0 = arith::MulIOp::create(b, ids[1], index(b, wide));
             Value sums = rowPieceOf(b, partial, ids[0], c0, wide);
             linalg::FillOp::create(b, ValueRange{zero}, ValueRange{sums});
             addColumnSums(b, blockOf(b, g, r0, c0, rowBlock, wide), sums);
           });
    kernel(b, "dense_column_sums", {colTiles}, [&](ValueRange ids) {
      Value c0 = arith::MulIOp::create(b, ids[0], index(b, wide));
      Value sums = pieceOf(b, c.sums, c0, wide);
      if (fill)
        linalg::FillOp::create(b, fill.getInputs(), ValueRange{sums});
      // Rows lb, lb + count, ... < ub of `rows2d`, count at a time.
      auto sumRows = [&](Value rows2d, Value lb, Value ub, int64_t count) {
        auto loop = scf::ForOp::create(b, lb, ub, index(b, count));
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(loop.getBody()->getTerminator());
        Value r0 = loop.getInductionVar();
        addColumnSums(b, blockOf(b, rows2d, r0, c0, count, wide), sums);
      };
      Rows partials = splitRows(b, partial, rowBlock);
      sumRows(partial, index(b, 0), partials.whole, rowBlock);
      sumRows(partial, partials.whole, partials.count, 1);
      sumRows(g, rows.whole, rows.count, 1);
    });
    memref::DeallocOp::create(b, partial);
    eraseWithEpilogues(op, {fill, {}});
  }

  /// dW += g^T x as dense_weight_grad.
  void tileWeightGradient(linalg::GenericOp op, const WeightGradient &w) {
    TileEpilogues epilogues = findEpilogues(op, w.dw);
    ImplicitLocOpBuilder b(op.getLoc(), op);
    Value g = collapseRows(b, w.g), x = collapseRows(b, w.x);
    Rows rows = splitRows(b, x, rowBlock);
    int64_t height = largestBlockDividing(w.out, rowBlock);
    int64_t width = largestBlockDividing(w.in, colBlock);
    SmallVector<OpFoldResult> grid = {b.getIndexAttr(w.out / height),
                                      b.getIndexAttr(w.in / width)};
    kernel(b, "dense_weight_grad", grid, [&](ValueRange ids) {
      Value o0 = arith::MulIOp::create(b, ids[0], index(b, height));
      Value i0 = arith::MulIOp::create(b, ids[1], index(b, width));
      if (epilogues.init)
        onTile(b, epilogues.init, blockOf(b, w.dw, o0, i0, height, width), o0,
               i0);
      Value out = blockOf(b, w.dw, o0, i0, height, width);
      // Rows r0 .. r0 + count of the sum: g's columns o0.. read transposed
      // times x's columns i0...
      auto sum = [&](Value lb, Value ub, int64_t count) {
        auto loop = scf::ForOp::create(b, lb, ub, index(b, count));
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(loop.getBody()->getTerminator());
        Value r0 = loop.getInductionVar();
        Value lhs = blockOf(b, g, r0, o0, count, height);
        Value rhs = blockOf(b, x, r0, i0, count, width);
        transposedProduct(b, lhs, rhs, out);
      };
      sum(index(b, 0), rows.whole, rowBlock);
      sum(rows.whole, rows.count, 1);
      if (epilogues.map)
        onTile(b, epilogues.map, blockOf(b, w.dw, o0, i0, height, width), o0,
               i0);
    });
    eraseWithEpilogues(op, epilogues);
  }
};

} // namespace
} // namespace fwp
