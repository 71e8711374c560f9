//===- TileBuilder.cpp - Tile operations on static views ------------------===//

#include "TileBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;

namespace fwp {

namespace {
constexpr auto kFlags =
    arith::FastMathFlags::reassoc | arith::FastMathFlags::contract;
} // namespace

int64_t TileBuilder::rank(Value tile) const {
  return cast<MemRefType>(tile.getType()).getRank();
}

AffineMap TileBuilder::identityMap(int64_t rank) const {
  return AffineMap::getMultiDimIdentityMap(rank, b.getContext());
}

SmallVector<utils::IteratorType> TileBuilder::parallel(int64_t rank) const {
  return SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel);
}

Value TileBuilder::tile(Value buffer, ArrayRef<Value> offsets, int64_t rows,
                        int64_t cols) {
  auto type = cast<MemRefType>(buffer.getType());
  int64_t r = type.getRank();
  assert(static_cast<int64_t>(offsets.size()) == r && "one offset a dim");
  SmallVector<OpFoldResult> offs(offsets.begin(), offsets.end());
  SmallVector<OpFoldResult> sizes(r, b.getIndexAttr(1));
  SmallVector<OpFoldResult> strides(r, b.getIndexAttr(1));
  SmallVector<int64_t> shape;
  if (cols > 0) {
    sizes[r - 2] = b.getIndexAttr(rows);
    sizes[r - 1] = b.getIndexAttr(cols);
    shape = {rows, cols};
  } else {
    sizes[r - 1] = b.getIndexAttr(rows);
    shape = {rows};
  }
  MemRefType resultType = memref::SubViewOp::inferRankReducedResultType(
      shape, type, offs, sizes, strides);
  return memref::SubViewOp::create(b, resultType, buffer, offs, sizes, strides);
}

void TileBuilder::fill(Value tile, double value) {
  Value constant =
      arith::ConstantOp::create(b, b.getFloatAttr(elementType, value));
  linalg::FillOp::create(b, ValueRange{constant}, ValueRange{tile});
}

void TileBuilder::identity(Value tile) {
  linalg::GenericOp::create(
      b, ValueRange{}, ValueRange{tile}, {identityMap(2)}, parallel(2),
      [&](OpBuilder &nb, Location loc, ValueRange) {
        Value i = linalg::IndexOp::create(nb, loc, 0);
        Value j = linalg::IndexOp::create(nb, loc, 1);
        Value same =
            arith::CmpIOp::create(nb, loc, arith::CmpIPredicate::eq, i, j);
        Value one = arith::ConstantOp::create(
            nb, loc, nb.getFloatAttr(elementType, 1.0));
        Value zero = arith::ConstantOp::create(
            nb, loc, nb.getFloatAttr(elementType, 0.0));
        Value v = arith::SelectOp::create(nb, loc, same, one, zero);
        linalg::YieldOp::create(nb, loc, v);
      });
}

void TileBuilder::product(Value lhs, Value rhs, Value out,
                          Transposed transposed, bool accumulate) {
  if (!accumulate)
    fill(out, 0.0);
  MLIRContext *ctx = b.getContext();
  AffineExpr m, n, k;
  bindDims(ctx, m, n, k);
  auto map = [&](AffineExpr x, AffineExpr y) {
    return AffineMap::get(3, 0, {x, y}, ctx);
  };
  AffineMap lhsMap = transposed == Transposed::Lhs ? map(k, m) : map(m, k);
  AffineMap rhsMap = map(k, n);
  SmallVector<Attribute> maps = {AffineMapAttr::get(lhsMap),
                                 AffineMapAttr::get(rhsMap),
                                 AffineMapAttr::get(map(m, n))};
  linalg::MatmulOp::create(
      b, ValueRange{lhs, rhs}, ValueRange{out},
      {b.getNamedAttr("indexing_maps", b.getArrayAttr(maps))});
}

void TileBuilder::maskLower(Value tile, bool strict) {
  linalg::GenericOp::create(
      b, ValueRange{}, ValueRange{tile}, {identityMap(2)}, parallel(2),
      [&](OpBuilder &nb, Location loc, ValueRange args) {
        Value i = linalg::IndexOp::create(nb, loc, 0);
        Value j = linalg::IndexOp::create(nb, loc, 1);
        Value keep = arith::CmpIOp::create(nb, loc,
                                           strict ? arith::CmpIPredicate::ult
                                                  : arith::CmpIPredicate::ule,
                                           j, i);
        Value zero = arith::ConstantOp::create(
            nb, loc, nb.getFloatAttr(elementType, 0.0));
        Value v = arith::SelectOp::create(nb, loc, keep, args[0], zero);
        linalg::YieldOp::create(nb, loc, v);
      });
}

