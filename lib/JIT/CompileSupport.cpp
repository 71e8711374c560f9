//===- CompileSupport.cpp - What every JIT compilation needs --------------===//

#include "CompileSupport.h"

#include "fwp/JIT/JIT.h"

#include "fwp/Dialect/FwpDialect.h"
#include "fwp/Pipelines/Pipelines.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

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

OwningOpRef<ModuleOp> CompileContext::createModule() {
  return ModuleOp::create(NameLoc::get(StringAttr::get(ctx.get(), "fwp-jit")));
}

} // namespace fwp::jit
