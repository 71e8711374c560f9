//===- LowerTiles.cpp - The tile level's operations as loops --------------===//
//
// The reference lowering of TileBuilder.h's operations, shared by both
// backends: a product keeps its dot products in registers (one scf.for with
// an accumulator per output element) and touches the output once; every
// other tile operation becomes the scf.parallel loop upstream linalg makes.
//
//===----------------------------------------------------------------------===//

#include "fwp/Transforms/Kernels.h"
#include "fwp/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/PatternMatch.h"

namespace fwp {
#define GEN_PASS_DEF_FWPLOWERTILES
#include "fwp/Transforms/Passes.h.inc"
} // namespace fwp

using namespace mlir;

namespace fwp {
namespace {

constexpr auto kSumFlags =
    arith::FastMathFlags::reassoc | arith::FastMathFlags::contract;

/// The loop variables an operand's indexing map picks, in its order. The
/// tile products' maps are projected permutations of (m, n, k).
SmallVector<Value> pick(AffineMap map, ArrayRef<Value> ivs) {
  SmallVector<Value> indices;
  for (AffineExpr expr : map.getResults())
    indices.push_back(ivs[cast<AffineDimExpr>(expr).getPosition()]);
  return indices;
}

/// out[m, n] += sum_k lhs[..] * rhs[..]: a parallel loop over the output,
/// each point summing in a register.
LogicalResult lowerProduct(linalg::MatmulOp op) {
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  if (!llvm::all_of(maps,
                    [](AffineMap m) { return m.isProjectedPermutation(); }))
    return op.emitOpError("fwp-lower-tiles expects permuted indexing maps");
  Value lhs = op.getDpsInputs()[0], rhs = op.getDpsInputs()[1];
  Value out = op.getDpsInits()[0];
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (ShapedType::isDynamicShape(ranges))
    return op.emitOpError("fwp-lower-tiles expects static tiles");

  ImplicitLocOpBuilder b(op.getLoc(), op);
  Value zero = arith::ConstantIndexOp::create(b, 0);
  Value one = arith::ConstantIndexOp::create(b, 1);
  auto bound = [&](int64_t n) { return arith::ConstantIndexOp::create(b, n); };
  Type elementType = cast<MemRefType>(out.getType()).getElementType();
  Value fzero = arith::ConstantOp::create(b, b.getFloatAttr(elementType, 0.0));
  auto loop = scf::ParallelOp::create(
      b, ValueRange{zero, zero}, ValueRange{bound(ranges[0]), bound(ranges[1])},
      ValueRange{one, one});
  b.setInsertionPoint(loop.getBody()->getTerminator());
  Value m = loop.getInductionVars()[0], n = loop.getInductionVars()[1];
  auto sum =
      scf::ForOp::create(b, zero, bound(ranges[2]), one, ValueRange{fzero});
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(sum.getBody());
    SmallVector<Value> ivs = {m, n, sum.getInductionVar()};
    Value x = memref::LoadOp::create(b, lhs, pick(maps[0], ivs));
    Value y = memref::LoadOp::create(b, rhs, pick(maps[1], ivs));
    Value xy = arith::MulFOp::create(b, x, y, kSumFlags);
    Value acc =
        arith::AddFOp::create(b, sum.getRegionIterArgs()[0], xy, kSumFlags);
    scf::YieldOp::create(b, acc);
  }
  SmallVector<Value> outIndices = pick(maps[2], {m, n, zero});
  Value old = memref::LoadOp::create(b, out, outIndices);
  Value updated = arith::AddFOp::create(b, old, sum.getResult(0), kSumFlags);
  memref::StoreOp::create(b, updated, out, outIndices);
  op.erase();
  return success();
}

struct LowerTilesPass : impl::FwpLowerTilesBase<LowerTilesPass> {
  void runOnOperation() override {
    SmallVector<linalg::LinalgOp> tiles;
    getOperation()->walk([&](linalg::LinalgOp op) {
      if (isInsideKernel(op))
        tiles.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::LinalgOp op : tiles) {
      if (!op.hasPureBufferSemantics()) {
        op.emitOpError("fwp-lower-tiles expects tiles of buffers");
        return signalPassFailure();
      }
      if (auto product = dyn_cast<linalg::MatmulOp>(op.getOperation())) {
        if (failed(lowerProduct(product)))
          return signalPassFailure();
        continue;
      }
      rewriter.setInsertionPoint(op);
      if (failed(linalg::linalgOpToParallelLoops(rewriter, op))) {
        op.emitOpError("fwp-lower-tiles cannot lower this tile operation");
        return signalPassFailure();
      }
      rewriter.eraseOp(op);
    }
  }
};

} // namespace
} // namespace fwp
