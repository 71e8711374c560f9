//===- CudaKernel.cpp - Entry points compiled for NVIDIA GPUs -------------===//
//
// A module's function, lowered by fwp-to-ptx, is exported as a launch plan
// (docs/launch-plan.md) over the PTX of its kernels: `<dir>/plan.fwp` and
// `<dir>/<module>.ptx`, which the runtime carries out with the CUDA driver
// (fwp/Runtime/PlanCuda.h). Compiling needs no GPU.
//
//===----------------------------------------------------------------------===//

#include "CudaCompiler.h"

#include "AttentionModule.h"
#include "CompileSupport.h"
#include "IRDump.h"
#include "Kernel.h"

#include "fwp/Pipelines/Pipelines.h"
#include "fwp/Runtime/Files.h"
#include "fwp/Target/LaunchPlan.h"

#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"

#include <fmt/format.h>

using namespace mlir;

namespace fwp::jit {

StageTimes compileCudaModule(const std::string &what, int64_t chunkSize,
                             const std::string &chip, bool gpuStages,
                             function_ref<void(ModuleOp)> build,
                             StringRef function, const std::string &dir,
                             const rt::ModuleInfo &info,
                             const std::string &dumpDirectory) {
  Clock::time_point start = Clock::now();
  Failure fail(what);
  CompileContext compile;
  OwningOpRef<ModuleOp> module = compile.createModule();
  build(*module);
  if (failed(verify(*module)))
    fail("building the module", compile.diagnostics().text());

  PassManager pm(&compile.context(), ModuleOp::getOperationName(),
                 OpPassManager::Nesting::Implicit);
  PtxPipelineOptions pipeline;
  pipeline.chunkSize = chunkSize;
  pipeline.chip = chip;
  pipeline.gpuStages = gpuStages;
  buildFwpToPtxPipeline(pm, pipeline);
  runPipeline(pm, *module, "fwp-to-ptx", dumpDirectory, compile.diagnostics(),
              fail);

  FailureOr<ExportedPlan> exported =
      exportLaunchPlan(*module, function, pipeline.indexBitwidth);
  if (failed(exported))
    fail("exporting the launch plan", compile.diagnostics().text());

  // The plan's text comes from the runtime's own printer: one owner.
  std::vector<std::pair<std::string, std::string>> files = {
      {"plan.fwp", exported->plan.str()}};
  for (const auto &[name, ptx] : exported->ptx)
    files.emplace_back(name + ".ptx", ptx);
  std::vector<std::string> names;
  for (const auto &[name, text] : files) {
    rt::writeFile(fmt::format("{}/{}", dir, name), text);
    if (!dumpDirectory.empty())
      writeDumpFile(dumpDirectory, name, text);
    names.push_back(name);
  }
  rt::writeModuleInfo(dir, info, names);
  return {{"passes+export", secondsSince(start)}};
}

StageTimes compileCudaEntry(const KernelDesc &desc, EntryPoint entry,
                            const std::string &key, const std::string &dir,
                            const CompileOptions &options) {
  return compileCudaModule(
      fmt::format("the {} of the CUDA kernel ({})", rt::entryPointName(entry),
                  desc.str()),
      desc.chunkSize, desc.targetChip(), options.gpuStages,
      [&](ModuleOp m) { buildAttentionModule(m, desc, entry); },
      entry == EntryPoint::Forward ? kForwardName : kBackwardName, dir,
      moduleInfo(desc, entry, key), options.dumpDirectory);
}

} // namespace fwp::jit
