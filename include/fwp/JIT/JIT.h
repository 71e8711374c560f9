//===- JIT.h - Compiled FastWeightsAttention kernels ------------*- C++ -*-===//
//
// Compiles the whole FastWeightsAttention module for one kernel description,
// forward (one `fwp.attention` op) and backward (one `fwp.attention_grad`
// op), and runs either on host buffers:
//
//   fwp::jit::KernelDesc desc;
//   desc.heads = 4; desc.dHead = 8; desc.nu = 2;
//   auto kernel = fwp::jit::compile(desc);        // cached, thread-safe
//   kernel->forward(seqLen, batch, x, wQ, wK, wV, wBeta, wO, bO, y);
//   kernel->backward(seqLen, batch, x, wQ, wK, wV, wBeta, wO, bO, dy,
//                    dx, dwQ, dwK, dwV, dwBeta, dwO, dbO);
//
// Layouts are those of fwp/Reference/Reference.h (row-major, C order):
//   x, y, dy, dx     [seqLen, batch, dModel]     dModel = heads * dHead
//   wQ, wK, wV (dW*) [dModel, dModel]  (nn.Linear: q = x wQ^T)
//   wBeta (dwBeta)   [heads, dModel]   (must be given for the sum rule too,
//                                       which ignores its values)
//   wO (dwO)         [dModel, dModel]
//   bO (dbO)         [dModel]
// The initial fast-weight state is zero, and the backward has no gradient of
// the final state. Inputs are never written.
//
// Compiled code is kept on disk between processes (docs/compiled-modules.md):
// each entry point (forward, backward) is compiled on its first use, into the
// disk cache ($FWP_CACHE_DIR, else $XDG_CACHE_HOME/fwp, else ~/.cache/fwp;
// FWP_CACHE=off turns it off), and loaded from there through the runtime
// (fwp/Runtime/AttentionEntry.h), which needs neither MLIR nor LLVM. A later
// process finds it there and compiles nothing.
//
// This header needs neither MLIR nor LLVM headers: the compiler lives behind
// CompiledAttention's private implementation, so callers (fwp-run, bindings)
// only link FwpJIT.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_JIT_JIT_H
#define FWP_JIT_JIT_H

#include "fwp/ChunkSize.h"
#include "fwp/GpuStages.h"
#include "fwp/Runtime/ElementType.h"
#include "fwp/Runtime/ModuleInfo.h"
#include "fwp/Runtime/PlanCuda.h"
#include "fwp/Vocabulary.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

namespace fwp::jit {

// The vocabulary (fwp/Vocabulary.h): the update rule, the element type of
// every buffer (and the precision of every accumulation), the backend, and
// the entry point, each compiled and cached on its own.
using Rule = ::fwp::UpdateRule;
using ::fwp::Backend;
using ::fwp::DType;
using ::fwp::EntryPoint;

using ::fwp::kDefaultChunkSize;
using ::fwp::kMaxChunkSize;

/// Everything a compiled kernel is specialised for. The sequence length and
/// the batch size are not part of it: one kernel serves them all.
struct KernelDesc {
  Rule rule = Rule::Delta;
  int64_t nu = 1;    // DPFP order, 1 <= nu <= 2*dHead-1
  double eps = 1e-6; // DPFP normaliser epsilon, finite and > 0
  int64_t heads = 1;
  int64_t dHead = 1; // d_k = d_v
  DType dtype = DType::F32;
  int64_t chunkSize = kDefaultChunkSize; // steps per chunk, 1..kMaxChunkSize
  Backend backend = Backend::Cpu;
  /// The chip to compile for. CUDA: "sm_NN" (empty: sm_90). CPU: empty, the
  /// host this process runs on (the only CPU target, since the code runs
  /// here).
  std::string chip;

  int64_t dModel() const { return heads * dHead; }

  /// Throws std::invalid_argument naming the first field out of range.
  void validate() const;

