//===- CpuCompiler.cpp - Host modules: build, lower, JIT-compile ----------===//

#include "CpuCompiler.h"
#include "CompileSupport.h"
#include "IRDump.h"
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
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
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

void lower(ModuleOp module, int64_t chunkSize, bool gpuTiling,
           const std::string &dumpDirectory,
           const DiagnosticCollector &diagnostics, const Failure &fail) {
  if (failed(verify(module)))
    fail("building the module", diagnostics.text());
  // Implicit nesting: some passes of the pipeline are anchored on func.func.
  PassManager pm(module->getContext(), ModuleOp::getOperationName(),
                 OpPassManager::Nesting::Implicit);
  CpuPipelineOptions options;
  options.chunkSize = chunkSize;
  options.gpuTiling = gpuTiling;
  RegisterTile tile = hostRegisterTile();
  options.registerRows = tile.rows;
  options.registerCols = tile.cols;
  buildFwpToCpuPipeline(pm, options);
  dumpEveryStage(pm, module, dumpDirectory);
  if (failed(pm.run(module)))
    fail("the fwp-to-cpu pipeline", diagnostics.text());
}

/// The host's target machine; position-independent code when it is for a
/// shared object.
std::unique_ptr<llvm::TargetMachine> hostTargetMachine(
    const Failure &fail, bool positionIndependent = false,
    llvm::CodeGenOptLevel level = llvm::CodeGenOptLevel::Default) {
  auto builder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!builder)
    fail("detecting the host", llvm::toString(builder.takeError()));
  if (positionIndependent)
    builder->setRelocationModel(llvm::Reloc::PIC_);
  builder->setCodeGenOptLevel(level);
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

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

llvm::CodeGenOptLevel codeGenLevel(int optLevel) {
  switch (optLevel) {
  case 0:
    return llvm::CodeGenOptLevel::None;
  case 1:
    return llvm::CodeGenOptLevel::Less;
  case 2:
    return llvm::CodeGenOptLevel::Default;
  default:
    return llvm::CodeGenOptLevel::Aggressive;
  }
}

/// `module` as host object code.
llvm::SmallVector<char, 0>
emitObject(llvm::Module &module, llvm::TargetMachine &tm, const Failure &fail) {
  llvm::SmallVector<char, 0> object;
  llvm::raw_svector_ostream os(object);
  llvm::legacy::PassManager codegen;
  if (tm.addPassesToEmitFile(codegen, os, nullptr,
                             llvm::CodeGenFileType::ObjectFile))
    fail("generating code", "the host target cannot emit object files");
  codegen.run(module);
  return object;
}

/// The C compiler driver that links objects: $CC if set, else cc.
std::string linkerDriver(const Failure &fail) {
  const char *fromEnvironment = std::getenv("CC");
  std::string name =
      fromEnvironment && *fromEnvironment ? fromEnvironment : "cc";
  auto path = llvm::sys::findProgramByName(name);
  if (!path)
    fail("linking", fmt::format("no C compiler driver '{}' on the PATH to "
                                "link the kernel's shared object (install "
                                "gcc, or set CC)",
                                name));
  return *path;
}

/// f32 -> bf16 on a CPU without AVX-512 BF16 is a call to the compiler
/// runtime's __truncsfbf2, which libgcc before GCC 13 lacks: each kernel
/// module carries its own (nearest even, NaN kept and quieted), built from
/// integer operations so that it calls nothing itself.
void defineTruncSfBf2(llvm::Module &module) {
  llvm::LLVMContext &context = module.getContext();
  auto *type = llvm::FunctionType::get(llvm::Type::getBFloatTy(context),
                                       {llvm::Type::getFloatTy(context)},
                                       /*isVarArg=*/false);
  auto *function = llvm::Function::Create(
      type, llvm::GlobalValue::WeakODRLinkage, "__truncsfbf2", module);
  function->setVisibility(llvm::GlobalValue::HiddenVisibility);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(context, "entry", function));
  llvm::Type *i32 = b.getInt32Ty();
  llvm::Value *bits = b.CreateBitCast(function->getArg(0), i32);
  llvm::Value *isNan =
      b.CreateICmpUGT(b.CreateAnd(bits, 0x7fffffff), b.getInt32(0x7f800000));
  llvm::Value *lowestKept = b.CreateAnd(b.CreateLShr(bits, 16), 1);
  llvm::Value *rounded =
      b.CreateAdd(bits, b.CreateAdd(lowestKept, b.getInt32(0x7fff)));
  llvm::Value *chosen =
      b.CreateSelect(isNan, b.CreateOr(bits, 0x00400000), rounded);
  llvm::Value *half = b.CreateTrunc(b.CreateLShr(chosen, 16), b.getInt16Ty());
  b.CreateRet(b.CreateBitCast(half, llvm::Type::getBFloatTy(context)));
}

