//===- ProductsToMma.cpp - The kernels' tile products on tensor cores -----===//
//
// The GPU's lowering of the tile level's products family (linalg.matmul
// inside a kernel). Each product's output is cut into warp tiles of 16 rows
// by up to 32 columns, dealt to the block's warps in turn; a warp keeps its
// tiles as 16 x 8 accumulators in registers across the k steps and does
// each step as 16 x 8 x 8 vector.contract ops on operands read at their own
// layout (the indexing maps say which operand is transposed); a product
// with more tiles than warps goes in column pieces. Where the
// tiles deal evenly, the operands go through shared memory first, 32 steps
// of k at a time (cp.async by every thread, then a barrier), so that each
// element is read from global memory once per block rather than once per
// warp that needs it. Upstream's vector-to-gpu conversion then gives each
// contract its per-lane fragments (ldmatrix from shared memory) and an
// nvgpu.mma.sync (m16n8k8); the f32 operands go to the tensor cores as
// tf32, split into a high and a low part (three MMAs: hi hi + hi lo +
// lo hi) unless `precision` asks for one rounded MMA. A product that does
// not divide into such tiles (a single row, features that are not a
// multiple of 8) is left for fwp-lower-tiles, on the CUDA cores.
//
//===----------------------------------------------------------------------===//

#include "WorkgroupMemory.h"

#include "fwp/Conversion/Passes.h"
#include "fwp/Transforms/Kernels.h"

#include "mlir/Conversion/VectorToGPU/VectorToGPU.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
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
constexpr int64_t kMmaShape[] = {kMmaM, kMmaN, kMmaK};
constexpr int64_t kWarpSize = 32;
/// Columns of a warp tile at most: four accumulators of 16 x 8.
constexpr int64_t kWarpTileCols = 32;
/// Steps of k staged in shared memory at a time, and the floats of shared
/// memory a kernel may stage: 32 KiB of the 48 KiB a block has without
/// opting in, less what the kernel's local tiles leave.
constexpr int64_t kStageDepth = 32;
constexpr int64_t kStageBudgetFloats = 8192;
/// Warp tiles a warp keeps at once, at most (16 accumulator registers
/// each); a wider product is split into column pieces (splitWideProduct),
/// each staging its own operand windows. One, because the registers go
/// elsewhere: each thread's cp.async copies keep their addresses in
/// registers across the k blocks (32-bit index arithmetic without overflow
/// flags does not fold into immediate offsets), and at two tiles a warp the
/// delta rule's scan_chunk_grad spilled at d_k = 64, C = 64.
constexpr int64_t kMaxTilesPerWarp = 1;

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

/// Whether `op`'s tiles fit the tensor cores: f32 buffers, 2-D permuted
/// operands, a static shape that divides into 16 x 8 x 8 steps. Others stay
/// on the CUDA cores.
bool fitsTensorCores(linalg::MatmulOp op) {
  if (!op.hasPureBufferSemantics())
    return false;
  if (!llvm::all_of(op.getIndexingMapsArray(), [](AffineMap m) {
        return m.isProjectedPermutation() && m.getNumResults() == 2;
      }))
    return false;
  for (Value operand : op->getOperands())
    if (!cast<MemRefType>(operand.getType()).getElementType().isF32())
      return false;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  return !ShapedType::isDynamicShape(ranges) && ranges[0] % kMmaM == 0 &&
         ranges[1] % kMmaN == 0 && ranges[2] % kMmaK == 0;
}

/// Columns of a warp tile for a product `cols` wide: 32, or fewer where 32
/// does not divide it.
int64_t warpTileCols(int64_t cols) {
  int64_t tileCols = kWarpTileCols;
  while (cols % tileCols)
    tileCols /= 2;
  return tileCols;
}

/// Warp tiles each warp gets of a rows x cols output.
int64_t tilesPerWarp(int64_t rows, int64_t cols, int64_t numWarps) {
  return llvm::divideCeil(rows / kMmaM * (cols / warpTileCols(cols)), numWarps);
}

