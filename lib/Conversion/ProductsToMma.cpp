//===- ProductsToMma.cpp - The kernels' tile products on tensor cores -----===//
//
// The GPU's lowering of the tile level's products family (linalg.matmul
// inside a kernel). Each product's output is cut into warp tiles of 16 rows
// by up to 32 columns, dealt to the block's warps in turn; a warp keeps its
// tile as 16 x 8 accumulators in registers across the k steps and does each
// step as 16 x 8 x 8 vector.contract ops on operands read at their own
// layout (the indexing maps say which operand is transposed). Upstream's
// vector-to-gpu conversion then gives each contract its per-lane fragments
// and an nvgpu.mma.sync (m16n8k8); the f32 operands go to the tensor cores
// as tf32, split into a high and a low part (three MMAs: hi hi + hi lo +
// lo hi) unless `precision` asks for one rounded MMA. A product that does
// not divide into such tiles (a single row, features that are not a
// multiple of 8) is left for fwp-lower-tiles, on the CUDA cores.
//
//===----------------------------------------------------------------------===//

#include "fwp/Conversion/Passes.h"
#include "fwp/Transforms/Kernels.h"

#include "mlir/Conversion/VectorToGPU/VectorToGPU.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace fwp {
#define GEN_PASS_DEF_FWPPRODUCTSTOMMA
#include "fwp/Conversion/Passes.h.inc"
} // namespace fwp

using namespace mlir;

