//===- DenseProducts.cpp - The dense layers' contractions, matched --------===//

#include "DenseProducts.h"

#include "fwp/Transforms/Kernels.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

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

Value pieceOf(ImplicitLocOpBuilder &b, Value buffer, Value c0, int64_t width) {
  SmallVector<OpFoldResult> offsets = {c0}, sizes = {b.getIndexAttr(width)},
                            strides = {b.getIndexAttr(1)};
  return memref::SubViewOp::create(b, buffer, offsets, sizes, strides);
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
    // A dense layer runs once per call, at the function's top level. A
    // contraction inside a loop (the chunk stages' tiles) is not one: its
    // right operand may change from one iteration to the next, and the
    // rewrites lay W out once.
    if (isInsideKernel(op) || op->getParentOfType<LoopLikeOpInterface>())
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

SmallVector<Value> aliasesOf(Value value) {
  while (auto view = value.getDefiningOp<ViewLikeOpInterface>())
    value = view.getViewSource();
  SmallVector<Value> aliases = {value};
  for (size_t i = 0; i < aliases.size(); ++i)
    for (Operation *user : aliases[i].getUsers())
      if (auto view = dyn_cast<ViewLikeOpInterface>(user))
        if (view.getViewSource() == aliases[i])
          aliases.push_back(view->getResult(0));
  return aliases;
}

SmallVector<Operation *> usersInBlock(Value buffer, Block *block) {
  SmallVector<Operation *> users;
  for (Value alias : aliasesOf(buffer))
    for (Operation *user : alias.getUsers()) {
      Operation *inBlock = block->findAncestorOpInBlock(*user);
      if (inBlock && !isa<ViewLikeOpInterface>(inBlock) &&
          !isMemoryEffectFree(inBlock))
        users.push_back(inBlock);
    }
  return users;
}

Operation *nearestUser(Operation *op, Value buffer, bool before) {
  Operation *nearest = nullptr;
  for (Operation *user : usersInBlock(buffer, op->getBlock())) {
    if (user == op || user->isBeforeInBlock(op) != before)
      continue;
    if (!nearest || user->isBeforeInBlock(nearest) != before)
      nearest = user;
  }
  return nearest;
}

namespace {

/// Whether `op` is elementwise on `out` [rows..., n], which it writes
/// whole: every loop parallel, `out` its one init with the identity map,
/// each input either a vector along n (broadcast over the rows) or of
/// out's shape with the identity layout, none of them sharing out's memory.
bool isElementwiseOn(linalg::GenericOp op, Value out) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInits() != 1 ||
      op.getDpsInits()[0] != out ||
      op.getNumParallelLoops() != op.getNumLoops() ||
      !cast<MemRefType>(out.getType()).getLayout().isIdentity())
    return false;
  unsigned rank = op.getNumLoops();
  AffineMap lastDim =
      AffineMap::get(rank, 0, getAffineDimExpr(rank - 1, op.getContext()));
  SmallVector<Value> outAliases = aliasesOf(out);
  for (OpOperand *input : op.getDpsInputOperands()) {
    AffineMap map = op.getMatchingIndexingMap(input);
    auto type = cast<MemRefType>(input->get().getType());
    if (llvm::is_contained(outAliases, input->get()) ||
        !(map == lastDim ||
          (map.isIdentity() && type.getLayout().isIdentity())))
      return false;
  }
  return op.getMatchingIndexingMap(op.getDpsInitOperand(0)).isIdentity();
}

/// Whether `moved`, an operation of `op`'s block, can run at `op` instead:
/// nothing between the two touches what it reads.
bool inputsStillAt(Operation *moved, Operation *op) {
  bool before = moved->isBeforeInBlock(op);
  for (Value input : cast<linalg::LinalgOp>(moved).getDpsInputs())
    if (isa<MemRefType>(input.getType()) &&
        nearestUser(op, input, before) != moved)
      return false;
  return true;
}

} // namespace

TileEpilogues findEpilogues(Operation *op, Value out) {
  TileEpilogues found;
  Operation *before = nearestUser(op, out, /*before=*/true);
  if (auto fill = dyn_cast_or_null<linalg::FillOp>(before)) {
    if (fill.hasPureBufferSemantics() && fill.getDpsInits()[0] == out)
      found.init = fill;
  } else if (auto generic = dyn_cast_or_null<linalg::GenericOp>(before)) {
    if (isElementwiseOn(generic, out) && inputsStillAt(generic, op))
      found.init = generic;
  }
  auto after = dyn_cast_or_null<linalg::GenericOp>(nearestUser(op, out, false));
  if (after && isElementwiseOn(after, out) && inputsStillAt(after, op))
    found.map = after;
  return found;
}

linalg::LinalgOp onTile(ImplicitLocOpBuilder &b, Operation *op, Value tile,
                        Value r0, Value c0) {
  auto tileType = cast<MemRefType>(tile.getType());
  int64_t height = tileType.getDimSize(0), width = tileType.getDimSize(1);
  if (auto fill = dyn_cast<linalg::FillOp>(op))
    return linalg::FillOp::create(b, fill.getInputs(), ValueRange{tile});
  auto generic = cast<linalg::GenericOp>(op);
  MLIRContext *ctx = b.getContext();
  AffineMap identity = AffineMap::getMultiDimIdentityMap(2, ctx);
  AffineMap columns = AffineMap::get(2, 0, getAffineDimExpr(1, ctx), ctx);
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  for (OpOperand *input : generic.getDpsInputOperands()) {
    if (generic.getMatchingIndexingMap(input).isIdentity()) {
      Value input2d = collapseRows(b, input->get());
      inputs.push_back(blockOf(b, input2d, r0, c0, height, width));
      maps.push_back(identity);
      continue;
    }
    inputs.push_back(pieceOf(b, input->get(), c0, width));
    maps.push_back(columns);
  }
  maps.push_back(identity);
  SmallVector<utils::IteratorType> parallel(2, utils::IteratorType::parallel);
  auto mapped = linalg::GenericOp::create(b, TypeRange{}, inputs,
                                          ValueRange{tile}, maps, parallel);
  IRMapping mapping;
  generic.getRegion().cloneInto(&mapped.getRegion(), mapping);
  return mapped;
}

void eraseWithEpilogues(Operation *op, const TileEpilogues &epilogues) {
  op->erase();
  if (epilogues.init)
    epilogues.init->erase();
  if (epilogues.map)
    epilogues.map->erase();
}

int64_t largestBlockDividing(int64_t size, int64_t limit) {
  int64_t block = std::max<int64_t>(limit, 1);
  while (size % block)
    block /= 2;
  return block;
}

} // namespace fwp