/// Whether `op` starts from zero: the last operation with memory effects
/// before it fills its whole output with zeros (TileBuilder::product without
/// accumulating). The warp tiles write every element of the output, so the fill
/// can go and the accumulators start as zeros in registers: no pass of the
/// block's threads over the output, no barrier, no reads of the zeros.
linalg::FillOp zeroFillBefore(linalg::MatmulOp op) {
  // Views and index arithmetic may come between.
  Operation *before = op->getPrevNode();
  while (before && isMemoryEffectFree(before))
    before = before->getPrevNode();
  auto fill = dyn_cast_or_null<linalg::FillOp>(before);
  // (An operand that is the output itself would read the zeros.)
  if (!fill || !fill.hasPureBufferSemantics() ||
      fill.getDpsInits()[0] != op.getDpsInits()[0] ||
      llvm::is_contained(op.getDpsInputs(), op.getDpsInits()[0]) ||
      !matchPattern(fill.getDpsInputs()[0], m_AnyZeroFloat()))
    return nullptr;
  return fill;
}

/// Splits `op` into products on column pieces of its output (and of its
/// right operand) narrow enough that no warp keeps more than
/// kMaxTilesPerWarp tiles; returns the pieces (`op` itself if it is narrow
/// enough).
SmallVector<linalg::MatmulOp> splitWideProduct(linalg::MatmulOp op,
                                               int64_t numWarps) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  int64_t rows = ranges[0], cols = ranges[1];
  int64_t pieces = 1;
  while (tilesPerWarp(rows, cols / pieces, numWarps) > kMaxTilesPerWarp &&
         cols % (2 * pieces) == 0 && (cols / (2 * pieces)) % kMmaN == 0)
    pieces *= 2;
  if (pieces == 1)
    return {op};
  ImplicitLocOpBuilder b(op.getLoc(), op);
  int64_t width = cols / pieces;
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  // The piece of an operand read through `map`: its n dimension cut.
  auto piece = [&](Value operand, AffineMap map, int64_t index) {
    auto type = cast<MemRefType>(operand.getType());
    SmallVector<OpFoldResult> offsets, sizes, strides;
    for (auto [i, expr] : llvm::enumerate(map.getResults())) {
      bool isN = cast<AffineDimExpr>(expr).getPosition() == 1;
      offsets.push_back(b.getIndexAttr(isN ? index * width : 0));
      sizes.push_back(b.getIndexAttr(isN ? width : type.getDimSize(i)));
      strides.push_back(b.getIndexAttr(1));
    }
    return memref::SubViewOp::create(b, operand, offsets, sizes, strides)
        .getResult();
  };
  Value lhs = op.getDpsInputs()[0], rhs = op.getDpsInputs()[1],
        out = op.getDpsInits()[0];
  SmallVector<linalg::MatmulOp> result;
  for (int64_t i = 0; i < pieces; ++i)
    result.push_back(linalg::MatmulOp::create(
        b, ValueRange{piece(lhs, maps[0], i), piece(rhs, maps[1], i)},
        ValueRange{piece(out, maps[2], i)},
        {b.getNamedAttr("indexing_maps", op.getIndexingMaps())}));
  op.erase();
  return result;
}

/// How a product's output is dealt to warps: tiles of 16 rows by
/// `tileCols` columns, tile t to warp t mod warps. The index arithmetic is
/// affine: upstream's fragment conversion follows the reads' indices back
/// and refuses arith integer ops on the way.
class ProductLowering {
public:
  ProductLowering(linalg::MatmulOp op, int64_t numWarps, bool fromZero)
      : op(op), b(op.getLoc(), op), maps(op.getIndexingMapsArray()),
        numWarps(numWarps), fromZero(fromZero) {
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    rows = ranges[0];
    cols = ranges[1];
    depth = ranges[2];
    tileCols = warpTileCols(cols);
    colTiles = cols / tileCols;
    numTiles = rows / kMmaM * colTiles;
    lhs = op.getDpsInputs()[0];
    rhs = op.getDpsInputs()[1];
    out = op.getDpsInits()[0];
    // An operand already in shared memory (a kernel-local tile) is read
    // where it is.
    staged[0] = !isWorkgroupMemory(lhs.getType());
    staged[1] = !isWorkgroupMemory(rhs.getType());
  }

