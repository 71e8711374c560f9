//===- GpuTiles.cpp - The GPU kernels' tiles in shared and global memory --===//
//
// Bufferization gives each tile a stage kernel makes (a chunk's rows, its
// Gram matrix, a product) a memref.alloc in the kernel's body, which a GPU
// kernel cannot make; and the tile belongs to the whole thread block, whose
// threads share its work. So each tile is made once per kernel instance:
// smallest first, while the kernel configuration's `local_bytes` last, in
// the block's shared memory (a workgroup memref.alloca, which
// fwp-kernels-to-gpu makes a module-level buffer); past them, as the
// instance's slice of a scratch buffer in global memory, allocated before
// the launch with a slice per instance. A kernel with scratch runs at most
// the configuration's `scratch_slots` instances, each taking the original
// instances in turn, so that its scratch does not grow with the problem.
//
// Two things bufferization leaves are cleared first, so that the tiles'
// only users read and write them: loops that carry a tile only to yield it
// back unchanged (the tile itself is used instead), and copies of a
// region of a buffer onto the same region, which a tile written in place
// leaves (memref.copy would be a call into the host's runtime).
//
//===----------------------------------------------------------------------===//

#include "KernelTiles.h"

#include "fwp/Conversion/Passes.h"
#include "fwp/Transforms/KernelConfig.h"
#include "fwp/Transforms/Kernels.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace fwp {
#define GEN_PASS_DEF_FWPGPUTILES
#include "fwp/Conversion/Passes.h.inc"
} // namespace fwp

using namespace mlir;

