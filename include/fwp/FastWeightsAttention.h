//===- FastWeightsAttention.h - The seeds' module as a C++ class -*- C++
//-*-===//
//
// fwp::FastWeightsAttention mirrors the seeds' PyTorch module
// FastWeightsAttention(heads, d_model, dropout_prob, phi=DPFP(nu, eps)): it
// owns its float32 parameters, initialised as PyTorch's nn.Linear does, runs
// its forward and backward through one kernel compiled by fwp::jit::compile
// (lazily, on first use, and cached process-wide), and keeps what the
// backward needs between the two calls.
//
//   fwp::FastWeightsAttention attn(/*heads=*/4, /*dModel=*/32, fwp::DPFP{2});
//   std::vector<float> y = attn.forward(x, seqLen, batch);
//   fwp::FastWeightsAttention::Gradients g = attn.backward(dy);
//   attn.sgdStep(g.parameters, 0.1f);   // or update attn.parameters() itself
//
// Layouts (row-major, C order; those of fwp/JIT/JIT.h and the reference):
//   x, y, dy, dx   [seq_len, batch, d_model]
//   w_q, w_k, w_v  [d_model, d_model]   nn.Linear weights: q = x w_q^T
//   w_beta         [heads, d_model]     beta = sigmoid(x w_beta^T)
//   w_o            [d_model, d_model]   the output layer, y = o w_o^T + b_o
//   b_o            [d_model]
//
// dropout_prob is accepted and stored, as the seeds' constructor takes it,
// but never applied: the seeds' reference builds an nn.Dropout and never
// calls it inside the module (docs/delta-rule-math.md, section 1).
// forward() is therefore deterministic, in training as in evaluation.
//
// Not thread-safe: forward() and backward() change the object (the saved
// input). Distinct objects may be used from distinct threads.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_FASTWEIGHTSATTENTION_H
#define FWP_FASTWEIGHTSATTENTION_H

