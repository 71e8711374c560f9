//===- IndexEvaluator.cpp - Index arithmetic for one thread ---------------===//

#include "IndexEvaluator.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;

namespace fwp {

IndexForm IndexForm::of(int64_t value, bool variesByThread) {
  IndexForm form;
  form.known = true;
  form.variesByThread = variesByThread;
  form.constant = value;
  return form;
}

IndexForm IndexForm::symbol(Value value) {
  IndexForm form;
  form.known = true;
  form.terms.push_back({value, 1});
  return form;
}

IndexForm scaled(IndexForm form, int64_t factor) {
  if (!form.known)
    return form;
  if (factor == 0)
    return IndexForm::of(0);
  form.constant *= factor;
  for (auto &term : form.terms)
    term.second *= factor;
  return form;
}

IndexForm sum(const IndexForm &lhs, const IndexForm &rhs) {
  if (!lhs.known || !rhs.known)
    return IndexForm::unknown();
  IndexForm form = IndexForm::of(lhs.constant + rhs.constant,
                                 lhs.variesByThread || rhs.variesByThread);
  auto less = [](Value a, Value b) {
    return a.getAsOpaquePointer() < b.getAsOpaquePointer();
  };
  auto l = lhs.terms.begin(), r = rhs.terms.begin();
  while (l != lhs.terms.end() || r != rhs.terms.end()) {
    std::pair<Value, int64_t> term;
    if (r == rhs.terms.end() ||
        (l != lhs.terms.end() && less(l->first, r->first)))
      term = *l++;
    else if (l == lhs.terms.end() || less(r->first, l->first))
      term = *r++;
    else {
      term = {l->first, l->second + r->second};
      ++l;
      ++r;
    }
    if (term.second != 0)
      form.terms.push_back(term);
  }
  return form;
}

/// A product with a constant factor; anything else is not linear.
IndexForm product(const IndexForm &lhs, const IndexForm &rhs) {
  if (!lhs.isConstant() && !rhs.isConstant())
    return IndexForm::unknown();
  const IndexForm &factor = lhs.isConstant() ? lhs : rhs;
  IndexForm form = scaled(lhs.isConstant() ? rhs : lhs, factor.constant);
  form.variesByThread |= factor.variesByThread;
  return form;
}

static int64_t floorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

IndexEvaluator::IndexEvaluator(const BarrierSite &site,
                               ArrayRef<Value> enumerated)
    : site(site), launch(site.barrier->getParentOfType<gpu::LaunchOp>()) {
  for (Value value : enumerated)
    dependence[value] = true;
}

IndexForm IndexEvaluator::evaluate(OpFoldResult value) {
  if (auto attr = dyn_cast<Attribute>(value)) {
    if (auto integer = dyn_cast<IntegerAttr>(attr))
      return IndexForm::of(integer.getInt());
    return IndexForm::unknown();
  }
  return evaluate(cast<Value>(value));
}

bool IndexEvaluator::dependsOnPoint(Value value) {
  if (auto it = dependence.find(value); it != dependence.end())
    return it->second;
  bool depends = false;
  Operation *op = value.getDefiningOp();
  if (op && launch->isAncestor(op))
    depends = isa<gpu::ThreadIdOp, gpu::LaneIdOp>(op) ||
              llvm::any_of(op->getOperands(),
                           [&](Value v) { return dependsOnPoint(v); });
  dependence[value] = depends;
  return depends;
}

/// A value that holds one value for every thread on both sides of the
/// barrier: defined outside the launch, or in a block that holds the
/// barrier, outside every loop whose back edge lies between the sides.
bool IndexEvaluator::isSymbol(Value value) {
  Block *block = value.getParentBlock();
  if (!launch->isAncestor(block->getParentOp()))
    return true;
  if (!block->findAncestorOpInBlock(*site.barrier))
    return false;
  Operation *definition = value.getDefiningOp();
  Operation *scope = definition ? definition : block->getParentOp();
  return llvm::none_of(site.crossedLoops, [&](Operation *loop) {
    return loop->isAncestor(scope);
  });
}

/// Block arguments that hold one value for every thread: the launch's
/// (its thread id along x is bound, not a symbol) and the induction
/// variable of a loop that all threads run alike. A loop's other
/// arguments may carry anything.
bool IndexEvaluator::isUniform(BlockArgument argument) {
  Operation *owner = argument.getOwner()->getParentOp();
  if (isa<gpu::LaunchOp>(owner))
    return true;
  auto loop = dyn_cast<scf::ForOp>(owner);
  if (!loop || argument != loop.getInductionVar())
    return false;
  IndexForm lower = evaluate(loop.getLowerBound());
  IndexForm step = evaluate(loop.getStep());
  return lower.known && !lower.variesByThread && step.known &&
         !step.variesByThread;
}

IndexForm IndexEvaluator::evaluate(Value value) {
  if (auto it = bound.find(value); it != bound.end())
    return it->second;
  DenseMap<Value, IndexForm> &memo =
      dependsOnPoint(value) ? pointMemo : invariantMemo;
  if (auto it = memo.find(value); it != memo.end())
    return it->second;
  IndexForm form;
  if (std::optional<int64_t> constant = getConstantIntValue(value))
    form = IndexForm::of(*constant);
  else if (!launch->isAncestor(value.getParentBlock()->getParentOp()))
    form = IndexForm::symbol(value); // one value for the whole launch
  else if (auto result = dyn_cast<OpResult>(value))
    form = evaluateOp(result.getOwner(), result);
  else if (isSymbol(value) && isUniform(cast<BlockArgument>(value)))
    form = IndexForm::symbol(value);
  memo[value] = form;
  return form;
}

IndexForm IndexEvaluator::evaluateOp(Operation *op, OpResult result) {
  auto operand = [&](unsigned i) { return evaluate(op->getOperand(i)); };
  IndexForm form;
  if (isa<arith::AddIOp>(op))
    form = sum(operand(0), operand(1));
  else if (isa<arith::SubIOp>(op))
    form = sum(operand(0), scaled(operand(1), -1));
  else if (isa<arith::MulIOp>(op))
    form = product(operand(0), operand(1));
  else if (isa<arith::IndexCastOp, arith::IndexCastUIOp>(op))
    form = operand(0);
  else if (auto apply = dyn_cast<affine::AffineApplyOp>(op)) {
    SmallVector<IndexForm> operands;
    for (Value v : apply.getMapOperands())
      operands.push_back(evaluate(v));
    form = evaluateAffine(apply.getAffineMap().getResult(0), operands,
                          apply.getAffineMap().getNumDims());
  } else if (auto delinearize = dyn_cast<affine::AffineDelinearizeIndexOp>(op))
    form = delinearized(delinearize, result.getResultNumber());
  else if (auto thread = dyn_cast<gpu::ThreadIdOp>(op)) {
    form = thread.getDimension() == gpu::Dimension::x
               ? evaluate(launch.getThreadIds().x)
               : IndexForm::of(0);
  } else if (isa<gpu::LaneIdOp>(op)) {
    IndexForm thread = evaluate(launch.getThreadIds().x);
    if (thread.isConstant())
      form = IndexForm::of(thread.constant % 32, true);
  } else if (auto dim = dyn_cast<gpu::BlockDimOp>(op)) {
    form = IndexForm::of(
        dim.getDimension() == gpu::Dimension::x ? site.blockSize : 1);
  } else if (isa<arith::DivUIOp, arith::DivSIOp, arith::RemUIOp, arith::RemSIOp,
                 arith::CeilDivSIOp, arith::FloorDivSIOp, arith::MinSIOp,
                 arith::MaxSIOp, arith::MinUIOp, arith::MaxUIOp>(op)) {
    IndexForm lhs = operand(0), rhs = operand(1);
    if (lhs.isConstant() && rhs.isConstant()) {
      Builder b(op->getContext());
      SmallVector<Attribute> attrs = {
          b.getIntegerAttr(op->getOperand(0).getType(), lhs.constant),
          b.getIntegerAttr(op->getOperand(1).getType(), rhs.constant)};
      SmallVector<OpFoldResult> folded;
      if (succeeded(op->fold(attrs, folded)) && folded.size() == 1)
        if (std::optional<int64_t> value = getConstantIntValue(folded[0]))
          form =
              IndexForm::of(*value, lhs.variesByThread || rhs.variesByThread);
    }
  }
  if (form.known)
    return form;
  // Anything else pure, from operands that do not vary by thread, is a
  // symbol where it holds one value on both sides.
  // (Of the values without operands, only the block's place in the grid;
  // gpu.global_id, say, differs by thread.)
  if (!isPure(op) || !isSymbol(result) ||
      (op->getNumOperands() == 0 && !isa<gpu::BlockIdOp, gpu::GridDimOp>(op)))
    return IndexForm::unknown();
  for (Value v : op->getOperands()) {
    IndexForm input = evaluate(v);
    if (!input.known || input.variesByThread)
      return IndexForm::unknown();
  }
  return IndexForm::symbol(result);
}

IndexForm IndexEvaluator::evaluateAffine(AffineExpr expr,
                                         ArrayRef<IndexForm> operands,
                                         unsigned numDims) {
  if (auto constant = dyn_cast<AffineConstantExpr>(expr))
    return IndexForm::of(constant.getValue());
  if (auto dim = dyn_cast<AffineDimExpr>(expr))
    return operands[dim.getPosition()];
  if (auto symbol = dyn_cast<AffineSymbolExpr>(expr))
    return operands[numDims + symbol.getPosition()];
  auto binary = cast<AffineBinaryOpExpr>(expr);
  IndexForm lhs = evaluateAffine(binary.getLHS(), operands, numDims);
  IndexForm rhs = evaluateAffine(binary.getRHS(), operands, numDims);
  switch (expr.getKind()) {
  case AffineExprKind::Add:
    return sum(lhs, rhs);
  case AffineExprKind::Mul:
    return product(lhs, rhs);
  default:
    break;
  }
  if (!lhs.isConstant() || !rhs.isConstant() || rhs.constant <= 0)
    return IndexForm::unknown();
  bool varies = lhs.variesByThread || rhs.variesByThread;
  int64_t quotient = floorDiv(lhs.constant, rhs.constant);
  switch (expr.getKind()) {
  case AffineExprKind::FloorDiv:
    return IndexForm::of(quotient, varies);
  case AffineExprKind::CeilDiv:
    return IndexForm::of(-floorDiv(-lhs.constant, rhs.constant), varies);
  default: // Mod
    return IndexForm::of(lhs.constant - quotient * rhs.constant, varies);
  }
}

IndexForm IndexEvaluator::delinearized(affine::AffineDelinearizeIndexOp op,
                                       unsigned index) {
  IndexForm linear = evaluate(op.getLinearIndex());
  SmallVector<OpFoldResult> basis = op.getMixedBasis();
  ArrayRef<OpFoldResult> inner(basis);
  if (op.hasOuterBound())
    inner = inner.drop_front();
  if (!linear.isConstant())
    return IndexForm::unknown();
  int64_t rest = linear.constant;
  for (unsigned i = inner.size(); i > 0; --i) {
    IndexForm size = evaluate(inner[i - 1]);
    if (!size.isConstant() || size.constant <= 0)
      return IndexForm::unknown();
    if (i == index)
      return IndexForm::of(rest % size.constant, linear.variesByThread);
    rest /= size.constant;
  }
  return IndexForm::of(rest, linear.variesByThread);
}

/// A constant that `value` does not exceed: a loop over a chunk's rows,
/// min(rows left, C), runs at most C times, and listing the iterations up
/// to C lists more touches than happen, never fewer.
std::optional<int64_t> upperLimit(Value value, IndexEvaluator &evaluator) {
  IndexForm form = evaluator.evaluate(value);
  if (form.isConstant())
    return form.constant;
  Operation *op = value.getDefiningOp();
  if (isa_and_present<arith::MinSIOp, arith::MinUIOp>(op)) {
    std::optional<int64_t> lhs = upperLimit(op->getOperand(0), evaluator);
    std::optional<int64_t> rhs = upperLimit(op->getOperand(1), evaluator);
    // Unsigned, a negative limit bounds nothing; a non-negative one puts
    // the minimum in [0, limit].
    if (isa<arith::MinUIOp>(op)) {
      if (lhs && *lhs < 0)
        lhs.reset();
      if (rhs && *rhs < 0)
        rhs.reset();
    }
    if (lhs && rhs)
      return std::min(*lhs, *rhs);
    return lhs ? lhs : rhs;
  }
  if (isa_and_present<arith::MulIOp>(op)) {
    // x <= limit and c >= 0 give x * c <= limit * c.
    for (unsigned i = 0; i < 2; ++i) {
      IndexForm factor = evaluator.evaluate(op->getOperand(1 - i));
      if (!factor.isConstant() || factor.constant < 0)
        continue;
      if (std::optional<int64_t> limit =
              upperLimit(op->getOperand(i), evaluator))
        return *limit * factor.constant;
    }
  }
  return std::nullopt;
}

} // namespace fwp
