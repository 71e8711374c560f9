//===- ScanKernelForTesting.h - fwp.scan(_grad) compiled alone --*- C++ -*-===//
//
// Test-only: one `fwp.scan` and one `fwp.scan_grad` with the same operands,
// compiled for the host through the same fwp-to-cpu pipeline and engine as
// the whole module (CpuCompiler.h), so that the chunked scan kernels
// (lib/Transforms/ScanForward.cpp, ScanBackward.cpp) can be checked against
// fwp::ref::scan and fwp::ref::scanBackward without the projections around
// them. Internal to lib/JIT: tests reach it with lib/JIT on their include
// path; no product code uses it. Uncached: each call compiles.
//
// Layouts are those of the dialect (and of fwp::ref::scan):
//   q, k, dq, dk        [T, B, H, dInput]
//   v, y, dy, dv        [T, B, H, dValue]
//   beta, dbeta         [T, B, H]            (delta rule only)
//   initial, finalState,
//   dFinalState, dInitial [B, H, dValue, D]   D = dFeature()
//
//===----------------------------------------------------------------------===//

#ifndef FWP_LIB_JIT_SCANKERNELFORTESTING_H
#define FWP_LIB_JIT_SCANKERNELFORTESTING_H

#include "fwp/JIT/JIT.h"

#include <cstdint>
#include <memory>

namespace fwp::jit::testing {

struct ScanKernelDesc {
  Rule rule = Rule::Delta;
  DType dtype = DType::F64;
  int64_t dInput = 1; // width of the q and k rows the scans read
  int64_t dValue = 1;
  /// > 0: DPFP fused into the scans (`dpfp(nu = .., eps = ..)`), q and k
  /// are raw vectors; 0: q and k are already features.
  int64_t nu = 0;
  double eps = 1e-6;
  int64_t chunkSize = 64;
  bool initial = false;     // both scans take an initial state
  bool dFinalState = false; // fwp.scan_grad takes d_final_state

  int64_t dFeature() const { return nu > 0 ? 2 * dInput * nu : dInput; }
};

class CompiledScan {
public:
  virtual ~CompiledScan() = default;

  /// y and the final state of fwp.scan. `beta` is read for the delta rule
  /// only, `initial` only if the description has one (both may be null
  /// otherwise). Sizes must be > 0; buffers hold elements of desc.dtype.
  virtual void forward(int64_t seqLen, int64_t batch, int64_t heads,
                       const void *q, const void *k, const void *v,
                       const void *beta, const void *initial, void *y,
                       void *finalState) const = 0;

  /// dq, dk, dv, dbeta (delta rule only; may be null for the sum rule) and
  /// the initial state's gradient, from fwp.scan_grad. `dFinalState` is
  /// read only if the description has one.
  virtual void backward(int64_t seqLen, int64_t batch, int64_t heads,
                        const void *q, const void *k, const void *v,
                        const void *beta, const void *initial, const void *dy,
                        const void *dFinalState, void *dq, void *dk, void *dv,
                        void *dbeta, void *dInitial) const = 0;

  double compileSeconds = 0;
};

/// Compiles both scans. Throws std::runtime_error with the diagnostics if
/// compilation fails.
std::unique_ptr<CompiledScan> compileScan(const ScanKernelDesc &desc);

/// fwp.dpfp alone, lowered by fwp-lower-dpfp (the maps that are not fused
/// into a scan), on `rows` vectors: k [rows, dInput] -> [rows, 2 dInput nu].
class CompiledDpfp {
public:
  virtual ~CompiledDpfp() = default;
  virtual void run(int64_t rows, const void *k, void *features) const = 0;
};

std::unique_ptr<CompiledDpfp> compileDpfp(int64_t dInput, int64_t nu,
                                          double eps, DType dtype);

} // namespace fwp::jit::testing

#endif // FWP_LIB_JIT_SCANKERNELFORTESTING_H
