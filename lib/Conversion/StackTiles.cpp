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

#include "KernelTiles.h"

#include "fwp/Conversion/Passes.h"
#include "fwp/Transforms/Kernels.h"

namespace fwp {
#define GEN_PASS_DEF_FWPSTACKTILES
#include "fwp/Conversion/Passes.h.inc"
} // namespace fwp

using namespace mlir;

namespace fwp {
namespace {

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
    SmallVector<memref::AllocOp> tiles = reusableTiles(kernel);
    llvm::erase_if(tiles, [&](memref::AllocOp alloc) {
      return bytesOf(alloc.getType()) > maxTileBytes;
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
