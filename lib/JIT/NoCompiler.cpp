//===- NoCompiler.cpp - The JIT without its compiler ----------------------===//
//
// What the runtime-only build (libfwp_runtime.so) links in place of the
// compiler: every compilation, reached only when the disk cache has no
// entry for a key, fails saying what is missing and how to get it. The rest
// of the JIT (disk cache, argument checks, running entry points) is the same
// code as with the compiler. Needs neither MLIR nor LLVM.
//
//===----------------------------------------------------------------------===//

#include "DiskCache.h"
#include "Kernel.h"
#include "ScanKernel.h"

#include <fmt/format.h>

#include <stdexcept>

namespace fwp::jit {
namespace {

[[noreturn]] void missing(const std::string &key) {
  std::string cache = cacheDirectoryFromEnvironment();
  throw std::runtime_error(fmt::format(
      "no compiled kernel for '{}' in the disk cache ({}), and this library "
      "(libfwp_runtime.so) has no compiler. Compile it where fwp is built, "
      "with the same sources: call the same function there through "
      "libfwp.so with FWP_CACHE_DIR set to a directory you then copy here "
      "(fwp.prepare() in Python does it without a GPU), or use libfwp.so",
      key, cache.empty() ? "off: FWP_CACHE=off" : cache));
}

} // namespace

bool compilerAvailable() { return false; }

const std::string &hostTargetDescription() {
  throw std::runtime_error(
      "CPU kernels are compiled for the host they run on: this library "
      "(libfwp_runtime.so) has no compiler and runs CUDA kernels only; use "
      "libfwp.so for the CPU");
}

StageTimes compileCpuEntry(const KernelDesc &, EntryPoint,
                           const std::string &key, const std::string &,
                           const CompileOptions &) {
  missing(key);
}

StageTimes compileCudaEntry(const KernelDesc &, EntryPoint,
                            const std::string &key, const std::string &,
                            const CompileOptions &) {
  missing(key);
}

void compileCpuScan(const ScanDesc &, const std::string &key,
                    const std::string &) {
  missing(key);
}

void compileCudaScan(const ScanDesc &, EntryPoint, const std::string &key,
                     const std::string &) {
  missing(key);
}

} // namespace fwp::jit