namespace fwp {
namespace {

/// The tensor cores' step for f32 (tf32) operands: m16n8k8.
constexpr int64_t kMmaM = 16, kMmaN = 8, kMmaK = 8;
constexpr int64_t kWarpSize = 32;
/// Columns of a warp tile at most: four accumulators of 16 x 8.
constexpr int64_t kWarpTileCols = 32;

/// An operand's window at loop position (m, n, k) of sizes (sm, sn, sk):
/// its indexing map picks which of the three each dimension takes.
struct Window {
  SmallVector<Value> offsets;
  SmallVector<int64_t> sizes;
};

Window window(AffineMap map, ArrayRef<Value> position,
              ArrayRef<int64_t> sizes) {
  Window w;
  for (AffineExpr expr : map.getResults()) {
    unsigned dim = cast<AffineDimExpr>(expr).getPosition();
    w.offsets.push_back(position[dim]);
    w.sizes.push_back(sizes[dim]);
  }
  return w;
}

Value readWindow(ImplicitLocOpBuilder &b, Value buffer, const Window &w) {
  auto type = VectorType::get(
      w.sizes, cast<MemRefType>(buffer.getType()).getElementType());
  SmallVector<bool> inBounds(w.sizes.size(), true);
  Value padding =
      arith::ConstantOp::create(b, b.getFloatAttr(type.getElementType(), 0.0));
  return vector::TransferReadOp::create(b, type, buffer, w.offsets, padding,
                                        inBounds);
}

void writeWindow(ImplicitLocOpBuilder &b, Value value, Value buffer,
                 const Window &w) {
  SmallVector<bool> inBounds(w.sizes.size(), true);
  vector::TransferWriteOp::create(b, value, buffer, w.offsets, inBounds);
}

/// Why `op` stays on the CUDA cores, or an empty string if its tiles fit
/// the tensor cores.
std::string whyNotMma(linalg::MatmulOp op) {
  if (!op.hasPureBufferSemantics())
    return "not on buffers";
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  if (!llvm::all_of(maps, [](AffineMap m) {
        return m.isProjectedPermutation() && m.getNumResults() == 2;
      }))
    return "indexing maps are not 2-D permutations";
  for (Value operand : op->getOperands())
    if (!cast<MemRefType>(operand.getType()).getElementType().isF32())
      return "elements are not f32";
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (ShapedType::isDynamicShape(ranges))
    return "shape is not static";
  if (ranges[0] % kMmaM || ranges[1] % kMmaN || ranges[2] % kMmaK)
    return "shape is not a multiple of 16 x 8 x 8";
  return "";
}

/// out += lhs rhs as warp tiles of 16 x 8 x 8 contracts; a barrier after
/// it, since the block's next tile operation may read any of `out`. Returns
/// the loop over the warp's tiles.
scf::ForOp rewriteProduct(linalg::MatmulOp op, int64_t numWarps) {
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  int64_t rows = ranges[0], cols = ranges[1], depth = ranges[2];
  int64_t tileCols = kWarpTileCols;
  while (cols % tileCols)
    tileCols /= 2;
  int64_t rowTiles = rows / kMmaM, colTiles = cols / tileCols;
  Value lhs = op.getDpsInputs()[0], rhs = op.getDpsInputs()[1];
  Value out = op.getDpsInits()[0];

  ImplicitLocOpBuilder b(op.getLoc(), op);
  auto index = [&](int64_t v) { return arith::ConstantIndexOp::create(b, v); };
  Value zero = index(0);
  // Warp w takes tiles w, w + warps, ... The index arithmetic is affine:
  // upstream's fragment conversion follows the reads' indices back and
  // refuses arith integer ops on the way.
  int64_t numTiles = rowTiles * colTiles;
  AffineExpr d0 = b.getAffineDimExpr(0), s0 = b.getAffineSymbolExpr(0);
  auto apply = [&](AffineExpr expr, ValueRange dims, ValueRange symbols) {
    SmallVector<Value> operands(dims);
    llvm::append_range(operands, symbols);
    return affine::AffineApplyOp::create(
        b, AffineMap::get(dims.size(), symbols.size(), expr), operands);
  };
  Value warp = apply(s0.floorDiv(kWarpSize), {},
                     {gpu::ThreadIdOp::create(b, gpu::Dimension::x)});
  auto rounds = scf::ForOp::create(
      b, zero, index(llvm::divideCeil(numTiles, numWarps)), index(1));
  b.setInsertionPointToStart(rounds.getBody());
  Value round = rounds.getInductionVar();
  AffineExpr tileExpr = d0 * numWarps + s0;
  if (numTiles % numWarps) {
    Value tileIndex = apply(tileExpr, round, warp);
    auto owned =
        scf::IfOp::create(b,
                          arith::CmpIOp::create(b, arith::CmpIPredicate::ult,
                                                tileIndex, index(numTiles)),
                          /*withElseRegion=*/false);
    b.setInsertionPointToStart(&owned.getThenRegion().front());
  }
  Value m0 = apply(tileExpr.floorDiv(colTiles) * kMmaM, round, warp);
  SmallVector<Value> columns;
  for (int64_t j = 0; j < tileCols; j += kMmaN)
    columns.push_back(apply(tileExpr % colTiles * tileCols + j, round, warp));

  int64_t step[] = {kMmaM, kMmaN, kMmaK};
  SmallVector<Value> accumulators;
  for (Value n : columns)
    accumulators.push_back(
        readWindow(b, out, window(maps[2], {m0, n, zero}, step)));
  auto steps =
      scf::ForOp::create(b, zero, index(depth), index(kMmaK), accumulators);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(steps.getBody());
    Value k = steps.getInductionVar();
    Value a = readWindow(b, lhs, window(maps[0], {m0, zero, k}, step));
    SmallVector<Value> updated;
    for (auto [n, acc] : llvm::zip(columns, steps.getRegionIterArgs())) {
      Value bTile = readWindow(b, rhs, window(maps[1], {m0, n, k}, step));
      updated.push_back(vector::ContractionOp::create(
          b, a, bTile, acc, op.getIndexingMaps(),
          b.getArrayAttr(
              {vector::IteratorTypeAttr::get(b.getContext(),
                                             vector::IteratorType::parallel),
               vector::IteratorTypeAttr::get(b.getContext(),
                                             vector::IteratorType::parallel),
               vector::IteratorTypeAttr::get(
                   b.getContext(), vector::IteratorType::reduction)})));
    }
    scf::YieldOp::create(b, updated);
  }
  for (auto [n, acc] : llvm::zip(columns, steps.getResults()))
    writeWindow(b, acc, out, window(maps[2], {m0, n, zero}, step));