  /// The floats of shared memory the operands in global memory need staged
  /// kStageDepth steps of k at a time, or 0 if they cannot be staged (tiles
  /// that do not deal evenly, windows over `budgetFloats`, or no operand in
  /// global memory).
  int64_t stagedFloats(int64_t budgetFloats) const;

  /// Operands read where they are (global memory). Returns the op whose
  /// regions hold the product's vector code.
  Operation *lowerInPlace();
  /// Operands copied (cp.async) into `stage`, a flat workgroup buffer.
  Operation *lowerStaged(Value stage);

private:
  /// The staged layout of an operand read through `map` for kStageDepth
  /// steps of k: [rows, cols] of the window and the padded row stride.
  struct StagedLayout {
    int64_t rows, cols, stride;
    int64_t floats() const { return rows * stride; }
  };
  StagedLayout stagedLayout(AffineMap map) const;

  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, v); }
  Value apply(AffineExpr expr, ValueRange dims, ValueRange symbols) {
    SmallVector<Value> operands(dims);
    llvm::append_range(operands, symbols);
    return affine::AffineApplyOp::create(
        b, AffineMap::get(dims.size(), symbols.size(), expr), operands);
  }
  Value warpIndex() {
    return apply(b.getAffineSymbolExpr(0).floorDiv(kWarpSize), {},
                 {gpu::ThreadIdOp::create(b, gpu::Dimension::x)});
  }
  /// Row and column origins (16 x 8 pieces) of tile `tileExpr` (an affine
  /// function of `dims` and the warp `s0`).
  std::pair<Value, SmallVector<Value>> tileOrigin(AffineExpr tileExpr,
                                                  ValueRange dims, Value warp) {
    Value m0 = apply(tileExpr.floorDiv(colTiles) * kMmaM, dims, warp);
    SmallVector<Value> columns;
    for (int64_t j = 0; j < tileCols; j += kMmaN)
      columns.push_back(apply(tileExpr % colTiles * tileCols + j, dims, warp));
    return {m0, columns};
  }
  Value contract(Value a, Value bTile, Value acc) {
    auto type = [&](vector::IteratorType t) {
      return vector::IteratorTypeAttr::get(b.getContext(), t);
    };
    return vector::ContractionOp::create(
        b, a, bTile, acc, op.getIndexingMaps(),
        b.getArrayAttr({type(vector::IteratorType::parallel),
                        type(vector::IteratorType::parallel),
                        type(vector::IteratorType::reduction)}));
  }
  /// One 16 x 8 x 8 step of a tile's accumulators, reading the operands
  /// from `lhsTile` and `rhsTile` at k = `k`.
  SmallVector<Value> step(Value lhsTile, Value rhsTile, Value m0,
                          ArrayRef<Value> columns, Value k,
                          ValueRange accumulators);
  void finish() {
    gpu::BarrierOp::create(b);
    op.erase();
  }

  linalg::MatmulOp op;
  ImplicitLocOpBuilder b;
  SmallVector<AffineMap> maps;
  /// A tile's 16 x 8 accumulator at (m0, n): read from the output, or
  /// zeros if the product starts from zero.
  Value initialAccumulator(Value m0, Value n);

  int64_t numWarps, rows, cols, depth, tileCols, colTiles, numTiles;
  bool fromZero;
  Value lhs, rhs, out;
  bool staged[2];
};

Value ProductLowering::initialAccumulator(Value m0, Value n) {
  if (!fromZero)
    return readWindow(b, out, window(maps[2], {m0, n, index(0)}, kMmaShape));
  auto type = VectorType::get({kMmaM, kMmaN}, b.getF32Type());
  return arith::ConstantOp::create(
      b, SplatElementsAttr::get(type, b.getF32FloatAttr(0.0f)));
}

