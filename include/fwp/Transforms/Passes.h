//===- Passes.h - Transforms of the fwp dialect -----------------*- C++ -*-===//

#ifndef FWP_TRANSFORMS_PASSES_H
#define FWP_TRANSFORMS_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include "fwp/ChunkSize.h"
#include "fwp/Dialect/FwpDialect.h"
#include "fwp/Dialect/FwpEnums.h"
#include "fwp/Transforms/KernelConfig.h"

namespace fwp {

#define GEN_PASS_DECL
#include "fwp/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "fwp/Transforms/Passes.h.inc"

} // namespace fwp

#endif // FWP_TRANSFORMS_PASSES_H
