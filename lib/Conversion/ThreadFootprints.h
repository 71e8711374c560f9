//===- ThreadFootprints.h - Which thread of a block touches what -*- C++
//-*-===//
//
// For fwp-eliminate-barriers: the elements that each thread of a block
// touches at one memory operation inside a gpu.launch, found by running the
// operation's index arithmetic for every thread and every iteration of the
// loops around it (the kernels' shared loops, their tensor-core fragments).
//
// An element is a point of the buffer the memory belongs to (an allocation,
// a workgroup global, a function argument), reached through the views in
// between (subview, reinterpret_cast of a flat buffer, expand_shape), so
// that two views of one tile compare. Each coordinate is an IndexForm: a
// constant plus a sum of symbols, values that hold one value for every
// thread on both sides of the barrier in question (block ids, sizes, the
// iteration of a loop around the barrier), or unknown.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_CONVERSION_THREADFOOTPRINTS_H
#define FWP_CONVERSION_THREADFOOTPRINTS_H

#include "IndexEvaluator.h"

#include <optional>

namespace fwp {

/// One memory access of an operation.
struct MemoryAccess {
  mlir::Value memref;
  llvm::SmallVector<mlir::Value> indices;
  /// The elements touched from `indices`, over the trailing dimensions.
  llvm::SmallVector<int64_t> extent;
  bool writes = false;
  /// Every lane of the warp receives what it reads (ldmatrix).
  bool wholeWarp = false;
};

/// The memory accesses of `op` (not of its regions), or std::nullopt when
/// it touches memory in a way not modelled here.
std::optional<llvm::SmallVector<MemoryAccess>>
memoryAccessesOf(mlir::Operation *op);

/// The buffer a memref view belongs to, and whether two buffers can share
/// memory.
struct Buffer {
  enum class Kind { Allocation, Global, Argument, Other };
  Kind kind;
  mlir::Value value;           // not for Global
  mlir::StringAttr globalName; // for Global
  mlir::Attribute memorySpace;
  /// An argument marked llvm.noalias (an entry point's output): no other
  /// argument is a view of it.
  bool noAlias = false;
  bool operator==(const Buffer &other) const;
};
Buffer bufferOf(mlir::Value memref);
bool mayShareMemory(const Buffer &a, const Buffer &b);

/// Every element one access touches, with the thread that touches it.
/// Element coordinates are kept as constants; a dimension is `compared`
/// when every touch has it known with the same symbols (`symbols`), which
/// the constants are then relative to. Thread -1 stands for every thread.
struct Footprint {
  struct Dimension {
    bool compared = true;
    llvm::SmallVector<std::pair<mlir::Value, int64_t>, 2> symbols;
  };
  llvm::SmallVector<Dimension, 4> dimensions;
  std::vector<int64_t> threads;
  std::vector<int64_t> coordinates; // dimensions.size() per touch
};

/// The footprint of `access` (an access of `op`) over the block's threads
/// and every iteration of the loops around `op` that do not hold the
/// barrier; std::nullopt when there are too many touches to list.
std::optional<Footprint> footprintOf(const MemoryAccess &access,
                                     mlir::Operation *op,
                                     const BarrierSite &site);

/// Whether some element is touched in both footprints from two different
/// threads (or from a whole warp).
bool differentThreadsMeet(const Footprint &before, const Footprint &after);

} // namespace fwp

#endif // FWP_CONVERSION_THREADFOOTPRINTS_H