  b.setInsertionPointAfter(rounds);
  gpu::BarrierOp::create(b);
  op.erase();
  return rounds;
}

/// x rounded to the nearest tf32 (10 mantissa bits), as f32 bits whose low
/// 13 are zero: what the tensor cores read of an f32 register.
Value roundToTf32(ImplicitLocOpBuilder &b, Value x) {
  auto type = cast<VectorType>(x.getType());
  auto bitsType = type.clone(b.getI32Type());
  auto splat = [&](int32_t v) {
    return arith::ConstantOp::create(
        b, SplatElementsAttr::get(bitsType, b.getI32IntegerAttr(v)));
  };
  Value bits = arith::BitcastOp::create(b, bitsType, x);
  // Round half away from zero: add half of the dropped unit, then truncate.
  Value rounded = arith::AndIOp::create(
      b, arith::AddIOp::create(b, bits, splat(0x1000)), splat(~0x1fff));
  return arith::BitcastOp::create(b, type, rounded);
}

/// f32 MMA -> tf32 MMAs: one of the rounded operands, or three that also
/// carry the rounding errors (a b ~ ah bh + ah bl + al bh, each part
/// rounded to tf32; the dropped al bl is below 2^-22 of a b).
void splitIntoTf32(nvgpu::MmaSyncOp mma, bool threePass) {
  ImplicitLocOpBuilder b(mma.getLoc(), mma);
  Value a = mma.getMatrixA(), bm = mma.getMatrixB();
  Value aHigh = roundToTf32(b, a), bHigh = roundToTf32(b, bm);
  int64_t shape[] = {kMmaM, kMmaN, kMmaK};
  Value acc = mma.getMatrixC();
  if (threePass) {
    Value aLow = roundToTf32(b, arith::SubFOp::create(b, a, aHigh));
    Value bLow = roundToTf32(b, arith::SubFOp::create(b, bm, bHigh));
    // Smallest terms first.
    acc = nvgpu::MmaSyncOp::create(b, aLow, bHigh, acc, shape, true);
    acc = nvgpu::MmaSyncOp::create(b, aHigh, bLow, acc, shape, true);
  }
  acc = nvgpu::MmaSyncOp::create(b, aHigh, bHigh, acc, shape, true);
  mma.replaceAllUsesWith(acc);
  mma.erase();
}

struct ProductsToMmaPass : impl::FwpProductsToMmaBase<ProductsToMmaPass> {
  using FwpProductsToMmaBase::FwpProductsToMmaBase;

  void runOnOperation() override {
    if (precision == "cuda-cores")
      return;
    if (precision != "tf32x3" && precision != "tf32") {
      getOperation()->emitError("fwp-products-to-mma: precision must be "
                                "tf32x3, tf32 or cuda-cores, got '")
          << precision << "'";
      return signalPassFailure();
    }
    if (blockSize < kWarpSize || blockSize > 1024 || blockSize % kWarpSize) {
      getOperation()->emitError("fwp-products-to-mma: block-size must be a "
                                "multiple of 32 in [32, 1024], got ")
          << static_cast<int64_t>(blockSize);
      return signalPassFailure();
    }
    for (scf::ForallOp kernel : collectKernels(getOperation()))
      if (failed(convertKernel(kernel)))
        return signalPassFailure();
  }

  /// A product's contracts in the (m, k) x (n, k) form mma.sync takes, then
  /// per-lane fragments and nvgpu.mma.sync (upstream's vector-to-gpu). Each
  /// product on its own: the conversion's slices must not reach other code.
  LogicalResult toTensorCores(scf::ForOp warpTiles) {
    RewritePatternSet prepare(&getContext());
    populatePrepareVectorToMMAPatterns(prepare, /*useNvGpu=*/true);
    if (failed(
            applyPatternsGreedily(warpTiles.getRegion(), std::move(prepare))))
      return warpTiles.emitOpError("fwp-products-to-mma: preparing the "
                                   "contracts did not converge");
    IRRewriter rewriter(&getContext());
    if (failed(convertVectorToNVVMCompatibleMMASync(rewriter, warpTiles)))
      return warpTiles.emitOpError("fwp-products-to-mma: the contracts did "
                                   "not convert to nvgpu.mma.sync");
    // The conversion leaves the vector ops it replaced for a cleanup: dead
    // code, and the accumulators' old loop-carried values.
    RewritePatternSet cleanup(&getContext());
    scf::ForOp::getCanonicalizationPatterns(cleanup, &getContext());
    if (failed(
            applyPatternsGreedily(warpTiles.getRegion(), std::move(cleanup))))
      return warpTiles.emitOpError("fwp-products-to-mma: cleaning up did not "
                                   "converge");
    WalkResult left = warpTiles.walk([](vector::ContractionOp op) {
      op.emitOpError("fwp-products-to-mma: left without a tensor-core form");
      return WalkResult::interrupt();
    });
    return failure(left.wasInterrupted());
  }

  LogicalResult convertKernel(scf::ForallOp kernel) {
    SmallVector<linalg::MatmulOp> products;
    kernel.walk([&](linalg::MatmulOp op) {
      if (whyNotMma(op).empty())
        products.push_back(op);
    });
    if (products.empty())
      return success();
    for (linalg::MatmulOp op : products)
      if (failed(toTensorCores(rewriteProduct(op, blockSize / kWarpSize))))
        return failure();

    SmallVector<nvgpu::MmaSyncOp> mmas;
    kernel.walk([&](nvgpu::MmaSyncOp op) { mmas.push_back(op); });
    for (nvgpu::MmaSyncOp mma : mmas)
      splitIntoTf32(mma, precision == "tf32x3");
    return success();
  }
};

} // namespace
} // namespace fwp
