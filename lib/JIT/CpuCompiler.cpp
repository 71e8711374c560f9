//===- CpuCompiler.cpp - Host modules: build, lower, JIT-compile ----------===//

#include "CpuCompiler.h"

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

/// Collects every diagnostic emitted on a context while alive, so that a
/// failure can be reported with the MLIR messages instead of printing them
/// to stderr.
class DiagnosticCollector {
public:
  explicit DiagnosticCollector(MLIRContext &ctx)
      : handler(&ctx, [this](Diagnostic &diag) {
          append(diag);
          return success();
        }) {}

  const std::string &text() const { return messages; }

private:
  void append(Diagnostic &diag) {
    llvm::raw_string_ostream os(messages);
    if (!messages.empty())
      os << "\n";
    os << diag.getLocation() << ": " << severity(diag.getSeverity()) << ": "
       << diag;
    for (Diagnostic &note : diag.getNotes())
      os << "\n" << note.getLocation() << ": note: " << note;
  }

  static const char *severity(DiagnosticSeverity s) {
    switch (s) {
    case DiagnosticSeverity::Error:
      return "error";
    case DiagnosticSeverity::Warning:
      return "warning";
    case DiagnosticSeverity::Note:
      return "note";
    case DiagnosticSeverity::Remark:
      return "remark";
    }
    return "diagnostic";
  }

  std::string messages;
  ScopedDiagnosticHandler handler;
};

/// Reports a failed stage of one compilation.
class Failure {
public:
  explicit Failure(const std::string &what) : what(what) {}

  [[noreturn]] void operator()(const std::string &stage,
                               const std::string &details) const {
    throw std::runtime_error("compiling " + what + " failed in " + stage +
                             ":\n" + details);
  }

private:
  std::string what;
};

void lower(ModuleOp module, int64_t chunkSize,
           const DiagnosticCollector &diagnostics, const Failure &fail) {
  if (failed(verify(module)))
    fail("building the module", diagnostics.text());
  // Implicit nesting: some passes of the pipeline are anchored on func.func.
  PassManager pm(module->getContext(), ModuleOp::getOperationName(),
                 OpPassManager::Nesting::Implicit);
  CpuPipelineOptions options;
  options.chunkSize = chunkSize;
  buildFwpToCpuPipeline(pm, options);
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
                           ArrayRef<std::string> functions) {
  initializeLlvmOnce();
  Failure fail(what);
  DialectRegistry registry;
  registry.insert<fwp::FwpDialect>();
  registerPipelineDependencies(registry);
  // A context per compilation: independent compilations never share one.
  // Its thread pool would only add threads: the functions are few and small.
  MLIRContext ctx(registry, MLIRContext::Threading::DISABLED);
  ctx.loadDialect<fwp::FwpDialect, func::FuncDialect,
                  bufferization::BufferizationDialect>();
  DiagnosticCollector diagnostics(ctx);

  OwningOpRef<ModuleOp> module =
      ModuleOp::create(NameLoc::get(StringAttr::get(&ctx, "fwp-jit")));
  build(*module);
  lower(*module, chunkSize, diagnostics, fail);
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
