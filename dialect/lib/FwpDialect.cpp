//===- FwpDialect.cpp - The fwp dialect -----------------------------------===//

#include "fwp/Dialect/FwpDialect.h"
#include "fwp/Dialect/FwpOps.h"

using namespace mlir;
using namespace fwp;

#include "fwp/Dialect/FwpDialect.cpp.inc"

void FwpDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "fwp/Dialect/FwpOps.cpp.inc"
      >();
}
