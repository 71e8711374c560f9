//===- LowerChunks.cpp - Chunk operations to linalg on tensors ------------===//
//
// The pass, and the tiles its lowerings share (ChunkLowering.h; where a
// chunk's tiles are read from and written to: ChunkViews.cpp). The
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

Value ChunkTiles::emptyLike(Value like, Type elementType) {
  auto type = cast<RankedTensorType>(like.getType());
  SmallVector<Value> dynamicSizes;
  for (int64_t dim = 0; dim < type.getRank(); ++dim)
    if (type.isDynamicDim(dim))
      dynamicSizes.push_back(tensor::DimOp::create(b, sizesSource(like), dim));
  return tensor::EmptyOp::create(b, type.getShape(), elementType, dynamicSizes);
}

Value ChunkTiles::emptyState(Value result, ArrayRef<Value> leading) {
  auto type = cast<RankedTensorType>(result.getType());
  SmallVector<Value> sizes;
  for (auto [dim, size] : llvm::enumerate(leading))
    if (type.isDynamicDim(dim))
      sizes.push_back(size);
  return tensor::EmptyOp::create(b, type.getShape(), type.getElementType(),
                                 sizes);
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
    if (fuseForward || fuseBackward || fuseGradients || fuseOutput) {
      RewritePatternSet fusion(&getContext());
      if (fuseForward)
        populateFuseChunkForwardPattern(fusion);
      else if (fuseOutput)
        populateFuseChunkStatesOutputPattern(fusion);
      if (fuseBackward)
        populateFuseChunkBackwardPattern(fusion);
      else if (fuseGradients)
        populateFuseChunkGradientsPattern(fusion);
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
