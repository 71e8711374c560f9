//===- DpfpColumns.cpp - DPFP and its gradient by column ranges -----------===//
//
// Inside a kernel, DPFP's map and gradient act on a chunk's rows, [C, d],
// and must vectorize: no gathers. Every roll of x = relu([k, -k]) by i is
// two column ranges (j >= i and the wrap-around j < i), so each product of
// x with its roll, and each term of the gradient, is an elementwise product
// of column ranges of static tiles.
//
//===----------------------------------------------------------------------===//

#include "DpfpBuilders.h"

#include "fwp/Transforms/KernelConfig.h"
#include "fwp/Transforms/Kernels.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;

namespace fwp {

/// Columns [offset, offset + width) of `value`, [..., W], all its rows.
bool mapsByColumns(Operation *op) {
  return isInsideKernel(op) &&
         kernelConfigOf(op, KernelTarget::Cpu).getTarget() != KernelTarget::Gpu;
}

Value columns(OpBuilder &b, Location loc, Value value, int64_t offset,
              int64_t width) {
  auto type = cast<RankedTensorType>(value.getType());
  SmallVector<OpFoldResult> offsets(type.getRank(), b.getIndexAttr(0));
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, value);
  SmallVector<OpFoldResult> strides(type.getRank(), b.getIndexAttr(1));
  offsets.back() = b.getIndexAttr(offset);
  sizes.back() = b.getIndexAttr(width);
  return tensor::ExtractSliceOp::create(b, loc, value, offsets, sizes, strides);
}

/// `dest` with its columns from `offset` on overwritten by `source`.
Value placeColumns(OpBuilder &b, Location loc, Value source, Value dest,
                   int64_t offset) {
  auto type = cast<RankedTensorType>(source.getType());
  SmallVector<OpFoldResult> offsets(type.getRank(), b.getIndexAttr(0));
  SmallVector<OpFoldResult> strides(type.getRank(), b.getIndexAttr(1));
  offsets.back() = b.getIndexAttr(offset);
  return tensor::InsertSliceOp::create(b, loc, source, dest, offsets,
                                       tensor::getMixedSizes(b, loc, source),
                                       strides);
}

/// `combine` of the elements of `inputs` (all of one shape), elementwise.
Value elementwise(
    OpBuilder &b, Location loc, ValueRange inputs,
    function_ref<Value(OpBuilder &, Location, ValueRange)> combine) {
  auto type = cast<RankedTensorType>(inputs.front().getType());
  unsigned rank = type.getRank();
  Value init = tensor::EmptyOp::create(
      b, loc, tensor::getMixedSizes(b, loc, inputs.front()),
      type.getElementType());
  SmallVector<AffineMap> maps(
      inputs.size() + 1,
      AffineMap::getMultiDimIdentityMap(rank, b.getContext()));
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      b, loc, init.getType(), inputs, ValueRange{init}, maps, iterators,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        linalg::YieldOp::create(nb, nloc, combine(nb, nloc, args.drop_back()));
      });
  return generic.getResult(0);
}

/// max(sign * k, 0) elementwise (NaN to 0, as reluAt).
static Value relu(OpBuilder &b, Location loc, Value input, bool negate) {
  return elementwise(
      b, loc, input, [&](OpBuilder &nb, Location nloc, ValueRange args) {
        Value k = args[0];
        if (negate)
          k = arith::NegFOp::create(nb, nloc, k);
        Value zero =
            arith::ConstantOp::create(nb, nloc, nb.getZeroAttr(k.getType()));
        Value positive =
            arith::CmpFOp::create(nb, nloc, arith::CmpFPredicate::OGT, k, zero);
        return arith::SelectOp::create(nb, nloc, positive, k, zero).getResult();
      });
}

Value createRelus(OpBuilder &b, Location loc, Value input, int64_t d) {
  auto type = cast<RankedTensorType>(input.getType());
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, input);
  sizes.back() = b.getIndexAttr(2 * d);
  Value x = tensor::EmptyOp::create(b, loc, sizes, type.getElementType());
  x = placeColumns(b, loc, relu(b, loc, input, /*negate=*/false), x, 0);
  return placeColumns(b, loc, relu(b, loc, input, /*negate=*/true), x, d);
}

static Value times(OpBuilder &nb, Location nloc, ValueRange args) {
  return arith::MulFOp::create(nb, nloc, args[0], args[1]).getResult();
}

