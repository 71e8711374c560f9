//===- LowerChunks.cpp - Chunk operations to linalg on tensors ------------===//
//
// The pass, and the tiles its lowerings share (ChunkLowering.h). The
// lowerings themselves: LowerChunkWy.cpp, LowerChunkStates.cpp,
// LowerChunkOutput.cpp, the backward's LowerChunk*Grad.cpp, and the fused
// forward and backward, FuseChunkForward.cpp and FuseChunkBackward.cpp.
//
//===----------------------------------------------------------------------===//

#include "ChunkLowering.h"

#include "fwp/Transforms/KernelConfig.h"
#include "fwp/Transforms/Kernels.h"
#include "fwp/Transforms/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"

namespace fwp {
#define GEN_PASS_DEF_FWPLOWERCHUNKS
#include "fwp/Transforms/Passes.h.inc"
} // namespace fwp

using namespace mlir;

namespace fwp {

Value ChunkTiles::index(int64_t value) {
  return arith::ConstantIndexOp::create(b, value);
}

static bool isChunkOperation(Operation *op) {
  return isa<ChunkWyOp, ChunkStatesOp, ChunkOutputOp, ChunkStatesGradOp,
             ChunkQkGradOp, ChunkWyGradOp>(op);
}

// On the CPU a chunk operation maps its rows itself, in cache. A GPU
// configuration leaves the map to its own kernel and reads the features: a
// kernel with value blocks would map the same rows once per block, and the
// map's tiles are what its instances least have room for in shared memory.
DpfpOp fusedFeatureMap(Value perStep) {
  auto map = perStep.getDefiningOp<DpfpOp>();
  if (!map || !llvm::all_of(perStep.getUsers(), isChunkOperation) ||
      kernelConfigOf(map, KernelTarget::Cpu).isGpuTiling())
    return nullptr;
  return map;
}

/// Where the sizes of `perStep` are read: the input of its fused map, which
/// has its leading sizes.
static Value sizesSource(Value perStep) {
  if (DpfpOp map = fusedFeatureMap(perStep))
    return map.getInput();
  return perStep;
}

Value ChunkTiles::stepDim(Value perStep, int64_t dim) {
  if (batchFirst && dim < 2)
    dim = 1 - dim;
  return tensor::DimOp::create(b, sizesSource(perStep), dim);
}

OpFoldResult ChunkTiles::blockStart(ValueRange point, int64_t width,
                                    int64_t values) {
  if (width == values)
    return b.getIndexAttr(0);
  return arith::MulIOp::create(b, point[2], index(width)).getResult();
}

Value ChunkTiles::numChunks(Value steps) {
  return arith::CeilDivUIOp::create(b, steps, index(chunk));
}

SmallVector<Value> ChunkTiles::chunkGrid(Value perStep, Value steps) {
  return {stepDim(perStep, 1), stepDim(perStep, 2), numChunks(steps)};
}

Value ChunkTiles::fromLast(Value i, Value chunks) {
  Value last = arith::SubIOp::create(b, chunks, index(1));
  return arith::SubIOp::create(b, last, i);
}

std::pair<Value, Value> ChunkTiles::span(Value c, Value steps) {
  Value t0 = arith::MulIOp::create(b, c, index(chunk));
  Value rest = arith::SubIOp::create(b, steps, t0);
  return {t0, arith::MinUIOp::create(b, rest, index(chunk))};
}

Value ChunkTiles::zeros(ArrayRef<int64_t> shape) {
  Value empty = tensor::EmptyOp::create(b, shape, element);
  Value zero = arith::ConstantOp::create(b, b.getZeroAttr(element));
  return linalg::FillOp::create(b, zero, empty).getResult(0);
}

Value ChunkTiles::add(Value lhs, Value rhs) {
  auto type = cast<RankedTensorType>(lhs.getType());
  Value sum = tensor::EmptyOp::create(b, type.getShape(), element);
  return linalg::AddOp::create(b, ValueRange{lhs, rhs}, ValueRange{sum})
      .getResult(0);
}

Value ChunkTiles::emptyLike(Value like) {
  auto type = cast<RankedTensorType>(like.getType());
  SmallVector<Value> dynamicSizes;
  for (int64_t dim = 0; dim < type.getRank(); ++dim)
    if (type.isDynamicDim(dim))
      dynamicSizes.push_back(tensor::DimOp::create(b, sizesSource(like), dim));
  return tensor::EmptyOp::create(b, type.getShape(), element, dynamicSizes);
}

Value ChunkTiles::emptyState(Value result, ArrayRef<Value> leading) {
  auto type = cast<RankedTensorType>(result.getType());
  SmallVector<Value> sizes;
  for (auto [dim, size] : llvm::enumerate(leading))
    if (type.isDynamicDim(dim))
      sizes.push_back(size);
  return tensor::EmptyOp::create(b, type.getShape(), element, sizes);
}

ChunkTiles::Slice ChunkTiles::rowsSlice(Value bi, Value h, Value t0, Value len,
                                        int64_t width, OpFoldResult col0) {
  OpFoldResult one = b.getIndexAttr(1);
  Slice slice;
  if (batchFirst) {
    slice.offsets = {bi, t0, h};
    slice.sizes = {one, len, one};
  } else {
    slice.offsets = {t0, bi, h};
    slice.sizes = {len, one, one};
  }
  if (width > 0) {
    slice.offsets.push_back(col0 ? col0 : b.getIndexAttr(0));
    slice.sizes.push_back(b.getIndexAttr(width));
  }
  slice.strides.assign(slice.offsets.size(), one);
  return slice;
}

ChunkTiles::Slice ChunkTiles::region(ArrayRef<OpFoldResult> offsets,
                                     ArrayRef<OpFoldResult> sizes) {
  Slice slice;
  slice.offsets.assign(offsets.begin(), offsets.end());
  slice.sizes.assign(sizes.begin(), sizes.end());
  slice.strides.assign(offsets.size(), b.getIndexAttr(1));
  return slice;
}

ChunkTiles::Slice ChunkTiles::perHead(Value bi, Value h,
                                      ArrayRef<OpFoldResult> sizes,
                                      ArrayRef<OpFoldResult> trailing) {
  OpFoldResult one = b.getIndexAttr(1);
  SmallVector<OpFoldResult> offsets = {bi, h}, all = {one, one};
  llvm::append_range(offsets, trailing);
  offsets.append(sizes.size() - trailing.size(), b.getIndexAttr(0));
  all.append(sizes.begin(), sizes.end());
  return region(offsets, all);
}

Value ChunkTiles::extract(Value source, ArrayRef<int64_t> shape,
                          const Slice &slice) {
  return tensor::ExtractSliceOp::create(
      b, RankedTensorType::get(shape, element), source, slice.offsets,
      slice.sizes, slice.strides);
}

Value ChunkTiles::chunkState(Value states, Value bi, Value h, Value c,
                             int64_t rows, int64_t cols) {
  OpFoldResult zero = b.getIndexAttr(0), one = b.getIndexAttr(1);
  return extract(
      states, {rows, cols},
      region({bi, h, c, zero, zero},
             {one, one, one, b.getIndexAttr(rows), b.getIndexAttr(cols)}));
}

ChunkTiles::View ChunkTiles::headRows(Value perStep, Value bi, Value h,
                                      Value steps, int64_t width,
                                      OpFoldResult col0) {
  Slice slice = rowsSlice(bi, h, index(0), steps, width, col0);
  SmallVector<int64_t> shape = {ShapedType::kDynamic};
  if (width > 0)
    shape.push_back(width);
  return {slice, extract(perStep, shape, slice)};
}

ChunkTiles::View ChunkTiles::headStates(Value states, Value bi, Value h,
                                        Value chunks, int64_t rows,
                                        int64_t cols, OpFoldResult row0) {
  SmallVector<OpFoldResult> offsets;
  if (row0)
    offsets = {b.getIndexAttr(0), row0};
  Slice slice = perHead(
      bi, h, {chunks, b.getIndexAttr(rows), b.getIndexAttr(cols)}, offsets);
  return {slice, extract(states, {ShapedType::kDynamic, rows, cols}, slice)};
}

Value ChunkTiles::startState(Value given, const Slice &slice, int64_t rows,
                             int64_t cols) {
  if (!given)
    return zeros({rows, cols});
  return copy(extract(given, {rows, cols}, slice));
}

Value ChunkTiles::copyTo(Value source, Value dest, const Slice &slice) {
  auto sourceType = cast<RankedTensorType>(source.getType());
  Value target = tensor::ExtractSliceOp::create(
      b, sourceType, dest, slice.offsets, slice.sizes, slice.strides);
  return linalg::CopyOp::create(b, source, target).getResult(0);
}

Value ChunkTiles::place(Value source, Value dest, const Slice &slice) {
  return tensor::InsertSliceOp::create(b, copyTo(source, dest, slice), dest,
                                       slice.offsets, slice.sizes,
                                       slice.strides);
}

Value ChunkTiles::placeTransposed(Value source, Value dest,
                                  const Slice &slice) {
  auto type = cast<RankedTensorType>(source.getType());
  auto targetType =
      RankedTensorType::get({type.getDimSize(1), type.getDimSize(0)}, element);
  Value target = tensor::ExtractSliceOp::create(
      b, targetType, dest, slice.offsets, slice.sizes, slice.strides);
  Value transposed =
      linalg::TransposeOp::create(b, source, target, ArrayRef<int64_t>{1, 0})
          .getResult()[0];
  return tensor::InsertSliceOp::create(b, transposed, dest, slice.offsets,
                                       slice.sizes, slice.strides);
}

Value ChunkTiles::transpose(Value tile) {
  auto type = cast<RankedTensorType>(tile.getType());
  Value into = tensor::EmptyOp::create(
      b, ArrayRef<int64_t>{type.getDimSize(1), type.getDimSize(0)}, element);
  return linalg::TransposeOp::create(b, tile, into, ArrayRef<int64_t>{1, 0})
      .getResult()[0];
}

Value ChunkTiles::copy(Value source) {
  return linalg::CopyOp::create(b, source, emptyLike(source)).getResult(0);
}

Value ChunkTiles::loadRows(Value perStep, Value bi, Value h, Value t0,
                           Value len, std::optional<ValueBlock> block) {
  auto type = cast<RankedTensorType>(perStep.getType());
  if (DpfpOp map = fusedFeatureMap(perStep)) {
    assert(!block && "features are read whole");
    // A zero row maps to zero: rows past len stay zero.
    Value rows = loadRows(map.getInput(), bi, h, t0, len);
    auto features = RankedTensorType::get({chunk, type.getDimSize(3)}, element);
    return DpfpOp::create(b, features, rows, map.getNuAttr(), map.getEpsAttr());
  }
  bool hasWidth = type.getRank() == 4;
  int64_t width = block ? block->width : hasWidth ? type.getDimSize(3) : 0;
  Slice slice =
      rowsSlice(bi, h, t0, len, width, block ? block->offset : nullptr);
  SmallVector<int64_t> rowsShape = {ShapedType::kDynamic};
  SmallVector<int64_t> tileShape = {chunk};
  if (hasWidth) {
    rowsShape.push_back(width);
    tileShape.push_back(width);
  }
  Value rows = tensor::ExtractSliceOp::create(
      b, RankedTensorType::get(rowsShape, element), perStep, slice.offsets,
      slice.sizes, slice.strides);
  SmallVector<OpFoldResult> offsets(tileShape.size(), b.getIndexAttr(0));
  SmallVector<OpFoldResult> sizes = {len};
  if (hasWidth)
    sizes.push_back(b.getIndexAttr(width));
  return place(rows, zeros(tileShape), region(offsets, sizes));
}

Value ChunkTiles::firstRows(Value tile, Value len) {
  auto type = cast<RankedTensorType>(tile.getType());
  SmallVector<int64_t> shape(type.getShape());
  shape[0] = ShapedType::kDynamic;
  SmallVector<OpFoldResult> offsets(shape.size(), b.getIndexAttr(0));
  SmallVector<OpFoldResult> sizes = {len};
  if (shape.size() == 2)
    sizes.push_back(b.getIndexAttr(shape[1]));
  Slice rows = region(offsets, sizes);
  return tensor::ExtractSliceOp::create(
      b, RankedTensorType::get(shape, element), tile, rows.offsets, rows.sizes,
      rows.strides);
}

/// The body of a reduction: acc +/- lhs * rhs, from (lhs, rhs, acc). A
/// difference is the sum with the negated term, so that the vectorizer sees
/// an add reduction (the same rounding: negation is exact).
static Value multiplyAccumulate(OpBuilder &nb, Location loc, ValueRange args,
                                bool subtract) {
  Value term = arith::MulFOp::create(nb, loc, args[0], args[1]);
  if (subtract)
    term = arith::NegFOp::create(nb, loc, term);
  return arith::AddFOp::create(nb, loc, args[2], term);
}

Value ChunkTiles::product(ProductForm form, Value lhs, Value rhs, Value acc,
                          bool subtract) {
  MLIRContext *context = b.getContext();
  AffineExpr i = getAffineDimExpr(0, context), j = getAffineDimExpr(1, context),
             k = getAffineDimExpr(2, context);
  AffineMap lhsMap = AffineMap::get(3, 0, {i, k}, context);
  AffineMap rhsMap = AffineMap::get(3, 0, {k, j}, context);
  if (form == ProductForm::NT)
    rhsMap = AffineMap::get(3, 0, {j, k}, context);
  if (form == ProductForm::TN)
    lhsMap = AffineMap::get(3, 0, {k, i}, context);
  AffineMap outMap = AffineMap::get(3, 0, {i, j}, context);
  // A named matmul (its operands' transposes in its indexing maps): what the
  // tile level's lowerings recognise as a product.
  auto matmul = [&](Value into) {
    SmallVector<Attribute> maps = {AffineMapAttr::get(lhsMap),
                                   AffineMapAttr::get(rhsMap),
                                   AffineMapAttr::get(outMap)};
    return linalg::MatmulOp::create(
               b, TypeRange{into.getType()}, ValueRange{lhs, rhs},
               ValueRange{into},
               {b.getNamedAttr("indexing_maps", b.getArrayAttr(maps))})
        .getResult(0);
  };
  if (!subtract)
    return matmul(acc);
  auto type = cast<RankedTensorType>(acc.getType());
  Value term = matmul(zeros(type.getShape()));
  // Into acc itself: an accumulator carried by a loop stays in its buffer.
  return linalg::SubOp::create(b, TypeRange{type}, ValueRange{acc, term},
                               ValueRange{acc})
      .getResult(0);
}

Value ChunkTiles::scaleRows(Value gates, Value tile) {
  MLIRContext *context = b.getContext();
  AffineExpr r = getAffineDimExpr(0, context), c = getAffineDimExpr(1, context);
  auto generic = linalg::GenericOp::create(
      b, tile.getType(), ValueRange{gates, tile},
      ValueRange{tensor::EmptyOp::create(
          b, cast<RankedTensorType>(tile.getType()).getShape(), element)},
      ArrayRef<AffineMap>{AffineMap::get(2, 0, {r}, context),
                          AffineMap::get(2, 0, {r, c}, context),
                          AffineMap::get(2, 0, {r, c}, context)},
      SmallVector<utils::IteratorType>(2, utils::IteratorType::parallel),
      [](OpBuilder &nb, Location loc, ValueRange args) {
        linalg::YieldOp::create(
            nb, loc,
            arith::MulFOp::create(nb, loc, args[0], args[1]).getResult());
      });
  return generic.getResult(0);
}

Value ChunkTiles::rowDots(Value lhs, Value rhs, Value acc, bool subtract) {
  MLIRContext *context = b.getContext();
  AffineExpr r = getAffineDimExpr(0, context), c = getAffineDimExpr(1, context);
  AffineMap both = AffineMap::get(2, 0, {r, c}, context);
  auto generic = linalg::GenericOp::create(
      b, acc.getType(), ValueRange{lhs, rhs}, ValueRange{acc},
      ArrayRef<AffineMap>{both, both, AffineMap::get(2, 0, {r}, context)},
      SmallVector<utils::IteratorType>{utils::IteratorType::parallel,
                                       utils::IteratorType::reduction},
      [subtract](OpBuilder &nb, Location loc, ValueRange args) {
        linalg::YieldOp::create(nb, loc,
                                multiplyAccumulate(nb, loc, args, subtract));
      });
  return generic.getResult(0);
}

ParallelStore storeRows(ChunkTiles &tiles, Value tile, Value out, Value bi,
                        Value h, Value t0, Value len, int64_t width,
                        OpFoldResult col0) {
  ChunkTiles::Slice rows = tiles.rowsSlice(bi, h, t0, len, width, col0);
  return {tiles.copyTo(tiles.firstRows(tile, len), out, rows), out, rows};
}

int64_t valueBlockWidth(Operation *op, int64_t values, int64_t features) {
  int64_t block = kernelConfigOf(op, KernelTarget::Cpu).getValueBlock();
  while (block > 8 && block * features > kMaxBlockStateFloats)
    block /= 2;
  return block > 0 && block < values && values % block == 0 ? block : values;
}

scf::ForallOp buildForall(
    ImplicitLocOpBuilder &b, StringRef kernel, ArrayRef<Value> bounds,
    ValueRange outputs,
    function_ref<SmallVector<ParallelStore>(ValueRange, ValueRange)> body) {
  SmallVector<OpFoldResult> upper(bounds.begin(), bounds.end());
  // On the GPU's targets, one instance a thread block.
  std::optional<ArrayAttr> mapping;
  Operation *parent = b.getInsertionBlock()->getParentOp();
  if (kernelConfigOf(parent, KernelTarget::Cpu).isGpuTiling())
    mapping = blockMapping(b.getContext(), bounds.size());
  auto forall = scf::ForallOp::create(b, upper, outputs, mapping);
  forall->setAttr(kKernelAttrName, b.getStringAttr(kernel));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(forall.getTerminator());
  SmallVector<ParallelStore> stores =
      body(forall.getInductionVars(), forall.getRegionIterArgs());
  b.setInsertionPointToEnd(forall.getTerminator().getBody());
  for (const ParallelStore &store : stores)
    tensor::ParallelInsertSliceOp::create(
        b, store.source, store.dest, store.slice.offsets, store.slice.sizes,
        store.slice.strides);
  return forall;
}

bool onlyUsedBy(Value value, Operation *user) {
  return llvm::all_of(value.getUsers(),
                      [&](Operation *op) { return op == user; });
}

LogicalResult requireStaticWidth(PatternRewriter &rewriter, Operation *op,
                                 Value value, StringRef name) {
  auto type = cast<RankedTensorType>(value.getType());
  if (!type.isDynamicDim(type.getRank() - 1))
    return success();
  return rewriter.notifyMatchFailure(op, "'" + name + "' has a dynamic width");
}

namespace {

struct FwpLowerChunks : impl::FwpLowerChunksBase<FwpLowerChunks> {
  using FwpLowerChunksBase::FwpLowerChunksBase;

