//===- KnownAlignment.cpp - Powers of two that divide index values --------===//

#include "KnownAlignment.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <algorithm>
#include <cstdint>
#include <optional>

using namespace mlir;

namespace fwp {
namespace {

/// What a zero is divided by, and the most any value is said to be.
constexpr int64_t kLargest = int64_t(1) << 20;

int64_t powerOfTwoDividing(int64_t value) {
  if (value == 0)
    return kLargest;
  // The lowest set bit, in unsigned arithmetic (no overflow at INT64_MIN).
  uint64_t bits = uint64_t(value);
  return int64_t(std::min(uint64_t(kLargest), bits & (~bits + 1)));
}

int64_t product(int64_t a, int64_t b) { return std::min(kLargest, a * b); }

int64_t divisorOf(Value value);

int64_t divisorOf(AffineExpr expr, ValueRange operands, unsigned numDims) {
  if (auto constant = dyn_cast<AffineConstantExpr>(expr))
    return powerOfTwoDividing(constant.getValue());
  if (auto dim = dyn_cast<AffineDimExpr>(expr))
    return divisorOf(operands[dim.getPosition()]);
  if (auto symbol = dyn_cast<AffineSymbolExpr>(expr))
    return divisorOf(operands[numDims + symbol.getPosition()]);
  auto binary = cast<AffineBinaryOpExpr>(expr);
  int64_t lhs = divisorOf(binary.getLHS(), operands, numDims);
  int64_t rhs = divisorOf(binary.getRHS(), operands, numDims);
  switch (expr.getKind()) {
  case AffineExprKind::Add:
    return std::min(lhs, rhs);
  case AffineExprKind::Mul:
    return product(lhs, rhs);
  default: // floordiv, ceildiv, mod
    return 1;
  }
}

int64_t divisorOf(Value value) {
  if (auto argument = dyn_cast<BlockArgument>(value)) {
    // An scf.for's induction variable: its lower bound plus steps.
    auto loop = dyn_cast<scf::ForOp>(argument.getOwner()->getParentOp());
    if (loop && argument == loop.getInductionVar())
      return std::min(divisorOf(loop.getLowerBound()),
                      divisorOf(loop.getStep()));
    return 1;
  }
  Operation *op = value.getDefiningOp();
  if (auto constant = dyn_cast<arith::ConstantIndexOp>(op))
    return powerOfTwoDividing(constant.value());
  if (auto constant = dyn_cast<arith::ConstantIntOp>(op))
    return powerOfTwoDividing(constant.value());
  if (isa<arith::AddIOp, arith::SubIOp>(op))
    return std::min(divisorOf(op->getOperand(0)), divisorOf(op->getOperand(1)));
  if (isa<arith::MulIOp>(op))
    return product(divisorOf(op->getOperand(0)), divisorOf(op->getOperand(1)));
  if (auto cast = dyn_cast<arith::IndexCastOp>(op))
    return divisorOf(cast.getIn());
  if (auto apply = dyn_cast<affine::AffineApplyOp>(op))
    return divisorOf(apply.getAffineMap().getResult(0), apply.getOperands(),
                     apply.getAffineMap().getNumDims());
  return 1;
}

/// Powers of two dividing a view's offset and strides (in elements).
struct Divisors {
  int64_t offset;
  SmallVector<int64_t> strides;
};

/// The divisors of an identity-layout `type`'s strides, from offset 0: a
/// dynamic size divides its stride by nothing known, a static one by its
/// power of two.
Divisors identityDivisors(MemRefType type) {
  Divisors d{kLargest, SmallVector<int64_t>(type.getRank(), 1)};
  int64_t stride = 1;
  for (int64_t dim = type.getRank() - 1; dim >= 0; --dim) {
    d.strides[dim] = stride;
    int64_t size = type.getDimSize(dim);
    stride = product(
        stride, ShapedType::isDynamic(size) ? 1 : powerOfTwoDividing(size));
  }
  return d;
}

std::optional<Divisors> divisorsOf(Value view) {
  auto type = cast<MemRefType>(view.getType());
  Operation *op = view.getDefiningOp();
  if (isa_and_nonnull<memref::AllocOp>(op) && type.getLayout().isIdentity())
    return identityDivisors(type);
  // An expand_shape of a whole allocation is that allocation, reshaped.
  if (auto expand = dyn_cast_or_null<memref::ExpandShapeOp>(op)) {
    // Identity layouts on both sides: offset 0, strides from the shapes.
    if (!divisorsOf(expand.getSrc()) ||
        !expand.getSrcType().getLayout().isIdentity() ||
        !type.getLayout().isIdentity())
      return std::nullopt;
    return identityDivisors(type);
  }
  auto subview = dyn_cast_or_null<memref::SubViewOp>(op);
  if (!subview)
    return std::nullopt;
  std::optional<Divisors> source = divisorsOf(subview.getSource());
  if (!source)
    return std::nullopt;
  Divisors d{source->offset, {}};
  llvm::SmallBitVector dropped = subview.getDroppedDims();
  for (auto [dim, offset, stride] :
       llvm::enumerate(subview.getMixedOffsets(), subview.getMixedStrides())) {
    d.offset = std::min(d.offset, product(knownPowerOfTwoDivisor(offset),
                                          source->strides[dim]));
    if (!dropped.test(dim))
      d.strides.push_back(
          product(knownPowerOfTwoDivisor(stride), source->strides[dim]));
  }
  return d;
}

} // namespace

int64_t knownPowerOfTwoDivisor(OpFoldResult value) {
  if (auto attr = dyn_cast<Attribute>(value))
    return powerOfTwoDividing(cast<IntegerAttr>(attr).getInt());
  return divisorOf(cast<Value>(value));
}

bool rowsStartAligned(Value view, int64_t elements) {
  std::optional<Divisors> d = divisorsOf(view);
  return d && d->strides.size() == 2 && d->offset % elements == 0 &&
         d->strides[0] % elements == 0;
}

} // namespace fwp
