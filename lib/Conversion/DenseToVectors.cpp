//===- DenseToVectors.cpp - The dense layers on the CPU's vector units ----===//
//
// The module's projections and output layer are contractions
// y[rows..., o] += x[rows..., i] W[o, i] over the T x B rows (nn.Linear's
// layout, W is [out, in]). Each becomes the register-blocked micro-kernel of
// the tile level: W is transposed once into a scratch buffer (so that a row
// of W^T is contiguous along o), the rows are taken 8 at a time as static
// 8 x in by in x out products, and the remaining rows one at a time, each
// product cut into register tiles and vectorized (VectorTiles.h). Each
// block accumulates in a stack buffer of its own, copied in and out. The
// blocks of 8 rows are an scf.forall, run on every core. The input
// gradient dx = dy W is the same product with W already [in, out]. A
// weight gradient dW = dy^T x sums over the rows: 8 rows of dW a block (on
// every core), each summing 64 rows at a time with static products whose
// left operand is read transposed.
//
//===----------------------------------------------------------------------===//

#include "fwp/Conversion/Passes.h"
#include "fwp/Transforms/Kernels.h"

#include "VectorTiles.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
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

/// The operands of y[rows..., o] += x[rows..., i] W[o, i], if `op` is one:
/// rows and o parallel, i the one reduction, every buffer with the identity
/// layout (so the rows collapse into one dimension), o and i static.
struct DenseProduct {
  Value x, w, y;
  int64_t in, out;
  /// W is stored [in, out] (the input gradient dx = dy W reads nn.Linear's
  /// W that way): no transposed copy is needed.
  bool wIsTransposed = false;
};

/// Whether every buffer has the identity layout (so that its leading
/// dimensions collapse into rows) and `weight` a static shape.
bool plainBuffers(std::initializer_list<Value> buffers, Value weight) {
  for (Value v : buffers)
    if (!cast<MemRefType>(v.getType()).getLayout().isIdentity())
      return false;
  return cast<MemRefType>(weight.getType()).hasStaticShape();
}

std::optional<DenseProduct> matchDenseProduct(linalg::GenericOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 2 ||
      op.getNumDpsInits() != 1 || !linalg::isaContractionOpInterface(op))
    return std::nullopt;
  unsigned loops = op.getNumLoops();
  if (loops < 3 || op.getNumReductionLoops() != 1 ||
      op.getIteratorTypesArray().back() != utils::IteratorType::reduction)
    return std::nullopt;
  MLIRContext *ctx = op.getContext();
  auto dims = [&](ArrayRef<unsigned> positions) {
    SmallVector<AffineExpr> exprs;
    for (unsigned p : positions)
      exprs.push_back(getAffineDimExpr(p, ctx));
    return AffineMap::get(loops, 0, exprs, ctx);
  };
  SmallVector<unsigned> rows;
  for (unsigned d = 0; d + 2 < loops; ++d)
    rows.push_back(d);
  SmallVector<unsigned> xDims = rows, yDims = rows;
  xDims.push_back(loops - 1);
  yDims.push_back(loops - 2);
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  bool transposed = maps[1] == dims({loops - 1, loops - 2});
  if (maps[0] != dims(xDims) ||
      (!transposed && maps[1] != dims({loops - 2, loops - 1})) ||
      maps[2] != dims(yDims))
    return std::nullopt;
  DenseProduct p{op.getDpsInputs()[0],
                 op.getDpsInputs()[1],
                 op.getDpsInits()[0],
                 0,
                 0,
                 transposed};
  if (!plainBuffers({p.x, p.w, p.y}, p.w))
    return std::nullopt;
  auto wType = cast<MemRefType>(p.w.getType());
  p.out = wType.getDimSize(transposed ? 1 : 0);
  p.in = wType.getDimSize(transposed ? 0 : 1);
  return p;
}

/// [rows..., n] -> [prod(rows), n].
Value collapseRows(ImplicitLocOpBuilder &b, Value buffer) {
  auto type = cast<MemRefType>(buffer.getType());
  ReassociationIndices rows;
  for (int64_t d = 0; d + 1 < type.getRank(); ++d)
    rows.push_back(d);
  SmallVector<ReassociationIndices> groups = {rows, {type.getRank() - 1}};
  return memref::CollapseShapeOp::create(b, buffer, groups);
}

/// The static [height, width] block of a 2-D buffer at (r0, c0).
Value blockOf(ImplicitLocOpBuilder &b, Value buffer, Value r0, Value c0,
              int64_t height, int64_t width) {
  SmallVector<OpFoldResult> offsets = {r0, c0};
  SmallVector<OpFoldResult> sizes = {b.getIndexAttr(height),
                                     b.getIndexAttr(width)};
  SmallVector<OpFoldResult> strides = {b.getIndexAttr(1), b.getIndexAttr(1)};
  return memref::SubViewOp::create(b, buffer, offsets, sizes, strides);
}

/// The static [height, width] block of the rows [m0, m0 + height).
Value rowsOf(ImplicitLocOpBuilder &b, Value buffer, Value m0, int64_t height,
             int64_t width) {
  return blockOf(b, buffer, m0, arith::ConstantIndexOp::create(b, 0), height,
                 width);
}

