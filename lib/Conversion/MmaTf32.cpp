//===- MmaTf32.cpp - f32 products on tf32 tensor cores --------------------===//
//
// The tf32 MMA family: an f32 m16n8k8 step as one MMA of the operands
// rounded to tf32, or three that also carry the rounding errors.
//
//===----------------------------------------------------------------------===//

#include "MmaProducts.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/UB/IR/UBOps.h"

using namespace mlir;

namespace fwp {
namespace {

/// The row-major position of the `index`-th element of `shape`.
void delinearize(int64_t index, ArrayRef<int64_t> shape,
                 SmallVectorImpl<int64_t> &position) {
  for (int64_t d = int64_t(shape.size()) - 1; d >= 0; --d) {
    position[d] = index % shape[d];
    index /= shape[d];
  }
}

/// x rounded to the nearest tf32 (10 mantissa bits, ties away from zero),
/// as f32 bits whose low 13 are zero: what the tensor cores read of an f32
/// register. cvt.rna.tf32.f32 element by element keeps NaN and infinities,
/// which integer rounding of the bits would turn into zeros.
Value roundToTf32(ImplicitLocOpBuilder &b, Value x) {
  auto type = cast<VectorType>(x.getType());
  Value rounded = ub::PoisonOp::create(b, type);
  SmallVector<int64_t> position(type.getRank(), 0);
  for (int64_t i = 0, n = type.getNumElements(); i < n; ++i) {
    delinearize(i, type.getShape(), position);
    Value element = vector::ExtractOp::create(b, x, position);
    Value bits = NVVM::ConvertFloatToTF32Op::create(
        b, b.getI32Type(), element, NVVM::FPRoundingMode::RNA,
        NVVM::SaturationMode::NONE, /*relu=*/false);
    Value tf32 = arith::BitcastOp::create(b, b.getF32Type(), bits);
    rounded = vector::InsertOp::create(b, tf32, rounded, position);
  }
  return rounded;
}

} // namespace

/// f32 MMA -> tf32 MMAs: one of the rounded operands, or three that also
/// carry the rounding errors (a b ~ ah bh + ah bl + al bh, each part
/// rounded to tf32; the dropped al bl is below 2^-22 of a b).
void splitIntoTf32(nvgpu::MmaSyncOp mma, bool threePass) {
  ImplicitLocOpBuilder b(mma.getLoc(), mma);
  Value a = mma.getMatrixA(), bm = mma.getMatrixB();
  Value aHigh = roundToTf32(b, a), bHigh = roundToTf32(b, bm);
  Value acc = mma.getMatrixC();
  if (threePass) {
    Value aLow = roundToTf32(b, arith::SubFOp::create(b, a, aHigh));
    Value bLow = roundToTf32(b, arith::SubFOp::create(b, bm, bHigh));
    // Smallest terms first.
    acc = nvgpu::MmaSyncOp::create(b, aLow, bHigh, acc, kMmaShape, true);
    acc = nvgpu::MmaSyncOp::create(b, aHigh, bLow, acc, kMmaShape, true);
  }
  acc = nvgpu::MmaSyncOp::create(b, aHigh, bHigh, acc, kMmaShape, true);
  mma.replaceAllUsesWith(acc);
  mma.erase();
}

} // namespace fwp
