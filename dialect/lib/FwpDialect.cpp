//===- FwpDialect.cpp - The fwp dialect -----------------------------------===//

#include "fwp/Dialect/FwpDialect.h"
#include "fwp/Dialect/FwpOps.h"

#include "fwp/ChunkSize.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace fwp;

#include "fwp/Dialect/FwpDialect.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "fwp/Dialect/FwpAttrs.cpp.inc"

void FwpDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "fwp/Dialect/FwpOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "fwp/Dialect/FwpAttrs.cpp.inc"
      >();
}

LogicalResult KernelConfigAttr::verify(
    function_ref<InFlightDiagnostic()> emitError, KernelTarget target,
    int64_t chunkSize, int64_t valueBlock,
    std::optional<StateMemory> stateMemory, int64_t scratchSlots,
    int64_t localBytes, int64_t stageFloats,
    std::optional<ProductPrecision> products, int64_t blockSize) {
  if (chunkSize < 1 || chunkSize > kMaxChunkSize)
    return emitError() << "chunk_size must lie in [1, " << kMaxChunkSize
                       << "], got " << chunkSize;
  for (auto [name, value] :
       {std::pair<StringRef, int64_t>{"value_block", valueBlock},
        {"scratch_slots", scratchSlots},
        {"local_bytes", localBytes},
        {"stage_floats", stageFloats},
        {"block_size", blockSize}})
    if (value < 0)
      return emitError() << name << " must not be negative, got " << value;
  if (target == KernelTarget::Cpu)
    return success();
  if (valueBlock < 1 || !stateMemory)
    return emitError() << "a GPU configuration needs a value_block and a "
                          "state_memory";
  if (target == KernelTarget::Gpu &&
      (!products || blockSize < 32 || blockSize > 1024 || blockSize % 32))
    return emitError() << "a GPU configuration needs products and a "
                          "block_size that is a multiple of 32 in [32, 1024], "
                          "got "
                       << blockSize;
  return success();
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
  if (attr.getName() == kKernelConfigAttrName) {
    // func-to-llvm carries it to the llvm.func.
    if (!llvm::is_contained({"func.func", "llvm.func"},
                            op->getName().getStringRef()))
      return op->emitError("'")
             << kKernelConfigAttrName << "' configures a function, not '"
             << op->getName().getStringRef() << "'";
    if (!isa<KernelConfigAttr>(attr.getValue()))
      return op->emitError("'")
             << kKernelConfigAttrName << "' must be a #fwp.kernel_config, got "
             << attr.getValue();
    return success();
  }
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
