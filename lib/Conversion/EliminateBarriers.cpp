//===- EliminateBarriers.cpp - Drop the barriers that order nothing -------===//
//
// fwp-kernels-to-gpu puts a barrier after every loop the block's threads
// share, and fwp-products-to-mma one around each staging of tensor-core
// operands. Many order nothing: the last before the kernel ends, those
// between loops in which each thread reads only what it wrote itself, those
// between loops on different tiles. A barrier is needed when some memory
// access that can run after the previous barrier and before it, and one
// that can run after it and before the next, touch one element from two
// threads, and one of them writes (the accesses through a loop's back edge
// included). Which thread touches which element comes from
// ThreadFootprints: the index arithmetic run for every thread.
//
// Upstream's gpu-eliminate-barriers compares buffers only, not elements or
// threads: it keeps every barrier between two loops on one tile.
//
//===----------------------------------------------------------------------===//

#include "ThreadFootprints.h"

#include "fwp/Conversion/Passes.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

#include <map>

namespace fwp {
#define GEN_PASS_DEF_FWPELIMINATEBARRIERS
#include "fwp/Conversion/Passes.h.inc"
} // namespace fwp

using namespace mlir;

namespace fwp {
namespace {

/// An operation that can run on one side of a barrier, with the loops
/// whose back edge lies between it and the barrier.
struct Site {
  Operation *op;
  SmallVector<Operation *, 2> crossedLoops;
};

/// The operations on one side of a barrier, up to the next barrier on
/// every path; `unknown` when a path leaves the control flow understood
/// here.
struct Side {
  SmallVector<Site> sites;
  bool unknown = false;
};

bool runsAtLeastOnce(scf::ForOp loop) {
  std::optional<int64_t> lower = getConstantIntValue(loop.getLowerBound());
  std::optional<int64_t> upper = getConstantIntValue(loop.getUpperBound());
  return lower && upper && *lower < *upper;
}

/// Walks the operations of one side: backward from a point (the side
/// before the barrier) or forward (the side after).
class SideWalker {
public:
  SideWalker(bool forward, Side &side) : forward(forward), side(side) {}

  /// Adds the operations of `block` from `from` to its end (forward), or
  /// from before `from` to its start (backward); true if every path
  /// reached a barrier.
  bool walkBlock(Block *block, Block::iterator from,
                 ArrayRef<Operation *> crossed) {
    SmallVector<Operation *> ops;
    if (forward)
      for (auto it = from; it != block->end(); ++it)
        ops.push_back(&*it);
    else
      for (auto it = from; it != block->begin();)
        ops.push_back(&*--it);
    for (Operation *op : ops)
      if (walkOp(op, crossed))
        return true;
    return false;
  }

  /// Adds `op`; true if every path through it reaches a barrier.
  bool walkOp(Operation *op, ArrayRef<Operation *> crossed) {
    if (isa<gpu::BarrierOp>(op))
      return true;
    if (op->getNumRegions() == 0) {
      side.sites.push_back({op, llvm::to_vector(crossed)});
      return false;
    }
    if (auto branch = dyn_cast<scf::IfOp>(op)) {
      bool thenStops = walkRegion(branch.getThenRegion(), crossed);
      bool elseStops = !branch.getElseRegion().empty() &&
                       walkRegion(branch.getElseRegion(), crossed);
      return thenStops && elseStops;
    }
    if (auto loop = dyn_cast<scf::ForOp>(op)) {
      // The iterations before the last are cut off by a barrier the body
      // reaches; without one the whole body is on this side.
      return walkRegion(loop.getRegion(), crossed) && runsAtLeastOnce(loop);
    }
    // Any other region op, with all it holds, barriers included, is on this
    // side (the op too: it may touch memory itself, as linalg ops do).
    op->walk([&](Operation *nested) {
      if (!isa<scf::ForOp, scf::IfOp>(nested))
        side.sites.push_back({nested, llvm::to_vector(crossed)});
    });
    return false;
  }

private:
  bool walkRegion(Region &region, ArrayRef<Operation *> crossed) {
    Block *block = &region.front();
    return walkBlock(block, forward ? block->begin() : block->end(), crossed);
  }

