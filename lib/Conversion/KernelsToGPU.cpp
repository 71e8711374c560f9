//===- KernelsToGPU.cpp - fwp kernels onto GPU blocks and threads ---------===//
//
// fwp-tile-scan leaves each kernel as an scf.forall (one point per thread
// block) whose scf.parallel loops are the work a block shares. Here the
// forall becomes a gpu.launch and each scf.parallel a block-strided loop
// followed by a barrier, which is all the synchronisation the kernels need:
// each shared loop reads only what earlier ones wrote.
//
//===----------------------------------------------------------------------===//

#include "Delinearize.h"

#include "fwp/Conversion/Passes.h"
#include "fwp/Transforms/Kernels.h"

#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace fwp {
#define GEN_PASS_DEF_FWPKERNELSTOGPU
#include "fwp/Conversion/Passes.h.inc"
} // namespace fwp

using namespace mlir;

namespace fwp {
namespace {

bool isZero(Value v) { return matchPattern(v, m_Zero()); }
bool isOne(Value v) { return matchPattern(v, m_One()); }

/// Replaces `loop` by `for lin = tid; lin < prod(ubs); lin += nthreads`,
/// the row-major point `lin` taking the loop's induction variables, and a
/// barrier after it.
LogicalResult distributeOverThreads(scf::ParallelOp loop, Value tid,
                                    Value nthreads) {
  if (!llvm::all_of(loop.getLowerBound(), isZero) ||
      !llvm::all_of(loop.getStep(), isOne))
    return loop.emitOpError("fwp-kernels-to-gpu expects lower bounds 0 and "
                            "steps 1");
  if (loop.getNumReductions() != 0)
    return loop.emitOpError("fwp-kernels-to-gpu does not map reductions");

  ImplicitLocOpBuilder b(loop.getLoc(), loop);
  Value total = arith::ConstantIndexOp::create(b, 1);
  for (Value ub : loop.getUpperBound())
    total = arith::MulIOp::create(b, total, ub);
  auto strided = scf::ForOp::create(b, tid, total, nthreads);
  b.setInsertionPointAfter(strided);
  gpu::BarrierOp::create(b);

  b.setInsertionPointToStart(strided.getBody());
  SmallVector<Value> ivs =
      delinearize(b, strided.getInductionVar(), loop.getUpperBound());
  for (auto [iv, value] : llvm::zip(loop.getInductionVars(), ivs))
    iv.replaceAllUsesWith(value);

  Block *body = loop.getBody();
  body->getTerminator()->erase();
  strided.getBody()->getOperations().splice(
      strided.getBody()->getTerminator()->getIterator(), body->getOperations());
  loop.erase();
  return success();
}

/// Turns one tagged scf.forall into a gpu.launch over its points.
LogicalResult convertKernel(scf::ForallOp forall, int64_t blockSize) {
  if (forall.getRank() > 3)
    return forall.emitOpError("fwp-kernels-to-gpu maps at most 3 kernel "
                              "dimensions, got ")
           << forall.getRank();
  if (!forall.getOutputs().empty())
    return forall.emitOpError("fwp-kernels-to-gpu expects a kernel without "
                              "outputs");

  ImplicitLocOpBuilder b(forall.getLoc(), forall);
  Value one = arith::ConstantIndexOp::create(b, 1);
  SmallVector<Value> grid = forall.getUpperBound(b);
  grid.resize(3, one);
  Value threads = arith::ConstantIndexOp::create(b, blockSize);
  // Outlining names the kernel (and its module) after the fwp.kernel tag,
  // so that PTX, plans and profiles say which kernel is which.
  auto name = forall->getAttrOfType<StringAttr>(kKernelAttrName);
  auto symbol = FlatSymbolRefAttr::get(b.getContext(), name.getValue());
  auto launch = gpu::LaunchOp::create(
      b, grid[0], grid[1], grid[2], threads, one, one,
      /*dynamicSharedMemorySize=*/nullptr, /*asyncTokenType=*/nullptr,
      /*asyncDependencies=*/{}, /*workgroupAttributions=*/{},
      /*privateAttributions=*/{}, /*clusterSizeX=*/nullptr,
      /*clusterSizeY=*/nullptr, /*clusterSizeZ=*/nullptr, symbol, symbol);
  launch->setAttr(kKernelAttrName, name);

  Block &body = launch.getBody().front();
  gpu::KernelDim3 blockIds = launch.getBlockIds();
  Value ids[] = {blockIds.x, blockIds.y, blockIds.z};
  for (auto [iv, id] : llvm::zip(forall.getInductionVars(), ids))
    iv.replaceAllUsesWith(id);
  Block *forallBody = forall.getBody();
  forallBody->getTerminator()->erase();
  body.getOperations().splice(body.end(), forallBody->getOperations());
  b.setInsertionPointToEnd(&body);
  gpu::TerminatorOp::create(b);
  forall.erase();

  SmallVector<scf::ParallelOp> shared;
  launch.walk([&](scf::ParallelOp loop) {
    if (!loop->getParentOfType<scf::ParallelOp>())
      shared.push_back(loop);
  });
  Value tid = launch.getThreadIds().x, nthreads = launch.getBlockSize().x;
  for (scf::ParallelOp loop : shared)
    if (failed(distributeOverThreads(loop, tid, nthreads)))
      return failure();
  return success();
}

struct KernelsToGPUPass : impl::FwpKernelsToGPUBase<KernelsToGPUPass> {
  using FwpKernelsToGPUBase::FwpKernelsToGPUBase;

  void runOnOperation() override {
    if (blockSize < 1 || blockSize > 1024) {
      getOperation()->emitError("fwp-kernels-to-gpu: block-size must be in "
                                "[1, 1024], got ")
          << blockSize;
      return signalPassFailure();
    }
    for (scf::ForallOp kernel : collectKernels(getOperation()))
      if (failed(convertKernel(kernel, blockSize)))
        return signalPassFailure();
  }
};

} // namespace
} // namespace fwp
