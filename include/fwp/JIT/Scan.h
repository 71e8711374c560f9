//===- Scan.h - The bare fast-weight scan, compiled -------------*- C++ -*-===//
//
// One `fwp.scan` and its `fwp.scan_grad`, compiled through the same
// pipelines as the whole module (fwp-to-cpu for the host, fwp-to-ptx for
// CUDA): what a framework calls when it brings its own projections (the
// Python package's fwp.delta_rule, fla's chunk_delta_rule):
//
//   fwp::jit::ScanDesc desc;
//   desc.dInput = 16; desc.dValue = 16; desc.nu = 1;   // DPFP fused
//   auto scan = fwp::jit::compileScan(desc);            // once per process
//   scan->forward(T, B, H, q, k, v, beta, initial, y, finalState);
//
// Layouts are those of the dialect (row-major):
//   q, k, dq, dk        [T, B, H, dInput]
//   v, y, dy, dv        [T, B, H, dValue]
//   beta, dbeta         [T, B, H]            (delta rule only)
//   initial, finalState,
//   dFinalState, dInitial [B, H, dValue, D]   D = dFeature()
// or, with desc.batchFirst, [B, T, H, *] for the per-step ones (fla's).
// Buffers hold elements of desc.dtype (bf16 and f16 as 16-bit patterns,
// computed in float32). The sequence length, batch and heads are not part
// of the description: one compiled scan serves them all. A CUDA scan runs
// on host buffers (copied to the GPU and back) or, without copies, on
// device buffers in a caller's stream and memory (forwardOnDevice,
// rt::DeviceCall).
//
// Compiled code is kept in the disk cache, as the whole module's is
// (docs/compiled-modules.md): a later process loads it and compiles nothing.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_JIT_SCAN_H
#define FWP_JIT_SCAN_H

#include "fwp/JIT/JIT.h"
#include "fwp/Runtime/PlanCuda.h"

#include <cstdint>
#include <memory>
#include <string>

namespace fwp::jit {

struct ScanDesc {
  Rule rule = Rule::Delta;
  DType dtype = DType::F64;
  int64_t dInput = 1; // width of the q and k rows the scans read
  int64_t dValue = 1;
  /// > 0: DPFP fused into the scans (`dpfp(nu = .., eps = ..)`), q and k
  /// are raw vectors; 0: q and k are already features.
  int64_t nu = 0;
  double eps = 1e-6;
  int64_t chunkSize = kDefaultChunkSize;
  bool initial = false;     // both scans take an initial state
  bool dFinalState = false; // fwp.scan_grad takes d_final_state
  /// q, k, v, beta, y and their gradients are [B, T, H, *] (fla's layout)
  /// rather than [T, B, H, *]; the states are [B, H, d_v, D] either way.
  bool batchFirst = false;
  Backend backend = Backend::Cpu;
  /// CUDA: "sm_NN" (empty: sm_90); CPU: empty (this host).
  std::string chip;
  /// CUDA: the scan as the chunk operations' kernels rather than
  /// fwp-tile-scan's kernels (fwp/GpuStages.h).
  bool gpuStages = kDefaultGpuStages;

  int64_t dFeature() const { return nu > 0 ? 2 * dInput * nu : dInput; }

  /// Throws std::invalid_argument naming the first field out of range.
  void validate() const;

  /// One line naming every field, e.g. "scan f32 delta d_in=16 d_v=16 nu=1
  /// eps=1e-06 chunk=64 initial d_final batch_first" ("scan cuda f32 ..."
  /// for CUDA, with " chip=sm_80" where the chip is not the default and
  /// " gpu-stages" with the stages' kernels); a cache key as well as a
  /// message.
  std::string str() const;

  /// The chip CUDA code is for: chip, or "sm_90".
  std::string targetChip() const { return chip.empty() ? "sm_90" : chip; }
};

/// A compiled scan. Immutable: forward() and backward() may be called from
/// several threads at once.
class CompiledScan {
public:
  virtual ~CompiledScan() = default;

  const ScanDesc &desc() const { return desc_; }

  /// y and the final state of fwp.scan. `beta` is read for the delta rule
  /// only, `initial` only if the description has one (both may be null
  /// otherwise). Outputs are written in full and may not alias an input or
  /// each other (a state is not updated in place: `finalState` is another
  /// buffer than `initial`). Sizes may be 0: then nothing is read but the
  /// initial state, and the final state is the initial one (or zero). Throws
  /// std::invalid_argument for negative sizes or a null buffer that would
  /// be read or written.
  void forward(int64_t seqLen, int64_t batch, int64_t heads, const void *q,
               const void *k, const void *v, const void *beta,
               const void *initial, void *y, void *finalState) const;

