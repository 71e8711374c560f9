//===- FwpDialect.cpp - The fwp dialect -----------------------------------===//

#include "fwp/Dialect/FwpDialect.h"
#include "fwp/Dialect/FwpOps.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace fwp;

#include "fwp/Dialect/FwpDialect.cpp.inc"

void FwpDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "fwp/Dialect/FwpOps.cpp.inc"
      >();
}

/// An identifier: a letter or '_', then letters, digits and '_'.
static bool isIdentifier(StringRef name) {
  if (name.empty() || !(llvm::isAlpha(name.front()) || name.front() == '_'))
    return false;
  return llvm::all_of(name,
                      [](char c) { return llvm::isAlnum(c) || c == '_'; });
}

LogicalResult FwpDialect::verifyOperationAttribute(Operation *op,
                                                   NamedAttribute attr) {
  if (attr.getName() != kKernelAttrName)
    return op->emitError("unknown fwp attribute '")
           << attr.getName().getValue() << "'";
  StringRef opName = op->getName().getStringRef();
  if (!llvm::is_contained(
          {"scf.forall", "gpu.launch", "func.func", "llvm.func"}, opName))
    return op->emitError("'") << kKernelAttrName
                              << "' marks an scf.forall, a gpu.launch or a "
                                 "function, not '"
                              << opName << "'";
  auto name = dyn_cast<StringAttr>(attr.getValue());
  if (!name || !isIdentifier(name.getValue()))
    return op->emitError("'")
           << kKernelAttrName
           << "' must name the kernel with an identifier string, got "
           << attr.getValue();
  return success();
}
