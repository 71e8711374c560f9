//===- StackTiles.cpp - The CPU kernels' tiles on the stack ---------------===//
//
// Bufferization gives every tile a kernel makes (a chunk's rows, its Gram
// matrix, its products) a heap buffer, allocated and freed on every pass
// through the kernel's body: millions of malloc and free calls per training
// step. The tiles have static shapes and die where they are made, so they
// go on the stack instead: an allocation is a stack pointer bump, and the
// alloca scopes around each instance's body (SCFToOpenMP's) and around the
// body of each loop inside a kernel (made here) pop them again.
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

/// Wraps the body of `loop` (all but its yield) in an alloca scope that
/// returns what it yields, so that each iteration's allocas are popped.
void scopeLoopBody(RewriterBase &rewriter, scf::ForOp loop) {
  Block *body = loop.getBody();
  auto yield = cast<scf::YieldOp>(body->getTerminator());
  rewriter.setInsertionPointToStart(body);
  auto scope = memref::AllocaScopeOp::create(rewriter, loop.getLoc(),
                                             yield.getOperandTypes());
  Block *scopeBody = rewriter.createBlock(&scope.getBodyRegion());
  scopeBody->getOperations().splice(scopeBody->end(), body->getOperations(),
                                    std::next(scope->getIterator()),
                                    yield->getIterator());
  rewriter.setInsertionPointToEnd(scopeBody);
  memref::AllocaScopeReturnOp::create(rewriter, loop.getLoc(),
                                      yield.getOperands());
  rewriter.modifyOpInPlace(yield,
                           [&] { yield->setOperands(scope.getResults()); });
}

/// Whether every loop between `alloc` and `kernel` is an scf.for, whose
/// body this pass scopes.
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
    llvm::SetVector<scf::ForOp> loops;
    for (memref::AllocOp alloc : tiles) {
      total += bytesOf(alloc.getType());
      if (total > maxKernelBytes)
        break;
      for (auto loop = alloc->getParentOfType<scf::ForOp>();
           loop && kernel->isProperAncestor(loop);
           loop = loop->getParentOfType<scf::ForOp>())
        loops.insert(loop);
      rewriter.setInsertionPoint(alloc);
      rewriter.replaceOpWithNewOp<memref::AllocaOp>(alloc, alloc.getType(),
                                                    alloc.getAlignmentAttr());
    }
    for (scf::ForOp loop : loops)
      scopeLoopBody(rewriter, loop);
  }
};

} // namespace
} // namespace fwp
