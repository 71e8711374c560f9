//===- KernelsToGPU.cpp - fwp kernels onto GPU blocks and threads ---------===//
//
// fwp-tile-scan leaves each kernel as an scf.forall over its instances,
// mapped to [#gpu.block<x>, #gpu.block<y>, #gpu.block<z>], whose
// scf.parallel loops are the work a block shares.
//
// Threads: each shared loop becomes an scf.forall over the block's threads
// (#gpu.thread<x>) around a loop strided by the block size, with the point's
// indices from affine.delinearize_index; upstream's thread mapping
// (transform.gpu.map_nested_forall_to_threads, called directly) then puts
// them on gpu.thread_id and adds the barrier after each, which is all the
// synchronisation the kernels need: each shared loop reads only what
// earlier ones wrote. fwp-eliminate-barriers removes those that order
// nothing.
//
// Shared memory: a kernel's local tiles in workgroup memory (memref.alloca
// at its top level) become workgroup buffers of the module, which
// gpu-kernel-outlining carries into the kernel's GPU module.
//
// Blocks: written here, because upstream's transform.gpu.map_forall_to_blocks
// requires a statically sized forall ("requires statically sized,
// normalized forall op", test/Conversion/upstream-forall-to-blocks.mlir),
// and a kernel's grid grows with the batch, the heads and the chunks of the
// sequence, which are known at run time only.
//
//===----------------------------------------------------------------------===//

#include "WorkgroupMemory.h"

#include "fwp/Conversion/Passes.h"
#include "fwp/Transforms/Kernels.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/GPU/TransformOps/GPUTransformOps.h"
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

/// Replaces `loop` by
///   scf.forall (%t) in (nthreads) {
///     scf.for %lin = %t to prod(ns) step nthreads {
///       %p = affine.delinearize_index %lin into (ns) ...
///       %ivs = lbs + %p * steps
///   } {mapping = [#gpu.thread<x>]}
/// with ns = ceildiv(ubs - lbs, steps) the loop's trip counts (lower bounds
/// 0 and steps 1 give the plain form), so that thread t takes the points t,
/// t + n, ... in row-major order.
LogicalResult stripMineOverThreads(scf::ParallelOp loop, int64_t nthreads) {
  if (loop.getNumReductions() != 0)
    return loop.emitOpError("fwp-kernels-to-gpu does not map reductions");

  ImplicitLocOpBuilder b(loop.getLoc(), loop);
  Value total = arith::ConstantIndexOp::create(b, 1);
  SmallVector<Value> extents;
  for (auto [lb, ub, step] : llvm::zip_equal(
           loop.getLowerBound(), loop.getUpperBound(), loop.getStep())) {
    Value extent = isZero(lb) ? ub : arith::SubIOp::create(b, ub, lb);
    if (!isOne(step)) // trip count; steps are positive (scf.parallel)
      extent = arith::CeilDivSIOp::create(b, extent, step);
    if (!isZero(lb)) // an empty range, not a negative count
      extent = arith::MaxSIOp::create(b, extent,
                                      arith::ConstantIndexOp::create(b, 0));
    extents.push_back(extent);
    total = arith::MulIOp::create(b, total, extent);
  }
  Value step = arith::ConstantIndexOp::create(b, nthreads);
  auto threads = scf::ForallOp::create(
      b, ArrayRef<OpFoldResult>{b.getIndexAttr(nthreads)}, ValueRange{},
      b.getArrayAttr({gpu::GPUThreadMappingAttr::get(b.getContext(),
                                                     gpu::MappingId::DimX)}));
  b.setInsertionPoint(threads.getBody()->getTerminator());
  auto strided = scf::ForOp::create(b, threads.getInductionVar(0), total, step);

  b.setInsertionPointToStart(strided.getBody());
  auto point = affine::AffineDelinearizeIndexOp::create(
      b, strided.getInductionVar(), extents, /*hasOuterBound=*/true);
  for (auto [iv, lb, step, index] :
       llvm::zip_equal(loop.getInductionVars(), loop.getLowerBound(),
                       loop.getStep(), point.getResults())) {
    Value value = index;
    if (!isOne(step))
      value = arith::MulIOp::create(b, value, step);
    if (!isZero(lb))
      value = arith::AddIOp::create(b, lb, value);
    iv.replaceAllUsesWith(value);
  }

  Block *body = loop.getBody();
  body->getTerminator()->erase();
  strided.getBody()->getOperations().splice(
      strided.getBody()->getTerminator()->getIterator(), body->getOperations());
  loop.erase();
  return success();
}