SmallVector<Value> ProductLowering::step(Value lhsTile, Value rhsTile, Value m0,
                                         ArrayRef<Value> columns, Value k,
                                         ValueRange accumulators) {
  Value zero = index(0);
  Value a = readWindow(b, lhsTile, window(maps[0], {m0, zero, k}, kMmaShape));
  SmallVector<Value> updated;
  for (auto [n, acc] : llvm::zip(columns, accumulators)) {
    Value bTile =
        readWindow(b, rhsTile, window(maps[1], {m0, n, k}, kMmaShape));
    updated.push_back(contract(a, bTile, acc));
  }
  return updated;
}

Operation *ProductLowering::lowerInPlace() {
  Value zero = index(0);
  Value warp = warpIndex();
  auto rounds = scf::ForOp::create(
      b, zero, index(llvm::divideCeil(numTiles, numWarps)), index(1));
  b.setInsertionPointToStart(rounds.getBody());
  Value round = rounds.getInductionVar();
  AffineExpr tileExpr =
      b.getAffineDimExpr(0) * numWarps + b.getAffineSymbolExpr(0);
  if (numTiles % numWarps) {
    Value tileIndex = apply(tileExpr, round, warp);
    auto owned =
        scf::IfOp::create(b,
                          arith::CmpIOp::create(b, arith::CmpIPredicate::ult,
                                                tileIndex, index(numTiles)),
                          /*withElseRegion=*/false);
    b.setInsertionPointToStart(&owned.getThenRegion().front());
  }
  auto [m0, columns] = tileOrigin(tileExpr, round, warp);
  SmallVector<Value> accumulators;
  for (Value n : columns)
    accumulators.push_back(initialAccumulator(m0, n));
  auto steps =
      scf::ForOp::create(b, zero, index(depth), index(kMmaK), accumulators);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(steps.getBody());
    scf::YieldOp::create(b, step(lhs, rhs, m0, columns, steps.getInductionVar(),
                                 steps.getRegionIterArgs()));
  }
  for (auto [n, acc] : llvm::zip(columns, steps.getResults()))
    writeWindow(b, acc, out, window(maps[2], {m0, n, zero}, kMmaShape));
  b.setInsertionPointAfter(rounds);
  finish();
  return rounds;
}

ProductLowering::StagedLayout
ProductLowering::stagedLayout(AffineMap map) const {
  int64_t extent[] = {rows, cols, std::min(depth, kStageDepth)};
  unsigned rowDim = cast<AffineDimExpr>(map.getResult(0)).getPosition();
  unsigned colDim = cast<AffineDimExpr>(map.getResult(1)).getPosition();
  StagedLayout layout{extent[rowDim], extent[colDim], 0};
  // A fragment's lanes take 8 rows (m or n: lane / 4) by 4 columns (k:
  // lane % 4), or 4 rows (k) by 8 columns: strides of 4 or 8 words modulo
  // 32 banks put the 32 lanes on 32 banks.
  int64_t banks = rowDim == 2 ? 8 : 4;
  layout.stride = layout.cols + (banks - layout.cols % 32 + 32) % 32;
  return layout;
}

int64_t ProductLowering::stagedFloats(int64_t budgetFloats) const {
  if (!staged[0] && !staged[1])
    return 0;
  int64_t threads = numWarps * kWarpSize;
  int64_t kBlock = std::min(depth, kStageDepth);
  // Whole rounds of tiles, whole k blocks, whole copies per thread.
  if (numTiles % numWarps || depth % kBlock)
    return 0;
  int64_t floats = 0;
  for (int operand = 0; operand < 2; ++operand) {
    if (!staged[operand])
      continue;
    StagedLayout l = stagedLayout(maps[operand]);
    if ((l.rows * l.cols) % threads)
      return 0;
    floats = llvm::alignTo(floats, 4) + l.floats();
  }
  return floats <= budgetFloats ? floats : 0;
}

