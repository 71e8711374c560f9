//===- TileBuilder.cpp - Tile operations on static views ------------------===//

#include "TileBuilder.h"
#include "LoopEmitter.h"

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

ArrayRef<int64_t> TileBuilder::shape(Value tile) const {
  return cast<MemRefType>(tile.getType()).getShape();
}

AffineMap TileBuilder::identityMap(int64_t rank) const {
  return AffineMap::getMultiDimIdentityMap(rank, b.getContext());
}

SmallVector<utils::IteratorType> TileBuilder::parallel(int64_t rank) const {
  return SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel);
}

Value TileBuilder::view(Value buffer, ArrayRef<Value> offsets,
                        ArrayRef<int64_t> sizes, ArrayRef<int64_t> shape) {
  auto type = cast<MemRefType>(buffer.getType());
  assert(offsets.size() == sizes.size() &&
         static_cast<int64_t>(sizes.size()) == type.getRank() &&
         "one offset and size a dim");
  SmallVector<OpFoldResult> offs(offsets.begin(), offsets.end());
  SmallVector<OpFoldResult> extents =
      getAsIndexOpFoldResult(b.getContext(), sizes);
  SmallVector<OpFoldResult> strides(sizes.size(), b.getIndexAttr(1));
  MemRefType resultType = memref::SubViewOp::inferRankReducedResultType(
      shape, type, offs, extents, strides);
  return memref::SubViewOp::create(b, resultType, buffer, offs, extents,
                                   strides);
}

Value TileBuilder::tile(Value buffer, ArrayRef<Value> offsets, int64_t rows,
                        int64_t cols) {
  int64_t r = rank(buffer);
  SmallVector<int64_t> sizes(r, 1);
  if (cols > 0) {
    sizes[r - 2] = rows;
    sizes[r - 1] = cols;
    return view(buffer, offsets, sizes, {rows, cols});
  }
  sizes[r - 1] = rows;
  return view(buffer, offsets, sizes, {rows});
}

Value TileBuilder::stepTile(Value buffer, ArrayRef<Value> offsets, int64_t rows,
                            int64_t cols, bool batchFirst) {
  // A [T, B, H, W] buffer is contiguous, so it is also [T, B H W]: the
  // tile is then a plain 2-D view whose rows are B H W apart. (A view
  // dropping the middle dimensions instead makes transfers with permutation
  // maps, on which upstream's alias folding and folders do not converge.)
  // Batch first, [B, T, H, W] is [B T, H W], rows H W apart.
  assert(cast<MemRefType>(buffer.getType()).getRank() == 4 &&
         offsets.size() == 4 && cols > 0 && "steps of [T, B, H, W]");
  Value t = offsets[0], batch = offsets[1], head = offsets[2];
  Value heads = memref::DimOp::create(b, buffer, 2);
  Value width = memref::DimOp::create(b, buffer, 3);
  auto mulAdd = [&](Value x, Value y, Value z) {
    return arith::AddIOp::create(b, arith::MulIOp::create(b, x, y), z);
  };
  if (batchFirst) {
    auto flat = memref::CollapseShapeOp::create(
        b, buffer, ArrayRef<ReassociationIndices>{{0, 1}, {2, 3}});
    Value steps = memref::DimOp::create(b, buffer, 1);
    Value row = mulAdd(batch, steps, t);
    Value col = mulAdd(head, width, offsets[3]);
    return view(flat, {row, col}, {rows, cols}, {rows, cols});
  }
  auto flat = memref::CollapseShapeOp::create(
      b, buffer, ArrayRef<ReassociationIndices>{{0}, {1, 2, 3}});
  Value col = mulAdd(mulAdd(batch, heads, head), width, offsets[3]);
  return view(flat, {t, col}, {rows, cols}, {rows, cols});
}