  /// One line naming every field, e.g. "cpu f32 delta heads=4 d_head=8 nu=2
  /// eps=1e-06 chunk=64" ("cuda ... chip=sm_80" where the chip is not the
  /// default). eps is printed so that it reads back exactly, which makes the
  /// string a cache key as well as a message.
  std::string str() const;

  /// The chip the code is for: chip, or the default ("sm_90"; "host").
  std::string targetChip() const;
};

/// What a compilation does besides compiling.
struct CompileOptions {
  /// If set: write the IR before the pipeline and after each of its passes
  /// here ("<entry>/00-input.mlir", "<entry>/01-<pass>.mlir", ... with entry
  /// forward or backward), and for Backend::Cuda also each kernel's PTX
  /// ("<entry>/<module>.ptx") and the launch plan ("<entry>/plan.fwp"). The
  /// disk cache is not used then: dumping needs a compilation.
  std::string dumpDirectory;
  /// The disk cache directory; empty: the environment's (FWP_CACHE_DIR ...).
  std::string cacheDirectory;
  /// false: no disk cache (compile into a temporary directory).
  bool useDiskCache = true;
  /// LLVM optimisation level (0-3) of CPU code; -1: the default, chosen by
  /// measurement (bench/results/compile-*.md). Part of the cache key.
  int cpuOptLevel = -1;
  /// CPU code takes the GPU's kernels (fwp-to-cpu{gpu-tiling}): the dense
  /// layers through the GPU's tiling, the scan unfused with the GPU's value
  /// blocks and local state tiles. Checks those forms against the reference
  /// on a host without a GPU. Part of the cache key.
  bool cpuGpuTiling = false;
  /// The GPU's scan as the chunk operations' kernels (fwp-to-ptx's
  /// gpu-stages; on the CPU with cpuGpuTiling) instead of fwp-tile-scan's
  /// kernels, which stay the default until a GPU has timed both
  /// (fwp/GpuStages.h). Part of the cache key.
  bool gpuStages = kDefaultGpuStages;
};

/// The CPU optimisation level used when CompileOptions::cpuOptLevel is -1.
constexpr int kDefaultCpuOptLevel = 2;

/// Everything that changes the code of `entry` of `desc`: the description,
/// the entry point, the target (the CUDA chip; the host CPU's name and
/// features), the optimisation level and the compiler's own build id. Two
/// compilations with equal keys make the same code; the disk cache is keyed
/// by it.
std::string cacheKey(const KernelDesc &desc, EntryPoint entry,
                     const CompileOptions &options = {});

/// The compiler's build id: a hash of its sources and of the MLIR/LLVM
/// version it was built with.
const char *compilerBuildId();

/// The whole module compiled, forward and backward. Immutable once built:
/// forward() and backward() may be called from several threads at once (the
/// compiled code keeps no state between calls; each call allocates its own
/// scratch).
class CompiledAttention {
public:
  ~CompiledAttention();
  CompiledAttention(const CompiledAttention &) = delete;
  CompiledAttention &operator=(const CompiledAttention &) = delete;

  const KernelDesc &desc() const;

  /// Compiles `entry`, or loads it from the disk cache, unless that was done
  /// already; forward() and backward() do it on their first call. Throws as
  /// compile() describes.
  void prepare(EntryPoint entry) const;

  /// Prepares both entry points at once: the backward on a thread of its
  /// own while the calling thread takes the forward, so that on a cold
  /// cache a training step waits for the slower compile, not for the two in
  /// turn. Throws as prepare() does (the forward's error first).
  void prepareAll() const;

  /// Seconds spent so far on compiling or loading this kernel's entry points
  /// (passes, LLVM optimisation, code generation, linking, loading), summed
  /// over the entry points even where prepareAll() ran them at once.
  double compileSeconds() const;

  /// Whether `entry` was found in the disk cache (false if it was compiled,
  /// or is not prepared yet).
  bool loadedFromDiskCache(EntryPoint entry) const;

