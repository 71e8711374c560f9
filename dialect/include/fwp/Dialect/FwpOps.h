//===- FwpOps.h - Operations of the fwp dialect -----------------*- C++ -*-===//

#ifndef FWP_DIALECT_FWPOPS_H
#define FWP_DIALECT_FWPOPS_H

#include "fwp/Dialect/FwpDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "fwp/Dialect/FwpAttrs.h"
#include "fwp/Dialect/FwpEnums.h"

#define GET_OP_CLASSES
#include "fwp/Dialect/FwpOps.h.inc"

#endif // FWP_DIALECT_FWPOPS_H