namespace fwp {
namespace {

/// Whether `source` and `target` are the same region of one buffer.
bool sameRegion(Value source, Value target) {
  if (source == target)
    return true;
  auto from = source.getDefiningOp<memref::SubViewOp>();
  auto to = target.getDefiningOp<memref::SubViewOp>();
  return from && to && from.getType() == to.getType() &&
         sameRegion(from.getSource(), to.getSource()) &&
         isEqualConstantIntOrValueArray(from.getMixedOffsets(),
                                        to.getMixedOffsets()) &&
         isEqualConstantIntOrValueArray(from.getMixedSizes(),
                                        to.getMixedSizes()) &&
         isEqualConstantIntOrValueArray(from.getMixedStrides(),
                                        to.getMixedStrides());
}

/// The loops of `kernel` with the tiles they only carry dropped (scf.for's
/// canonicalization alone, not the whole canonicalizer's).
LogicalResult dropCarriedTiles(scf::ForallOp kernel) {
  SmallVector<Operation *> loops;
  kernel.getBody()->walk([&](scf::ForOp loop) { loops.push_back(loop); });
  RewritePatternSet patterns(kernel.getContext());
  scf::ForOp::getCanonicalizationPatterns(patterns, kernel.getContext());
  GreedyRewriteConfig config;
  config.setStrictness(GreedyRewriteStrictness::ExistingOps);
  return applyOpPatternsGreedily(loops, std::move(patterns), config);
}

void eraseInPlaceCopies(scf::ForallOp kernel) {
  kernel.getBody()->walk([](memref::CopyOp copy) {
    if (sameRegion(copy.getSource(), copy.getTarget()))
      copy.erase();
  });
}

/// Whether the views of `buffer` can take another memory space or layout:
/// it is only read, written and viewed through memref.subview.
bool onlyAccessed(Value buffer) {
  for (Operation *user : buffer.getUsers()) {
    if (auto view = dyn_cast<memref::SubViewOp>(user)) {
      if (!onlyAccessed(view.getResult()))
        return false;
      continue;
    }
    if (user->hasTrait<OpTrait::IsTerminator>() ||
        llvm::any_of(user->getResultTypes(), llvm::IsaPred<MemRefType>))
      return false;
  }
  return true;
}

/// The subviews of `buffer`, whose type changed, retyped after it.
void retypeViews(Value buffer) {
  auto type = cast<MemRefType>(buffer.getType());
  for (Operation *user : buffer.getUsers()) {
    auto view = dyn_cast<memref::SubViewOp>(user);
    if (!view)
      continue;
    view.getResult().setType(memref::SubViewOp::inferRankReducedResultType(
        view.getType().getShape(), type, view.getStaticOffsets(),
        view.getStaticSizes(), view.getStaticStrides()));
    retypeViews(view.getResult());
  }
}

/// `alloc` replaced by `tile`, whose type may differ in memory space or
/// layout.
void replaceTile(RewriterBase &rewriter, memref::AllocOp alloc, Value tile) {
  rewriter.replaceAllUsesWith(alloc.getResult(), tile);
  rewriter.eraseOp(alloc);
  retypeViews(tile);
}

/// Elements a shared tile's rows are padded by where its rows are a multiple
/// of 16 elements: with 4 more, the 8 rows of a tensor-core fragment start
/// in distinct banks (a row of 16 or 32 words would put them in two or one).
constexpr int64_t kSharedRowPadding = 4;

/// The shape a tile of `type` takes in shared memory: its rows padded.
SmallVector<int64_t> sharedShape(MemRefType type) {
  SmallVector<int64_t> shape(type.getShape());
  if (shape.size() == 2 && shape[1] % 16 == 0)
    shape[1] += kSharedRowPadding;
  return shape;
}

/// The tile in the block's shared memory: a view of its padded rows.
void placeInSharedMemory(RewriterBase &rewriter, scf::ForallOp kernel,
                         memref::AllocOp alloc) {
  MemRefType type = alloc.getType();
  auto workgroup = gpu::AddressSpaceAttr::get(rewriter.getContext(),
                                              gpu::AddressSpace::Workgroup);
  rewriter.setInsertionPointToStart(kernel.getBody());
  Location loc = alloc.getLoc();
  SmallVector<int64_t> padded = sharedShape(type);
  Value tile = memref::AllocaOp::create(
      rewriter, loc,
      MemRefType::get(padded, type.getElementType(), AffineMap(), workgroup));
  if (padded != type.getShape()) {
    SmallVector<OpFoldResult> zeros(type.getRank(), rewriter.getIndexAttr(0));
    SmallVector<OpFoldResult> ones(type.getRank(), rewriter.getIndexAttr(1));
    tile = memref::SubViewOp::create(
        rewriter, loc, tile, zeros,
        getAsIndexOpFoldResult(rewriter.getContext(), type.getShape()), ones);
  }
  replaceTile(rewriter, alloc, tile);
}

/// Where a kernel's instance finds its slice of a scratch buffer: at
/// `slot` (one index per dimension of `slots`, the scratch's leading
/// dimensions), views made after `after` (null: at the start of `block`).
struct ScratchSlot {
  SmallVector<OpFoldResult> slots;
  SmallVector<Value> slot;
  Block *block;
  Operation *after;
};

/// The tile as the instance's slice of a global scratch buffer with one
/// slice per slot.
void placeInScratch(RewriterBase &rewriter, scf::ForallOp kernel,
                    const ScratchSlot &where, memref::AllocOp alloc) {
  MemRefType type = alloc.getType();
  SmallVector<int64_t> shape;
  SmallVector<Value> dynamicSizes;
  dispatchIndexOpFoldResults(where.slots, dynamicSizes, shape);
  llvm::append_range(shape, type.getShape());
  rewriter.setInsertionPoint(kernel);
  Value scratch = memref::AllocOp::create(
      rewriter, alloc.getLoc(), MemRefType::get(shape, type.getElementType()),
      dynamicSizes, alloc.getAlignmentAttr());

  SmallVector<OpFoldResult> offsets = getAsOpFoldResult(where.slot);
  SmallVector<OpFoldResult> sizes(offsets.size(), rewriter.getIndexAttr(1));
  for (int64_t size : type.getShape()) {
    offsets.push_back(rewriter.getIndexAttr(0));
    sizes.push_back(rewriter.getIndexAttr(size));
  }
  SmallVector<OpFoldResult> strides(offsets.size(), rewriter.getIndexAttr(1));
  if (where.after)
    rewriter.setInsertionPointAfter(where.after);
  else
    rewriter.setInsertionPointToStart(where.block);
  MemRefType sliceType = memref::SubViewOp::inferRankReducedResultType(
      type.getShape(), cast<MemRefType>(scratch.getType()), offsets, sizes,
      strides);
  Value slice = memref::SubViewOp::create(rewriter, alloc.getLoc(), sliceType,
                                          scratch, offsets, sizes, strides);
  replaceTile(rewriter, alloc, slice);
}

/// `kernel` (normalized, without shared outputs) as n = min(its instances,
/// `slots`) instances on a 1-d grid, instance s taking the original
/// instances s, s + n, ... (in row-major order) in turn: the new kernel,
/// and where its instances find their scratch.
std::pair<scf::ForallOp, ScratchSlot>
dealOutToSlots(RewriterBase &rewriter, scf::ForallOp kernel, int64_t slots) {
  Location loc = kernel.getLoc();
  rewriter.setInsertionPoint(kernel);
  SmallVector<OpFoldResult> grid = kernel.getMixedUpperBound();
  SmallVector<Value> sizes =
      getValueOrCreateConstantIndexOp(rewriter, loc, grid);
  Value total = sizes.front();
  for (Value size : ArrayRef(sizes).drop_front())
    total = arith::MulIOp::create(rewriter, loc, total, size);
  // A grid-stride loop: each instance steps by the grid's size, which a
  // launch may lower further without losing a point.
  Value instances = arith::MinSIOp::create(
      rewriter, loc, total,
      arith::ConstantIndexOp::create(rewriter, loc, slots));
  auto dealt = scf::ForallOp::create(
      rewriter, loc, ArrayRef<OpFoldResult>{instances}, ValueRange{},
      blockMapping(rewriter.getContext(), 1));
  dealt->setAttr(kKernelAttrName, kernel->getAttr(kKernelAttrName));

  rewriter.setInsertionPoint(dealt.getTerminator());
  auto items = scf::ForOp::create(rewriter, loc, dealt.getInductionVars()[0],
                                  total, instances);
  rewriter.setInsertionPointToStart(items.getBody());
  // The slot is the instance's (item mod n = s), found again each
  // iteration: views of it that LLVM takes as loop-invariant would have
  // their addresses computed once, before the loop, and held in registers
  // through every iteration.
  Value slot =
      arith::RemUIOp::create(rewriter, loc, items.getInductionVar(), instances);
  auto point = affine::AffineDelinearizeIndexOp::create(
      rewriter, loc, items.getInductionVar(), grid);
  Block *body = kernel.getBody();
  rewriter.eraseOp(body->getTerminator());
  rewriter.inlineBlockBefore(body, items.getBody()->getTerminator(),
                             point.getResults());
  rewriter.eraseOp(kernel);
  ScratchSlot where{{instances}, {slot}, items.getBody(), point};
  return {dealt, where};
}

struct GpuTilesPass : impl::FwpGpuTilesBase<GpuTilesPass> {
  using FwpGpuTilesBase::FwpGpuTilesBase;

  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    for (scf::ForallOp kernel : collectKernels(getOperation())) {
      KernelConfigAttr config = gpuKernelConfigOf(kernel, "fwp-gpu-tiles");
      if (!config || failed(placeTiles(rewriter, kernel, config)))
        return signalPassFailure();
    }
  }

