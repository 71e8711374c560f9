//===- Passes.h - Conversions out of fwp's tiled form -----------*- C++ -*-===//

#ifndef FWP_CONVERSION_PASSES_H
#define FWP_CONVERSION_PASSES_H

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include "fwp/Dialect/FwpEnums.h"
#include "fwp/RegisterTile.h"

#include "llvm/Support/CommandLine.h"

namespace fwp {

/// The spellings of ProductPrecision as a pass or pipeline option takes
/// them (fwp-products-to-mma's precision, fwp-to-ptx's f32-products).
inline llvm::cl::ValuesClass productPrecisionValues() {
  return llvm::cl::values(
      clEnumValN(ProductPrecision::Tf32x3, "tf32x3",
                 "tensor cores, each operand split into two tf32 parts, "
                 "three MMAs: about f32's accuracy"),
      clEnumValN(ProductPrecision::Tf32, "tf32",
                 "one MMA of operands rounded to tf32"),
      clEnumValN(ProductPrecision::CudaCores, "cuda-cores",
                 "no tensor cores: every product to fwp-lower-tiles"));
}

#define GEN_PASS_DECL
#include "fwp/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "fwp/Conversion/Passes.h.inc"

} // namespace fwp

#endif // FWP_CONVERSION_PASSES_H
