//===- FwpEnums.h - Enums of the fwp dialect and its lowerings --*- C++ -*-===//
//
// The update rule (an attribute of the dialect's operations) and the
// lowerings' choices, fields of #fwp.kernel_config (KernelTarget,
// StateMemory, ProductPrecision), each defined once in FwpEnums.td with its
// spellings.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_DIALECT_FWPENUMS_H
#define FWP_DIALECT_FWPENUMS_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"

#include "fwp/Dialect/FwpEnums.h.inc"

#endif // FWP_DIALECT_FWPENUMS_H