  /// For Backend::Cuda, what the GPU runs: a launch plan per entry point
  /// (docs/launch-plan.md) and the PTX of every kernel, by module name.
  /// Prepares both entry points. Empty for Backend::Cpu.
  struct DeviceCode {
    std::string forwardPlan, backwardPlan;
    /// Each entry point's modules (module name -> PTX); the two entry points
    /// are compiled apart, so their module names may repeat.
    std::map<std::string, std::string> forwardPtx, backwardPtx;
  };
  DeviceCode deviceCode() const;

  /// y = FastWeightsAttention(x). Buffers hold elements of desc().dtype (float
  /// or double) in the layouts above; y is written in full and may not alias
  /// any input. seqLen and batch may be 0 (nothing is read or written).
  /// Throws std::invalid_argument on negative sizes, sizes whose element
  /// count overflows, or a null buffer that would be read or written.
  void forward(int64_t seqLen, int64_t batch, const void *x, const void *wQ,
               const void *wK, const void *wV, const void *wBeta,
               const void *wO, const void *bO, void *y) const;

  /// Typed forms: throw std::invalid_argument if the element type is not
  /// desc().dtype.
  void forward(int64_t seqLen, int64_t batch, const float *x, const float *wQ,
               const float *wK, const float *wV, const float *wBeta,
               const float *wO, const float *bO, float *y) const;
  void forward(int64_t seqLen, int64_t batch, const double *x, const double *wQ,
               const double *wK, const double *wV, const double *wBeta,
               const double *wO, const double *bO, double *y) const;

  /// The gradients of a loss L with respect to x and every weight, given
  /// dy = dL/dy where y = forward(x): dx = dL/dx, dwQ = dL/dwQ, ...,
  /// dbO = dL/dbO, each in the layout of what it is the gradient of. The
  /// backward recomputes what it needs of the forward; it does not need a
  /// forward() call first. For the sum rule dwBeta is all zeros.
  ///
  /// Every output is written in full and may not alias an input or another
  /// output. seqLen and batch may be 0: dx is then empty and the weight
  /// gradients are zeros; x, dy, dx and the weights may then be null (they
  /// are not read), the weight gradients may not. Throws
  /// std::invalid_argument as forward() does.
  void backward(int64_t seqLen, int64_t batch, const void *x, const void *wQ,
                const void *wK, const void *wV, const void *wBeta,
                const void *wO, const void *bO, const void *dy, void *dx,
                void *dwQ, void *dwK, void *dwV, void *dwBeta, void *dwO,
                void *dbO) const;

  /// Typed forms: throw std::invalid_argument if the element type is not
  /// desc().dtype.
  void backward(int64_t seqLen, int64_t batch, const float *x, const float *wQ,
                const float *wK, const float *wV, const float *wBeta,
                const float *wO, const float *bO, const float *dy, float *dx,
                float *dwQ, float *dwK, float *dwV, float *dwBeta, float *dwO,
                float *dbO) const;
  void backward(int64_t seqLen, int64_t batch, const double *x,
                const double *wQ, const double *wK, const double *wV,
                const double *wBeta, const double *wO, const double *bO,
                const double *dy, double *dx, double *dwQ, double *dwK,
                double *dwV, double *dwBeta, double *dwO, double *dbO) const;

  /// forward() and backward() of a Backend::Cuda kernel on device buffers
  /// (addresses in the primary context of device 0, passed as pointers):
  /// no copies; the work is ordered on `call.stream` and the scratch comes
  /// from its allocator (fwp/Runtime/PlanCuda.h). Throws
  /// std::invalid_argument for a CPU kernel, and as forward() and
  /// backward() do.
  void forwardOnDevice(int64_t seqLen, int64_t batch, const void *x,
                       const void *wQ, const void *wK, const void *wV,
                       const void *wBeta, const void *wO, const void *bO,
                       void *y, const rt::DeviceCall &call) const;
  void backwardOnDevice(int64_t seqLen, int64_t batch, const void *x,
                        const void *wQ, const void *wK, const void *wV,
                        const void *wBeta, const void *wO, const void *bO,
                        const void *dy, void *dx, void *dwQ, void *dwK,
                        void *dwV, void *dwBeta, void *dwO, void *dbO,
                        const rt::DeviceCall &call) const;

