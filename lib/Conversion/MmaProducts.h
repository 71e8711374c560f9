//===- MmaProducts.h - Tile products dealt to warps' tensor cores -*- C++
//-*-===//
//
// Internal to fwp-products-to-mma: how one linalg.matmul of a kernel becomes
// warp-level tensor-core code (MmaProducts.cpp), and the MMA families its
// steps are issued in (MmaTf32.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef FWP_LIB_CONVERSION_MMAPRODUCTS_H
#define FWP_LIB_CONVERSION_MMAPRODUCTS_H

#include "WorkgroupMemory.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace fwp {

using mlir::AffineExpr;
using mlir::AffineMap;
using mlir::ArrayRef;
using mlir::ImplicitLocOpBuilder;
using mlir::Operation;
using mlir::SmallVector;
using mlir::Value;
using mlir::ValueRange;
namespace affine = mlir::affine;
namespace arith = mlir::arith;
namespace gpu = mlir::gpu;
namespace linalg = mlir::linalg;
namespace vector = mlir::vector;

/// The tensor cores' step for f32 (tf32) operands: m16n8k8.
constexpr int64_t kMmaM = 16, kMmaN = 8, kMmaK = 8;
constexpr int64_t kMmaShape[] = {kMmaM, kMmaN, kMmaK};
constexpr int64_t kWarpSize = 32;
/// Columns of a warp tile at most: four accumulators of 16 x 8.
constexpr int64_t kWarpTileCols = 32;
/// Steps of k staged in shared memory at a time. (The floats a kernel may
/// stage are its configuration's stage_floats, less what its local tiles
/// leave of the 48 KiB a block has without opting in.)
constexpr int64_t kStageDepth = 32;
/// Floats of a wide cp.async: 16 bytes, the most one copies.
constexpr int64_t kWideCopy = 4;
/// Warp tiles a warp keeps at once, at most (16 accumulator registers
/// each); a wider product is split into column pieces (splitWideProduct),
/// each staging its own operand windows. One, because the registers go
/// elsewhere: each thread's cp.async copies keep their addresses in
/// registers across the k blocks (32-bit index arithmetic without overflow
/// flags does not fold into immediate offsets), and at two tiles a warp the
/// delta rule's scan_chunk_grad spilled at d_k = 64, C = 64.
constexpr int64_t kMaxTilesPerWarp = 1;

/// Whether `op`'s tiles fit the tensor cores: f32 buffers, 2-D permuted
/// operands, a static shape that divides into 16 x 8 x 8 steps. Others stay
/// on the CUDA cores.
bool fitsTensorCores(linalg::MatmulOp op);
/// Columns of a warp tile for a product `cols` wide: 32, or fewer where 32
/// does not divide it.
int64_t warpTileCols(int64_t cols);
/// Whether `op` starts from zero (TileBuilder::product without
/// accumulating): the fill before it, or null.
linalg::FillOp zeroFillBefore(linalg::MatmulOp op);
/// Splits `op` into products on column pieces of its output narrow enough
/// that no warp keeps more than kMaxTilesPerWarp tiles.
SmallVector<linalg::MatmulOp> splitWideProduct(linalg::MatmulOp op,
                                               int64_t numWarps);

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
  /// Elements per cp.async of an operand staged from `source` into
  /// `layout`, whose window starts at column `colOffset`: kWideCopy where
  /// every copy's source and destination are 16-byte aligned, else 1.
  int64_t copyWidth(Value source, const StagedLayout &layout,
                    Value colOffset) const;

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

/// f32 MMA -> tf32 MMAs: one of the rounded operands, or three that also
/// carry the rounding errors (MmaTf32.cpp).
void splitIntoTf32(mlir::nvgpu::MmaSyncOp mma, bool threePass);

} // namespace fwp

#endif // FWP_LIB_CONVERSION_MMAPRODUCTS_H
