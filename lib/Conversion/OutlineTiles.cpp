//===- OutlineTiles.cpp - The CPU kernels' tiles as functions of their own ===//
//
// LLVM's loop passes cost more than linearly in the size of a function:
// scalar evolution's caches are cleared and rebuilt for every loop a pass
// changes, across the whole function. A fused scan kernel holds every tile
// of a chunk, a hundred loop nests in one function, and the passes spent
// most of a cold compile there. Each static tile becomes a call to a small
// function instead; tiles that are the same operation on the same types
// share one. The functions are noinline, or LLVM's inliner would rebuild
// the large function.
//
//===----------------------------------------------------------------------===//

#include "fwp/Conversion/Passes.h"
#include "fwp/Transforms/Kernels.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/RegionUtils.h"

#include "llvm/ADT/StringMap.h"

namespace fwp {
#define GEN_PASS_DEF_FWPOUTLINETILES
#include "fwp/Conversion/Passes.h.inc"
} // namespace fwp

using namespace mlir;

namespace fwp {
namespace {

/// The name of the kernel whose forall holds `op`.
StringAttr kernelOf(Operation *op) {
  auto forall = op->getParentOfType<scf::ForallOp>();
  while (forall && !forall->hasAttr(kKernelAttrName))
    forall = forall->getParentOfType<scf::ForallOp>();
  return forall->getAttrOfType<StringAttr>(kKernelAttrName);
}

/// Whether fwp-tiles-to-vectors vectorizes `op`, and so whether it is
/// outlined: a tile of buffers with a static iteration space.
bool isStaticTile(linalg::LinalgOp op) {
  return isInsideKernel(op) && op.hasPureBufferSemantics() &&
         !ShapedType::isDynamicShape(op.getStaticLoopRanges());
}

/// The tile functions of a module, one per distinct tile.
class TileFunctions {
public:
  explicit TileFunctions(ModuleOp module) : module(module), symbols(module) {}

  /// Replaces `op` with a call to the function that computes it.
  void outline(linalg::LinalgOp op);

private:
  /// A function of `arguments` that computes `op`, with `constants` (used
  /// by its body from above) cloned into it.
  func::FuncOp build(Operation *op, ArrayRef<Value> arguments,
                     ArrayRef<Value> constants);
  /// The text of `fn`, before it is named: equal for equal tiles.
  static std::string bodyText(func::FuncOp fn);

  ModuleOp module;
  SymbolTable symbols;
  llvm::StringMap<func::FuncOp> byBody;
};

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

void TileFunctions::outline(linalg::LinalgOp op) {
  // Constants used from above are cloned, so that they do not tell tiles
  // apart that differ only in where their constants were defined; other
  // values from above are arguments.
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
    // Named after the first kernel that has it.
    StringAttr kernel = kernelOf(op);
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
}

struct OutlineTilesPass : impl::FwpOutlineTilesBase<OutlineTilesPass> {
  void runOnOperation() override {
    SmallVector<linalg::LinalgOp> tiles;
    getOperation().walk([&](linalg::LinalgOp op) {
      auto fn = op->getParentOfType<func::FuncOp>();
      if (isStaticTile(op) && !fn->hasAttr(kKernelAttrName))
        tiles.push_back(op);
    });
    TileFunctions functions(getOperation());
    for (linalg::LinalgOp op : tiles)
      functions.outline(op);
  }
};

} // namespace
} // namespace fwp