/// Links `objectPath` into the shared object `libraryPath`.
void linkSharedObject(const std::string &objectPath,
                      const std::string &libraryPath, const Failure &fail) {
  std::string driver = linkerDriver(fail);
  std::string log = libraryPath + ".log";
  // OpenMP's runtime runs the kernels' instances on every core (any
  // libomp.so.5: their ABI is stable; Debian's libomp5).
  llvm::SmallVector<llvm::StringRef> args = {
      driver,     "-shared",        "-o", libraryPath,
      objectPath, "-l:libomp.so.5", "-lm"};
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, log, log};
  std::string error;
  int status = llvm::sys::ExecuteAndWait(driver, args, std::nullopt, redirects,
                                         0, 0, &error);
  std::string output;
  if (auto text = llvm::MemoryBuffer::getFile(log))
    output = (*text)->getBuffer().str();
  llvm::sys::fs::remove(log);
  if (status != 0)
    fail("linking", fmt::format("{} -shared failed ({}): {}{}", driver, status,
                                error, output));
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
                  const std::string &dumpDirectory, bool gpuTiling) {
  initializeLlvmOnce();
  Failure fail(what);
  std::vector<std::pair<std::string, double>> stages;
  Clock::time_point start = Clock::now();
  CompileContext compile;
  OwningOpRef<ModuleOp> module = compile.createModule();
  build(*module);
  lower(*module, chunkSize, gpuTiling, dumpDirectory, compile.diagnostics(),
        fail);
  stages.emplace_back("passes", secondsSince(start));

  start = Clock::now();
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(*module, llvmContext, "fwp-kernel");
  if (!llvmModule)
    fail("translating to LLVM IR", compile.diagnostics().text());
  std::unique_ptr<llvm::TargetMachine> tm = hostTargetMachine(
      fail, /*positionIndependent=*/true, codeGenLevel(optLevel));
  llvmModule->setDataLayout(tm->createDataLayout());
  llvmModule->setTargetTriple(tm->getTargetTriple());
  // The optimiser gets the host's target machine so that its cost models
  // (vectorisation above all) know the host's vector units.
  auto optimize =
      makeOptimizingTransformer(optLevel, /*sizeLevel=*/0, tm.get());
  if (llvm::Error error = optimize(llvmModule.get()))
    fail("optimising LLVM IR", llvm::toString(std::move(error)));
  stages.emplace_back("llvm-opt", secondsSince(start));

  start = Clock::now();
  defineTruncSfBf2(*llvmModule);
  llvm::SmallVector<char, 0> object = emitObject(*llvmModule, *tm, fail);
  std::string objectPath = outputDir + "/kernel.o";
  {
    std::error_code ec;
    llvm::raw_fd_ostream out(objectPath, ec);
    if (ec)
      fail("writing the object", objectPath + ": " + ec.message());
    out.write(object.data(), object.size());
  }
  stages.emplace_back("codegen", secondsSince(start));

  start = Clock::now();
  linkSharedObject(objectPath, outputDir + "/kernel.so", fail);
  llvm::sys::fs::remove(objectPath);
  stages.emplace_back("link", secondsSince(start));
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
  lower(*module, chunkSize, /*gpuTiling=*/false, dumpDirectory,
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