Operation *ProductLowering::lowerStaged(Value stage) {
  Value zero = index(0);
  int64_t kBlock = std::min(depth, kStageDepth);
  StagedLayout layouts[] = {stagedLayout(maps[0]), stagedLayout(maps[1])};
  // One trip: the scope of the product's vector code.
  auto scope = scf::ForOp::create(b, zero, index(1), index(1));
  b.setInsertionPointToStart(scope.getBody());
  Value warp = warpIndex();
  SmallVector<std::pair<Value, SmallVector<Value>>> tiles;
  SmallVector<Value> accumulators;
  for (int64_t round = 0; round < numTiles / numWarps; ++round) {
    tiles.push_back(
        tileOrigin(b.getAffineSymbolExpr(0) + round * numWarps, {}, warp));
    for (Value n : tiles.back().second)
      accumulators.push_back(initialAccumulator(tiles.back().first, n));
  }
  // Views of the stage: the staged operands' windows in their own layouts.
  SmallVector<Value> views(2);
  int64_t offset = 0;
  for (int operand = 0; operand < 2; ++operand) {
    if (!staged[operand])
      continue;
    const StagedLayout &l = layouts[operand];
    offset = llvm::alignTo(offset, 4);
    views[operand] = memref::ReinterpretCastOp::create(
        b,
        MemRefType::get(
            {l.rows, l.cols}, b.getF32Type(),
            StridedLayoutAttr::get(b.getContext(), offset, {l.stride, 1}),
            cast<MemRefType>(stage.getType()).getMemorySpace()),
        stage, offset, ArrayRef<int64_t>{l.rows, l.cols},
        ArrayRef<int64_t>{l.stride, 1});
    offset += l.floats();
  }

  auto blocks =
      scf::ForOp::create(b, zero, index(depth), index(kBlock), accumulators);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(blocks.getBody());
    Value k0 = blocks.getInductionVar();
    // The previous block's reads are done before the stage is overwritten.
    gpu::BarrierOp::create(b);
    Value tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
    SmallVector<Value> copies;
    int64_t extent[] = {rows, cols, kBlock};
    Value sources[] = {lhs, rhs};
    // The block's window of an operand read in place: a view with k from k0,
    // as the stage's views have.
    SmallVector<Value> blockViews(views);
    for (int operand = 0; operand < 2; ++operand) {
      Window from = window(maps[operand], {zero, zero, k0}, extent);
      if (staged[operand])
        continue;
      SmallVector<OpFoldResult> offsets(from.offsets.begin(),
                                        from.offsets.end());
      blockViews[operand] = memref::SubViewOp::create(
          b, sources[operand], offsets,
          getAsIndexOpFoldResult(b.getContext(), from.sizes),
          SmallVector<OpFoldResult>(2, b.getIndexAttr(1)));
    }
    for (int operand = 0; operand < 2; ++operand) {
      if (!staged[operand])
        continue;
      const StagedLayout &l = layouts[operand];
      Window from = window(maps[operand], {zero, zero, k0}, extent);
      // Element e = i * threads + tid of the rows x cols window, 4 bytes
      // each: the window's offsets need no alignment.
      int64_t threads = numWarps * kWarpSize;
      for (int64_t i = 0; i < l.rows * l.cols / threads; ++i) {
        AffineExpr e = b.getAffineSymbolExpr(0) + i * threads;
        Value r = apply(e.floorDiv(l.cols), {}, tid);
        Value c = apply(e % l.cols, {}, tid);
        Value srcRow = apply(b.getAffineDimExpr(0) + b.getAffineDimExpr(1),
                             {from.offsets[0], r}, {});
        Value srcCol = apply(b.getAffineDimExpr(0) + b.getAffineDimExpr(1),
                             {from.offsets[1], c}, {});
        copies.push_back(nvgpu::DeviceAsyncCopyOp::create(
            b, nvgpu::DeviceAsyncTokenType::get(b.getContext()), views[operand],
            ValueRange{r, c}, sources[operand], ValueRange{srcRow, srcCol},
            b.getIndexAttr(1),
            /*srcElements=*/Value(), /*bypassL1=*/UnitAttr()));
      }
    }
    Value group = nvgpu::DeviceAsyncCreateGroupOp::create(
        b, nvgpu::DeviceAsyncTokenType::get(b.getContext()), copies);
    nvgpu::DeviceAsyncWaitOp::create(b, group, b.getI32IntegerAttr(0));
    gpu::BarrierOp::create(b);

    auto steps = scf::ForOp::create(b, zero, index(kBlock), index(kMmaK),
                                    blocks.getRegionIterArgs());
    {
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(steps.getBody());
      SmallVector<Value> updated;
      ValueRange accs = steps.getRegionIterArgs();
      for (auto [t, tile] : llvm::enumerate(tiles)) {
        size_t perTile = tile.second.size();
        llvm::append_range(updated,
                           step(blockViews[0], blockViews[1], tile.first,
                                tile.second, steps.getInductionVar(),
                                accs.slice(t * perTile, perTile)));
      }
      scf::YieldOp::create(b, updated);
    }
    scf::YieldOp::create(b, steps.getResults());
  }
  ValueRange results = blocks.getResults();
  for (auto [t, tile] : llvm::enumerate(tiles))
    for (auto [j, n] : llvm::enumerate(tile.second))
      writeWindow(b, results[t * tile.second.size() + j], out,
                  window(maps[2], {tile.first, n, zero}, kMmaShape));
  b.setInsertionPointAfter(scope);
  finish();
  return scope;
}

