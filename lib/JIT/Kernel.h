//===- Kernel.h - Compiling one entry point into a directory ---*- C++ -*-===//
//
// What each backend provides to the JIT: compile one entry point of a
// description into an empty directory, as the files and manifest the runtime
// loads (fwp/Runtime/AttentionEntry.h). Internal to lib/JIT (FwpJIT), not
// installed.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_LIB_JIT_KERNEL_H
#define FWP_LIB_JIT_KERNEL_H

#include "fwp/JIT/JIT.h"

#include <string>
#include <utility>
#include <vector>

namespace fwp::jit {

/// The manifest of a compiled entry point of `desc` (files not yet listed).
rt::ModuleInfo moduleInfo(const KernelDesc &desc, EntryPoint entry,
                          const std::string &key);

/// Backend::Cpu: lowers the entry point with fwp-to-cpu and writes
/// `<dir>/kernel.so` and its manifest. Throws std::runtime_error with the
/// diagnostics on failure.
StageTimes compileCpuEntry(const KernelDesc &desc, EntryPoint entry,
                           const std::string &key, const std::string &dir,
                           const CompileOptions &options);

/// Backend::Cuda: lowers the entry point with fwp-to-ptx and writes its
/// launch plan `<dir>/plan.fwp`, the PTX of every kernel and the manifest.
/// Needs no GPU.
StageTimes compileCudaEntry(const KernelDesc &desc, EntryPoint entry,
                            const std::string &key, const std::string &dir,
                            const CompileOptions &options);

/// The host CPU's name and features, as the code generator targets them
/// (e.g. "x86_64-pc-linux-gnu znver3 +avx2,+fma,..."): part of a CPU
/// kernel's cache key. Computed once per process.
const std::string &hostTargetDescription();

/// What is wrong with `chip` for `backend` (the CPU takes none; CUDA
/// "sm_NN" or "sm_NNa", NN >= 50, or none for the default), or "".
std::string chipProblem(Backend backend, const std::string &chip);

/// The manifest fields every compiled entry point has (files not listed).
rt::ModuleInfo entryInfo(Backend backend, EntryPoint entry, DType dtype,
                         const std::string &key);

/// The shortest %g form of `v` that reads back as exactly `v`: equal
/// descriptions must give equal strings, and 1e-6 should read "1e-06".
std::string roundTrip(double v);

/// The optimisation level `options` asks for CPU code.
inline int cpuOptLevel(const CompileOptions &options) {
  return options.cpuOptLevel < 0 ? kDefaultCpuOptLevel : options.cpuOptLevel;
}

} // namespace fwp::jit

#endif // FWP_LIB_JIT_KERNEL_H
