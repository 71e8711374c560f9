//===- ParallelLoopsToGPU.cpp - Dense loops onto every GPU thread ---------===//
//
// The projections, the output layer and the dense gradients reach the GPU as
// top-level scf.parallel loops (from linalg), each point a small reduction.
// Each such loop becomes one gpu.launch with one thread per point: the
// points are numbered row-major, so consecutive threads take consecutive
// points of the innermost dimension, and the blocks cover them all.
// (Upstream's greedy mapper gives each point a block of one thread.)
//
//===----------------------------------------------------------------------===//

#include "fwp/Conversion/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace fwp {
#define GEN_PASS_DEF_FWPPARALLELLOOPSTOGPU
#include "fwp/Conversion/Passes.h.inc"
} // namespace fwp

using namespace mlir;

namespace fwp {
namespace {

LogicalResult convertLoop(scf::ParallelOp loop, int64_t blockSize) {
  if (loop.getNumReductions() != 0)
    return loop.emitOpError("fwp-parallel-loops-to-gpu does not map "
                            "reductions");
  ImplicitLocOpBuilder b(loop.getLoc(), loop);
  Value one = arith::ConstantIndexOp::create(b, 1);
  // Trip counts: ceil((ub - lb) / step) per dimension.
  SmallVector<Value> counts;
  Value total = one;
  for (auto [lb, ub, step] :
       llvm::zip(loop.getLowerBound(), loop.getUpperBound(), loop.getStep())) {
    Value count =
        arith::CeilDivSIOp::create(b, arith::SubIOp::create(b, ub, lb), step);
    counts.push_back(count);
    total = arith::MulIOp::create(b, total, count);
  }
  Value threads = arith::ConstantIndexOp::create(b, blockSize);
  Value blocks = arith::CeilDivSIOp::create(b, total, threads);
  auto launch = gpu::LaunchOp::create(b, blocks, one, one, threads, one, one);

  Block &body = launch.getBody().front();
  b.setInsertionPointToStart(&body);
  Value point = arith::AddIOp::create(
      b, arith::MulIOp::create(b, launch.getBlockIds().x, threads),
      launch.getThreadIds().x);
  auto inRange = scf::IfOp::create(
      b, arith::CmpIOp::create(b, arith::CmpIPredicate::slt, point, total),
      /*withElseRegion=*/false);
  gpu::TerminatorOp::create(b);

  // The point's induction variables, innermost dimension fastest.
  b.setInsertionPointToStart(&inRange.getThenRegion().front());
  auto indices = affine::AffineDelinearizeIndexOp::create(
      b, point, counts, /*hasOuterBound=*/true);
  for (auto [d, index] : llvm::enumerate(indices.getResults())) {
    Value iv = arith::AddIOp::create(
        b, loop.getLowerBound()[d],
        arith::MulIOp::create(b, index, loop.getStep()[d]));
    loop.getInductionVars()[d].replaceAllUsesWith(iv);
  }
  Block *loopBody = loop.getBody();
  loopBody->getTerminator()->erase();
  Block &then = inRange.getThenRegion().front();
  then.getOperations().splice(then.getTerminator()->getIterator(),
                              loopBody->getOperations());
  loop.erase();
  return success();
}

struct ParallelLoopsToGPUPass
    : impl::FwpParallelLoopsToGPUBase<ParallelLoopsToGPUPass> {
  using FwpParallelLoopsToGPUBase::FwpParallelLoopsToGPUBase;

  void runOnOperation() override {
    if (blockSize < 1 || blockSize > 1024) {
      getOperation()->emitError("fwp-parallel-loops-to-gpu: block-size must "
                                "be in [1, 1024], got ")
          << blockSize;
      return signalPassFailure();
    }
    // Outermost loops outside kernels; their bodies come along.
    SmallVector<scf::ParallelOp> loops;
    getOperation()->walk([&](scf::ParallelOp loop) {
      if (!loop->getParentOfType<scf::ParallelOp>() &&
          !loop->getParentOfType<gpu::LaunchOp>())
        loops.push_back(loop);
    });
    for (scf::ParallelOp loop : loops)
      if (failed(convertLoop(loop, blockSize)))
        return signalPassFailure();
  }
};

} // namespace
} // namespace fwp
