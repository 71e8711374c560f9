//===- FeatureMapKernels.cpp - DPFP maps left outside kernels, in kernels -===//
//
// With the scan in chunk operations, a feature map's gradient (and a map
// whose features something besides chunk operations reads) would run as
// loops over the whole [T, B, H, *] tensors on one core. Each becomes a
// kernel over (batch, head, block of rows), the op itself on a block's
// rows inside, where fwp-lower-dpfp writes it by column ranges (vectors).
// The op acts on each vector alone, so any layout's leading dimensions do.
//
//===----------------------------------------------------------------------===//

#include "ChunkLowering.h"

#include "fwp/Transforms/KernelConfig.h"
#include "fwp/Transforms/Kernels.h"

using namespace mlir;

namespace fwp {
namespace {

/// Rows per kernel instance on the CPU: a chunk's worth, the size the
/// in-kernel lowering's tiles are made for.
constexpr int64_t kRowsPerInstance = 64;

/// Tiles of a row's width that fwp-lower-dpfp's gradient keeps at once: up
/// to six of the features' width (the map's parts, their products, the
/// incoming gradient and its partial sums) and two of the input's.
constexpr int64_t kFeatureTilesPerRow = 6, kInputTilesPerRow = 2;

/// Rows per instance of the kernel built at `b`. On a GPU configuration an
/// instance keeps its tiles in shared memory only within `local_bytes`
/// (fwp-gpu-tiles puts the rest in global scratch, where every pass over a
/// tile is a round trip to DRAM), so it takes as many rows (a power of two)
/// as its tiles fit there.
int64_t rowsPerInstance(ImplicitLocOpBuilder &b, Type element,
                        int64_t inputWidth, int64_t featureWidth) {
  KernelConfigAttr config =
      kernelConfigOf(b.getInsertionBlock()->getParentOp(), KernelTarget::Cpu);
  if (!config.isGpuTiling())
    return kRowsPerInstance;
  int64_t rowBytes =
      element.getIntOrFloatBitWidth() / 8 *
      (kFeatureTilesPerRow * featureWidth + kInputTilesPerRow * inputWidth);
  int64_t rows = kRowsPerInstance;
  while (rows > 1 && rows * rowBytes > config.getLocalBytes())
    rows /= 2;
  return rows;
}

/// Whether `op` (a map or its gradient on `input`) is left outside kernels
/// on per-step vectors [*, *, *, d] of static d.
bool isLooseMap(Operation *op, Value input) {
  auto type = cast<RankedTensorType>(input.getType());
  return !isInsideKernel(op) && type.getRank() == 4 && !type.isDynamicDim(3);
}

/// The kernel `name` computing `result` (per-step, like `input`) a block of
/// rows at a time on tiles of the element type of `features` (the map's
/// features or their gradient: the input's type, or f32 for 16-bit inputs):
/// `onRows(tiles, bi, h, t0, len)` gives a block's result.
Value rowKernel(
    PatternRewriter &rewriter, Location loc, StringRef name, Value input,
    Value result, Value features,
    function_ref<Value(ChunkTiles &, Value, Value, Value, Value)> onRows) {
  ImplicitLocOpBuilder b(loc, rewriter);
  auto type = cast<RankedTensorType>(result.getType());
  auto featuresType = cast<RankedTensorType>(features.getType());
  int64_t inputWidth = cast<RankedTensorType>(input.getType()).getDimSize(3);
  int64_t rows = rowsPerInstance(b, featuresType.getElementType(), inputWidth,
                                 featuresType.getDimSize(3));
  ChunkTiles tiles(b, featuresType.getElementType(), rows,
                   /*batchFirst=*/false);
  Value steps = tiles.stepDim(input, 0);
  SmallVector<Value> bounds = tiles.chunkGrid(input, steps);
  // Sized from the input: the result is what is being replaced.
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, input);
  sizes.back() = b.getIndexAttr(type.getDimSize(3));
  Value outputs[] = {
      tensor::EmptyOp::create(b, sizes, type.getElementType()).getResult()};
  auto forall = buildForall(
      b, name, bounds, outputs, [&](ValueRange point, ValueRange outs) {
        auto [t0, len] = tiles.span(point[2], steps);
        Value rows = onRows(tiles, point[0], point[1], t0, len);
        return SmallVector<ParallelStore>{storeRows(tiles, rows, outs[0],
                                                    point[0], point[1], t0, len,
                                                    type.getDimSize(3))};
      });
  return forall.getResult(0);
}

/// A block of rows of `perStep` as the kernel's tiles hold it.
RankedTensorType rowsType(ChunkTiles &tiles, Value perStep) {
  auto type = cast<RankedTensorType>(perStep.getType());
  return RankedTensorType::get({tiles.chunk, type.getDimSize(3)},
                               tiles.element);
}

struct DpfpGradKernel : OpRewritePattern<DpfpGradOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(DpfpGradOp op,
                                PatternRewriter &rewriter) const override {
    if (!isLooseMap(op, op.getInput()) ||
        cast<RankedTensorType>(op.getDFeatures().getType()).isDynamicDim(3))
      return rewriter.notifyMatchFailure(op, "in a kernel, or not per-step");
    Value grad = rowKernel(
        rewriter, op.getLoc(), "dpfp_grad", op.getInput(), op.getDInput(),
        op.getDFeatures(),
        [&](ChunkTiles &tiles, Value bi, Value h, Value t0, Value len) {
          Value rows = tiles.loadRows(op.getInput(), bi, h, t0, len);
          Value grads = tiles.loadRows(op.getDFeatures(), bi, h, t0, len);
          return DpfpGradOp::create(tiles.b, rowsType(tiles, op.getDInput()),
                                    rows, grads, op.getNuAttr(),
                                    op.getEpsAttr())
              .getResult();
        });
    rewriter.replaceOp(op, grad);
    return success();
  }
};

struct DpfpKernel : OpRewritePattern<DpfpOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(DpfpOp op,
                                PatternRewriter &rewriter) const override {
    if (!isLooseMap(op, op.getInput()) ||
        op.getResult().getType().isDynamicDim(3))
      return rewriter.notifyMatchFailure(op, "in a kernel, or not per-step");
    Value features = rowKernel(
        rewriter, op.getLoc(), "dpfp", op.getInput(), op.getResult(),
        op.getResult(),
        [&](ChunkTiles &tiles, Value bi, Value h, Value t0, Value len) {
          Value rows = tiles.loadRows(op.getInput(), bi, h, t0, len);
          return DpfpOp::create(tiles.b, rowsType(tiles, op.getResult()), rows,
                                op.getNuAttr(), op.getEpsAttr())
              .getResult();
        });
    rewriter.replaceOp(op, features);
    return success();
  }
};

} // namespace

void populateFeatureMapKernelPatterns(RewritePatternSet &patterns) {
  patterns.add<DpfpGradKernel, DpfpKernel>(patterns.getContext());
}

} // namespace fwp
