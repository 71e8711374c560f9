//===- FwpAttrs.h - Attributes of the fwp dialect ---------------*- C++ -*-===//

#ifndef FWP_DIALECT_FWPATTRS_H
#define FWP_DIALECT_FWPATTRS_H

#include "fwp/Dialect/FwpEnums.h"

#include "mlir/IR/Attributes.h"
#include "mlir/IR/DialectImplementation.h"

#define GET_ATTRDEF_CLASSES
#include "fwp/Dialect/FwpAttrs.h.inc"

#endif // FWP_DIALECT_FWPATTRS_H
