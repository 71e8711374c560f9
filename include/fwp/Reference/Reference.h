//===- Reference.h - Float64 reference of FastWeightsAttention --*- C++ -*-===//
//
// The obviously-correct float64 implementation every compiled backend is
// judged against. Plain loops over steps (not the chunked form), following
// docs/delta-rule-math.md. No MLIR, no LLVM.
//
// Layouts (all row-major, C order):
//   x, y, dy          [seqLen, batch, dModel]
//   q, k, v (per head) [seqLen, batch, heads, dHead]
//   features Q, K     [seqLen, batch, heads, D]      D = 2 * dHead * nu
//   beta              [seqLen, batch, heads]
//   state             [batch, heads, dHead, D]       (fast weights W, d_v x D)
//   wQ, wK, wV, wO    [dModel, dModel]  (nn.Linear: y = x W^T)
//   wBeta             [heads, dModel]
//   bO                [dModel]
//
// Every entry point throws std::invalid_argument on a vector whose size does
// not match its shape, a negative size, heads not dividing dModel, nu
// outside [1, 2*dHead-1] or eps <= 0.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_REFERENCE_REFERENCE_H
#define FWP_REFERENCE_REFERENCE_H

#include "fwp/Vocabulary.h"

#include <cstdint>
#include <vector>

namespace fwp::ref {

using Rule = ::fwp::UpdateRule; // fwp/Vocabulary.h

/// DPFP feature map phi' of one vector `k` of size d; returns 2*d*nu values.
std::vector<double> dpfp(const std::vector<double> &k, int64_t nu, double eps);

/// Gradient of dpfp: given k and g = dL/dphi'(k), returns dL/dk.
std::vector<double> dpfpBackward(const std::vector<double> &k,
                                 const std::vector<double> &g, int64_t nu,
                                 double eps);

/// Sizes of one fast-weight scan.
struct ScanShape {
  int64_t seqLen = 0, batch = 0, heads = 0;
  int64_t dFeature = 0; // D, width of Q and K rows
  int64_t dValue = 0;   // d_v, width of V rows
};

/// Inputs of a scan over feature-mapped queries and keys.
/// `beta` is ignored (may be empty) for the sum rule.
/// `initialState` may be empty (zero state).
struct ScanInputs {
  std::vector<double> q, k, v, beta, initialState;
};

struct ScanOutputs {
  std::vector<double> y;          // [seqLen, batch, heads, dValue]
  std::vector<double> finalState; // [batch, heads, dValue, dFeature]
};

ScanOutputs scan(Rule rule, const ScanShape &shape, const ScanInputs &in);

struct ScanGradients {
  std::vector<double> q, k, v, beta, initialState; // beta empty for Sum
};

/// Backward of `scan`. `dFinalState` may be empty (zero).
ScanGradients scanBackward(Rule rule, const ScanShape &shape,
                           const ScanInputs &in, const std::vector<double> &dy,
                           const std::vector<double> &dFinalState);

/// Hyper-parameters of the whole module.
struct AttentionConfig {
  int64_t heads = 1;
  int64_t nu = 1;
  double eps = 1e-6;
  Rule rule = Rule::Delta;
};

struct AttentionShape {
  int64_t seqLen = 0, batch = 0, dModel = 0;
};

/// For the sum rule `wBeta` is unused: it may be empty, and its gradient then
/// has the size given (empty, or all zeros).
struct AttentionParams {
  std::vector<double> wQ, wK, wV, wBeta, wO, bO;
};

struct AttentionOutputs {
  std::vector<double> y;          // [seqLen, batch, dModel]
  std::vector<double> finalState; // [batch, heads, dHead, 2*dHead*nu]
};

/// Forward of FastWeightsAttention. `initialState` may be empty (zero).
AttentionOutputs attention(const AttentionConfig &config,
                           const AttentionShape &shape,
                           const std::vector<double> &x,
                           const AttentionParams &params,
                           const std::vector<double> &initialState = {});

struct AttentionGradients {
  std::vector<double> x, wQ, wK, wV, wBeta, wO, bO, initialState;
};

/// Backward of FastWeightsAttention given dL/dy and (optionally, may be
/// empty) dL/d(final state).
AttentionGradients
attentionBackward(const AttentionConfig &config, const AttentionShape &shape,
                  const std::vector<double> &x, const AttentionParams &params,
                  const std::vector<double> &dy,
                  const std::vector<double> &initialState = {},
                  const std::vector<double> &dFinalState = {});

} // namespace fwp::ref

#endif // FWP_REFERENCE_REFERENCE_H
