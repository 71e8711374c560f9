//===- CpuCompiler.cpp - Host modules: build, lower, JIT-compile ----------===//

#include "CpuCompiler.h"
#include "CompileSupport.h"
#include "IRDump.h"

#include "fwp/Dialect/FwpDialect.h"
#include "fwp/Pipelines/Pipelines.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"

#include <mutex>
#include <stdexcept>

using namespace mlir;

namespace fwp::jit {

namespace {

void initializeLlvmOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
}

void lower(ModuleOp module, int64_t chunkSize, const std::string &dumpDirectory,
           const DiagnosticCollector &diagnostics, const Failure &fail) {
  if (failed(verify(module)))
    fail("building the module", diagnostics.text());
  // Implicit nesting: some passes of the pipeline are anchored on func.func.
  PassManager pm(module->getContext(), ModuleOp::getOperationName(),
                 OpPassManager::Nesting::Implicit);
  CpuPipelineOptions options;
  options.chunkSize = chunkSize;
  buildFwpToCpuPipeline(pm, options);
  dumpEveryStage(pm, module, dumpDirectory);
  if (failed(pm.run(module)))
    fail("the fwp-to-cpu pipeline", diagnostics.text());
}

std::unique_ptr<llvm::TargetMachine> hostTargetMachine(const Failure &fail) {
  auto builder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!builder)
    fail("detecting the host", llvm::toString(builder.takeError()));
  auto tm = builder->createTargetMachine();
  if (!tm)
    fail("detecting the host", llvm::toString(tm.takeError()));
  return std::move(*tm);
}

std::unique_ptr<ExecutionEngine> createEngine(ModuleOp module,
                                              const Failure &fail) {
  // The optimiser gets the host's target machine so that its cost models
  // (vectorisation above all) know the host's vector units; the engine
  // detects the same host for code generation.
  std::unique_ptr<llvm::TargetMachine> tm = hostTargetMachine(fail);
  auto transformer = makeOptimizingTransformer(/*optLevel=*/3,
                                               /*sizeLevel=*/0, tm.get());
  ExecutionEngineOptions options;
  options.transformer = transformer;
  options.jitCodeGenOptLevel = llvm::CodeGenOptLevel::Aggressive;
  auto engine = ExecutionEngine::create(module, options);
  if (!engine)
    fail("creating the execution engine", llvm::toString(engine.takeError()));
  return std::move(*engine);
}

} // namespace

void buildEntryFunction(
    OpBuilder &b, Location loc, StringRef name, ArrayRef<Type> inputs,
    ArrayRef<Type> outputs,
    function_ref<SmallVector<Value>(OpBuilder &, ValueRange)> body) {
  SmallVector<Type> types(inputs);
  for (Type output : outputs) {
    auto tensor = cast<RankedTensorType>(output);
    types.push_back(
        MemRefType::get(tensor.getShape(), tensor.getElementType()));
  }
  auto fn = func::FuncOp::create(b, loc, name, b.getFunctionType(types, {}));
  fn->setAttr("llvm.emit_c_interface", b.getUnitAttr());
  for (unsigned i = 0; i < inputs.size(); ++i)
    fn.setArgAttr(i, bufferization::BufferizationDialect::kWritableAttrName,
                  b.getBoolAttr(false));

  OpBuilder::InsertionGuard guard(b);
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  ValueRange args = entry->getArguments();
  SmallVector<Value> results = body(b, args.take_front(inputs.size()));
  for (auto [result, destination] :
       llvm::zip_equal(results, args.drop_front(inputs.size())))
    bufferization::MaterializeInDestinationOp::create(
        b, loc, TypeRange{}, result, destination, /*restrict=*/true,
        /*writable=*/true);
  func::ReturnOp::create(b, loc);
}

CpuModule compileCpuModule(const std::string &what, int64_t chunkSize,
                           function_ref<void(ModuleOp)> build,
                           ArrayRef<std::string> functions,
                           const std::string &dumpDirectory) {
  initializeLlvmOnce();
  Failure fail(what);
  CompileContext compile;
  OwningOpRef<ModuleOp> module = compile.createModule();
  build(*module);
  lower(*module, chunkSize, dumpDirectory, compile.diagnostics(), fail);
  CpuModule compiled;
  compiled.engine = createEngine(*module, fail);
  // Looking the entry points up generates the machine code now.
  for (const std::string &name : functions) {
    auto entry = compiled.engine->lookup("_mlir_ciface_" + name);
    if (!entry)
      fail("generating code", llvm::toString(entry.takeError()));
    compiled.entries.push_back(*entry);
  }
  compiled.engine->initialize();
  // The engine owns the code; the context and the module may go now.
  return compiled;
}

} // namespace fwp::jit