  bool forward;
  Side &side;
};

/// The operations that can run between `barrier` and the barriers next to
/// it in the direction given.
Side sideOf(gpu::BarrierOp barrier, bool forward) {
  Side side;
  SideWalker walker(forward, side);
  Operation *at = barrier;
  while (true) {
    Block *block = at->getBlock();
    auto from = forward ? std::next(at->getIterator()) : at->getIterator();
    if (walker.walkBlock(block, from, {}))
      return side;
    Operation *parent = block->getParentOp();
    if (isa<gpu::LaunchOp>(parent))
      return side;
    if (auto loop = dyn_cast<scf::ForOp>(parent)) {
      // The neighbouring iteration, then the path around the loop.
      Operation *crossed[] = {loop};
      walker.walkBlock(block, forward ? block->begin() : block->end(), crossed);
    } else if (!isa<scf::IfOp>(parent)) {
      side.unknown = true;
      return side;
    }
    at = parent;
  }
}

/// Whether the operations at two sites of a barrier conflict: some element
/// touched by both from two different threads, one of them a write.
class ConflictFinder {
public:
  explicit ConflictFinder(int64_t blockSize) : blockSize(blockSize) {}

  bool conflict(gpu::BarrierOp barrier, const Site &before, const Site &after) {
    this->barrier = barrier;
    auto accessesBefore = memoryAccessesOf(before.op);
    auto accessesAfter = memoryAccessesOf(after.op);
    if (!accessesBefore || !accessesAfter)
      return true;
    for (unsigned i = 0; i < accessesBefore->size(); ++i)
      for (unsigned j = 0; j < accessesAfter->size(); ++j)
        if (conflict(before, (*accessesBefore)[i], i, after,
                     (*accessesAfter)[j], j))
          return true;
    return false;
  }

private:
  bool conflict(const Site &beforeSite, const MemoryAccess &before,
                unsigned beforeIndex, const Site &afterSite,
                const MemoryAccess &after, unsigned afterIndex) {
    if (!before.writes && !after.writes)
      return false;
    Buffer beforeBuffer = bufferOf(before.memref);
    Buffer afterBuffer = bufferOf(after.memref);
    if (!mayShareMemory(beforeBuffer, afterBuffer))
      return false;
    if (!(beforeBuffer == afterBuffer))
      return true;
    const Footprint *beforeFootprint =
        footprint(beforeSite, before, beforeIndex);
    const Footprint *afterFootprint = footprint(afterSite, after, afterIndex);
    return !beforeFootprint || !afterFootprint ||
           differentThreadsMeet(*beforeFootprint, *afterFootprint);
  }

  /// The footprint of one access at one site. It is the same for every
  /// barrier of one block: the loops listed and the values that are
  /// symbols depend only on which blocks hold the barrier.
  const Footprint *footprint(const Site &site, const MemoryAccess &access,
                             unsigned index) {
    Key key{barrier->getBlock(), site.op, index, site.crossedLoops};
    auto it = cache.find(key);
    if (it == cache.end()) {
      BarrierSite where{barrier, blockSize, site.crossedLoops};
      it = cache.emplace(key, footprintOf(access, site.op, where)).first;
    }
    return it->second ? &*it->second : nullptr;
  }

  using Key =
      std::tuple<Block *, Operation *, unsigned, SmallVector<Operation *, 2>>;
  gpu::BarrierOp barrier;
  int64_t blockSize;
  std::map<Key, std::optional<Footprint>> cache;
};

bool isNeeded(gpu::BarrierOp barrier, ConflictFinder &finder) {
  Side before = sideOf(barrier, /*forward=*/false);
  Side after = sideOf(barrier, /*forward=*/true);
  if (before.unknown || after.unknown)
    return true;
  for (const Site &b : before.sites)
    for (const Site &a : after.sites)
      if (finder.conflict(barrier, b, a))
        return true;
  return false;
}

void eliminateBarriers(gpu::LaunchOp launch) {
  // Threads are numbered along x only; other shapes keep their barriers.
  std::optional<int64_t> x = getConstantIntValue(launch.getBlockSizeX());
  std::optional<int64_t> y = getConstantIntValue(launch.getBlockSizeY());
  std::optional<int64_t> z = getConstantIntValue(launch.getBlockSizeZ());
  if (!x || y != 1 || z != 1)
    return;
  SmallVector<gpu::BarrierOp> barriers;
  launch.walk([&](gpu::BarrierOp barrier) { barriers.push_back(barrier); });
  // One at a time: each decision sees the barriers still there.
  ConflictFinder finder(*x);
  for (gpu::BarrierOp barrier : barriers)
    if (!isNeeded(barrier, finder))
      barrier.erase();
}

struct EliminateBarriersPass
    : impl::FwpEliminateBarriersBase<EliminateBarriersPass> {
  void runOnOperation() override {
    getOperation()->walk(
        [](gpu::LaunchOp launch) { eliminateBarriers(launch); });
  }
};

} // namespace
} // namespace fwp
