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

#include "fwp/Dialect/FwpDialect.h"
#include "fwp/Dialect/FwpEnums.h"
#include "fwp/RegisterTile.h"
#include "fwp/Transforms/KernelConfig.h"

#include "llvm/Support/CommandLine.h"

namespace fwp {

#define GEN_PASS_DECL
#include "fwp/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "fwp/Conversion/Passes.h.inc"

} // namespace fwp

#endif // FWP_CONVERSION_PASSES_H
