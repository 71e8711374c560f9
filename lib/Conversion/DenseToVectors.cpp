//===- DenseToVectors.cpp - The dense layers on the CPU's vector units ----===//
//
// The module's projections and output layer are contractions
// y[rows..., o] += x[rows..., i] W[o, i] over the T x B rows (nn.Linear's
// layout, W is [out, in]). Each becomes the register-blocked micro-kernel of
// the tile level: W is transposed once into a scratch buffer (so that a row
// of W^T is contiguous along o), the rows are taken 8 at a time as static
// 8 x in by in x out products, and the remaining rows one at a time, each
// product cut into register tiles and vectorized (VectorTiles.h). Each
// block accumulates in a stack buffer of its own, copied in and out; where
// y is filled right before the product (zeros, the output bias) the block
// starts from that instead of copying y's rows in, and an elementwise map
// right after it (the gate's sigmoid) is applied before the copy out, so
// neither is a pass over y of its own (DenseProducts.h, findEpilogues). The
// blocks of 8 rows are an scf.forall, run on every core. The input
// gradient dx = dy W is the same product with W already [in, out]. A
// weight gradient dW = dy^T x sums over the rows: up to 64 rows of dW a
// block (on every core; each block reads all of x), each summing 64 rows at
// a time with static products whose left operand is read transposed. The
// bias gradient (a column sum of dy) is interchanged so that its loops
// sweep dy by rows.
//
// Each block is a call to a tile function (TileFunctions.h), vectorized
// there: blocks of the same shapes share one, so that the projections of q,
// k and v (and in the backward their input and weight gradients) are
// compiled once, not three times over in the entry function.
//
//===----------------------------------------------------------------------===//

#include "fwp/Conversion/Passes.h"
#include "fwp/Transforms/Kernels.h"

#include "DenseProducts.h"
#include "TileFunctions.h"
#include "VectorTiles.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace fwp {
#define GEN_PASS_DEF_FWPDENSETOVECTORS
#include "fwp/Conversion/Passes.h.inc"
} // namespace fwp

using namespace mlir;

