//===- KernelTiles.cpp - The static tiles a kernel makes ------------------===//

#include "KernelTiles.h"

#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

using namespace mlir;

namespace fwp {

int64_t bytesOf(MemRefType type) {
  return type.getNumElements() * type.getElementTypeBitWidth() / 8;
}

bool escapes(memref::AllocOp alloc) {
  SmallVector<Value> worklist = {alloc.getResult()};
  while (!worklist.empty()) {
    Value buffer = worklist.pop_back_val();
    for (OpOperand &use : buffer.getUses()) {
      Operation *user = use.getOwner();
      if (auto view = dyn_cast<ViewLikeOpInterface>(user)) {
        if (view.getViewSource() == buffer)
          worklist.push_back(view->getResult(0));
        continue;
      }
      if (user->hasTrait<OpTrait::IsTerminator>() || isa<CallOpInterface>(user))
        return true;
      if (auto store = dyn_cast<memref::StoreOp>(user);
          store && store.getValueToStore() == buffer)
        return true;
    }
  }
  return false;
}

bool onlyForLoopsBetween(memref::AllocOp alloc, scf::ForallOp kernel) {
  for (Operation *parent = alloc->getParentOp(); parent != kernel;
       parent = parent->getParentOp())
    if (isa<LoopLikeOpInterface>(parent) && !isa<scf::ForOp>(parent))
      return false;
  return true;
}

SmallVector<memref::AllocOp> reusableTiles(scf::ForallOp kernel) {
  SmallVector<memref::AllocOp> tiles;
  kernel.getBody()->walk([&](memref::AllocOp alloc) {
    MemRefType type = alloc.getType();
    if (type.hasStaticShape() && type.getLayout().isIdentity() &&
        !escapes(alloc) && onlyForLoopsBetween(alloc, kernel))
      tiles.push_back(alloc);
  });
  return tiles;
}

} // namespace fwp
