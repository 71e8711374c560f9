//===- FwpDialect.h - The fwp dialect ---------------------------*- C++ -*-===//

#ifndef FWP_DIALECT_FWPDIALECT_H
#define FWP_DIALECT_FWPDIALECT_H

#include "mlir/IR/Dialect.h"

#include "fwp/Dialect/FwpDialect.h.inc"

#endif // FWP_DIALECT_FWPDIALECT_H