  struct Impl;

private:
  explicit CompiledAttention(std::unique_ptr<Impl> impl);
  friend std::shared_ptr<const CompiledAttention>
  compileUncached(const KernelDesc &desc, const CompileOptions &options);

  std::unique_ptr<Impl> impl;
};

/// The kernel for `desc`, or the one made earlier in this process for an
/// equal description (compared by desc.str()). Its entry points are compiled
/// (or loaded from the disk cache) on first use, each once: a process that
/// only runs the forward never compiles the backward. Process-wide and
/// thread-safe: concurrent first calls of one entry point wait for a single
/// compilation. Kernels stay until the process exits.
///
/// Backend::Cuda compiles to PTX and launch plans without touching a GPU;
/// the first forward() or backward() loads the PTX and throws
/// fwp::rt::CudaError (a std::runtime_error) where there is no usable GPU.
///
/// Throws std::invalid_argument for an invalid description (never kept).
/// A compilation that fails throws std::runtime_error carrying the MLIR/LLVM
/// diagnostics from the call that prepares the entry point (prepare(),
/// forward(), backward()); nothing of it is kept, so the next call compiles
/// again.
std::shared_ptr<const CompiledAttention> compile(const KernelDesc &desc);

/// A kernel of its own for `desc`, not shared with compile()'s (each call
/// makes one), made with `options`: dumping IR, another disk cache or none,
/// another optimisation level. compile() is what callers want; this is for
/// measuring compile time, dumping IR and testing the cache.
std::shared_ptr<const CompiledAttention>
compileUncached(const KernelDesc &desc, const CompileOptions &options = {});

/// Seconds per stage of one compilation, in order: on the CPU "passes"
/// (fwp-to-cpu), "translate" (to LLVM IR), "split" (into one part per
/// core), "llvm" (the parts optimised and compiled, in parallel) and
/// "link"; for CUDA one stage,
/// "passes+export" (fwp-to-ptx, its PTX included, and the launch plan).
using StageTimes = std::vector<std::pair<std::string, double>>;

/// Compiles `entry` of `desc` ahead of time into `dir`, which must not
/// exist yet: the files and manifest a disk cache entry holds
/// (docs/compiled-modules.md), which fwp::rt::AttentionEntry::load and
/// fwp-exec run without the compiler. CUDA code needs no GPU to compile.
/// Throws std::invalid_argument for an invalid description or an existing
/// `dir`, std::runtime_error with the diagnostics if compiling fails
/// (nothing is left at `dir` then). options.dumpDirectory, cacheDirectory
/// and useDiskCache are ignored. Returns the seconds each stage took.
StageTimes compileEntry(const KernelDesc &desc, EntryPoint entry,
                        const std::string &dir,
                        const CompileOptions &options = {});

/// Whether this build compiles kernels (FwpJIT) or only loads them from the
/// disk cache (the runtime-only build behind libfwp_runtime.so, where a
/// missing entry fails naming it instead of compiling).
bool compilerAvailable();

/// Number of kernels made so far in this process (by compile() for a
/// description it had not seen, or by compileUncached()), failed ones
/// included.
std::size_t compileCount();

/// What the disk cache did in this process: entry points found, compiled,
/// and cache entries rejected (corrupt, truncated, foreign) and replaced.
struct DiskCacheCounts {
  std::size_t hits = 0, compilations = 0, rejected = 0;
};
DiskCacheCounts diskCacheCounts();

} // namespace fwp::jit

#endif // FWP_JIT_JIT_H
