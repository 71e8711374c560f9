//===- LoopEmitter.h - Loops and arithmetic for fwp's kernels ---*- C++ -*-===//
//
// A thin layer over ImplicitLocOpBuilder for what the scan kernels do
// outside their tiles (TileBuilder.h): index arithmetic, the masked
// element loads and stores at the sequence end (16-bit storage extended and
// rounded), sequential loops, shared (scf.parallel) loops and kernels
// (tagged scf.forall).
//
//===----------------------------------------------------------------------===//

#ifndef FWP_LIB_TRANSFORMS_LOOPEMITTER_H
#define FWP_LIB_TRANSFORMS_LOOPEMITTER_H

#include "fwp/Transforms/Kernels.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace fwp {

/// x (a float) in the float type `to`: extended, rounded to nearest even,
/// or as it is. 16-bit storage is read and written through it.
inline mlir::Value convertFloat(mlir::OpBuilder &b, mlir::Location loc,
                                mlir::Value x, mlir::Type to) {
  unsigned from = x.getType().getIntOrFloatBitWidth(),
           width = to.getIntOrFloatBitWidth();
  if (from < width)
    return mlir::arith::ExtFOp::create(b, loc, to, x);
  if (from > width)
    return mlir::arith::TruncFOp::create(b, loc, to, x);
  return x;
}

using mlir::function_ref;
using mlir::ImplicitLocOpBuilder;
using mlir::OpBuilder;
using mlir::Type;
using mlir::Value;
using mlir::ValueRange;

/// Emits loops and arithmetic with one builder; the loop helpers move the
/// insertion point into the body while the body is emitted.
class Emitter {
public:
  Emitter(ImplicitLocOpBuilder &b, Type elementType)
      : b(b), elementType(elementType) {}

  Value index(int64_t value) {
    return mlir::arith::ConstantIndexOp::create(b, value);
  }
  Value real(double value) {
    return mlir::arith::ConstantOp::create(b,
                                           b.getFloatAttr(elementType, value));
  }
  Value neg(Value x) { return mlir::arith::NegFOp::create(b, x); }
  Value addIndex(Value x, Value y) {
    return mlir::arith::AddIOp::create(b, x, y);
  }
  Value mulIndex(Value x, Value y) {
    return mlir::arith::MulIOp::create(b, x, y);
  }
  Value subIndex(Value x, Value y) {
    return mlir::arith::SubIOp::create(b, x, y);
  }
  Value remIndex(Value x, Value y) {
    return mlir::arith::RemUIOp::create(b, x, y);
  }
  Value minIndex(Value x, Value y) {
    return mlir::arith::MinSIOp::create(b, x, y);
  }
  Value less(Value x, Value y) {
    return mlir::arith::CmpIOp::create(b, mlir::arith::CmpIPredicate::slt, x,
                                       y);
  }
  Value select(Value cond, Value x, Value y) {
    return mlir::arith::SelectOp::create(b, cond, x, y);
  }
  Value relu(Value x) {
    Value positive = mlir::arith::CmpFOp::create(
        b, mlir::arith::CmpFPredicate::OGT, x, real(0.0));
    return select(positive, x, real(0.0));
  }
  /// memref[indices], a float of 16-bit storage extended to the element
  /// type.
  Value load(Value memref, ValueRange indices) {
    Value x = mlir::memref::LoadOp::create(b, memref, indices);
    return mlir::isa<mlir::FloatType>(x.getType())
               ? convertFloat(b, b.getLoc(), x, elementType)
               : x;
  }
  /// memref[indices] = value, rounded to nearest even into 16-bit storage.
  void store(Value value, Value memref, ValueRange indices) {
    Type stored =
        mlir::cast<mlir::MemRefType>(memref.getType()).getElementType();
    if (mlir::isa<mlir::FloatType>(stored))
      value = convertFloat(b, b.getLoc(), value, stored);
    mlir::memref::StoreOp::create(b, value, memref, indices);
  }
  /// for iv in [lb, ub): body(iv).
  void forLoop(Value lb, Value ub, function_ref<void(Value)> body) {
    forLoop(lb, ub, index(1), body);
  }
  /// for iv in [lb, ub) by `step`: body(iv).
  void forLoop(Value lb, Value ub, Value step, function_ref<void(Value)> body) {
    auto loop = mlir::scf::ForOp::create(b, lb, ub, step);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(loop.getBody()->getTerminator());
    body(loop.getInductionVar());
  }

  /// `cond ? then() : otherwise`, evaluating then() only when needed.
  Value ifElse(Value cond, function_ref<Value()> then, Value otherwise) {
    auto ifOp = mlir::scf::IfOp::create(b, mlir::TypeRange{elementType}, cond,
                                        /*withElseRegion=*/true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    mlir::scf::YieldOp::create(b, then());
    b.setInsertionPointToStart(&ifOp.getElseRegion().front());
    mlir::scf::YieldOp::create(b, otherwise);
    return ifOp.getResult(0);
  }

  /// if (cond) then() else otherwise().
  void ifThenElse(Value cond, function_ref<void()> then,
                  function_ref<void()> otherwise) {
    auto ifOp = mlir::scf::IfOp::create(b, mlir::TypeRange{}, cond,
                                        /*withElseRegion=*/true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
    then();
    b.setInsertionPoint(ifOp.elseBlock()->getTerminator());
    otherwise();
  }

  /// Work shared by the threads of a block: body(ivs) for every point of
  /// [0, ubs).
  void parallel(llvm::ArrayRef<Value> ubs,
                function_ref<void(ValueRange)> body) {
    llvm::SmallVector<Value> lbs(ubs.size(), index(0)),
        steps(ubs.size(), index(1));
    auto loop = mlir::scf::ParallelOp::create(b, lbs, ubs, steps);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(loop.getBody()->getTerminator());
    body(loop.getInductionVars());
  }

  /// A kernel: body(ids) for every point of [0, ubs), tagged with its name.
  void kernel(llvm::StringRef name, llvm::ArrayRef<Value> ubs,
              function_ref<void(ValueRange)> body) {
    llvm::SmallVector<mlir::OpFoldResult> bounds(ubs.begin(), ubs.end());
    auto forall = mlir::scf::ForallOp::create(
        b, bounds, ValueRange{}, blockMapping(b.getContext(), ubs.size()));
    forall->setAttr(kKernelAttrName, b.getStringAttr(name));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(forall.getBody()->getTerminator());
    body(forall.getInductionVars());
  }

  ImplicitLocOpBuilder &b;
  Type elementType;
};

} // namespace fwp

#endif // FWP_LIB_TRANSFORMS_LOOPEMITTER_H
