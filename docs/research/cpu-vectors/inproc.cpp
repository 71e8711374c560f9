// In-process version of the whole pipeline (what a compiler linking libMLIR
// would do): parse payload + transform library, apply the transform script with
// transform::applyTransformNamedSequence, run the lowering PassManager,
// translate to LLVM IR, optimize (O2, host CPU), emit an object file.
//
//   inproc <kernel.mlir> <sched.mlir> <out.o> [omp|async|serial]
//
// Link the object afterwards: cc -shared out.o -o lib.so
// /usr/lib/x86_64-linux-gnu/libomp.so.5
#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/Transform/IR/TransformDialect.h"
#include "mlir/Dialect/Transform/Transforms/TransformInterpreterUtils.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/SubtargetFeature.h"

#include <chrono>
#include <cstdio>
#include <string>

using namespace mlir;

static double secs(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
      .count();
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr,
            "usage: %s kernel.mlir sched.mlir out.o [omp|async|serial]\n",
            argv[0]);
    return 1;
  }
  std::string mode = argc > 4 ? argv[4] : "omp";
  auto T0 = std::chrono::steady_clock::now();

  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllExtensions(
      registry); // transform-dialect extensions, ConvertToLLVM interfaces, ...
  registerAllToLLVMIRTranslations(
      registry);       // builtin, llvm, openmp, ... -> LLVM IR
  registerAllPasses(); // only needed for parsePassPipeline(string)
  MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();

  // 1. Payload and transform library.
  OwningOpRef<ModuleOp> payload = parseSourceFile<ModuleOp>(argv[1], &ctx);
  OwningOpRef<ModuleOp> library = parseSourceFile<ModuleOp>(argv[2], &ctx);
  if (!payload || !library)
    return 1;

  // 2. Apply the schedule: find @__transform_main in the library, run it on the
  // payload.
  //    (Alternative:
  //    ctx.getOrLoadDialect<transform::TransformDialect>()->loadIntoLibraryModule(
  //     std::move(library)) and then add transform::createInterpreterPass() to
  //     a PassManager.)
  Operation *entry = transform::detail::findTransformEntryPoint(
      payload->getOperation(), *library,
      transform::TransformDialect::kTransformEntryPointSymbolName);
  if (!entry)
    return 1;
  transform::TransformOptions topts;
  topts.enableExpensiveChecks(false);
  if (failed(transform::applyTransformNamedSequence(payload->getOperation(),
                                                    entry, *library, topts))) {
    fprintf(stderr, "transform script failed\n");
    return 1;
  }
  double tTransform = secs(T0);

  // 3. math.exp -> polynomial (no libm calls, vectorizes).
  {
    RewritePatternSet patterns(&ctx);
    populateMathPolynomialApproximationPatterns(
        patterns, MathPolynomialApproximationOptions{});
    if (failed(applyPatternsGreedily(*payload, std::move(patterns))))
      return 1;
  }

  // 4. Lowering pipeline (same passes as the mlir-opt command lines in
  // NOTES.md).
  PassManager pm(&ctx);
  std::string par;
  if (mode == "omp")
    par = "scf-forall-to-parallel,convert-scf-to-openmp,";
  else if (mode == "async")
    par = "scf-forall-to-parallel,async-parallel-for{async-dispatch=true "
          "min-task-size=1},async-to-async-runtime,"
          "async-runtime-ref-counting,async-runtime-ref-counting-opt,convert-"
          "async-to-llvm,";
  else
    par = "scf-forall-to-for,";
  std::string pipeline =
      // NB: no "builtin.module(...)" anchor here: pm is already anchored on the
      // module, an anchor would nest and silently match nothing.
      par +
      "convert-vector-to-scf,convert-linalg-to-loops,lower-affine,arith-expand,"
      "expand-strided-metadata,finalize-memref-to-llvm,convert-scf-to-cf,"
      "convert-vector-to-llvm,convert-to-llvm,reconcile-unrealized-casts";
  if (failed(parsePassPipeline(pipeline, pm)))
    return 1;
  if (failed(pm.run(*payload))) {
    fprintf(stderr, "lowering failed\n");
    return 1;
  }
  double tLower = secs(T0);
  if (getenv("INPROC_DUMP"))
    payload->print(llvm::errs());

  // 5. MLIR LLVM dialect -> llvm::Module, host target, O2, object file.
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  llvm::LLVMContext llctx;
  std::unique_ptr<llvm::Module> mod = translateModuleToLLVMIR(*payload, llctx);
  if (!mod)
    return 1;
  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  std::string err;
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, err);
  if (!target) {
    fprintf(stderr, "%s\n", err.c_str());
    return 1;
  }
  llvm::SubtargetFeatures features;
  for (auto &f : llvm::sys::getHostCPUFeatures())
    features.AddFeature(f.first(), f.second);
  llvm::TargetOptions to;
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(
      triple, llvm::sys::getHostCPUName(), features.getString(), to,
      llvm::Reloc::PIC_, std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  mod->setTargetTriple(triple);
  mod->setDataLayout(tm->createDataLayout());
  // O2 module pipeline (also runs the coroutine passes the async lowering
  // needs).
  if (auto e = makeOptimizingTransformer(2, 0, tm.get())(mod.get())) {
    llvm::errs() << e << "\n";
    return 1;
  }
  std::error_code ec;
  llvm::raw_fd_ostream os(argv[3], ec, llvm::sys::fs::OF_None);
  if (ec)
    return 1;
  llvm::legacy::PassManager cg;
  if (tm->addPassesToEmitFile(cg, os, nullptr,
                              llvm::CodeGenFileType::ObjectFile))
    return 1;
  cg.run(*mod);
  os.flush();
  printf("ok: %s (cpu=%s) transform %.3fs, +lowering %.3fs, total %.3fs\n",
         argv[3], llvm::sys::getHostCPUName().str().c_str(), tTransform, tLower,
         secs(T0));
  return 0;
}
