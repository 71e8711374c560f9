//===- MmaProducts.cpp - Tile products dealt to warps' tensor cores -------===//
//
// A kernel's linalg.matmul as warp tiles of 16 x 8 accumulators kept in
// registers across the k steps, each step an nvgpu.mma.sync on fragments
// read where the operands are or from shared-memory windows staged by
// cp.async (fwp-products-to-mma, Passes.td).
//
//===----------------------------------------------------------------------===//

#include "MmaProducts.h"
#include "KnownAlignment.h"

#include "mlir/Conversion/VectorToGPU/VectorToGPU.h"
#include "mlir/Dialect/UB/IR/UBOps.h"

using namespace mlir;

namespace fwp {
namespace {

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

/// Warp tiles each warp gets of a rows x cols output.
int64_t tilesPerWarp(int64_t rows, int64_t cols, int64_t numWarps) {
  return llvm::divideCeil(rows / kMmaM * (cols / warpTileCols(cols)), numWarps);
}

} // namespace

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

int64_t ProductLowering::copyWidth(Value source, const StagedLayout &layout,
                                   Value colOffset) const {
  int64_t threads = numWarps * kWarpSize;
  int64_t innerStride =
      cast<MemRefType>(source.getType()).getStridesAndOffset().first.back();
  bool wide = layout.cols % kWideCopy == 0 && layout.stride % kWideCopy == 0 &&
              (layout.rows * layout.cols) % (threads * kWideCopy) == 0 &&
              innerStride == 1 && rowsStartAligned(source, kWideCopy) &&
              knownPowerOfTwoDivisor(colOffset) % kWideCopy == 0;
  return wide ? kWideCopy : 1;
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
      // Elements [e, e + width) with e = (i * threads + tid) * width of the
      // rows x cols window: 16 bytes a copy where every one starts aligned,
      // else 4 bytes, whose offsets need no alignment.
      int64_t threads = numWarps * kWarpSize;
      int64_t width = copyWidth(sources[operand], l, from.offsets[1]);
      for (int64_t i = 0; i < l.rows * l.cols / (threads * width); ++i) {
        AffineExpr e = (b.getAffineSymbolExpr(0) + i * threads) * width;
        Value r = apply(e.floorDiv(l.cols), {}, tid);
        Value c = apply(e % l.cols, {}, tid);
        Value srcRow = apply(b.getAffineDimExpr(0) + b.getAffineDimExpr(1),
                             {from.offsets[0], r}, {});
        Value srcCol = apply(b.getAffineDimExpr(0) + b.getAffineDimExpr(1),
                             {from.offsets[1], c}, {});
        copies.push_back(nvgpu::DeviceAsyncCopyOp::create(
            b, nvgpu::DeviceAsyncTokenType::get(b.getContext()), views[operand],
            ValueRange{r, c}, sources[operand], ValueRange{srcRow, srcCol},
            b.getIndexAttr(width), /*srcElements=*/Value(),
            /*bypassL1=*/width == kWideCopy ? b.getUnitAttr() : UnitAttr()));
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

} // namespace fwp
