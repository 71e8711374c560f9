//===- CpuKernel.cpp - Entry points compiled to host shared objects -------===//
//
// One entry point = one module holding one function, e.g. the forward:
//
//   func.func @fwp_attention(%x: tensor<?x?xDMxT>, %w_q, %w_k, %w_v: DMxDM,
//                            %w_beta: HxDM, %w_o: DMxDM, %b_o: DM,
//                            %y: memref<?x?xDMxT>)
//     %r = fwp.attention %x, ... heads = H nu = N eps = E rule = R
//     bufferization.materialize_in_destination %r in restrict writable %y
//
// lowered by fwp-to-cpu, optimised and compiled to object code by LLVM for
// this host, and linked into `kernel.so`, which the runtime loads with
// dlopen and calls through MLIR's C interface (_mlir_ciface_fwp_attention).
// The backward (@fwp_attention_grad) recomputes the forward it needs, so the
// two entry points share no state, are compiled apart, and a process that
// only runs the forward never compiles the backward.
//
// Why outputs are memref arguments rather than results: fwp-to-cpu turns
// results into out-parameters only for static shapes; a dynamically shaped
// result would come back as a buffer malloc'ed by the kernel. Writing into
// the caller's buffers keeps every allocation on the caller's side.
//
//===----------------------------------------------------------------------===//

#include "AttentionModule.h"
#include "CpuCompiler.h"
#include "Kernel.h"

#include <fmt/format.h>

using namespace mlir;

namespace fwp::jit {

StageTimes compileCpuEntry(const KernelDesc &desc, EntryPoint entry,
                           const std::string &key, const std::string &dir,
                           const CompileOptions &options) {
  StageTimes stages = compileCpuLibrary(
      fmt::format("the {} of the kernel ({})", rt::entryPointName(entry),
                  desc.str()),
      desc.chunkSize, [&](ModuleOp m) { buildAttentionModule(m, desc, entry); },
      dir, cpuOptLevel(options), options.dumpDirectory,
      GpuFormsOnHost{options.cpuGpuTiling, options.gpuStages});
  rt::writeModuleInfo(dir, moduleInfo(desc, entry, key), {"kernel.so"});
  return stages;
}

} // namespace fwp::jit
