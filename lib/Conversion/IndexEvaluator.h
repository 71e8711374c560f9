//===- IndexEvaluator.h - Index arithmetic for one thread -------*- C++ -*-===//
//
// For fwp-eliminate-barriers: a GPU kernel's index arithmetic evaluated for
// one thread of a block and one iteration of the loops around an access,
// in forms a constant plus a sum of symbols, the values that hold one value
// for every thread on both sides of a barrier.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_CONVERSION_INDEXEVALUATOR_H
#define FWP_CONVERSION_INDEXEVALUATOR_H

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Operation.h"

#include <optional>

namespace fwp {

/// constant + sum(coefficient * symbol), or unknown. `variesByThread` marks
/// a value that depends on the thread or on an enumerated loop, which may
/// not be taken as a symbol.
struct IndexForm {
  bool known = false;
  bool variesByThread = false;
  int64_t constant = 0;
  /// Sorted by value, no zero coefficients.
  llvm::SmallVector<std::pair<mlir::Value, int64_t>, 2> terms;

  static IndexForm unknown() { return {}; }
  static IndexForm of(int64_t value, bool variesByThread = false);
  static IndexForm symbol(mlir::Value value);
  bool isConstant() const { return known && terms.empty(); }
};

/// Where the accesses being compared sit relative to the barrier in
/// question: loops whose back edge lies between them (`crossedLoops`) run
/// a different iteration on the two sides, so nothing defined inside them
/// is a symbol.
struct BarrierSite {
  mlir::Operation *barrier;
  int64_t blockSize;
  llvm::SmallVector<mlir::Operation *, 2> crossedLoops;
};

IndexForm sum(const IndexForm &lhs, const IndexForm &rhs);
IndexForm scaled(IndexForm form, int64_t factor);
/// A product with a constant factor; anything else is unknown.
IndexForm product(const IndexForm &lhs, const IndexForm &rhs);

/// Evaluates index values for one assignment of the thread and of the
/// enumerated loops' induction variables.
class IndexEvaluator {
public:
  /// `enumerated`: the values that will be bound, point by point.
  IndexEvaluator(const BarrierSite &site,
                 llvm::ArrayRef<mlir::Value> enumerated);

  void bind(mlir::Value value, IndexForm form) {
    bound[value] = form;
    pointMemo.clear();
  }
  IndexForm evaluate(mlir::OpFoldResult value);
  IndexForm evaluate(mlir::Value value);

private:
  bool isSymbol(mlir::Value value);
  bool isUniform(mlir::BlockArgument argument);
  bool dependsOnPoint(mlir::Value value);
  IndexForm evaluateOp(mlir::Operation *op, mlir::OpResult result);
  IndexForm evaluateAffine(mlir::AffineExpr expr,
                           llvm::ArrayRef<IndexForm> operands,
                           unsigned numDims);
  IndexForm delinearized(mlir::affine::AffineDelinearizeIndexOp op,
                         unsigned index);

  const BarrierSite &site;
  mlir::gpu::LaunchOp launch;
  llvm::DenseMap<mlir::Value, IndexForm> bound;
  // Values that depend on the point evaluate anew at each point; the
  // others once.
  llvm::DenseMap<mlir::Value, bool> dependence;
  llvm::DenseMap<mlir::Value, IndexForm> pointMemo, invariantMemo;
};

/// A constant that `value` does not exceed, if one is found.
std::optional<int64_t> upperLimit(mlir::Value value, IndexEvaluator &evaluator);

} // namespace fwp

#endif // FWP_CONVERSION_INDEXEVALUATOR_H
