//===- AttentionModule.cpp - The module every backend compiles ------------===//

#include "AttentionModule.h"
#include "CompileSupport.h"
#include "CpuCompiler.h"

#include "fwp/Dialect/FwpVocabulary.h"

using namespace mlir;

namespace fwp::jit {
namespace {

/// Tensor types of the module's operands: x (and y, dy, dx), the square
/// weights, w_beta and b_o.
struct OperandTypes {
  Type x, square, wBeta, bO;

  OperandTypes(Builder &b, const KernelDesc &desc) {
    Type t = elementType(b, desc.dtype);
    int64_t dm = desc.dModel(), dyn = ShapedType::kDynamic;
    x = RankedTensorType::get({dyn, dyn, dm}, t);
    square = RankedTensorType::get({dm, dm}, t);
    wBeta = RankedTensorType::get({desc.heads, dm}, t);
    bO = RankedTensorType::get({dm}, t);
  }

  /// x and the weights, in the order of ForwardArgs.
  SmallVector<Type> inputs() const {
    return {x, square, square, square, wBeta, square, bO};
  }
};

} // namespace

void buildAttentionModule(ModuleOp module, const KernelDesc &desc,
                          EntryPoint entry) {
  OpBuilder b(module.getContext());
  Location loc = NameLoc::get(b.getStringAttr("fwp-jit " + desc.str()));
  b.setInsertionPointToEnd(module.getBody());
  OperandTypes types(b, desc);
  fwp::Rule rule = toDialectRule(desc.rule);
  llvm::APFloat eps(desc.eps);

  if (entry == EntryPoint::Forward) {
    buildEntryFunction(b, loc, kForwardName, types.inputs(), {types.x},
                       [&](OpBuilder &b, ValueRange a) -> SmallVector<Value> {
                         return {fwp::AttentionOp::create(
                             b, loc, types.x, a[0], a[1], a[2], a[3], a[4],
                             a[5], a[6], desc.heads, desc.nu, eps, rule)};
                       });
    return;
  }

  SmallVector<Type> gradInputs = types.inputs();
  gradInputs.push_back(types.x);                  // dy
  SmallVector<Type> gradOutputs = types.inputs(); // one per operand
  buildEntryFunction(b, loc, kBackwardName, gradInputs, gradOutputs,
                     [&](OpBuilder &b, ValueRange a) -> SmallVector<Value> {
                       auto grad = fwp::AttentionGradOp::create(
                           b, loc, gradOutputs, a[0], a[1], a[2], a[3], a[4],
                           a[5], a[6], a[7], desc.heads, desc.nu, eps, rule);
                       return SmallVector<Value>(grad->getResults());
                     });
}

} // namespace fwp::jit
