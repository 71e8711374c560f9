//===- StorageCasts.h - fwp-tile-scan's 16-bit loads and stores -*- C++ -*-===//
//
// Tensors enter fwp-tile-scan's kernels through bufferization.to_buffer and
// leave through bufferization.to_tensor; fwp-widen-storage's elementwise
// casts around a scan on 16-bit tensors are taken into the kernels' loads
// and stores on the way (StorageCasts).
//
//===----------------------------------------------------------------------===//

#ifndef FWP_TRANSFORMS_STORAGECASTS_H
#define FWP_TRANSFORMS_STORAGECASTS_H

#include "ScanKernels.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/SetVector.h"

namespace fwp {

/// A read-only buffer of `value` (null for null): bufferization's entry.
inline mlir::Value toBuffer(mlir::ImplicitLocOpBuilder &b, mlir::Value value) {
  if (!value)
    return nullptr;
  auto type = llvm::cast<mlir::RankedTensorType>(value.getType());
  return mlir::bufferization::ToBufferOp::create(
      b, mlir::MemRefType::get(type.getShape(), type.getElementType()), value,
      /*read_only=*/true);
}

/// The tensor of `memref`: bufferization's exit.
inline mlir::Value toTensor(mlir::ImplicitLocOpBuilder &b, mlir::Type type,
                            mlir::Value memref) {
  return mlir::bufferization::ToTensorOp::create(b, type, memref,
                                                 /*restrict=*/true,
                                                 /*writable=*/true);
}

/// Whether `generic` is an elementwise cast of one tensor by `CastOp`, as
/// fwp-widen-storage writes them: identity maps, the cast of the input as
/// the whole body.
template <typename CastOp>
bool isElementwiseCast(mlir::linalg::GenericOp generic) {
  if (!generic || generic.getNumDpsInputs() != 1 ||
      generic.getNumDpsInits() != 1 || !generic.hasPureTensorSemantics() ||
      !llvm::all_of(generic.getIndexingMapsArray(),
                    [](mlir::AffineMap m) { return m.isIdentity(); }))
    return false;
  mlir::Block &body = generic.getRegion().front();
  auto cast = llvm::dyn_cast<CastOp>(body.front());
  return body.getOperations().size() == 2 && cast &&
         cast->getOperand(0) == body.getArgument(0) &&
         body.getTerminator()->getOperand(0) == cast->getResult(0);
}

/// fwp-widen-storage runs a scan on 16-bit tensors in float32 between
/// elementwise casts: its operands extended (arith.extf), its results
/// rounded back (arith.truncf), each a pass over memory (on the GPU a
/// kernel) of its own. The scan's kernels take those casts into their loads
/// and stores instead (Emitter::load/store, TileBuilder::copy and relu
/// convert): they read the 16-bit operands and write the 16-bit results.
/// The states stay float32 (the running state and its gradient are updated
/// in place).
class StorageCasts {
public:
  explicit StorageCasts(mlir::ImplicitLocOpBuilder &b) : b(b) {}

  /// The buffer the kernels read `operand` from: that of the 16-bit tensor
  /// it was extended from, or its own.
  mlir::Value input(mlir::Value operand) {
    if (!operand)
      return nullptr;
    auto widening = operand.getDefiningOp<mlir::linalg::GenericOp>();
    if (!isElementwiseCast<mlir::arith::ExtFOp>(widening))
      return toBuffer(b, operand);
    widenings.insert(widening);
    return toBuffer(b, widening.getDpsInputs()[0]);
  }

  /// The element type of the buffer the kernels write `result` to: the
  /// 16-bit type it is rounded to if that rounding is its only use.
  mlir::Type resultElement(mlir::Value result) {
    auto rounding = roundingOf(result);
    return rounding
               ? mlir::getElementTypeOrSelf(rounding.getResult(0).getType())
               : mlir::getElementTypeOrSelf(result.getType());
  }

  /// Gives `result`'s users the tensor of `buffer`: if the buffer is of
  /// the 16-bit type (resultElement), the rounding's users, the rounding
  /// then gone; else the result's own.
  void output(mlir::Value result, mlir::Value buffer) {
    if (!result)
      return;
    auto rounding = roundingOf(result);
    if (rounding &&
        mlir::getElementTypeOrSelf(buffer.getType()) ==
            mlir::getElementTypeOrSelf(rounding.getResult(0).getType())) {
      mlir::Value narrow = rounding.getResult(0);
      mlir::Value stored = toTensor(b, narrow.getType(), buffer);
      narrow.replaceAllUsesWith(stored);
      mlir::Operation *init = rounding.getDpsInits()[0].getDefiningOp();
      rounding.erase();
      if (init && init->use_empty() && llvm::isa<mlir::tensor::EmptyOp>(init))
        init->erase();
      // The sizes are the stored tensor's.
      for (mlir::OpOperand &use : llvm::make_early_inc_range(result.getUses()))
        use.set(stored);
      return;
    }
    result.replaceAllUsesWith(toTensor(b, result.getType(), buffer));
  }

  /// Erases the extensions nothing reads any more (the scan was their
  /// user), and their empty inits.
  void eraseUnusedWidenings() {
    for (mlir::linalg::GenericOp widening : widenings) {
      if (!widening->use_empty())
        continue;
      mlir::Operation *init = widening.getDpsInits()[0].getDefiningOp();
      widening.erase();
      if (init && init->use_empty() && llvm::isa<mlir::tensor::EmptyOp>(init))
        init->erase();
    }
  }

private:
  /// The rounding of `result` to 16 bits, if that is its only use besides
  /// its sizes (tensor.dim, which the rounding's init takes).
  static mlir::linalg::GenericOp roundingOf(mlir::Value result) {
    if (!result)
      return nullptr;
    mlir::linalg::GenericOp rounding;
    for (mlir::Operation *user : result.getUsers()) {
      if (llvm::isa<mlir::tensor::DimOp>(user))
        continue;
      auto generic = llvm::dyn_cast<mlir::linalg::GenericOp>(user);
      if (rounding || !isElementwiseCast<mlir::arith::TruncFOp>(generic) ||
          generic.getDpsInputs()[0] != result)
        return nullptr;
      rounding = generic;
    }
    return rounding;
  }

  mlir::ImplicitLocOpBuilder &b;
  llvm::SetVector<mlir::linalg::GenericOp> widenings;
};

/// Inputs shared by fwp.scan and fwp.scan_grad.
template <typename ScanLikeOp>
void readInputs(StorageCasts &casts, ScanLikeOp op, ScanBuffers &buf) {
  buf.q = casts.input(op.getQ());
  buf.k = casts.input(op.getK());
  buf.v = casts.input(op.getV());
  buf.beta = casts.input(op.getBeta());
  buf.initial = casts.input(op.getInitial());
}

} // namespace fwp

#endif // FWP_TRANSFORMS_STORAGECASTS_H
