//===- fwp-opt.cpp - mlir-opt for the fwp dialect and passes --------------===//
//
// Registers only what fwp needs: its own dialect and passes, and the
// upstream dialects its IR and pipelines use.
//
//===----------------------------------------------------------------------===//

#include "fwp/Conversion/Passes.h"
#include "fwp/Dialect/FwpDialect.h"
#include "fwp/Pipelines/Pipelines.h"
#include "fwp/Transforms/Passes.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  fwp::registerFwpTransformsPasses();
  fwp::registerFwpConversionPasses();
  fwp::registerFwpPipelines();

  mlir::DialectRegistry registry;
  registry.insert<fwp::FwpDialect>();
  fwp::registerPipelineDependencies(registry);
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "fwp optimizer driver: the fwp dialect and its passes\n",
      registry));
}
