//===- CompileSupport.cpp - What every JIT compilation needs --------------===//

#include "CompileSupport.h"
#include "IRDump.h"

#include "fwp/JIT/JIT.h"

#include "fwp/Dialect/FwpDialect.h"
#include "fwp/Pipelines/Pipelines.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Verifier.h"

using namespace mlir;

namespace fwp::jit {

bool compilerAvailable() { return true; }

static DialectRegistry pipelineRegistry() {
  DialectRegistry registry;
  registry.insert<fwp::FwpDialect>();
  registerPipelineDependencies(registry);
  return registry;
}

// Its thread pool would only add threads: the functions are few and small.
CompileContext::CompileContext()
    : ctx(std::make_unique<MLIRContext>(pipelineRegistry(),
                                        MLIRContext::Threading::DISABLED)) {
  ctx->loadDialect<fwp::FwpDialect, func::FuncDialect,
                   bufferization::BufferizationDialect>();
  collector = std::make_unique<DiagnosticCollector>(*ctx);
}

#if !defined(NDEBUG) || defined(FWP_VERIFY_EACH_PASS)
constexpr bool kVerifyEachPass = true;
#else
constexpr bool kVerifyEachPass = false;
#endif

void runPipeline(PassManager &pm, ModuleOp module, const std::string &name,
                 const std::string &dumpDirectory,
                 const DiagnosticCollector &diagnostics, const Failure &fail) {
  pm.enableVerifier(kVerifyEachPass || !dumpDirectory.empty());
  dumpEveryStage(pm, module, dumpDirectory);
  if (failed(pm.run(module)) || failed(verify(module)))
    fail("the " + name + " pipeline", diagnostics.text());
}

OwningOpRef<ModuleOp> CompileContext::createModule() {
  return ModuleOp::create(NameLoc::get(StringAttr::get(ctx.get(), "fwp-jit")));
}

} // namespace fwp::jit
