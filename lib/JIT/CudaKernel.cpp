//===- CudaKernel.cpp - Entry points compiled for NVIDIA GPUs -------------===//
//
// The entry point's module (AttentionModule.h), lowered by fwp-to-ptx, is
// exported as a launch plan (docs/launch-plan.md) over the PTX of its
// kernels: `<dir>/plan.fwp` and `<dir>/<module>.ptx`, which the runtime
// carries out with the CUDA driver (fwp/Runtime/AttentionEntry.h).
// Compiling needs no GPU.
//
//===----------------------------------------------------------------------===//

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

#include <chrono>

using namespace mlir;

namespace fwp::jit {

StageTimes compileCudaEntry(const KernelDesc &desc, EntryPoint entry,
                            const std::string &key, const std::string &dir,
                            const CompileOptions &options) {
  auto start = std::chrono::steady_clock::now();
  Failure fail(fmt::format("the {} of the CUDA kernel ({})",
                           rt::entryPointName(entry), desc.str()));
  CompileContext compile;
  OwningOpRef<ModuleOp> module = compile.createModule();
  buildAttentionModule(*module, desc, entry);
  if (failed(verify(*module)))
    fail("building the module", compile.diagnostics().text());

  PassManager pm(&compile.context(), ModuleOp::getOperationName(),
                 OpPassManager::Nesting::Implicit);
  PtxPipelineOptions pipeline;
  pipeline.chunkSize = desc.chunkSize;
  pipeline.chip = desc.targetChip();
  buildFwpToPtxPipeline(pm, pipeline);
  dumpEveryStage(pm, *module, options.dumpDirectory);
  if (failed(pm.run(*module)))
    fail("the fwp-to-ptx pipeline", compile.diagnostics().text());

  const char *function =
      entry == EntryPoint::Forward ? kForwardName : kBackwardName;
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
    if (!options.dumpDirectory.empty())
      writeDumpFile(options.dumpDirectory, name, text);
    names.push_back(name);
  }
  rt::writeModuleInfo(dir, moduleInfo(desc, entry, key), names);
  return {{"passes+export", std::chrono::duration<double>(
                                std::chrono::steady_clock::now() - start)
                                .count()}};
}

} // namespace fwp::jit
