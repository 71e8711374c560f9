//===- HostObjects.cpp - LLVM IR to a host shared object -----------------===//

#include "HostObjects.h"

#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Transforms/Utils/Cloning.h"
#include "llvm/Transforms/Utils/ValueMapper.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <future>
#include <thread>

namespace fwp::jit {

std::unique_ptr<llvm::TargetMachine>
hostTargetMachine(const Failure &fail, bool positionIndependent,
                  llvm::CodeGenOptLevel level) {
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

namespace {

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

/// Runs LLVM's default pipeline at `optLevel` on `module`, with the host's
/// target machine so that its cost models know the host's vector units. No
/// loop unrolling: fwp-tiles-to-vectors has already unrolled each product's
/// register tile; LLVM's unrolling of the loops around them took a quarter
/// of the optimiser's time and grew the code that instruction selection
/// then takes by a third, for no measurable speed.
void optimizeForHost(llvm::Module &module, int optLevel,
                     llvm::TargetMachine &tm) {
  llvm::PipelineTuningOptions tuning;
  tuning.LoopUnrolling = false;
  llvm::LoopAnalysisManager loops;
  llvm::FunctionAnalysisManager functions;
  llvm::CGSCCAnalysisManager sccs;
  llvm::ModuleAnalysisManager modules;
  llvm::PassBuilder builder(&tm, tuning);
  builder.registerModuleAnalyses(modules);
  builder.registerCGSCCAnalyses(sccs);
  builder.registerFunctionAnalyses(functions);
  builder.registerLoopAnalyses(loops);
  builder.crossRegisterProxies(loops, functions, sccs, modules);
  static const llvm::OptimizationLevel levels[] = {
      llvm::OptimizationLevel::O0, llvm::OptimizationLevel::O1,
      llvm::OptimizationLevel::O2, llvm::OptimizationLevel::O3};
  llvm::OptimizationLevel level = levels[std::clamp(optLevel, 0, 3)];
  llvm::ModulePassManager pipeline =
      level == llvm::OptimizationLevel::O0
          ? builder.buildO0DefaultPipeline(level)
          : builder.buildPerModuleDefaultPipeline(level);
  pipeline.run(module, modules);
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

/// Links `objects` into the shared object `libraryPath`.
void linkSharedObject(llvm::ArrayRef<std::string> objects,
                      const std::string &libraryPath, const Failure &fail) {
  std::string driver = linkerDriver(fail);
  std::string log = libraryPath + ".log";
  llvm::SmallVector<llvm::StringRef> args = {driver, "-shared", "-o",
                                             libraryPath};
  args.append(objects.begin(), objects.end());
  // OpenMP's runtime runs the kernels' instances on every core (any
  // libomp.so.5: their ABI is stable; Debian's libomp5).
  args.append({"-l:libomp.so.5", "-lm"});
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

/// Makes every local symbol of `module` a hidden global: a function can
/// then go to another part than its callers, and the shared object still
/// exports only the entry points.
void externalizeLocals(llvm::Module &module) {
  for (llvm::GlobalValue &value : module.global_values()) {
    if (value.hasLocalLinkage()) {
      value.setLinkage(llvm::GlobalValue::ExternalLinkage);
      value.setVisibility(llvm::GlobalValue::HiddenVisibility);
    }
    if (!value.hasName())
      value.setName("fwp.unnamed");
  }
}

/// Each defined function's part: the largest first, each into the part
/// with the fewest instructions so far (one large kernel body would
/// otherwise make one part twice another).
llvm::DenseMap<const llvm::GlobalValue *, unsigned>
balanceFunctions(llvm::Module &module, unsigned parts) {
  std::vector<const llvm::Function *> functions;
  for (const llvm::Function &function : module.functions())
    if (!function.isDeclaration())
      functions.push_back(&function);
  std::stable_sort(functions.begin(), functions.end(),
                   [](const llvm::Function *a, const llvm::Function *b) {
                     return a->getInstructionCount() > b->getInstructionCount();
                   });
  std::vector<size_t> load(parts, 0);
  llvm::DenseMap<const llvm::GlobalValue *, unsigned> partOf;
  for (const llvm::Function *function : functions) {
    unsigned lightest =
        std::min_element(load.begin(), load.end()) - load.begin();
    partOf[function] = lightest;
    load[lightest] += function->getInstructionCount();
  }
  return partOf;
}

/// `module`'s functions in `parts` modules of about equal size (the global
/// variables in the first), as bitcode: each part is compiled in an
/// LLVMContext of its own, as a context may not be shared between threads.
std::vector<llvm::SmallVector<char, 0>> splitIntoBitcode(llvm::Module &module,
                                                         unsigned parts) {
  externalizeLocals(module);
  llvm::DenseMap<const llvm::GlobalValue *, unsigned> partOf =
      balanceFunctions(module, parts);
  std::vector<llvm::SmallVector<char, 0>> bitcode(parts);
  for (unsigned index = 0; index < parts; ++index) {
    llvm::ValueToValueMapTy map;
    std::unique_ptr<llvm::Module> part =
        llvm::CloneModule(module, map, [&](const llvm::GlobalValue *value) {
          auto found = partOf.find(value);
          return found == partOf.end() ? index == 0 : found->second == index;
        });
    llvm::raw_svector_ostream os(bitcode[index]);
    llvm::WriteBitcodeToFile(*part, os);
  }
  return bitcode;
}

/// The bitcode `part` optimised and compiled to object code.
llvm::SmallVector<char, 0> compilePart(llvm::ArrayRef<char> part, int optLevel,
                                       const Failure &fail) {
  llvm::LLVMContext context;
  auto module = llvm::parseBitcodeFile(
      llvm::MemoryBufferRef(llvm::StringRef(part.data(), part.size()), "part"),
      context);
  if (!module)
    fail("reading a part of the module", llvm::toString(module.takeError()));
  std::unique_ptr<llvm::TargetMachine> tm = hostTargetMachine(
      fail, /*positionIndependent=*/true, codeGenLevel(optLevel));
  optimizeForHost(**module, optLevel, *tm);
  defineTruncSfBf2(**module);
  return emitObject(**module, *tm, fail);
}

} // namespace

void buildSharedObject(std::unique_ptr<llvm::Module> module, int optLevel,
                       const std::string &outputDir, const Failure &fail,
                       std::vector<std::pair<std::string, double>> &stages) {
  Clock::time_point start = Clock::now();
  std::unique_ptr<llvm::TargetMachine> tm = hostTargetMachine(
      fail, /*positionIndependent=*/true, codeGenLevel(optLevel));
  module->setDataLayout(tm->createDataLayout());
  module->setTargetTriple(tm->getTargetTriple());
  // Each part is optimised and compiled on a thread of its own. The parts
  // are whole functions (the kernels' tiles are noinline functions already,
  // fwp-outline-tiles), so what the optimiser loses is what it would infer
  // about a callee in another part; the kernels ran as fast either way
  // (bench/results/compile-2026-11-27.md).
  unsigned parts = std::clamp(std::thread::hardware_concurrency(), 1u, 8u);
  std::vector<llvm::SmallVector<char, 0>> bitcode =
      splitIntoBitcode(*module, parts);
  module.reset();
  stages.emplace_back("split", secondsSince(start));

  start = Clock::now();
  std::vector<std::future<llvm::SmallVector<char, 0>>> compiling;
  for (llvm::ArrayRef<char> part : bitcode)
    compiling.push_back(std::async(std::launch::async, [part, optLevel, &fail] {
      return compilePart(part, optLevel, fail);
    }));
  std::vector<std::string> objects;
  for (size_t i = 0; i < compiling.size(); ++i) {
    llvm::SmallVector<char, 0> object = compiling[i].get();
    std::string path = fmt::format("{}/kernel-{}.o", outputDir, i);
    std::error_code ec;
    llvm::raw_fd_ostream out(path, ec);
    if (ec)
      fail("writing the object", path + ": " + ec.message());
    out.write(object.data(), object.size());
    objects.push_back(path);
  }
  stages.emplace_back("llvm", secondsSince(start));

  start = Clock::now();
  linkSharedObject(objects, outputDir + "/kernel.so", fail);
  for (const std::string &path : objects)
    llvm::sys::fs::remove(path);
  stages.emplace_back("link", secondsSince(start));
}

} // namespace fwp::jit