Value createProductsByColumns(OpBuilder &b, Location loc, Value x,
                              ArrayRef<OpFoldResult> sizes, int64_t d,
                              int64_t nu) {
  Type element = cast<RankedTensorType>(x.getType()).getElementType();
  Value phi = tensor::EmptyOp::create(b, loc, sizes, element);
  int64_t twoD = 2 * d;
  for (int64_t i = 1; i <= nu; ++i) {
    int64_t base = (i - 1) * twoD;
    Value shifted = elementwise(
        b, loc,
        {columns(b, loc, x, i, twoD - i), columns(b, loc, x, 0, twoD - i)},
        times);
    phi = placeColumns(b, loc, shifted, phi, base + i);
    Value wrapped = elementwise(
        b, loc, {columns(b, loc, x, 0, i), columns(b, loc, x, twoD - i, i)},
        times);
    phi = placeColumns(b, loc, wrapped, phi, base);
  }
  return phi;
}

/// acc[:, at .. at + width) += lhs * rhs, two tiles of that width, into
/// acc's own columns (so that bufferization writes them in place).
static Value addProduct(OpBuilder &b, Location loc, Value acc, int64_t at,
                        Value lhs, Value rhs) {
  auto type = cast<RankedTensorType>(lhs.getType());
  Value into = columns(b, loc, acc, at, type.getShape().back());
  SmallVector<AffineMap> maps(
      3, AffineMap::getMultiDimIdentityMap(type.getRank(), b.getContext()));
  SmallVector<utils::IteratorType> iterators(type.getRank(),
                                             utils::IteratorType::parallel);
  auto sum = linalg::GenericOp::create(
      b, loc, into.getType(), ValueRange{lhs, rhs}, ValueRange{into}, maps,
      iterators, [](OpBuilder &nb, Location nloc, ValueRange args) {
        Value product = arith::MulFOp::create(nb, nloc, args[0], args[1]);
        Value total = arith::AddFOp::create(nb, nloc, args[2], product);
        linalg::YieldOp::create(nb, nloc, total);
      });
  return placeColumns(b, loc, sum.getResult(0), acc, at);
}

Value createInputGradByColumns(OpBuilder &b, Location loc, Value input, Value x,
                               Value dphi, int64_t d, int64_t nu) {
  auto type = cast<RankedTensorType>(x.getType());
  Value zero =
      arith::ConstantOp::create(b, loc, b.getZeroAttr(type.getElementType()));
  Value empty = tensor::EmptyOp::create(
      b, loc, tensor::getMixedSizes(b, loc, x), type.getElementType());
  Value dx = linalg::FillOp::create(b, loc, zero, empty).getResult(0);
  int64_t twoD = 2 * d;
  auto dphiColumns = [&](int64_t i, int64_t offset, int64_t width) {
    return columns(b, loc, dphi, (i - 1) * twoD + offset, width);
  };
  for (int64_t i = 1; i <= nu; ++i) {
    // x[j]'s own products: dphi_i[j] x[j - i] (mod 2d).
    dx = addProduct(b, loc, dx, i, dphiColumns(i, i, twoD - i),
                    columns(b, loc, x, 0, twoD - i));
    dx = addProduct(b, loc, dx, 0, dphiColumns(i, 0, i),
                    columns(b, loc, x, twoD - i, i));
    // x[j] as the partner of x[j + i]: dphi_i[j + i] x[j + i] (mod 2d).
    dx = addProduct(b, loc, dx, 0, dphiColumns(i, i, twoD - i),
                    columns(b, loc, x, i, twoD - i));
    dx = addProduct(b, loc, dx, twoD - i, dphiColumns(i, 0, i),
                    columns(b, loc, x, 0, i));
  }
  // dk[n] = dx[n] where k[n] > 0, -dx[n + d] where k[n] < 0.
  return elementwise(
      b, loc, {input, columns(b, loc, dx, 0, d), columns(b, loc, dx, d, d)},
      [](OpBuilder &nb, Location nloc, ValueRange args) {
        Value k = args[0];
        Value zero =
            arith::ConstantOp::create(nb, nloc, nb.getZeroAttr(k.getType()));
        Value positive =
            arith::CmpFOp::create(nb, nloc, arith::CmpFPredicate::OGT, k, zero);
        Value negative =
            arith::CmpFOp::create(nb, nloc, arith::CmpFPredicate::OLT, k, zero);
        Value plus = arith::SelectOp::create(nb, nloc, positive, args[1], zero);
        Value minus =
            arith::SelectOp::create(nb, nloc, negative, args[2], zero);
        return arith::SubFOp::create(nb, nloc, plus, minus).getResult();
      });
}

} // namespace fwp
