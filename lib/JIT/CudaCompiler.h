//===- CudaCompiler.h - Compiling fwp IR into launch plans ------*- C++ -*-===//
//
// Internal to lib/JIT (FwpJIT), not installed: what the whole module's and
// the bare scan's CUDA compilations share.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_LIB_JIT_CUDACOMPILER_H
#define FWP_LIB_JIT_CUDACOMPILER_H

#include "Kernel.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/STLFunctionalExtras.h"

namespace fwp::jit {

/// Builds a module with `build` (in a fresh context), lowers it with
/// fwp-to-ptx for `chip` (`chunkSize` steps per chunk of a scan; the scan's
/// kernels fwp-tile-scan's, or with `gpuStages` the chunk stages'), and writes
/// the launch plan of its host function `function` into `dir`: plan.fwp, a
/// <module>.ptx per kernel module and the manifest `info` listing them.
/// With a `dumpDirectory`, every stage's IR and the files go there too.
/// Throws std::runtime_error "compiling <what> failed in <stage>:\n<MLIR
/// diagnostics>".
StageTimes compileCudaModule(const std::string &what, int64_t chunkSize,
                             const std::string &chip, bool gpuStages,
                             llvm::function_ref<void(mlir::ModuleOp)> build,
                             llvm::StringRef function, const std::string &dir,
                             const rt::ModuleInfo &info,
                             const std::string &dumpDirectory = "");

} // namespace fwp::jit

#endif // FWP_LIB_JIT_CUDACOMPILER_H