/// The grid dimension (0, 1, 2 for x, y, z) of each of `forall`'s
/// induction variables, from its #gpu.block mapping.
FailureOr<SmallVector<int64_t>> blockDimensions(scf::ForallOp forall) {
  std::optional<ArrayAttr> mapping = forall.getMapping();
  if (!mapping || mapping->size() != forall.getInductionVars().size())
    return forall.emitOpError("fwp-kernels-to-gpu expects one #gpu.block "
                              "mapping per kernel dimension");
  SmallVector<int64_t> dims;
  llvm::SmallBitVector seen(3);
  for (Attribute attr : *mapping) {
    auto block = dyn_cast<gpu::GPUBlockMappingAttr>(attr);
    int64_t dim = block ? static_cast<int64_t>(block.getBlock()) : -1;
    if (dim < 0 || dim > 2 || seen.test(dim))
      return forall.emitOpError("fwp-kernels-to-gpu expects a kernel mapped "
                                "to distinct #gpu.block<x>, <y> or <z>, got ")
             << *mapping;
    seen.set(dim);
    dims.push_back(dim);
  }
  return dims;
}

/// The kernel's local tiles in workgroup memory (one per instance, which
/// is a block) become module-level workgroup buffers: an alloca inside a
/// GPU kernel would be each thread's own.
LogicalResult placeLocalTiles(scf::ForallOp forall) {
  for (memref::AllocaOp tile : localWorkgroupTiles(forall)) {
    if (tile->getBlock() != forall.getBody())
      return tile.emitOpError("fwp-kernels-to-gpu expects a kernel's local "
                              "tiles in workgroup memory at its top level");
    if (!tile.getType().hasStaticShape() ||
        !tile.getType().getLayout().isIdentity())
      return tile.emitOpError("fwp-kernels-to-gpu expects a kernel's local "
                              "tiles in workgroup memory to have a static "
                              "shape and the identity layout");
    tile.replaceAllUsesWith(
        createWorkgroupBuffer(forall, "local", tile.getType()));
    tile.erase();
  }
  return success();
}

/// Turns one kernel into a gpu.launch over its points.
LogicalResult convertKernel(scf::ForallOp forall, int64_t blockSize) {
  if (!forall.getOutputs().empty())
    return forall.emitOpError("fwp-kernels-to-gpu expects a kernel without "
                              "outputs");
  FailureOr<SmallVector<int64_t>> dims = blockDimensions(forall);
  if (failed(dims) || failed(placeLocalTiles(forall)))
    return failure();

  ImplicitLocOpBuilder b(forall.getLoc(), forall);
  Value one = arith::ConstantIndexOp::create(b, 1);
  SmallVector<Value> grid(3, one);
  for (auto [dim, ub] : llvm::zip_equal(*dims, forall.getUpperBound(b)))
    grid[dim] = ub;
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
  for (auto [iv, dim] : llvm::zip_equal(forall.getInductionVars(), *dims))
    iv.replaceAllUsesWith(ids[dim]);
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
  for (scf::ParallelOp loop : shared)
    if (failed(stripMineOverThreads(loop, blockSize)))
      return failure();

  // Upstream's thread mapping creates its constants at the rewriter's
  // insertion point (as transform.gpu.map_nested_forall_to_threads sets it):
  // without one they would be detached and leaked.
  IRRewriter rewriter(launch.getContext());
  rewriter.setInsertionPointToStart(&launch.getBody().front());
  DiagnosedSilenceableFailure mapped =
      transform::gpu::mapNestedForallToThreadsImpl(
          rewriter, /*transformOp=*/std::nullopt, launch, {blockSize, 1, 1},
          /*warpSize=*/32, /*syncAfterDistribute=*/true);
  if (!mapped.succeeded()) {
    (void)mapped.silence();
    return launch.emitOpError("fwp-kernels-to-gpu could not map the shared "
                              "loops onto the block's threads");
  }
  return success();
}

struct KernelsToGPUPass : impl::FwpKernelsToGPUBase<KernelsToGPUPass> {
  using FwpKernelsToGPUBase::FwpKernelsToGPUBase;

  void runOnOperation() override {
    for (scf::ForallOp kernel : collectKernels(getOperation())) {
      KernelConfigAttr config = gpuKernelConfigOf(kernel, "fwp-kernels-to-gpu");
      if (!config || failed(convertKernel(kernel, config.getBlockSize())))
        return signalPassFailure();
    }
  }
};

} // namespace
} // namespace fwp