/// The row-major position of the `index`-th element of `shape`.
void delinearize(int64_t index, ArrayRef<int64_t> shape,
                 SmallVectorImpl<int64_t> &position) {
  for (int64_t d = int64_t(shape.size()) - 1; d >= 0; --d) {
    position[d] = index % shape[d];
    index /= shape[d];
  }
}

/// x rounded to the nearest tf32 (10 mantissa bits, ties away from zero),
/// as f32 bits whose low 13 are zero: what the tensor cores read of an f32
/// register. cvt.rna.tf32.f32 element by element keeps NaN and infinities,
/// which integer rounding of the bits would turn into zeros.
Value roundToTf32(ImplicitLocOpBuilder &b, Value x) {
  auto type = cast<VectorType>(x.getType());
  Value rounded = ub::PoisonOp::create(b, type);
  SmallVector<int64_t> position(type.getRank(), 0);
  for (int64_t i = 0, n = type.getNumElements(); i < n; ++i) {
    delinearize(i, type.getShape(), position);
    Value element = vector::ExtractOp::create(b, x, position);
    Value bits = NVVM::ConvertFloatToTF32Op::create(
        b, b.getI32Type(), element, NVVM::FPRoundingMode::RNA,
        NVVM::SaturationMode::NONE, /*relu=*/false);
    Value tf32 = arith::BitcastOp::create(b, b.getF32Type(), bits);
    rounded = vector::InsertOp::create(b, tf32, rounded, position);
  }
  return rounded;
}

