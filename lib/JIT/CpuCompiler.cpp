//===- CpuCompiler.cpp - Host modules: build, lower, JIT-compile ----------===//

#include "CpuCompiler.h"
#include "CompileSupport.h"
#include "HostObjects.h"
#include "Kernel.h"

#include "fwp/Dialect/FwpDialect.h"
#include "fwp/Pipelines/Pipelines.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"

#include <fmt/format.h>

#include <algorithm>
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

/// The products' register tile for the host: AVX-512's where it has it,
/// else AVX2's (hostTargetDescription(), part of the cache key, names the
/// features).
RegisterTile hostRegisterTile() {
  llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
  return features.lookup("avx512f") ? kAvx512RegisterTile : kAvx2RegisterTile;
}

void lower(ModuleOp module, int64_t chunkSize, GpuFormsOnHost gpuForms,
           const std::string &dumpDirectory,
           const DiagnosticCollector &diagnostics, const Failure &fail) {
  if (failed(verify(module)))
    fail("building the module", diagnostics.text());
  // Implicit nesting: some passes of the pipeline are anchored on func.func.
  PassManager pm(module->getContext(), ModuleOp::getOperationName(),
                 OpPassManager::Nesting::Implicit);
  CpuPipelineOptions options;
  options.chunkSize = chunkSize;
  options.gpuTiling = gpuForms.tiling;
  options.gpuStages = gpuForms.stages;
  RegisterTile tile = hostRegisterTile();
  options.registerRows = tile.rows;
  options.registerCols = tile.cols;
  buildFwpToCpuPipeline(pm, options);
  runPipeline(pm, module, "fwp-to-cpu", dumpDirectory, diagnostics, fail);
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
  // The kernels run on every core through OpenMP's runtime, as the shared
  // objects do (linkSharedObject).
  static const llvm::StringRef runtimes[] = {FWP_OPENMP_RUNTIME};
  options.sharedLibPaths = runtimes;
  options.jitCodeGenOptLevel = llvm::CodeGenOptLevel::Aggressive;
  auto engine = ExecutionEngine::create(module, options);
  if (!engine)
    fail("creating the execution engine", llvm::toString(engine.takeError()));
  return std::move(*engine);
}

} // namespace

const std::string &hostTargetDescription() {
  static const std::string description = [] {
    // Sorted: the feature map's own order is a hash order.
    std::vector<std::string> enabled;
    for (const auto &feature : llvm::sys::getHostCPUFeatures())
      if (feature.second)
        enabled.push_back("+" + feature.first().str());
    std::sort(enabled.begin(), enabled.end());
    return fmt::format("{} {} {}", llvm::sys::getProcessTriple(),
                       llvm::sys::getHostCPUName().str(),
                       llvm::join(enabled, ","));
  }();
  return description;
}

std::vector<std::pair<std::string, double>>
compileCpuLibrary(const std::string &what, int64_t chunkSize,
                  function_ref<void(ModuleOp)> build,
                  const std::string &outputDir, int optLevel,
                  const std::string &dumpDirectory, GpuFormsOnHost gpuForms) {
  initializeLlvmOnce();
  Failure fail(what);
  std::vector<std::pair<std::string, double>> stages;
  Clock::time_point start = Clock::now();
  CompileContext compile;
  OwningOpRef<ModuleOp> module = compile.createModule();
  build(*module);
  lower(*module, chunkSize, gpuForms, dumpDirectory, compile.diagnostics(),
        fail);
  stages.emplace_back("passes", secondsSince(start));

  start = Clock::now();
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(*module, llvmContext, "fwp-kernel");
  if (!llvmModule)
    fail("translating to LLVM IR", compile.diagnostics().text());
  stages.emplace_back("translate", secondsSince(start));
  buildSharedObject(std::move(llvmModule), optLevel, outputDir, fail, stages);
  return stages;
}

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
  // Outputs alias no input and no other output (JIT.h, Scan.h): the
  // results are materialized in them as restrict, and the GPU's barrier
  // analysis takes each as a buffer of its own.
  for (unsigned i = inputs.size(); i < types.size(); ++i)
    fn.setArgAttr(i, LLVM::LLVMDialect::getNoAliasAttrName(), b.getUnitAttr());

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
  lower(*module, chunkSize, GpuFormsOnHost{}, dumpDirectory,
        compile.diagnostics(), fail);
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
