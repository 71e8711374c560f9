//===- TilesToVectors.cpp - The tile level on the CPU's vector units ------===//
//
// Each tile operation inside an fwp kernel is cut into register tiles and
// vectorized; the vectors are then lowered to what LLVM maps onto the
// host's vector instructions. Products become the classic register-blocked
// micro-kernel: an M x N block of accumulators (fwp/RegisterTile.h: half
// the vector registers) kept in registers across the k loop, each k step an
// outer product (broadcasts of the left column times loads of the right row).
// Elementwise tiles (masks, maps, fills, copies) become one vector per row.
// VectorTiles.h does the work.
//
// A product that reads its right operand transposed (C += A B^T) would load
// a column of B, one scalar per accumulator column, at every k step, and
// again for every block of rows: it first transposes B into a tile on the
// stack, read by rows.
//
//===----------------------------------------------------------------------===//

#include "fwp/Conversion/Passes.h"
#include "fwp/Transforms/Kernels.h"

#include "VectorTiles.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace fwp {
#define GEN_PASS_DEF_FWPTILESTOVECTORS
#include "fwp/Conversion/Passes.h.inc"
} // namespace fwp

using namespace mlir;

namespace fwp {
namespace {

/// Largest right operand transposed onto the stack: a chunk's tiles (64 x
/// 128 floats) are 32 KiB.
constexpr int64_t kMaxTransposedBytes = 64 * 1024;

/// Whether `op` is C += A B^T with static shapes, more rows than one
/// register block (so B's columns would be read more than once) and B small
/// enough for the stack.
bool readsRightOperandTransposed(linalg::MatmulOp op, RegisterTile tile) {
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  MLIRContext *ctx = op.getContext();
  AffineMap transposedRhs = AffineMap::get(
      3, 0, {getAffineDimExpr(1, ctx), getAffineDimExpr(2, ctx)}, ctx);
  auto rhsType = dyn_cast<MemRefType>(op.getDpsInputs()[1].getType());
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (maps[1] != transposedRhs || !rhsType || !rhsType.hasStaticShape() ||
      ShapedType::isDynamicShape(ranges) || ranges[0] <= tile.rows)
    return false;
  int64_t bytes = rhsType.getNumElements() *
                  rhsType.getElementType().getIntOrFloatBitWidth() / 8;
  return bytes <= kMaxTransposedBytes;
}

/// Rewrites C += A B^T as B^T copied into a stack tile, then C += A (B^T):
/// the product and the transpose, for tileAndVectorize.
SmallVector<linalg::LinalgOp> transposeRightOperand(RewriterBase &rewriter,
                                                    linalg::MatmulOp op) {
  Location loc = op.getLoc();
  Value lhs = op.getDpsInputs()[0], rhs = op.getDpsInputs()[1];
  Value acc = op.getDpsInits()[0];
  auto rhsType = cast<MemRefType>(rhs.getType());
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  MLIRContext *ctx = op.getContext();
  maps[1] = AffineMap::get(
      3, 0, {getAffineDimExpr(2, ctx), getAffineDimExpr(1, ctx)}, ctx);

  rewriter.setInsertionPoint(op);
  // The scope frees the tile when the product is done, also inside loops.
  auto scope = memref::AllocaScopeOp::create(rewriter, loc, TypeRange{});
  rewriter.createBlock(&scope.getBodyRegion());
  auto scratchType = MemRefType::get(
      {rhsType.getDimSize(1), rhsType.getDimSize(0)}, rhsType.getElementType());
  Value scratch = memref::AllocaOp::create(rewriter, loc, scratchType,
                                           rewriter.getI64IntegerAttr(64));
  auto transpose = linalg::TransposeOp::create(rewriter, loc, rhs, scratch,
                                               ArrayRef<int64_t>{1, 0});
  SmallVector<Attribute> mapAttrs;
  for (AffineMap map : maps)
    mapAttrs.push_back(AffineMapAttr::get(map));
  auto product = linalg::MatmulOp::create(
      rewriter, loc, TypeRange{}, ValueRange{lhs, scratch}, ValueRange{acc},
      {rewriter.getNamedAttr("indexing_maps",
                             rewriter.getArrayAttr(mapAttrs))});
  memref::AllocaScopeReturnOp::create(rewriter, loc);
  rewriter.eraseOp(op);
  return {cast<linalg::LinalgOp>(transpose.getOperation()),
          cast<linalg::LinalgOp>(product.getOperation())};
}

struct TilesToVectorsPass : impl::FwpTilesToVectorsBase<TilesToVectorsPass> {
  using FwpTilesToVectorsBase::FwpTilesToVectorsBase;

  LogicalResult initialize(MLIRContext *ctx) override {
    lowering = std::make_shared<VectorLowering>(ctx);
    return success();
  }

  void runOnOperation() override {
    Operation *root = getOperation();
    MLIRContext *ctx = &getContext();
    SmallVector<linalg::LinalgOp> tiles;
    root->walk([&](linalg::LinalgOp op) {
      if (isInsideKernel(op))
        tiles.push_back(op);
    });
    IRRewriter rewriter(ctx);
    for (linalg::LinalgOp op : tiles) {
      if (!op.hasPureBufferSemantics()) {
        op.emitOpError("fwp-tiles-to-vectors expects tiles of buffers");
        return signalPassFailure();
      }
      RegisterTile tile{registerRows, registerCols};
      SmallVector<linalg::LinalgOp> parts = {op};
      auto product = dyn_cast<linalg::MatmulOp>(op.getOperation());
      if (product && readsRightOperandTransposed(product, tile))
        parts = transposeRightOperand(rewriter, product);
      for (linalg::LinalgOp part : parts)
        if (failed(tileAndVectorize(rewriter, part, tile)))
          return signalPassFailure();
    }

    if (failed(lowerVectors(root, *lowering)))
      return signalPassFailure();
  }

  std::shared_ptr<VectorLowering> lowering;
};

} // namespace
} // namespace fwp