  /// dq, dk, dv, dbeta (delta rule only; may be null for the sum rule) and
  /// the initial state's gradient, from fwp.scan_grad. `dFinalState` is
  /// read only if the description has one. Outputs may not alias an input
  /// or each other. Checks as forward() does.
  void backward(int64_t seqLen, int64_t batch, int64_t heads, const void *q,
                const void *k, const void *v, const void *beta,
                const void *initial, const void *dy, const void *dFinalState,
                void *dq, void *dk, void *dv, void *dbeta,
                void *dInitial) const;

  /// forward() and backward() on device buffers of a CUDA scan (addresses
  /// in the primary context of device 0, passed as pointers): no copies; the
  /// work is ordered on `call.stream` and scratch comes from its allocator
  /// (fwp/Runtime/PlanCuda.h). A null `initial` or `dFinalState` is a zero
  /// state. Throws std::invalid_argument for a CPU scan, and as forward()
  /// does.
  void forwardOnDevice(int64_t seqLen, int64_t batch, int64_t heads,
                       const void *q, const void *k, const void *v,
                       const void *beta, const void *initial, void *y,
                       void *finalState, const rt::DeviceCall &call) const;
  void backwardOnDevice(int64_t seqLen, int64_t batch, int64_t heads,
                        const void *q, const void *k, const void *v,
                        const void *beta, const void *initial, const void *dy,
                        const void *dFinalState, void *dq, void *dk, void *dv,
                        void *dbeta, void *dInitial,
                        const rt::DeviceCall &call) const;

  /// Compiles (or loads from the disk cache) what forward() and backward()
  /// run, which they otherwise do on their first call: a CUDA scan's two
  /// launch plans, each compiled on first use. Throws as compileScan().
  virtual void prepare() const {}

  /// Seconds spent compiling or loading it; whether it came from the disk
  /// cache.
  double compileSeconds = 0;
  bool fromDiskCache = false;

protected:
  explicit CompiledScan(const ScanDesc &desc) : desc_(desc) {}

  virtual void runForward(int64_t seqLen, int64_t batch, int64_t heads,
                          const void *q, const void *k, const void *v,
                          const void *beta, const void *initial, void *y,
                          void *finalState) const = 0;
  virtual void runBackward(int64_t seqLen, int64_t batch, int64_t heads,
                           const void *q, const void *k, const void *v,
                           const void *beta, const void *initial,
                           const void *dy, const void *dFinalState, void *dq,
                           void *dk, void *dv, void *dbeta,
                           void *dInitial) const = 0;
  /// Device buffers; the default throws (a CPU scan).
  virtual void runForwardOnDevice(int64_t seqLen, int64_t batch, int64_t heads,
                                  const void *q, const void *k, const void *v,
                                  const void *beta, const void *initial,
                                  void *y, void *finalState,
                                  const rt::DeviceCall &call) const;
  virtual void runBackwardOnDevice(int64_t seqLen, int64_t batch, int64_t heads,
                                   const void *q, const void *k, const void *v,
                                   const void *beta, const void *initial,
                                   const void *dy, const void *dFinalState,
                                   void *dq, void *dk, void *dv, void *dbeta,
                                   void *dInitial,
                                   const rt::DeviceCall &call) const;

private:
  ScanDesc desc_;
};

/// The scan for `desc`, or the one made earlier in this process for an
/// equal description: loaded from the disk cache ($FWP_CACHE_DIR ..., as
/// JIT.h's compile()), or compiled into it. Thread-safe. Throws
/// std::invalid_argument for an invalid description, std::runtime_error with
/// the diagnostics if compiling fails (nothing is kept then).
std::shared_ptr<const CompiledScan> compileScan(const ScanDesc &desc);

/// A scan of its own for `desc`: from the disk cache in `cacheDirectory`,
/// or compiled (into it); empty: no disk cache, each call compiles.
std::unique_ptr<CompiledScan>
compileScanUncached(const ScanDesc &desc,
                    const std::string &cacheDirectory = "");

} // namespace fwp::jit

#endif // FWP_JIT_SCAN_H
