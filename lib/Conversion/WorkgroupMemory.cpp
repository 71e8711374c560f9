//===- WorkgroupMemory.cpp - A GPU kernel's shared memory -----------------===//

#include "WorkgroupMemory.h"

#include "fwp/Transforms/Kernels.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

using namespace mlir;

namespace fwp {

bool isWorkgroupMemory(Type type) {
  auto memref = dyn_cast<MemRefType>(type);
  auto space =
      memref
          ? dyn_cast_if_present<gpu::AddressSpaceAttr>(memref.getMemorySpace())
          : nullptr;
  return space && space.getValue() == gpu::AddressSpace::Workgroup;
}

SmallVector<memref::AllocaOp> localWorkgroupTiles(scf::ForallOp kernel) {
  SmallVector<memref::AllocaOp> tiles;
  kernel.walk([&](memref::AllocaOp op) {
    if (isWorkgroupMemory(op.getType()))
      tiles.push_back(op);
  });
  return tiles;
}

int64_t localWorkgroupBytes(scf::ForallOp kernel) {
  int64_t bytes = 0;
  for (memref::AllocaOp op : localWorkgroupTiles(kernel)) {
    MemRefType type = op.getType();
    bytes += type.getNumElements() * type.getElementTypeBitWidth() / 8;
  }
  return bytes;
}

Value createWorkgroupBuffer(scf::ForallOp kernel, StringRef kind,
                            MemRefType type) {
  // Not getParentWithTrait<OpTrait::SymbolTable>: inside libfwp.so (hidden
  // visibility) the trait's TypeID is not libMLIR.so's, and the lookup
  // finds nothing. libMLIR.so's own query gives the right answer.
  Operation *symbolTableOp =
      SymbolTable::getNearestSymbolTable(kernel->getParentOp());
  OpBuilder b(kernel.getContext());
  auto name = kernel->getAttrOfType<StringAttr>(kKernelAttrName);
  auto global = memref::GlobalOp::create(
      b, kernel.getLoc(), ("fwp_" + kind + "_" + name.getValue()).str(),
      b.getStringAttr("private"), type, Attribute(), /*constant=*/false,
      b.getI64IntegerAttr(16));
  // Inserting renames it if another kernel of the same name has one.
  SymbolTable(symbolTableOp)
      .insert(global, symbolTableOp->getRegion(0).front().begin());
  b.setInsertionPointToStart(kernel.getBody());
  return memref::GetGlobalOp::create(b, kernel.getLoc(), type,
                                     global.getSymName());
}

} // namespace fwp