  void runOnOperation() override {
    if (fuseForward || fuseBackward || fuseOutput) {
      RewritePatternSet fusion(&getContext());
      if (fuseForward)
        populateFuseChunkForwardPattern(fusion);
      else if (fuseOutput)
        populateFuseChunkStatesOutputPattern(fusion);
      if (fuseBackward)
        populateFuseChunkBackwardPattern(fusion);
      // A fusion erases the operations it fuses, siblings of the one it
      // matched, which the walk driver below does not allow; the greedy
      // driver does, here kept to the existing operations and from folding.
      GreedyRewriteConfig config;
      config.setStrictness(GreedyRewriteStrictness::ExistingOps)
          .enableFolding(false)
          .enableConstantCSE(false)
          .setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
      if (failed(applyPatternsGreedily(getOperation(), std::move(fusion),
                                       config))) {
        getOperation()->emitError("fwp-lower-chunks: the fusions did not "
                                  "converge");
        return signalPassFailure();
      }
    }
    RewritePatternSet patterns(&getContext());
    populateLowerChunkWyPattern(patterns);
    populateLowerChunkStatesPattern(patterns);
    populateLowerChunkOutputPattern(patterns);
    populateLowerChunkStatesGradPattern(patterns);
    populateLowerChunkQkGradPattern(patterns);
    populateLowerChunkWyGradPattern(patterns);
    walkAndApplyPatterns(getOperation(), std::move(patterns));
    // The feature maps every reader of which now maps rows itself.
    getOperation()->walk([](DpfpOp map) {
      if (map->use_empty())
        map->erase();
    });
    if (mapKernels) {
      RewritePatternSet maps(&getContext());
      populateFeatureMapKernelPatterns(maps);
      walkAndApplyPatterns(getOperation(), std::move(maps));
    }
    WalkResult left = getOperation()->walk([](Operation *op) {
      if (!isChunkOperation(op))
        return WalkResult::advance();
      op->emitOpError("fwp-lower-chunks needs static feature and value "
                      "widths");
      return WalkResult::interrupt();
    });
    if (left.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
} // namespace fwp