/// f32 MMA -> tf32 MMAs: one of the rounded operands, or three that also
/// carry the rounding errors (a b ~ ah bh + ah bl + al bh, each part
/// rounded to tf32; the dropped al bl is below 2^-22 of a b).
void splitIntoTf32(nvgpu::MmaSyncOp mma, bool threePass) {
  ImplicitLocOpBuilder b(mma.getLoc(), mma);
  Value a = mma.getMatrixA(), bm = mma.getMatrixB();
  Value aHigh = roundToTf32(b, a), bHigh = roundToTf32(b, bm);
  Value acc = mma.getMatrixC();
  if (threePass) {
    Value aLow = roundToTf32(b, arith::SubFOp::create(b, a, aHigh));
    Value bLow = roundToTf32(b, arith::SubFOp::create(b, bm, bHigh));
    // Smallest terms first.
    acc = nvgpu::MmaSyncOp::create(b, aLow, bHigh, acc, kMmaShape, true);
    acc = nvgpu::MmaSyncOp::create(b, aHigh, bLow, acc, kMmaShape, true);
  }
  acc = nvgpu::MmaSyncOp::create(b, aHigh, bHigh, acc, kMmaShape, true);
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

  /// A workgroup buffer of `floats` floats for `kernel`'s staged operands
  /// (a module-level memref.global: gpu-kernel-outlining carries it into
  /// the kernel's GPU module), and its use at the kernel's start.
  Value createStage(scf::ForallOp kernel, int64_t floats) {
    auto type =
        MemRefType::get({floats}, Float32Type::get(kernel.getContext()),
                        MemRefLayoutAttrInterface(),
                        gpu::AddressSpaceAttr::get(
                            kernel.getContext(), gpu::AddressSpace::Workgroup));
    return createWorkgroupBuffer(kernel, "stage", type);
  }

  /// A product's contracts in the (m, k) x (n, k) form mma.sync takes, then
  /// per-lane fragments and nvgpu.mma.sync (upstream's vector-to-gpu). Each
  /// product on its own: the conversion's slices must not reach other code.
  LogicalResult toTensorCores(Operation *warpTiles) {
    RewritePatternSet prepare(&getContext());
    populatePrepareVectorToMMAPatterns(prepare, /*useNvGpu=*/true);
    if (failed(
            applyPatternsGreedily(warpTiles->getRegion(0), std::move(prepare))))
      return warpTiles->emitOpError("fwp-products-to-mma: preparing the "
                                    "contracts did not converge");
    IRRewriter rewriter(&getContext());
    if (failed(convertVectorToNVVMCompatibleMMASync(rewriter, warpTiles)))
      return warpTiles->emitOpError("fwp-products-to-mma: the contracts did "
                                    "not convert to nvgpu.mma.sync");
    // The conversion leaves the vector ops it replaced for a cleanup: dead
    // code, and the accumulators' old loop-carried values.
    RewritePatternSet cleanup(&getContext());
    scf::ForOp::getCanonicalizationPatterns(cleanup, &getContext());
    if (failed(
            applyPatternsGreedily(warpTiles->getRegion(0), std::move(cleanup))))
      return warpTiles->emitOpError("fwp-products-to-mma: cleaning up did not "
                                    "converge");
    WalkResult left = warpTiles->walk([](vector::ContractionOp op) {
      op.emitOpError("fwp-products-to-mma: left without a tensor-core form");
      return WalkResult::interrupt();
    });
    return failure(left.wasInterrupted());
  }

  LogicalResult convertKernel(scf::ForallOp kernel) {
    int64_t numWarps = blockSize / kWarpSize;
    SmallVector<linalg::MatmulOp> fitting;
    kernel.walk([&](linalg::MatmulOp op) {
      if (fitsTensorCores(op))
        fitting.push_back(op);
    });
    SmallVector<ProductLowering> products;
    for (linalg::MatmulOp op : fitting) {
      bool fromZero = false;
      if (linalg::FillOp fill = zeroFillBefore(op)) {
        fill.erase();
        fromZero = true;
      }
      for (linalg::MatmulOp piece : splitWideProduct(op, numWarps))
        products.emplace_back(piece, numWarps, fromZero);
    }
    if (products.empty())
      return success();
    // One stage per kernel, as large as its largest staged product needs:
    // the products run one after another, a barrier apart. The kernel's
    // local tiles share the block's shared memory with it.
    int64_t budget =
        std::min(kStageBudgetFloats,
                 (kWorkgroupBytes - localWorkgroupBytes(kernel)) / 4);
    SmallVector<int64_t> staged;
    for (const ProductLowering &product : products)
      staged.push_back(product.stagedFloats(budget));
    int64_t stageFloats = *llvm::max_element(staged);
    Value stage;
    if (stageFloats)
      stage = createStage(kernel, stageFloats);
    for (auto [lowering, floats] : llvm::zip(products, staged)) {
      Operation *scope =
          floats ? lowering.lowerStaged(stage) : lowering.lowerInPlace();
      if (failed(toTensorCores(scope)))
        return failure();
    }

    SmallVector<nvgpu::MmaSyncOp> mmas;
    kernel.walk([&](nvgpu::MmaSyncOp op) { mmas.push_back(op); });
    for (nvgpu::MmaSyncOp mma : mmas)
      splitIntoTf32(mma, precision == "tf32x3");
    return success();
  }
};

} // namespace
} // namespace fwp
