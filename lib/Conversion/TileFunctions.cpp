//===- TileFunctions.cpp - Static tiles as functions of their own ---------===//

#include "TileFunctions.h"

#include "fwp/Transforms/Kernels.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/RegionUtils.h"

using namespace mlir;

namespace fwp {

func::FuncOp TileFunctions::build(Operation *op, ArrayRef<Value> arguments,
                                  ArrayRef<Value> constants) {
  auto b = OpBuilder::atBlockEnd(module.getBody());
  Location loc = op->getLoc();
  auto fn = func::FuncOp::create(
      b, loc, "tile", b.getFunctionType(ValueRange(arguments).getTypes(), {}));
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  IRMapping mapping;
  mapping.map(arguments, entry->getArguments());
  for (Value constant : constants)
    mapping.map(constant, b.clone(*constant.getDefiningOp())->getResult(0));
  b.clone(*op, mapping);
  func::ReturnOp::create(b, loc);
  return fn;
}

std::string TileFunctions::bodyText(func::FuncOp fn) {
  std::string text;
  llvm::raw_string_ostream os(text);
  fn->print(os, OpPrintingFlags().useLocalScope());
  return text;
}

std::pair<func::FuncOp, bool> TileFunctions::outline(linalg::LinalgOp op,
                                                     StringAttr kernel) {
  SmallVector<Value> arguments(op->getOperands()), constants;
  SetVector<Value> above;
  getUsedValuesDefinedAbove(op->getRegions(), above);
  for (Value value : above) {
    Operation *producer = value.getDefiningOp();
    bool constant = producer && producer->hasTrait<OpTrait::ConstantLike>();
    (constant ? constants : arguments).push_back(value);
  }

  func::FuncOp fn = build(op, arguments, constants);
  auto [known, inserted] = byBody.try_emplace(bodyText(fn), fn);
  if (inserted) {
    fn.setSymName(kernel.getValue().str() + "_tile" +
                  std::to_string(byBody.size() - 1));
    symbols.insert(fn);
    fn.setPrivate();
    fn->setAttr(kKernelAttrName, kernel);
    Builder b(fn.getContext());
    fn->setAttr("passthrough", b.getArrayAttr({b.getStringAttr("noinline")}));
    fn->setAttr("llvm.linkage", LLVM::LinkageAttr::get(
                                    b.getContext(), LLVM::Linkage::Internal));
  } else {
    fn.erase();
    fn = known->second;
  }
  OpBuilder b(op);
  func::CallOp::create(b, op.getLoc(), fn, arguments);
  op->erase();
  return {fn, inserted};
}

} // namespace fwp
