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
// This header needs neither MLIR nor LLVM headers: the compiler lives behind
// CompiledAttention's private implementation, so callers (fwp-run, bindings)
// only link FwpJIT.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_JIT_JIT_H
#define FWP_JIT_JIT_H

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

namespace fwp::jit {

/// The fast-weight update. Its own enum rather than fwp::ref::Rule (the JIT
/// must not depend on the test yardstick) or the dialect's fwp::Rule (which
/// would pull MLIR headers into every caller).
enum class Rule { Delta, Sum };

/// Element type of every buffer, and the precision of every accumulation.
enum class DType { F32, F64 };

enum class Backend { Cpu, Cuda };

/// The largest chunk size accepted. The scan's workspaces hold
/// batch*heads*seqLen*chunkSize elements (fwp-tile-scan), so a chunk size in
/// the millions would exhaust memory instead of failing cleanly.
constexpr int64_t kMaxChunkSize = 4096;

/// Everything a compiled kernel is specialised for. The sequence length and
/// the batch size are not part of it: one kernel serves them all.
struct KernelDesc {
  Rule rule = Rule::Delta;
  int64_t nu = 1;    // DPFP order, 1 <= nu <= 2*dHead-1
  double eps = 1e-6; // DPFP normaliser epsilon, finite and > 0
  int64_t heads = 1;
  int64_t dHead = 1; // d_k = d_v
  DType dtype = DType::F32;
  int64_t chunkSize = 64; // steps per chunk of the scan, 1..kMaxChunkSize
  Backend backend = Backend::Cpu;

  int64_t dModel() const { return heads * dHead; }

  /// Throws std::invalid_argument naming the first field out of range.
  void validate() const;

  /// One line naming every field, e.g. "cpu f32 delta heads=4 d_head=8 nu=2
  /// eps=1e-06 chunk=64". eps is printed so that it reads back exactly, which
  /// makes the string a cache key as well as a message.
  std::string str() const;
};

/// What a compilation does besides compiling.
struct CompileOptions {
  /// If set: write the IR before the pipeline and after each of its passes
  /// here ("00-input.mlir", "01-<pass>.mlir", ...), and for Backend::Cuda
  /// also each kernel's PTX ("<module>.ptx") and the launch plans
  /// ("forward.fwp", "backward.fwp").
  std::string dumpDirectory;
};

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

  /// Seconds compile() spent on this kernel, both entry points (passes, LLVM
  /// optimisation and code generation).
  double compileSeconds() const;

  /// For Backend::Cuda, what the GPU runs: a launch plan per entry point
  /// (docs/launch-plan.md) and the PTX of every kernel, by module name.
  /// Written out with fwp::rt::writePlanDirectory, a plan runs without the
  /// compiler. Empty for Backend::Cpu.
  struct DeviceCode {
    std::string forwardPlan, backwardPlan;
    std::map<std::string, std::string> ptx;
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

  struct Impl;

private:
  explicit CompiledAttention(std::unique_ptr<Impl> impl);
  friend std::shared_ptr<const CompiledAttention>
  compileUncached(const KernelDesc &desc, const CompileOptions &options);

  std::unique_ptr<Impl> impl;
};

/// Compiles `desc`, or returns the kernel compiled earlier for an equal
/// description (compared by desc.str()). Process-wide and thread-safe:
/// concurrent requests for one description wait for a single compilation;
/// requests for different descriptions compile in parallel. Kernels stay
/// cached until the process exits.
///
/// Backend::Cuda compiles to PTX and launch plans without touching a GPU;
/// the first forward() or backward() loads the PTX and throws
/// fwp::rt::CudaError (a std::runtime_error) where there is no usable GPU.
///
/// Throws std::invalid_argument for an invalid description (never cached)
/// and std::runtime_error carrying the MLIR/LLVM diagnostics if compilation
/// fails. A failed compilation is not cached: every request
/// that was waiting for it gets the same exception, and the next request
/// compiles again.
std::shared_ptr<const CompiledAttention> compile(const KernelDesc &desc);

/// Compiles `desc` without the cache (each call compiles). compile() is what
/// callers want; this is for measuring compile time and for dumping IR.
std::shared_ptr<const CompiledAttention>
compileUncached(const KernelDesc &desc, const CompileOptions &options = {});

/// Number of compilations started so far in this process (by compile() on a
/// cache miss, or by compileUncached()), failed ones included.
std::size_t compileCount();

} // namespace fwp::jit

#endif // FWP_JIT_JIT_H
