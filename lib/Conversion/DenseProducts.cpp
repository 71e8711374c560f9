//===- DenseProducts.cpp - The dense layers' contractions, matched --------===//

#include "DenseProducts.h"

#include "fwp/Transforms/Kernels.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;

namespace fwp {

namespace {

/// Whether every buffer has the identity layout (so that its leading
/// dimensions collapse into rows) and `weight` a static shape.
bool plainBuffers(std::initializer_list<Value> buffers, Value weight) {
  for (Value v : buffers)
    if (!cast<MemRefType>(v.getType()).getLayout().isIdentity())
      return false;
  return cast<MemRefType>(weight.getType()).hasStaticShape();
}

} // namespace

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

std::optional<ColumnSum> matchColumnSum(linalg::GenericOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 1 ||
      op.getNumDpsInits() != 1 || op.getNumParallelLoops() != 1 ||
      op.getNumLoops() < 2 ||
      op.getIteratorTypesArray().front() != utils::IteratorType::parallel)
    return std::nullopt;
  MLIRContext *ctx = op.getContext();
  unsigned loops = op.getNumLoops();
  SmallVector<AffineExpr> rowsThenColumn;
  for (unsigned d = 1; d < loops; ++d)
    rowsThenColumn.push_back(getAffineDimExpr(d, ctx));
  rowsThenColumn.push_back(getAffineDimExpr(0, ctx));
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  if (maps[0] != AffineMap::get(loops, 0, rowsThenColumn, ctx) ||
      maps[1] != AffineMap::get(loops, 0, {getAffineDimExpr(0, ctx)}, ctx))
    return std::nullopt;
  // The body adds the element to the sum, in either order.
  Block &body = op.getRegion().front();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  auto add = yield.getValues()[0].getDefiningOp<arith::AddFOp>();
  if (!add || &body.front() != add.getOperation())
    return std::nullopt;
  llvm::SmallDenseSet<Value> operands = {add.getLhs(), add.getRhs()};
  if (operands !=
      llvm::SmallDenseSet<Value>{body.getArgument(0), body.getArgument(1)})
    return std::nullopt;
  ColumnSum c{op.getDpsInputs()[0], op.getDpsInits()[0], 0};
  auto sumsType = cast<MemRefType>(c.sums.getType());
  if (!plainBuffers({c.g}, c.sums) || !sumsType.getLayout().isIdentity())
    return std::nullopt;
  c.out = sumsType.getDimSize(0);
  return c;
}

namespace {

/// acc += lhs rhs with each operand read through its transposition where
/// asked: linalg.matmul with indexing maps.
linalg::LinalgOp permutedProduct(ImplicitLocOpBuilder &b, Value lhs, Value rhs,
                                 Value acc, bool lhsTransposed,
                                 bool rhsTransposed) {
  MLIRContext *ctx = b.getContext();
  AffineExpr m, n, k;
  bindDims(ctx, m, n, k);
  auto map = [&](AffineExpr x, AffineExpr y, bool transposed) {
    return AffineMapAttr::get(AffineMap::get(
        3, 0, transposed ? ArrayRef{y, x} : ArrayRef{x, y}, ctx));
  };
  return linalg::MatmulOp::create(
      b, ValueRange{lhs, rhs}, ValueRange{acc},
      {b.getNamedAttr("indexing_maps", b.getArrayAttr({map(m, k, lhsTransposed),
                                                       map(k, n, rhsTransposed),
                                                       map(m, n, false)}))});
}

} // namespace

linalg::LinalgOp transposedProduct(ImplicitLocOpBuilder &b, Value lhs,
                                   Value rhs, Value acc) {
  return permutedProduct(b, lhs, rhs, acc, /*lhsTransposed=*/true,
                         /*rhsTransposed=*/false);
}

linalg::LinalgOp product(ImplicitLocOpBuilder &b, Value lhs, Value rhs,
                         Value acc, bool rhsTransposed) {
  if (!rhsTransposed)
    return linalg::MatmulOp::create(b, ValueRange{lhs, rhs}, ValueRange{acc});
  return permutedProduct(b, lhs, rhs, acc, /*lhsTransposed=*/false,
                         /*rhsTransposed=*/true);
}

DenseLayers collectDenseLayers(Operation *root) {
  DenseLayers layers;
  root->walk([&](linalg::GenericOp op) {
    if (isInsideKernel(op))
      return;
    if (std::optional<DenseProduct> p = matchDenseProduct(op))
      layers.products.emplace_back(op, *p);
    else if (std::optional<WeightGradient> w = matchWeightGradient(op))
      layers.gradients.emplace_back(op, *w);
    else if (std::optional<ColumnSum> c = matchColumnSum(op))
      layers.columnSums.emplace_back(op, *c);
  });
  return layers;
}

int64_t largestBlockDividing(int64_t size, int64_t limit) {
  int64_t block = std::max<int64_t>(limit, 1);
  while (size % block)
    block /= 2;
  return block;
}

} // namespace fwp
