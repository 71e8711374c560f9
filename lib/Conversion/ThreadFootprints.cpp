//===- ThreadFootprints.cpp - Which thread of a block touches what --------===//

#include "ThreadFootprints.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <functional>
#include <unordered_map>

using namespace mlir;

namespace fwp {

// Beyond this many touches for one access, the barrier is kept unexamined.
constexpr size_t kMaxTouches = size_t(1) << 18;

namespace {

/// The buffer a view is of: where elementOfBuffer ends.
Value bufferRoot(Value memref) {
  while (Operation *op = memref.getDefiningOp()) {
    if (auto subview = dyn_cast<memref::SubViewOp>(op))
      memref = subview.getSource();
    else if (auto memrefCast = dyn_cast<memref::CastOp>(op))
      memref = memrefCast.getSource();
    else if (auto expand = dyn_cast<memref::ExpandShapeOp>(op))
      memref = expand.getSrc();
    else if (auto collapse = dyn_cast<memref::CollapseShapeOp>(op))
      memref = collapse.getSrc();
    else if (auto reinterpret = dyn_cast<memref::ReinterpretCastOp>(op))
      memref = reinterpret.getSource();
    else
      break;
  }
  return memref;
}

unsigned bufferRank(Value memref) {
  return cast<MemRefType>(bufferRoot(memref).getType()).getRank();
}

/// The element of the underlying buffer at `coords` of `view`.
SmallVector<IndexForm, 4> elementOfBuffer(Value view,
                                          SmallVector<IndexForm, 4> coords,
                                          IndexEvaluator &evaluator) {
  auto unknownOfRank = [](Value memref) {
    return SmallVector<IndexForm, 4>(
        cast<MemRefType>(memref.getType()).getRank(), IndexForm::unknown());
  };
  while (Operation *op = view.getDefiningOp()) {
    if (auto subview = dyn_cast<memref::SubViewOp>(op)) {
      llvm::SmallBitVector dropped = subview.getDroppedDims();
      SmallVector<OpFoldResult> offsets = subview.getMixedOffsets();
      SmallVector<OpFoldResult> strides = subview.getMixedStrides();
      SmallVector<IndexForm, 4> source;
      unsigned next = 0;
      for (unsigned d = 0; d < offsets.size(); ++d) {
        IndexForm offset = evaluator.evaluate(offsets[d]);
        source.push_back(
            dropped.test(d)
                ? offset
                : sum(offset,
                      product(evaluator.evaluate(strides[d]), coords[next++])));
      }
      coords = std::move(source);
      view = subview.getSource();
    } else if (auto memrefCast = dyn_cast<memref::CastOp>(op)) {
      view = memrefCast.getSource();
    } else if (auto expand = dyn_cast<memref::ExpandShapeOp>(op)) {
      // Row-major within each group: the source index is the group's
      // indices linearized over its static sizes.
      ArrayRef<int64_t> shape = expand.getResultType().getShape();
      SmallVector<IndexForm, 4> source;
      for (const ReassociationIndices &group :
           expand.getReassociationIndices()) {
        IndexForm index = IndexForm::of(0);
        for (int64_t d : group) {
          index = ShapedType::isDynamic(shape[d])
                      ? (d == group.front() ? index : IndexForm::unknown())
                      : scaled(index, shape[d]);
          index = sum(index, coords[d]);
        }
        source.push_back(index);
      }
      coords = std::move(source);
      view = expand.getSrc();
    } else if (auto reinterpret = dyn_cast<memref::ReinterpretCastOp>(op)) {
      // Only a flat source with the identity layout has its index here.
      auto sourceType = cast<MemRefType>(reinterpret.getSource().getType());
      if (sourceType.getRank() != 1 || !sourceType.getLayout().isIdentity()) {
        view = reinterpret.getSource();
        coords = unknownOfRank(view);
        continue;
      }
      IndexForm index =
          evaluator.evaluate(reinterpret.getMixedOffsets().front());
      for (auto [stride, coord] :
           llvm::zip_equal(reinterpret.getMixedStrides(), coords))
        index = sum(index, product(evaluator.evaluate(stride), coord));
      coords = {index};
      view = reinterpret.getSource();
    } else if (auto collapse = dyn_cast<memref::CollapseShapeOp>(op)) {
      view = collapse.getSrc();
      coords = unknownOfRank(view);
    } else {
      break;
    }
  }
  return coords;
}

} // namespace

bool Buffer::operator==(const Buffer &other) const {
  if (kind != other.kind)
    return false;
  return kind == Kind::Global ? globalName == other.globalName
                              : value == other.value;
}

Buffer bufferOf(Value memref) {
  Attribute space = cast<MemRefType>(memref.getType()).getMemorySpace();
  memref = bufferRoot(memref);
  Operation *op = memref.getDefiningOp();
  if (!op) {
    Buffer argument{Buffer::Kind::Argument, memref, {}, space};
    auto block = cast<BlockArgument>(memref);
    if (auto function =
            dyn_cast<FunctionOpInterface>(block.getOwner()->getParentOp()))
      argument.noAlias = bool(function.getArgAttr(
          block.getArgNumber(), LLVM::LLVMDialect::getNoAliasAttrName()));
    return argument;
  }
  if (auto global = dyn_cast<memref::GetGlobalOp>(op))
    return {Buffer::Kind::Global, {}, global.getNameAttr().getAttr(), space};
  if (isa<memref::AllocOp, memref::AllocaOp>(op))
    return {Buffer::Kind::Allocation, memref, {}, space};
  return {Buffer::Kind::Other, memref, {}, space};
}

bool mayShareMemory(const Buffer &a, const Buffer &b) {
  if (a.memorySpace != b.memorySpace)
    return false;
  if (a == b)
    return true;
  using Kind = Buffer::Kind;
  // A view this file does not follow may be of anything.
  if (a.kind == Kind::Other || b.kind == Kind::Other)
    return true;
  // Function arguments may be views of one another, unless one is marked
  // as aliasing none; allocations and globals are buffers of their own.
  return a.kind == Kind::Argument && b.kind == Kind::Argument && !a.noAlias &&
         !b.noAlias;
}

std::optional<SmallVector<MemoryAccess>> memoryAccessesOf(Operation *op) {
  auto elements = [](Value memref, ValueRange indices, int64_t count,
                     bool writes) {
    MemoryAccess access{memref, llvm::to_vector(indices), {count}, writes};
    if (indices.empty())
      access.extent.clear();
    return access;
  };
  if (auto load = dyn_cast<memref::LoadOp>(op))
    return SmallVector<MemoryAccess>{
        elements(load.getMemRef(), load.getIndices(), 1, false)};
  if (auto store = dyn_cast<memref::StoreOp>(op))
    return SmallVector<MemoryAccess>{
        elements(store.getMemRef(), store.getIndices(), 1, true)};
  auto vectorAccess = [](Value memref, ValueRange indices, VectorType type,
                         bool writes) {
    return MemoryAccess{memref, llvm::to_vector(indices),
                        llvm::to_vector(type.getShape()), writes};
  };
  if (auto load = dyn_cast<vector::LoadOp>(op))
    return SmallVector<MemoryAccess>{vectorAccess(
        load.getBase(), load.getIndices(), load.getVectorType(), false)};
  if (auto store = dyn_cast<vector::StoreOp>(op))
    return SmallVector<MemoryAccess>{vectorAccess(
        store.getBase(), store.getIndices(), store.getVectorType(), true)};
  if (auto ldmatrix = dyn_cast<nvgpu::LdMatrixOp>(op)) {
    // Each lane names one 16-byte row; the warp's lanes receive them all.
    Type element = ldmatrix.getSrcMemref().getType().getElementType();
    int64_t row = 128 / element.getIntOrFloatBitWidth();
    MemoryAccess access =
        elements(ldmatrix.getSrcMemref(), ldmatrix.getIndices(), row, false);
    access.wholeWarp = true;
    return SmallVector<MemoryAccess>{access};
  }
  if (auto copy = dyn_cast<nvgpu::DeviceAsyncCopyOp>(op)) {
    int64_t count = copy.getDstElements().getZExtValue();
    return SmallVector<MemoryAccess>{
        elements(copy.getSrc(), copy.getSrcIndices(), count, false),
        elements(copy.getDst(), copy.getDstIndices(), count, true)};
  }
  // The copies land at the wait; they are counted at the copy, which comes
  // first, so the wait itself orders nothing more.
  if (isa<nvgpu::DeviceAsyncCreateGroupOp, nvgpu::DeviceAsyncWaitOp>(op))
    return SmallVector<MemoryAccess>{};
  // Rounding to tf32 is a register operation that NVVM does not mark pure.
  if (isMemoryEffectFree(op) || isa<NVVM::ConvertFloatToTF32Op>(op))
    return SmallVector<MemoryAccess>{};
  return std::nullopt;
}

std::optional<Footprint> footprintOf(const MemoryAccess &access, Operation *op,
                                     const BarrierSite &site) {
  // The loops around `op` that do not hold the barrier run every iteration
  // on their side of it: each is listed, outermost first.
  SmallVector<scf::ForOp> loops;
  for (auto loop = op->getParentOfType<scf::ForOp>();
       loop && !loop->isAncestor(site.barrier);
       loop = loop->getParentOfType<scf::ForOp>())
    loops.insert(loops.begin(), loop);
  Value threadId =
      site.barrier->getParentOfType<gpu::LaunchOp>().getThreadIds().x;
  SmallVector<Value> enumerated = {threadId};
  for (scf::ForOp loop : loops)
    enumerated.push_back(loop.getInductionVar());

  IndexEvaluator evaluator(site, enumerated);
  Footprint footprint;
  footprint.dimensions.resize(bufferRank(access.memref));
  bool first = true;
  int64_t thread = 0;
  SmallVector<int64_t> offsets(access.extent.size(), 0);
  auto addTouch = [&](ArrayRef<IndexForm> element) {
    footprint.threads.push_back(access.wholeWarp ? -1 : thread);
    for (auto [dimension, form] :
         llvm::zip_equal(footprint.dimensions, element)) {
      if (first)
        dimension.symbols = form.terms;
      dimension.compared &= form.known && form.terms == dimension.symbols;
      footprint.coordinates.push_back(form.constant);
    }
    first = false;
  };
  auto record = [&]() {
    SmallVector<IndexForm, 4> coords;
    for (Value index : access.indices)
      coords.push_back(evaluator.evaluate(index));
    // Each element of the extent, over the trailing dimensions.
    unsigned firstExtent = coords.size() - access.extent.size();
    std::fill(offsets.begin(), offsets.end(), 0);
    while (true) {
      SmallVector<IndexForm, 4> element = coords;
      for (unsigned d = 0; d < offsets.size(); ++d)
        element[firstExtent + d] =
            sum(element[firstExtent + d], IndexForm::of(offsets[d]));
      addTouch(elementOfBuffer(access.memref, std::move(element), evaluator));
      unsigned d = offsets.size();
      while (d > 0 && ++offsets[d - 1] == access.extent[d - 1])
        offsets[--d] = 0;
      if (d == 0)
        break;
    }
    return footprint.threads.size() <= kMaxTouches;
  };
  std::function<bool(unsigned)> iterate = [&](unsigned level) -> bool {
    if (level == loops.size())
      return record();
    scf::ForOp loop = loops[level];
    IndexForm lower = evaluator.evaluate(loop.getLowerBound());
    std::optional<int64_t> upper = upperLimit(loop.getUpperBound(), evaluator);
    IndexForm step = evaluator.evaluate(loop.getStep());
    if (!lower.isConstant() || !upper || !step.isConstant() ||
        step.constant <= 0) {
      evaluator.bind(loop.getInductionVar(), IndexForm::unknown());
      return iterate(level + 1);
    }
    for (int64_t i = lower.constant; i < *upper; i += step.constant) {
      evaluator.bind(loop.getInductionVar(), IndexForm::of(i, true));
      if (!iterate(level + 1))
        return false;
    }
    return true;
  };
  for (thread = 0; thread < site.blockSize; ++thread) {
    evaluator.bind(threadId, IndexForm::of(thread, true));
    if (!iterate(0))
      return std::nullopt;
  }
  return footprint;
}

namespace {

/// The constants of the compared dimensions of each touch, as a hash key.
struct Coordinates {
  const int64_t *values;
  ArrayRef<unsigned> dimensions;
  bool operator==(const Coordinates &other) const {
    return llvm::all_of(
        dimensions, [&](unsigned d) { return values[d] == other.values[d]; });
  }
};
struct HashCoordinates {
  size_t operator()(const Coordinates &key) const {
    size_t hash = 0;
    for (unsigned d : key.dimensions)
      hash = llvm::hash_combine(hash, key.values[d]);
    return hash;
  }
};

} // namespace

bool differentThreadsMeet(const Footprint &before, const Footprint &after) {
  if (before.threads.empty() || after.threads.empty())
    return false;
  // Dimensions with the same symbols in both compare by their constants;
  // the others may hold anything.
  SmallVector<unsigned> compared;
  for (auto [d, dims] :
       llvm::enumerate(llvm::zip_equal(before.dimensions, after.dimensions))) {
    auto &[b, a] = dims;
    if (b.compared && a.compared && b.symbols == a.symbols)
      compared.push_back(d);
  }
  size_t rank = before.dimensions.size();
  auto key = [&](const Footprint &footprint, size_t touch) {
    return Coordinates{footprint.coordinates.data() + touch * rank, compared};
  };
  // For each element touched before: its one thread, or -1 for several.
  std::unordered_map<Coordinates, int64_t, HashCoordinates> threads;
  for (size_t touch = 0; touch < before.threads.size(); ++touch) {
    int64_t thread = before.threads[touch];
    auto [it, inserted] = threads.try_emplace(key(before, touch), thread);
    if (!inserted && it->second != thread)
      it->second = -1;
  }
  for (size_t touch = 0; touch < after.threads.size(); ++touch) {
    auto it = threads.find(key(after, touch));
    int64_t thread = after.threads[touch];
    if (it != threads.end() &&
        (it->second == -1 || thread == -1 || it->second != thread))
      return true;
  }
  return false;
}

} // namespace fwp
