//===- TileFunctions.h - Static tiles as functions of their own -*- C++ -*-===//
//
// What fwp-outline-tiles (the kernels' tiles) and fwp-dense-to-vectors (the
// dense layers' blocks) share: a static tile operation replaced by a call to
// a small function that holds it alone, tiles that are the same operation
// on the same types sharing one function.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_LIB_CONVERSION_TILEFUNCTIONS_H
#define FWP_LIB_CONVERSION_TILEFUNCTIONS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"

#include "llvm/ADT/StringMap.h"

namespace fwp {

/// The tile functions of a module, one per distinct tile. Each is private,
/// internal and noinline (LLVM's inliner would rebuild the large function
/// the tiles came from), tagged `fwp.kernel` with `kernel`, the name of the
/// kernel (or layer) it was first outlined from, and named after it.
class TileFunctions {
public:
  explicit TileFunctions(mlir::ModuleOp module)
      : module(module), symbols(module) {}

  /// Replaces `op` with a call to the function that computes it, made now
  /// or earlier; returns it and whether it was made now. Values the tile
  /// uses from above become arguments, except constants, which are cloned
  /// into the function so that they do not tell tiles apart.
  std::pair<mlir::func::FuncOp, bool> outline(mlir::linalg::LinalgOp op,
                                              mlir::StringAttr kernel);

private:
  mlir::func::FuncOp build(mlir::Operation *op,
                           llvm::ArrayRef<mlir::Value> arguments,
                           llvm::ArrayRef<mlir::Value> constants);
  /// The text of `fn`, before it is named: equal for equal tiles.
  static std::string bodyText(mlir::func::FuncOp fn);

  mlir::ModuleOp module;
  mlir::SymbolTable symbols;
  llvm::StringMap<mlir::func::FuncOp> byBody;
};

} // namespace fwp

#endif // FWP_LIB_CONVERSION_TILEFUNCTIONS_H