namespace fwp {
namespace {

/// Rows taken together by one product: the height of a register tile.
constexpr int64_t kRowBlock = 8;

/// The static [height, width] block of the rows [m0, m0 + height).
Value rowsOf(ImplicitLocOpBuilder &b, Value buffer, Value m0, int64_t height,
             int64_t width) {
  return blockOf(b, buffer, m0, arith::ConstantIndexOp::create(b, 0), height,
                 width);
}

/// y[m0 .. m0 + height) += x[m0 .. m0 + height) W^T, a static product. The
/// rows of y are accumulated in `acc`, a buffer of its own: accumulators
/// are only kept in registers across the k loop when the buffer they live
/// in is not a view (y is a view of the collapsed rows). `acc` starts from
/// y's rows, or from what y would have been initialised with (zeros, the
/// bias), and takes y's map (the sigmoid) before it is written back.
SmallVector<linalg::LinalgOp> rowBlock(ImplicitLocOpBuilder &b, Value x,
                                       Value wt, Value y, Value acc, Value m0,
                                       int64_t height, const DenseProduct &p,
                                       const TileEpilogues &epilogues) {
  Value out = rowsOf(b, y, m0, height, p.out);
  Value zero = arith::ConstantIndexOp::create(b, 0);
  SmallVector<linalg::LinalgOp> ops;
  if (epilogues.init)
    ops.push_back(onTile(b, epilogues.init, acc, m0, zero));
  else
    ops.push_back(linalg::CopyOp::create(b, ValueRange{out}, ValueRange{acc}));
  ops.push_back(linalg::MatmulOp::create(
      b, ValueRange{rowsOf(b, x, m0, height, p.in), wt}, ValueRange{acc}));
  if (epilogues.map)
    ops.push_back(onTile(b, epilogues.map, acc, m0, zero));
  ops.push_back(linalg::CopyOp::create(b, ValueRange{acc}, ValueRange{out}));
  return ops;
}

/// Rewrites the dense product `op` into static row blocks; returns their
/// operations.
SmallVector<linalg::LinalgOp> splitIntoRowBlocks(linalg::GenericOp op,
                                                 const DenseProduct &p) {
  TileEpilogues epilogues = findEpilogues(op, p.y);
  ImplicitLocOpBuilder b(op.getLoc(), op);
  Type elementType = cast<MemRefType>(p.w.getType()).getElementType();
  Value wt = p.w;
  if (!p.wIsTransposed) {
    wt =
        memref::AllocOp::create(b, MemRefType::get({p.in, p.out}, elementType));
    linalg::TransposeOp::create(b, p.w, wt, ArrayRef<int64_t>{1, 0});
  }
  // Outside the sequential loop: an alloca inside one would grow the stack
  // each time. (The parallel loop's body is an alloca scope of its own.)
  Value accRow =
      memref::AllocaOp::create(b, MemRefType::get({1, p.out}, elementType));
  Value x = collapseRows(b, p.x), y = collapseRows(b, p.y);
  Value rows = memref::DimOp::create(b, x, 0);
  Value one = arith::ConstantIndexOp::create(b, 1);
  Value blockRows = arith::ConstantIndexOp::create(b, kRowBlock);
  Value whole = arith::SubIOp::create(
      b, rows, arith::RemUIOp::create(b, rows, blockRows));
  SmallVector<linalg::LinalgOp> ops;
  // The blocks are independent: on every core, like the kernels.
  Value count = arith::DivUIOp::create(b, whole, blockRows);
  auto blocks = scf::ForallOp::create(b, ArrayRef<OpFoldResult>{count},
                                      ValueRange{}, std::nullopt);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(blocks.getBody()->getTerminator());
    Value m0 =
        arith::MulIOp::create(b, blocks.getInductionVars()[0], blockRows);
    Value acc = memref::AllocaOp::create(
        b, MemRefType::get({kRowBlock, p.out}, elementType));
    llvm::append_range(ops,
                       rowBlock(b, x, wt, y, acc, m0, kRowBlock, p, epilogues));
  }
  auto rest = scf::ForOp::create(b, whole, rows, one);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(rest.getBody()->getTerminator());
    llvm::append_range(ops, rowBlock(b, x, wt, y, accRow,
                                     rest.getInductionVar(), 1, p, epilogues));
  }
  if (!p.wIsTransposed)
    memref::DeallocOp::create(b, wt);
  eraseWithEpilogues(op, epilogues);
  return ops;
}

/// Rows of the sum taken together by one product of a weight gradient.
constexpr int64_t kSumBlock = 64;

/// Rows of dW a weight gradient's block takes at most, and the floats of
/// its accumulator at most (on the stack of an OpenMP thread).
constexpr int64_t kWeightGradientRows = 64;
constexpr int64_t kMaxAccumulatorFloats = 64 * 1024;

/// Rows of dW per block: every block reads all of x and its columns of g,
/// so tall blocks read x fewer times (8 rows a block read x 32 times at
/// d_model = 256, 2.5 times a projection's time); the accumulator stays in
/// L2. Register tiles need multiples of 8 rows, or all of a shorter dW.
int64_t weightGradientHeight(const WeightGradient &w) {
  if (w.out < kRowBlock)
    return w.out;
  if (w.out % kRowBlock)
    return 1;
  int64_t height = largestBlockDividing(w.out, kWeightGradientRows);
  while (height > kRowBlock && height * w.in > kMaxAccumulatorFloats)
    height /= 2;
  return height;
}