  LogicalResult placeTiles(RewriterBase &rewriter, scf::ForallOp kernel,
                           KernelConfigAttr config) {
    if (!kernel.isNormalized())
      return kernel.emitOpError("fwp-gpu-tiles needs a kernel from 0 by 1");
    if (failed(dropCarriedTiles(kernel)))
      return kernel.emitOpError("fwp-gpu-tiles: its loops did not converge");
    eraseInPlaceCopies(kernel);
    SmallVector<memref::AllocOp> tiles = reusableTiles(kernel);
    llvm::erase_if(tiles, [](memref::AllocOp alloc) {
      return !onlyAccessed(alloc.getResult());
    });
    llvm::stable_sort(tiles, [](memref::AllocOp a, memref::AllocOp b) {
      return bytesOf(a.getType()) < bytesOf(b.getType());
    });
    int64_t shared = 0;
    SmallVector<memref::AllocOp> inShared, inScratch;
    for (memref::AllocOp alloc : tiles) {
      MemRefType type = alloc.getType();
      shared +=
          bytesOf(MemRefType::get(sharedShape(type), type.getElementType()));
      (shared <= config.getLocalBytes() ? inShared : inScratch)
          .push_back(alloc);
    }
    // Scratch for every instance would grow with the problem: the
    // configuration's slots bound it.
    ScratchSlot where{kernel.getMixedUpperBound(), kernel.getInductionVars(),
                      kernel.getBody(), nullptr};
    if (!inScratch.empty() && config.getScratchSlots() > 0) {
      if (!kernel.getOutputs().empty())
        return kernel.emitOpError("fwp-gpu-tiles: a kernel with shared "
                                  "outputs cannot take scratch slots");
      std::tie(kernel, where) =
          dealOutToSlots(rewriter, kernel, config.getScratchSlots());
    }
    for (memref::AllocOp alloc : inShared)
      placeInSharedMemory(rewriter, kernel, alloc);
    for (memref::AllocOp alloc : inScratch)
      placeInScratch(rewriter, kernel, where, alloc);
    WalkResult left = kernel.getBody()->walk([](memref::AllocOp alloc) {
      alloc.emitOpError("fwp-gpu-tiles: a GPU kernel cannot allocate this "
                        "tile (dynamic, carried by a loop, or leaving its "
                        "block)");
      return WalkResult::interrupt();
    });
    return failure(left.wasInterrupted());
  }
};

} // namespace
} // namespace fwp
