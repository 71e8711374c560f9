//===- StackTiles.cpp - The CPU kernels' tiles on the stack ---------------===//
//
// Bufferization gives every tile a kernel makes (a chunk's rows, its Gram
// matrix, its products) a heap buffer, allocated and freed on every pass
// through the kernel's body: millions of malloc and free calls per training
// step. The tiles have static shapes and die where they are made, so they
// go on the stack instead, allocated once at the start of the kernel's body
// (the OpenMP loop's alloca scope, SCFToOpenMP's, pops them after each
// instance). A tile made inside a loop of the kernel is made there once for
// all its iterations: each iteration writes it before reading it, and none
// reads another's. (An alloca left inside the loop would grow the stack on
// every iteration: an alloca scope around the loop's body would pop it, but
// the canonicalizer inlines such scopes.)
//
//===----------------------------------------------------------------------===//

#include "fwp/Conversion/Passes.h"
#include "fwp/Transforms/Kernels.h"

#include "mlir/Interfaces/LoopLikeInterface.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace fwp {
#define GEN_PASS_DEF_FWPSTACKTILES
#include "fwp/Conversion/Passes.h.inc"
} // namespace fwp

using namespace mlir;

namespace fwp {
namespace {

int64_t bytesOf(MemRefType type) {
  return type.getNumElements() * type.getElementTypeBitWidth() / 8;
}

/// Whether the buffer of `alloc` (or a view of it) leaves the block that
/// allocates it other than through operations that read or write it: yielded
/// by a loop or a branch, returned, or stored as a value.
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

/// Whether every loop between `alloc` and `kernel` is an scf.for, whose
/// iterations run one after the other and can share the tile.
bool onlyForLoopsBetween(memref::AllocOp alloc, scf::ForallOp kernel) {
  for (Operation *parent = alloc->getParentOp(); parent != kernel;
       parent = parent->getParentOp())
    if (isa<LoopLikeOpInterface>(parent) && !isa<scf::ForOp>(parent))
      return false;
  return true;
}

struct StackTilesPass : impl::FwpStackTilesBase<StackTilesPass> {
  using FwpStackTilesBase::FwpStackTilesBase;

  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    for (scf::ForallOp kernel : collectKernels(getOperation()))
      promoteTiles(rewriter, kernel);
  }

  /// The kernel's static tiles that stay in their block, smallest first,
  /// while they fit in `maxKernelBytes` together.
  void promoteTiles(RewriterBase &rewriter, scf::ForallOp kernel) {
    SmallVector<memref::AllocOp> tiles;
    kernel.getBody()->walk([&](memref::AllocOp alloc) {
      MemRefType type = alloc.getType();
      if (type.hasStaticShape() && type.getLayout().isIdentity() &&
          bytesOf(type) <= maxTileBytes && !escapes(alloc) &&
          onlyForLoopsBetween(alloc, kernel))
        tiles.push_back(alloc);
    });
    llvm::stable_sort(tiles, [](memref::AllocOp a, memref::AllocOp b) {
      return bytesOf(a.getType()) < bytesOf(b.getType());
    });
    int64_t total = 0;
    for (memref::AllocOp alloc : tiles) {
      total += bytesOf(alloc.getType());
      if (total > maxKernelBytes)
        break;
      rewriter.setInsertionPointToStart(kernel.getBody());
      auto tile = memref::AllocaOp::create(
          rewriter, alloc.getLoc(), alloc.getType(), alloc.getAlignmentAttr());
      rewriter.replaceOp(alloc, tile);
    }
  }
};

} // namespace
} // namespace fwp