/// Rewrites the weight gradient `op` as blocks of rows of dW (an
/// scf.forall, on every core), each summing over the rows kSumBlock at a
/// time (then one at a time) with static products g_block^T x_block into
/// an accumulator of its own; returns the products and copies.
SmallVector<linalg::LinalgOp> splitWeightGradient(linalg::GenericOp op,
                                                  const WeightGradient &w) {
  ImplicitLocOpBuilder b(op.getLoc(), op);
  Type elementType = cast<MemRefType>(w.dw.getType()).getElementType();
  Value g = collapseRows(b, w.g), x = collapseRows(b, w.x);
  Value rows = memref::DimOp::create(b, x, 0);
  Value zero = arith::ConstantIndexOp::create(b, 0);
  Value one = arith::ConstantIndexOp::create(b, 1);
  Value sumBlock = arith::ConstantIndexOp::create(b, kSumBlock);
  Value whole =
      arith::SubIOp::create(b, rows, arith::RemUIOp::create(b, rows, sumBlock));
  int64_t height = weightGradientHeight(w);
  SmallVector<linalg::LinalgOp> ops;
  auto blocks = scf::ForallOp::create(
      b, ArrayRef<OpFoldResult>{b.getIndexAttr(w.out / height)}, ValueRange{},
      std::nullopt);
  b.setInsertionPoint(blocks.getBody()->getTerminator());
  Value o0 = arith::MulIOp::create(b, blocks.getInductionVars()[0],
                                   arith::ConstantIndexOp::create(b, height));
  Value acc =
      memref::AllocaOp::create(b, MemRefType::get({height, w.in}, elementType));
  Value out = blockOf(b, w.dw, o0, zero, height, w.in);
  ops.push_back(linalg::CopyOp::create(b, ValueRange{out}, ValueRange{acc}));
  auto sum = scf::ForOp::create(b, zero, whole, sumBlock);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(sum.getBody()->getTerminator());
    Value r0 = sum.getInductionVar();
    ops.push_back(transposedProduct(b, blockOf(b, g, r0, o0, kSumBlock, height),
                                    blockOf(b, x, r0, zero, kSumBlock, w.in),
                                    acc));
  }
  auto rest = scf::ForOp::create(b, whole, rows, one);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(rest.getBody()->getTerminator());
    Value r = rest.getInductionVar();
    ops.push_back(transposedProduct(b, blockOf(b, g, r, o0, 1, height),
                                    blockOf(b, x, r, zero, 1, w.in), acc));
  }
  ops.push_back(linalg::CopyOp::create(b, ValueRange{acc}, ValueRange{out}));
  op.erase();
  return ops;
}

/// Puts a column sum's o innermost: as loops it then adds each row of g to
/// the sums in one contiguous, vectorisable sweep, instead of striding down
/// each column of g in turn.
LogicalResult sumRowsInOrder(RewriterBase &rewriter, linalg::GenericOp op) {
  SmallVector<unsigned> order;
  for (unsigned d = 1; d < op.getNumLoops(); ++d)
    order.push_back(d);
  order.push_back(0);
  rewriter.setInsertionPoint(op);
  return linalg::interchangeGenericOp(rewriter, op, order);
}

struct DenseToVectorsPass : impl::FwpDenseToVectorsBase<DenseToVectorsPass> {
  using FwpDenseToVectorsBase::FwpDenseToVectorsBase;

  LogicalResult initialize(MLIRContext *ctx) override {
    lowering = std::make_shared<VectorLowering>(ctx);
    return success();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    IRRewriter rewriter(&getContext());
    SmallVector<linalg::LinalgOp> blocks;
    for (auto fn : module.getOps<func::FuncOp>()) {
      if (fn.isExternal() || fn->hasAttr(kKernelAttrName))
        continue;
      DenseLayers layers = collectDenseLayers(fn);
      for (auto &[op, p] : layers.products)
        llvm::append_range(blocks, splitIntoRowBlocks(op, p));
      for (auto &[op, w] : layers.gradients)
        llvm::append_range(blocks, splitWeightGradient(op, w));
      for (auto &[op, c] : layers.columnSums)
        if (failed(sumRowsInOrder(rewriter, op)))
          return signalPassFailure();
    }
    TileFunctions functions(module);
    auto layer = StringAttr::get(&getContext(), "dense");
    for (linalg::LinalgOp block : blocks) {
      auto [fn, made] = functions.outline(block, layer);
      if (!made)
        continue;
      // The tile, after the constants cloned into the function.
      linalg::LinalgOp tile = *fn.front().getOps<linalg::LinalgOp>().begin();
      if (failed(
              tileAndVectorize(rewriter, tile, {registerRows, registerCols})) ||
          failed(lowerVectors(fn, *lowering)))
        return signalPassFailure();
    }
  }

  std::shared_ptr<VectorLowering> lowering;
};

} // namespace
} // namespace fwp