Value TileBuilder::localTile(int64_t rows, int64_t cols, Attribute memorySpace,
                             int64_t rowPadding) {
  auto type = MemRefType::get({rows, cols + rowPadding}, elementType,
                              MemRefLayoutAttrInterface(), memorySpace);
  Value buffer = memref::AllocaOp::create(b, type);
  if (rowPadding == 0)
    return buffer;
  Value zero = arith::ConstantIndexOp::create(b, 0);
  return view(buffer, {zero, zero}, {rows, cols}, {rows, cols});
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
  AffineMap rhsMap = transposed == Transposed::Rhs ? map(n, k) : map(k, n);
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

void TileBuilder::add(Value lhs, Value rhs, Value out) {
  elementwise(lhs, rhs, out, [](OpBuilder &nb, Location loc, Value x, Value y) {
    return arith::AddFOp::create(nb, loc, x, y, kFlags).getResult();
  });
}

void TileBuilder::multiply(Value lhs, Value rhs, Value out) {
  elementwise(lhs, rhs, out, [](OpBuilder &nb, Location loc, Value x, Value y) {
    return arith::MulFOp::create(nb, loc, x, y, kFlags).getResult();
  });
}

void TileBuilder::multiplyAdd(Value lhs, Value rhs, Value out) {
  int64_t r = rank(out);
  linalg::GenericOp::create(
      b, ValueRange{lhs, rhs}, ValueRange{out},
      {identityMap(r), identityMap(r), identityMap(r)}, parallel(r),
      [&](OpBuilder &nb, Location loc, ValueRange args) {
        Value xy = arith::MulFOp::create(nb, loc, args[0], args[1], kFlags);
        Value v = arith::AddFOp::create(nb, loc, args[2], xy, kFlags);
        linalg::YieldOp::create(nb, loc, v);
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

void TileBuilder::addRowDots(Value lhs, Value rhs, Value sums) {
  accumulateRowDots(lhs, rhs, sums, /*contract=*/true);
}

void TileBuilder::rowDotsOfRoundedProducts(Value lhs, Value rhs, Value sums) {
  fill(sums, 0.0);
  accumulateRowDots(lhs, rhs, sums, /*contract=*/false);
}

void TileBuilder::accumulateRowDots(Value lhs, Value rhs, Value sums,
                                    bool contract) {
  MLIRContext *ctx = b.getContext();
  AffineMap row = AffineMap::get(2, 0, {getAffineDimExpr(0, ctx)}, ctx);
  // The sum may always be reassociated; without `contract` the product is
  // rounded on its own before it is added.
  auto mulFlags = contract ? kFlags : arith::FastMathFlags::none;
  auto addFlags = contract ? kFlags : arith::FastMathFlags::reassoc;
  linalg::GenericOp::create(
      b, ValueRange{lhs, rhs}, ValueRange{sums},
      {identityMap(2), identityMap(2), row},
      {utils::IteratorType::parallel, utils::IteratorType::reduction},
      [&](OpBuilder &nb, Location loc, ValueRange args) {
        Value xy = arith::MulFOp::create(nb, loc, args[0], args[1], mulFlags);
        Value v = arith::AddFOp::create(nb, loc, args[2], xy, addFlags);
        linalg::YieldOp::create(nb, loc, v);
      });
}

void TileBuilder::mapRows(
    ValueRange ins, ValueRange rows, Value out,
    function_ref<Value(OpBuilder &, Location, ValueRange, ValueRange)> body) {
  MLIRContext *ctx = b.getContext();
  AffineMap row = AffineMap::get(2, 0, {getAffineDimExpr(0, ctx)}, ctx);
  SmallVector<Value> operands(ins);
  llvm::append_range(operands, rows);
  SmallVector<AffineMap> maps(ins.size(), identityMap(2));
  maps.append(rows.size(), row);
  maps.push_back(identityMap(2));
  linalg::GenericOp::create(b, operands, ValueRange{out}, maps, parallel(2),
                            [&](OpBuilder &nb, Location loc, ValueRange args) {
                              Value v =
                                  body(nb, loc, args.take_front(ins.size()),
                                       args.slice(ins.size(), rows.size()));
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
  Type outType = cast<MemRefType>(out.getType()).getElementType();
  linalg::GenericOp::create(
      b, ValueRange{in}, ValueRange{out}, {identityMap(r), identityMap(r)},
      parallel(r), [&](OpBuilder &nb, Location loc, ValueRange args) {
        linalg::YieldOp::create(nb, loc,
                                convertFloat(nb, loc, args[0], outType));
      });
}

void TileBuilder::relu(Value in, Value out, bool negated) {
  int64_t r = rank(out);
  linalg::GenericOp::create(
      b, ValueRange{in}, ValueRange{out}, {identityMap(r), identityMap(r)},
      parallel(r), [&](OpBuilder &nb, Location loc, ValueRange args) {
        Value x = convertFloat(nb, loc, args[0], elementType);
        if (negated)
          x = arith::NegFOp::create(nb, loc, x, kFlags);
        // As the masked loads do: a select, so that -0 and NaN give +0.
        Value zero = arith::ConstantOp::create(
            nb, loc, nb.getFloatAttr(elementType, 0.0));
        Value positive =
            arith::CmpFOp::create(nb, loc, arith::CmpFPredicate::OGT, x, zero);
        Value v = arith::SelectOp::create(nb, loc, positive, x, zero);
        linalg::YieldOp::create(nb, loc, v);
      });
}

void TileBuilder::transpose(Value in, Value out) {
  linalg::TransposeOp::create(b, in, out, ArrayRef<int64_t>{1, 0});
}

// A loop the instance's threads share (scf.parallel, as the masked stores
// of a partial chunk), not a linalg op: linalg has no atomic update.
void TileBuilder::atomicAdd(Value in, Value out) {
  ArrayRef<int64_t> sizes = shape(in);
  Value zero = arith::ConstantIndexOp::create(b, 0);
  Value one = arith::ConstantIndexOp::create(b, 1);
  SmallVector<Value> lbs(sizes.size(), zero), steps(sizes.size(), one), ubs;
  for (int64_t size : sizes)
    ubs.push_back(arith::ConstantIndexOp::create(b, size));
  auto loop = scf::ParallelOp::create(b, lbs, ubs, steps);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(loop.getBody()->getTerminator());
  ValueRange point = loop.getInductionVars();
  Value x = memref::LoadOp::create(b, in, point);
  memref::AtomicRMWOp::create(b, arith::AtomicRMWKind::addf, x, out, point);
}

} // namespace fwp
