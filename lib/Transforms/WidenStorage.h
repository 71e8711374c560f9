//===- WidenStorage.h - An fwp op on 16-bit tensors run in f32 --*- C++ -*-===//

#ifndef FWP_LIB_TRANSFORMS_WIDENSTORAGE_H
#define FWP_LIB_TRANSFORMS_WIDENSTORAGE_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/Operation.h"

namespace fwp {

/// `source` (a ranked tensor) converted elementwise into `target`, a tensor
/// of its shape and another float type: arith.extf, or arith.truncf (round
/// to nearest even), in a linalg.generic.
mlir::Value convertInto(mlir::OpBuilder &b, mlir::Location loc,
                        mlir::Value source, mlir::Value target);

/// Replaces `op` by the same op on float32: its 16-bit operands extended
/// (arith.extf, exact), its 16-bit results made float32 and rounded back to
/// their type for their users (arith.truncf, to nearest even), each in a
/// linalg.generic of its own.
void runInFloat32(mlir::Operation *op);

} // namespace fwp

#endif // FWP_LIB_TRANSFORMS_WIDENSTORAGE_H