void TileBuilder::elementwise(
    Value lhs, Value rhs, Value out,
    function_ref<Value(OpBuilder &, Location, Value, Value)> combine) {
  int64_t r = rank(out);
  linalg::GenericOp::create(
      b, ValueRange{lhs, rhs}, ValueRange{out},
      {identityMap(r), identityMap(r), identityMap(r)}, parallel(r),
      [&](OpBuilder &nb, Location loc, ValueRange args) {
        linalg::YieldOp::create(nb, loc, combine(nb, loc, args[0], args[1]));
      });
}

void TileBuilder::subtract(Value lhs, Value rhs, Value out) {
  elementwise(lhs, rhs, out, [](OpBuilder &nb, Location loc, Value x, Value y) {
    return arith::SubFOp::create(nb, loc, x, y, kFlags).getResult();
  });
}

void TileBuilder::multiply(Value lhs, Value rhs, Value out) {
  elementwise(lhs, rhs, out, [](OpBuilder &nb, Location loc, Value x, Value y) {
    return arith::MulFOp::create(nb, loc, x, y, kFlags).getResult();
  });
}

void TileBuilder::rowSums(Value in, Value sums, double offset) {
  fill(sums, offset);
  MLIRContext *ctx = b.getContext();
  AffineMap row = AffineMap::get(2, 0, {getAffineDimExpr(0, ctx)}, ctx);
  linalg::GenericOp::create(
      b, ValueRange{in}, ValueRange{sums}, {identityMap(2), row},
      {utils::IteratorType::parallel, utils::IteratorType::reduction},
      [&](OpBuilder &nb, Location loc, ValueRange args) {
        Value v = arith::AddFOp::create(nb, loc, args[1], args[0], kFlags);
        linalg::YieldOp::create(nb, loc, v);
      });
}

void TileBuilder::divideRows(Value tile, Value divisors) {
  MLIRContext *ctx = b.getContext();
  AffineMap row = AffineMap::get(2, 0, {getAffineDimExpr(0, ctx)}, ctx);
  linalg::GenericOp::create(
      b, ValueRange{divisors}, ValueRange{tile}, {row, identityMap(2)},
      parallel(2), [&](OpBuilder &nb, Location loc, ValueRange args) {
        Value v = arith::DivFOp::create(nb, loc, args[1], args[0]);
        linalg::YieldOp::create(nb, loc, v);
      });
}

void TileBuilder::scaleColumns(Value in, Value scale, Value out) {
  scaleAlong(in, scale, out, /*dim=*/1);
}

void TileBuilder::scaleRows(Value in, Value scale, Value out) {
  scaleAlong(in, scale, out, /*dim=*/0);
}

void TileBuilder::scaleAlong(Value in, Value scale, Value out, unsigned dim) {
  MLIRContext *ctx = b.getContext();
  AffineMap along = AffineMap::get(2, 0, {getAffineDimExpr(dim, ctx)}, ctx);
  linalg::GenericOp::create(
      b, ValueRange{in, scale}, ValueRange{out},
      {identityMap(2), along, identityMap(2)}, parallel(2),
      [&](OpBuilder &nb, Location loc, ValueRange args) {
        Value v = arith::MulFOp::create(nb, loc, args[0], args[1], kFlags);
        linalg::YieldOp::create(nb, loc, v);
      });
}

void TileBuilder::negate(Value tile) {
  int64_t r = rank(tile);
  linalg::GenericOp::create(
      b, ValueRange{}, ValueRange{tile}, {identityMap(r)}, parallel(r),
      [&](OpBuilder &nb, Location loc, ValueRange args) {
        Value v = arith::NegFOp::create(nb, loc, args[0], kFlags);
        linalg::YieldOp::create(nb, loc, v);
      });
}

void TileBuilder::subtractScaled(Value row, Value scale, Value delta) {
  int64_t r = rank(row);
  MLIRContext *ctx = b.getContext();
  AffineMap scalar = AffineMap::get(r, 0, {}, ctx);
  linalg::GenericOp::create(
      b, ValueRange{delta, scale}, ValueRange{row},
      {identityMap(r), scalar, identityMap(r)}, parallel(r),
      [&](OpBuilder &nb, Location loc, ValueRange args) {
        Value scaled = arith::MulFOp::create(nb, loc, args[1], args[0], kFlags);
        Value v = arith::SubFOp::create(nb, loc, args[2], scaled, kFlags);
        linalg::YieldOp::create(nb, loc, v);
      });
}

void TileBuilder::copy(Value in, Value out) {
  int64_t r = rank(out);
  linalg::GenericOp::create(b, ValueRange{in}, ValueRange{out},
                            {identityMap(r), identityMap(r)}, parallel(r),
                            [&](OpBuilder &nb, Location loc, ValueRange args) {
                              linalg::YieldOp::create(nb, loc, args[0]);
                            });
}

void TileBuilder::transpose(Value in, Value out) {
  linalg::TransposeOp::create(b, in, out, ArrayRef<int64_t>{1, 0});
}

} // namespace fwp
