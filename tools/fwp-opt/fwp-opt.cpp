//===- fwp-opt.cpp - mlir-opt for the fwp dialect and passes --------------===//
//
// Registers only what fwp needs: its own dialect and passes, and the
// upstream dialects its IR and pipelines use.
//
//===----------------------------------------------------------------------===//

#include "fwp/Dialect/FwpDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<fwp::FwpDialect, mlir::arith::ArithDialect,
                  mlir::func::FuncDialect, mlir::tensor::TensorDialect>();
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "fwp optimizer driver: the fwp dialect and its passes\n",
      registry));
}
