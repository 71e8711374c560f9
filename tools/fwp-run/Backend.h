//===- Backend.h - Backends fwp-run can run the layer on --------*- C++ -*-===//
//
// A backend computes the forward and (optionally) the backward of the
// fast-weight attention layer. Its calls take the arguments of
// fwp::ref::attention / fwp::ref::attentionBackward (float64 vectors in the
// layouts of fwp/Reference/Reference.h); fwp-run converts the .npy arrays to
// and from them. Both calls are also told the inputs' dtype: a compiled
// backend computes in it (float32 inputs, float32 arithmetic), the reference
// always computes in float64.
//
// There are three kinds (createBackend): `reference`, and `cpu` and `cuda`
// (the JIT-compiled forward and backward, JitBackend.cpp). The command line
// names them (Options.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef FWP_RUN_BACKEND_H
#define FWP_RUN_BACKEND_H

#include "fwp/ChunkSize.h"
#include "fwp/GpuStages.h"
#include "fwp/Reference/Reference.h"
#include "fwp/Support/Npy.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace fwp::run {

/// What runs the layer: the float64 reference, or the compiler for one of
/// the vocabulary's backends (fwp::Backend).
enum class BackendKind { Reference, Cpu, Cuda };

/// Options that shape how a backend compiles, from the command line.
struct BackendSettings {
  int64_t chunkSize = kDefaultChunkSize; // steps per chunk of a compiled scan
  /// --compute-type: the element type compiled backends run in (inputs
  /// rounded to it, outputs converted back to the files' dtype); unset: the
  /// inputs' dtype.
  std::optional<rt::DType> computeType;
  /// --dump-ir: where compiled backends write the IR of every stage (and
  /// the PTX); empty for none.
  std::string dumpIr;
  /// --gpu-stages: the CUDA kernels' scan as the chunk operations' kernels
  /// (jit::CompileOptions::gpuStages); the build's default otherwise.
  bool gpuStages = kDefaultGpuStages;
};

class Backend {
public:
  virtual ~Backend() = default;

  virtual const char *name() const = 0;

  /// False for a backend that computes the forward only: fwp-run then
  /// refuses inputs with dy.npy before running anything.
  virtual bool hasBackward() const { return true; }

  /// As fwp::ref::attention with a zero initial state; only `y` of the
  /// result is used by fwp-run. `dtype` is the inputs' dtype (their values
  /// are exactly representable in it).
  virtual ref::AttentionOutputs forward(const ref::AttentionConfig &config,
                                        const ref::AttentionShape &shape,
                                        const std::vector<double> &x,
                                        const ref::AttentionParams &params,
                                        rt::DType dtype) = 0;

  /// As fwp::ref::attentionBackward with a zero initial state and no
  /// gradient of the final state; `initialState` of the result is unused.
  /// `dtype` is the inputs' dtype, as for forward().
  virtual ref::AttentionGradients
  backward(const ref::AttentionConfig &config, const ref::AttentionShape &shape,
           const std::vector<double> &x, const ref::AttentionParams &params,
           const std::vector<double> &dy, rt::DType dtype) = 0;
};

/// Creates the backend of `kind`; whether it can run is found out when it
/// compiles or runs.
std::unique_ptr<Backend> createBackend(BackendKind kind,
                                       const BackendSettings &settings);

struct BackendChoice {
  std::unique_ptr<Backend> backend;
  std::string why; // why this one, e.g. "no usable CUDA GPU: ..."
};

/// The backend used without --backend: cuda if a CUDA GPU is usable, else
/// cpu, skipping a backend that computes the forward only when
/// `needsBackward`; reference is the last resort.
BackendChoice chooseBackend(bool needsBackward,
                            const BackendSettings &settings);

/// The cpu and cuda backends (JitBackend.cpp).
std::unique_ptr<Backend> createCpuBackend(const BackendSettings &settings);
std::unique_ptr<Backend> createCudaBackend(const BackendSettings &settings);

} // namespace fwp::run

#endif // FWP_RUN_BACKEND_H
