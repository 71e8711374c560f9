//===- fwp-compile.cpp - Compile fwp IR ahead of time for the GPU ---------===//
//
//   fwp-compile INPUT.mlir --function NAME -o DIR [pipeline options]
//
// Runs fwp-to-ptx and writes DIR/plan.fwp (docs/launch-plan.md) and one
// DIR/<module>.ptx per kernel: what the runtime needs to run the function
// without the compiler. With -o -, prints the plan instead.
//
//===----------------------------------------------------------------------===//

#include "fwp/Dialect/FwpDialect.h"
#include "fwp/Pipelines/Pipelines.h"
#include "fwp/Runtime/Plan.h"
#include "fwp/Target/LaunchPlan.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"

using namespace mlir;
namespace cl = llvm::cl;

static cl::opt<std::string> inputFile(cl::Positional, cl::Required,
                                      cl::desc("<input .mlir>"));
static cl::opt<std::string> outputDir("o", cl::Required,
                                      cl::desc("output directory, or - to "
                                               "print the plan"),
                                      cl::value_desc("dir"));
static cl::opt<std::string> function("function", cl::Required,
                                     cl::desc("host function to compile"));
static cl::opt<std::string> pipelineOptions(
    "options", cl::init(""),
    cl::desc("fwp-to-ptx options, e.g. \"chip=sm_90 chunk-size=32\""));

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(argc, argv, "fwp ahead-of-time GPU compiler\n");

  DialectRegistry registry;
  registry.insert<fwp::FwpDialect>();
  fwp::registerPipelineDependencies(registry);
  MLIRContext context(registry);
  llvm::SourceMgr sources;
  OwningOpRef<ModuleOp> module =
      parseSourceFile<ModuleOp>(inputFile, sources, &context);
  if (!module)
    return 1;

  auto options = fwp::PtxPipelineOptions::createFromString(pipelineOptions);
  if (!options) {
    llvm::errs() << "fwp-compile: bad --options '" << pipelineOptions << "'\n";
    return 2;
  }
  PassManager pm(&context);
  fwp::buildFwpToPtxPipeline(pm, *options);
  if (failed(pm.run(*module)))
    return 1;
  FailureOr<fwp::ExportedPlan> plan =
      fwp::exportLaunchPlan(*module, function, options->indexBitwidth);
  if (failed(plan))
    return 1;

  if (outputDir == "-") {
    llvm::outs() << plan->plan.str();
    return 0;
  }
  try {
    fwp::rt::writePlanDirectory(outputDir, plan->plan, plan->ptx);
  } catch (const fwp::rt::Error &e) {
    llvm::errs() << "fwp-compile: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