/// y[m0 .. m0 + height) += x[m0 .. m0 + height) W^T, a static product. The
/// rows of y are accumulated in `acc`, a buffer of its own: accumulators
/// are only kept in registers across the k loop when the buffer they live
/// in is not a view (y is a view of the collapsed rows).
SmallVector<linalg::LinalgOp> rowBlock(ImplicitLocOpBuilder &b, Value x,
                                       Value wt, Value y, Value acc, Value m0,
                                       int64_t height, const DenseProduct &p) {
  Value out = rowsOf(b, y, m0, height, p.out);
  auto in = linalg::CopyOp::create(b, ValueRange{out}, ValueRange{acc});
  auto product = linalg::MatmulOp::create(
      b, ValueRange{rowsOf(b, x, m0, height, p.in), wt}, ValueRange{acc});
  auto back = linalg::CopyOp::create(b, ValueRange{acc}, ValueRange{out});
  return {in, product, back};
}

/// Rewrites the dense product `op` into static row blocks; returns their
/// operations.
SmallVector<linalg::LinalgOp> splitIntoRowBlocks(linalg::GenericOp op,
                                                 const DenseProduct &p) {
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
    llvm::append_range(ops, rowBlock(b, x, wt, y, acc, m0, kRowBlock, p));
  }
  auto rest = scf::ForOp::create(b, whole, rows, one);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(rest.getBody()->getTerminator());
    llvm::append_range(
        ops, rowBlock(b, x, wt, y, accRow, rest.getInductionVar(), 1, p));
  }
  if (!p.wIsTransposed)
    memref::DeallocOp::create(b, wt);
  op.erase();
  return ops;
}

/// dW[o, i] += sum over the rows of g[rows..., o] x[rows..., i]: a dense
/// layer's weight gradient, if `op` is one (g, x with the identity layout,
/// dW static).
struct WeightGradient {
  Value g, x, dw;
  int64_t out, in;
};

std::optional<WeightGradient> matchWeightGradient(linalg::GenericOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 2 ||
      op.getNumDpsInits() != 1 || !linalg::isaContractionOpInterface(op))
    return std::nullopt;
  unsigned loops = op.getNumLoops();
  if (loops < 3 || op.getNumParallelLoops() != 2)
    return std::nullopt;
  MLIRContext *ctx = op.getContext();
  auto rowsAnd = [&](unsigned last) {
    SmallVector<AffineExpr> exprs;
    for (unsigned d = 2; d < loops; ++d)
      exprs.push_back(getAffineDimExpr(d, ctx));
    exprs.push_back(getAffineDimExpr(last, ctx));
    return AffineMap::get(loops, 0, exprs, ctx);
  };
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  AffineMap outMap = AffineMap::get(
      loops, 0, {getAffineDimExpr(0, ctx), getAffineDimExpr(1, ctx)}, ctx);
  if (maps[0] != rowsAnd(0) || maps[1] != rowsAnd(1) || maps[2] != outMap)
    return std::nullopt;
  WeightGradient w{op.getDpsInputs()[0], op.getDpsInputs()[1],
                   op.getDpsInits()[0], 0, 0};
  if (!plainBuffers({w.g, w.x, w.dw}, w.dw))
    return std::nullopt;
  auto type = cast<MemRefType>(w.dw.getType());
  w.out = type.getDimSize(0);
  w.in = type.getDimSize(1);
  return w;
}

/// acc += lhs^T rhs: lhs [k, m] read transposed, rhs [k, n].
linalg::LinalgOp transposedProduct(ImplicitLocOpBuilder &b, Value lhs,
                                   Value rhs, Value acc) {
  MLIRContext *ctx = b.getContext();
  AffineExpr m, n, k;
  bindDims(ctx, m, n, k);
  auto map = [&](AffineExpr x, AffineExpr y) {
    return AffineMapAttr::get(AffineMap::get(3, 0, {x, y}, ctx));
  };
  return linalg::MatmulOp::create(
      b, ValueRange{lhs, rhs}, ValueRange{acc},
      {b.getNamedAttr("indexing_maps",
                      b.getArrayAttr({map(k, m), map(k, n), map(m, n)}))});
}

/// Rows of the sum taken together by one product of a weight gradient.
constexpr int64_t kSumBlock = 64;

/// Rewrites the weight gradient `op` as blocks of kRowBlock rows of dW (an
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
  int64_t height = w.out % kRowBlock == 0 ? kRowBlock : 1;
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

struct DenseToVectorsPass : impl::FwpDenseToVectorsBase<DenseToVectorsPass> {
  void runOnOperation() override {
    SmallVector<std::pair<linalg::GenericOp, DenseProduct>> dense;
    SmallVector<std::pair<linalg::GenericOp, WeightGradient>> gradients;
    getOperation()->walk([&](linalg::GenericOp op) {
      if (isInsideKernel(op))
        return;
      if (std::optional<DenseProduct> p = matchDenseProduct(op))
        dense.emplace_back(op, *p);
      else if (std::optional<WeightGradient> w = matchWeightGradient(op))
        gradients.emplace_back(op, *w);
    });
    SmallVector<linalg::LinalgOp> blocks;
    for (auto &[op, p] : dense)
      llvm::append_range(blocks, splitIntoRowBlocks(op, p));
    for (auto &[op, w] : gradients)
      llvm::append_range(blocks, splitWeightGradient(op, w));
    IRRewriter rewriter(&getContext());
    for (linalg::LinalgOp block : blocks)
      if (failed(tileAndVectorize(rewriter, block)))
        return signalPassFailure();
    if (!blocks.empty() && failed(lowerVectors(getOperation())))
      return signalPassFailure();
  }
};

} // namespace
} // namespace fwp
