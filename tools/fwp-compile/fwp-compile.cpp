//===- fwp-compile.cpp - Compile fwp ahead of time ------------------------===//
//
// Two ways in:
//
//   fwp-compile --backend cpu|cuda --heads H --d-head D [--nu N] [--eps E]
//               [--rule delta|sum] [--dtype f32|f64] [--chunk-size C]
//               [--chip sm_NN] [--entry forward|backward|both] -o DIR
//
// compiles the FastWeightsAttention module of one kernel description into
// DIR/forward and DIR/backward: the entry directories the disk cache holds
// (docs/compiled-modules.md), which fwp-exec and fwp::rt::AttentionEntry run
// with the runtime alone. CUDA code needs no GPU to compile.
//
//   fwp-compile INPUT.mlir --function NAME -o DIR [--options "..."]
//
// runs fwp-to-ptx on a function of fwp IR and writes DIR/plan.fwp
// (docs/launch-plan.md) and one DIR/<module>.ptx per kernel; with -o -, it
// prints the plan instead.
//
// Exit status 2 and one line for a bad command line or description.
//
//===----------------------------------------------------------------------===//

#include "fwp/Dialect/FwpDialect.h"
#include "fwp/JIT/JIT.h"
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

#include <fmt/format.h>

#include <exception>
#include <stdexcept>

using namespace mlir;
namespace cl = llvm::cl;

namespace {

cl::opt<std::string> inputFile(cl::Positional, cl::init(""),
                               cl::desc("[<input .mlir>]"));
cl::opt<std::string> outputDir("o", cl::Required,
                               cl::desc("output directory (- prints the "
                                        "launch plan of an .mlir input)"),
                               cl::value_desc("dir"));

// An .mlir input.
cl::opt<std::string> function("function", cl::init(""),
                              cl::desc("host function to compile (with an "
                                       ".mlir input)"));
cl::opt<std::string> pipelineOptions(
    "options", cl::init(""),
    cl::desc("fwp-to-ptx options, e.g. \"chip=sm_90 chunk-size=32\""));

// A kernel description (given --backend).
cl::opt<fwp::Backend>
    backend("backend", cl::init(fwp::Backend::Cpu),
            cl::desc("compile the module of a kernel description for"),
            cl::values(clEnumValN(fwp::Backend::Cpu, "cpu",
                                  "this host's CPU: a shared object"),
                       clEnumValN(fwp::Backend::Cuda, "cuda",
                                  "an NVIDIA GPU: a launch plan and PTX")));
cl::opt<int64_t> heads("heads", cl::init(0), cl::desc("heads"));
cl::opt<int64_t> dHead("d-head", cl::init(0), cl::desc("d_k = d_v per head"));
cl::opt<int64_t> nu("nu", cl::init(1), cl::desc("DPFP order"));
cl::opt<double> eps("eps", cl::init(1e-6), cl::desc("DPFP epsilon"));
cl::opt<fwp::jit::Rule> rule(
    "rule", cl::init(fwp::jit::Rule::Delta), cl::desc("fast-weight update"),
    cl::values(clEnumValN(fwp::jit::Rule::Delta, "delta", "the delta rule"),
               clEnumValN(fwp::jit::Rule::Sum, "sum", "the sum rule")));
cl::opt<fwp::jit::DType>
    dtype("dtype", cl::init(fwp::jit::DType::F32), cl::desc("element type"),
          cl::values(clEnumValN(fwp::jit::DType::F32, "f32", "float32"),
                     clEnumValN(fwp::jit::DType::F64, "f64", "float64"),
                     clEnumValN(fwp::jit::DType::BF16, "bf16",
                                "bfloat16 storage, float32 arithmetic"),
                     clEnumValN(fwp::jit::DType::F16, "f16",
                                "IEEE half storage, float32 arithmetic")));
cl::opt<int64_t> chunkSize("chunk-size", cl::init(fwp::kDefaultChunkSize),
                           cl::desc("steps per chunk of the scan"));
cl::opt<std::string> chip("chip", cl::init(""),
                          cl::desc("CUDA chip, e.g. sm_90 (the default)"));
enum class EntryChoice { Forward, Backward, Both };
cl::opt<EntryChoice> entry(
    "entry", cl::init(EntryChoice::Both), cl::desc("entry points"),
    cl::values(clEnumValN(EntryChoice::Forward, "forward", "DIR/forward"),
               clEnumValN(EntryChoice::Backward, "backward", "DIR/backward"),
               clEnumValN(EntryChoice::Both, "both",
                          "DIR/forward and DIR/backward")));

/// An .mlir input: its function to a launch plan and PTX.
int compileMlir() {
  if (function.empty()) {
    fmt::print(stderr, "fwp-compile: an .mlir input needs --function\n");
    return 2;
  }
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
    fmt::print(stderr, "fwp-compile: bad --options '{}'\n",
               pipelineOptions.getValue());
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
    fmt::print(stderr, "fwp-compile: {}\n", e.what());
    return 1;
  }
  return 0;
}

/// A kernel description: its entry points to entry directories.
int compileDescription() {
  fwp::jit::KernelDesc desc;
  desc.backend = backend;
  desc.heads = heads;
  desc.dHead = dHead;
  desc.nu = nu;
  desc.eps = eps;
  desc.rule = rule;
  desc.dtype = dtype;
  desc.chunkSize = chunkSize;
  desc.chip = chip;
  if (outputDir == "-") {
    fmt::print(stderr, "fwp-compile: --backend writes directories; give -o "
                       "DIR\n");
    return 2;
  }
  if (!chip.empty() && desc.backend == fwp::jit::Backend::Cpu) {
    fmt::print(stderr, "fwp-compile: --chip is for --backend cuda; the CPU "
                       "code is for this host\n");
    return 2;
  }
  std::vector<fwp::jit::EntryPoint> entries;
  if (entry != EntryChoice::Backward)
    entries.push_back(fwp::jit::EntryPoint::Forward);
  if (entry != EntryChoice::Forward)
    entries.push_back(fwp::jit::EntryPoint::Backward);
  try {
    desc.validate();
    for (fwp::jit::EntryPoint e : entries) {
      std::string dir = fmt::format("{}/{}", outputDir.getValue(),
                                    fwp::rt::entryPointName(e));
      fwp::jit::compileEntry(desc, e, dir);
      fmt::print("{}: {}\n", dir, fwp::jit::cacheKey(desc, e));
    }
  } catch (const std::invalid_argument &e) {
    fmt::print(stderr, "fwp-compile: {}\n", e.what());
    return 2;
  } catch (const std::exception &e) {
    fmt::print(stderr, "fwp-compile: {}\n", e.what());
    return 1;
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(argc, argv, "fwp ahead-of-time compiler\n");
  bool fromMlir = !inputFile.empty();
  bool fromDescription = backend.getNumOccurrences() > 0;
  if (fromMlir == fromDescription) {
    fmt::print(stderr,
               "fwp-compile: give either an .mlir input (with "
               "--function) or --backend cpu|cuda and a kernel "
               "description, not {}\n",
               fromMlir ? "both" : "neither");
    return 2;
  }
  return fromMlir ? compileMlir() : compileDescription();
}