#include "fwp/JIT/JIT.h"

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace fwp {

/// The DPFP feature map phi' of the seeds (DPFP(nu=1, eps=1e-6)), as a value:
/// it has no parameters, only its two hyper-parameters. nu must lie in
/// [1, 2*d_k - 1] (checked by FastWeightsAttention, which knows d_k), eps
/// must be finite and > 0.
struct DPFP {
  int64_t nu = 1;
  double eps = 1e-6;
};

/// What the seeds' module does not have: how it is compiled and initialised.
struct FastWeightsAttentionOptions {
  jit::Backend backend = jit::Backend::Cpu;
  jit::Rule rule = jit::Rule::Delta;
  /// Steps per chunk of the compiled scan, 1..jit::kMaxChunkSize. Changes
  /// speed and rounding, not the function computed.
  int64_t chunkSize = kDefaultChunkSize;
  /// Seed of the parameters' initialisation: equal seeds give bit-identical
  /// parameters on every platform.
  uint64_t seed = 0;
};

class FastWeightsAttention {
public:
  /// The module's parameters, or gradients with respect to them (same names,
  /// same sizes, same layouts).
  struct Parameters {
    std::vector<float> wQ, wK, wV, wBeta, wO, bO;

    /// The names, in the order above: "w_q", "w_k", "w_v", "w_beta", "w_o",
    /// "b_o".
    static const std::array<const char *, 6> &names();

    /// The tensor called `name` (one of names()); throws
    /// std::invalid_argument naming the valid names for any other.
    std::vector<float> &operator[](const std::string &name);
    const std::vector<float> &operator[](const std::string &name) const;
  };

  /// What backward() returns.
  struct Gradients {
    std::vector<float> x;  // dL/dx, [seq_len, batch, d_model]
    Parameters parameters; // dL/dw_q, ..., dL/db_o
  };

  /// FastWeightsAttention(heads, d_model, dropout_prob, phi) of the seeds,
  /// here (heads, d_model, phi, dropout_prob, options). Throws
  /// std::invalid_argument with a message naming the bad value if heads or
  /// d_model is < 1, heads does not divide d_model, phi.nu is outside
  /// [1, 2*d_k - 1] with d_k = d_model / heads, phi.eps is not finite and
  /// > 0, dropout_prob is not in [0, 1), or options.chunkSize is outside
  /// [1, jit::kMaxChunkSize]. Compiles nothing.
  FastWeightsAttention(int64_t heads, int64_t dModel, DPFP phi = {},
                       double dropoutProb = 0.1,
                       FastWeightsAttentionOptions options = {});

  int64_t heads() const { return heads_; }
  int64_t dModel() const { return dModel_; }
  int64_t dHead() const { return dModel_ / heads_; }
  const DPFP &phi() const { return phi_; }
  /// Stored, never applied (see the file comment).
  double dropoutProb() const { return dropoutProb_; }
  const FastWeightsAttentionOptions &options() const { return options_; }

  /// The parameters, to read or to update in place (an optimiser step). Their
  /// sizes must not change: forward() throws std::logic_error naming the
  /// parameter if one did.
  Parameters &parameters() { return params_; }
  const Parameters &parameters() const { return params_; }
  /// parameters()[name]: "w_q", "w_k", "w_v", "w_beta", "w_o" or "b_o".
  std::vector<float> &parameter(const std::string &name) {
    return params_[name];
  }
  const std::vector<float> &parameter(const std::string &name) const {
    return params_[name];
  }

  /// y = FastWeightsAttention(x) for x [seqLen, batch, d_model]; returns y,
  /// same layout. Keeps a copy of x and of the parameters for backward(),
  /// replacing what an earlier forward() kept. seqLen or batch may be 0.
  /// Throws std::invalid_argument on negative sizes or an x whose size is
  /// not seqLen * batch * d_model (the message gives the expected shape),
  /// and whatever compiling the kernel throws (e.g. std::runtime_error for a
  /// backend that is not available).
  std::vector<float> forward(const std::vector<float> &x, int64_t seqLen,
                             int64_t batch);

  /// Gradients of a loss L given dy = dL/dy for the y of the last forward():
  /// dL/dx and dL/d(every parameter), evaluated at the input and parameters
  /// that forward() used, even if the parameters were changed since. The
  /// gradients are returned, not accumulated anywhere: calling backward()
  /// twice gives the same result twice, and the caller sums gradients over
  /// several forward/backward pairs if it wants to. For the sum rule,
  /// dL/dw_beta is zero. Throws std::logic_error if no forward() was run,
  /// std::invalid_argument if dy does not have the shape of that forward's
  /// y (the message gives it).
  Gradients backward(const std::vector<float> &dy) const;

  /// parameters() -= learningRate * gradients, element-wise. Throws
  /// std::invalid_argument if a gradient's size is not its parameter's.
  void sgdStep(const Parameters &gradients, float learningRate);

  /// The compiled kernel, compiling it on first use (jit::compile, cached
  /// process-wide, so modules with equal hyper-parameters share it). forward()
  /// and backward() call this; calling it first is a way to compile eagerly,
  /// or to learn that the backend is not available (it throws what
  /// jit::compile throws, and tries again on the next call).
  std::shared_ptr<const jit::CompiledAttention> kernel() const;

  /// The description the kernel is compiled for.
  jit::KernelDesc kernelDesc() const;

private:
  void checkParameterSizes(const char *call) const;

  int64_t heads_, dModel_;
  DPFP phi_;
  double dropoutProb_;
  FastWeightsAttentionOptions options_;
  Parameters params_;
  mutable std::shared_ptr<const jit::CompiledAttention> kernel_;

  // Saved by forward() for backward().
  bool haveForward_ = false;
  int64_t savedSeqLen_ = 0, savedBatch_ = 0;
  std::vector<float> savedX_;
  Parameters savedParams_;
};

} // namespace fwp

#endif // FWP_FASTWEIGHTSATTENTION_H
