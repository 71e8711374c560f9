//===- WidenStorage.cpp - 16-bit storage, float32 arithmetic --------------===//
//
// bf16 and f16 are storage types only (the numerical contract: state and
// every accumulation in float32 or wider). Each fwp op on 16-bit tensors is
// rewritten to run on float32: its operands are extended (exactly: every
// bf16 and f16 value is a float32 value) and its results rounded back to
// the storage type once, at the end. What the op lowers to is then the
// float32 code, unchanged.
//
//===----------------------------------------------------------------------===//

#include "WidenStorage.h"

#include "fwp/Dialect/FwpOps.h"
#include "fwp/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace fwp {
#define GEN_PASS_DEF_FWPWIDENSTORAGE
#include "fwp/Transforms/Passes.h.inc"
} // namespace fwp

using namespace mlir;

namespace fwp {
namespace {

bool isNarrowFloat(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && isa<FloatType>(tensor.getElementType()) &&
         tensor.getElementType().getIntOrFloatBitWidth() == 16;
}

/// `value` (a ranked tensor) converted elementwise to `elementType`.
Value convertElements(ImplicitLocOpBuilder &b, Value value, Type elementType) {
  Value init = tensor::EmptyOp::create(
      b, tensor::getMixedSizes(b, b.getLoc(), value), elementType);
  return convertInto(b, b.getLoc(), value, init);
}

} // namespace

Value convertInto(OpBuilder &b, Location loc, Value source, Value target) {
  Type to = getElementTypeOrSelf(target);
  int64_t rank = cast<RankedTensorType>(target.getType()).getRank();
  SmallVector<AffineMap> maps(2, b.getMultiDimIdentityMap(rank));
  SmallVector<utils::IteratorType> parallel(rank,
                                            utils::IteratorType::parallel);
  bool widen = to.getIntOrFloatBitWidth() >
               getElementTypeOrSelf(source).getIntOrFloatBitWidth();
  return linalg::GenericOp::create(
             b, loc, target.getType(), source, target, maps, parallel,
             [&](OpBuilder &nested, Location loc, ValueRange args) {
               Value converted =
                   widen ? arith::ExtFOp::create(nested, loc, to, args[0])
                               .getResult()
                         : arith::TruncFOp::create(nested, loc, to, args[0])
                               .getResult();
               linalg::YieldOp::create(nested, loc, converted);
             })
      .getResult(0);
}

void runInFloat32(Operation *op) {
  ImplicitLocOpBuilder b(op->getLoc(), op);
  Type f32 = b.getF32Type();
  SmallVector<Value> operands;
  for (Value operand : op->getOperands())
    operands.push_back(isNarrowFloat(operand.getType())
                           ? convertElements(b, operand, f32)
                           : operand);
  Operation *wide = b.clone(*op);
  wide->setOperands(operands);
  for (OpResult result : wide->getResults())
    if (isNarrowFloat(result.getType()))
      result.setType(cast<RankedTensorType>(result.getType()).clone(f32));
  for (auto [narrow, wideResult] :
       llvm::zip(op->getResults(), wide->getResults()))
    narrow.replaceAllUsesWith(
        isNarrowFloat(narrow.getType())
            ? convertElements(
                  b, wideResult,
                  cast<RankedTensorType>(narrow.getType()).getElementType())
            : Value(wideResult));
  op->erase();
}

namespace {

struct WidenStoragePass : impl::FwpWidenStorageBase<WidenStoragePass> {
  using FwpWidenStorageBase::FwpWidenStorageBase;

  void runOnOperation() override {
    SmallVector<Operation *> narrow;
    getOperation()->walk([&](Operation *op) {
      if (!isa<FwpDialect>(op->getDialect()) ||
          (!widenScans && isa<ScanOp, ScanGradOp>(op)))
        return;
      if (llvm::any_of(op->getOperandTypes(), isNarrowFloat) ||
          llvm::any_of(op->getResultTypes(), isNarrowFloat))
        narrow.push_back(op);
    });
    for (Operation *op : narrow)
      runInFloat32(op);
  }
};

} // namespace
} // namespace fwp
