//===- Attention.cpp - FastWeightsAttention forward and backward ----------===//
//
// The whole module of the seeds: q, k, v, beta projections, DPFP, the scan
// of Scan.cpp and the output layer. The backward chains the scan's gradients
// back through each piece by hand (no chunked formulas).
//
//===----------------------------------------------------------------------===//

#include "fwp/Reference/Reference.h"

#include "ArgumentChecks.h"

#include <cmath>
#include <cstddef>

using namespace fwp::ref;

namespace {

/// Validated module sizes. Rows are (step, batch) pairs: x is [rows, dModel]
/// and every per-head tensor is [rows, heads, ...].
struct ModuleLayout {
  std::size_t seqLen, batch, dModel, heads, dHead, dFeature;
  int64_t nu;
  double eps;

  std::size_t rows() const { return seqLen * batch; }
  std::size_t stateCount() const { return batch * heads * dHead * dFeature; }
  ScanShape scanShape() const {
    return ScanShape{static_cast<int64_t>(seqLen), static_cast<int64_t>(batch),
                     static_cast<int64_t>(heads),
                     static_cast<int64_t>(dFeature),
                     static_cast<int64_t>(dHead)};
  }
};

ModuleLayout
validateModule(const AttentionConfig &config, const AttentionShape &shape,
               const std::vector<double> &x, const AttentionParams &params,
               const std::vector<double> &initialState, const char *where) {
  using namespace fwp::ref::detail;
  if (config.heads < 1)
    fail(where, "heads must be >= 1, got " + std::to_string(config.heads));
  const std::size_t seqLen = requireNonNegative(shape.seqLen, "seqLen", where);
  const std::size_t batch = requireNonNegative(shape.batch, "batch", where);
  const std::size_t dModel = requireNonNegative(shape.dModel, "dModel", where);
  const std::size_t heads = static_cast<std::size_t>(config.heads);
  if (dModel % heads != 0)
    fail(where, "heads (" + std::to_string(heads) + ") must divide dModel (" +
                    std::to_string(dModel) + ")");
  const std::size_t dHead = dModel / heads;
  requireValidDpfp(dHead, config.nu, config.eps, where);
  ModuleLayout layout{
      seqLen,    batch,     dModel,
      heads,     dHead,     2 * dHead * static_cast<std::size_t>(config.nu),
      config.nu, config.eps};

  const std::size_t square = dModel * dModel;
  requireSize(x, layout.rows() * dModel, "x", "[seqLen, batch, dModel]", where);
  requireSize(params.wQ, square, "wQ", "[dModel, dModel]", where);
  requireSize(params.wK, square, "wK", "[dModel, dModel]", where);
  requireSize(params.wV, square, "wV", "[dModel, dModel]", where);
  // The sum rule has no gate, so it may omit wBeta.
  if (config.rule == Rule::Delta)
    requireSize(params.wBeta, heads * dModel, "wBeta", "[heads, dModel]",
                where);
  else
    requireSizeOrEmpty(params.wBeta, heads * dModel, "wBeta", "[heads, dModel]",
                       where);
  requireSize(params.wO, square, "wO", "[dModel, dModel]", where);
  requireSize(params.bO, dModel, "bO", "[dModel]", where);
  requireSizeOrEmpty(initialState, layout.stateCount(), "initialState",
                     "[batch, heads, dHead, 2*dHead*nu]", where);
  return layout;
}

/// nn.Linear without bias: out[r] = W in[r], W is [outSize, inSize].
std::vector<double> linear(const std::vector<double> &in,
                           const std::vector<double> &w, std::size_t rows,
                           std::size_t inSize, std::size_t outSize) {
  std::vector<double> out(rows * outSize, 0.0);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t o = 0; o < outSize; ++o)
      for (std::size_t i = 0; i < inSize; ++i)
        out[r * outSize + o] += w[o * inSize + i] * in[r * inSize + i];
  return out;
}

/// dIn[r] += W^T dOut[r].
void addLinearInputGradient(const std::vector<double> &dOut,
                            const std::vector<double> &w, std::size_t rows,
                            std::size_t inSize, std::size_t outSize,
                            std::vector<double> &dIn) {
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t o = 0; o < outSize; ++o)
      for (std::size_t i = 0; i < inSize; ++i)
        dIn[r * inSize + i] += w[o * inSize + i] * dOut[r * outSize + o];
}

/// dW = sum over rows of dOut[r] in[r]^T.
std::vector<double> linearWeightGradient(const std::vector<double> &dOut,
                                         const std::vector<double> &in,
                                         std::size_t rows, std::size_t inSize,
                                         std::size_t outSize) {
  std::vector<double> dW(outSize * inSize, 0.0);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t o = 0; o < outSize; ++o)
      for (std::size_t i = 0; i < inSize; ++i)
        dW[o * inSize + i] += dOut[r * outSize + o] * in[r * inSize + i];
  return dW;
}

/// phi' of every dHead-wide slice: [vectors, dHead] -> [vectors, dFeature].
std::vector<double> featureMap(const std::vector<double> &raw,
                               const ModuleLayout &layout) {
  const std::size_t vectors = raw.size() / layout.dHead;
  std::vector<double> features;
  features.reserve(vectors * layout.dFeature);
  for (std::size_t n = 0; n < vectors; ++n) {
    const auto begin = raw.begin() + n * layout.dHead;
    const std::vector<double> phi =
        dpfp(std::vector<double>(begin, begin + layout.dHead), layout.nu,
             layout.eps);
    features.insert(features.end(), phi.begin(), phi.end());
  }
  return features;
}

/// Chains dL/dphi' of every slice back to dL/d(raw slice).
std::vector<double> featureMapBackward(const std::vector<double> &raw,
                                       const std::vector<double> &dFeatures,
                                       const ModuleLayout &layout) {
  const std::size_t vectors = raw.size() / layout.dHead;
  std::vector<double> dRaw;
  dRaw.reserve(raw.size());
  for (std::size_t n = 0; n < vectors; ++n) {
    const auto rawBegin = raw.begin() + n * layout.dHead;
    const auto dBegin = dFeatures.begin() + n * layout.dFeature;
    const std::vector<double> dSlice =
        dpfpBackward(std::vector<double>(rawBegin, rawBegin + layout.dHead),
                     std::vector<double>(dBegin, dBegin + layout.dFeature),
                     layout.nu, layout.eps);
    dRaw.insert(dRaw.end(), dSlice.begin(), dSlice.end());
  }
  return dRaw;
}

double sigmoid(double z) { return 1.0 / (1.0 + std::exp(-z)); }

/// Everything the forward computes before the output layer; the backward
/// recomputes it rather than taking it from the caller.
struct Intermediates {
  std::vector<double> rawQ, rawK; // [rows, heads, dHead], before DPFP
  ScanInputs scanIn;
  ScanOutputs scanOut; // y is the heads' outputs, [rows, dModel]
};

Intermediates runToScan(const AttentionConfig &config,
                        const ModuleLayout &layout,
                        const std::vector<double> &x,
                        const AttentionParams &params,
                        const std::vector<double> &initialState) {
  const std::size_t rows = layout.rows(), dModel = layout.dModel;
  Intermediates mid;
  // Projection outputs are grouped by head, so [rows, dModel] already is
  // the [seqLen, batch, heads, dHead] layout of the scan.
  mid.rawQ = linear(x, params.wQ, rows, dModel, dModel);
  mid.rawK = linear(x, params.wK, rows, dModel, dModel);
  mid.scanIn.q = featureMap(mid.rawQ, layout);
  mid.scanIn.k = featureMap(mid.rawK, layout);
  mid.scanIn.v = linear(x, params.wV, rows, dModel, dModel);
  if (config.rule == Rule::Delta) {
    mid.scanIn.beta = linear(x, params.wBeta, rows, dModel, layout.heads);
    for (double &gate : mid.scanIn.beta)
      gate = sigmoid(gate);
  }
  mid.scanIn.initialState = initialState;
  mid.scanOut = scan(config.rule, layout.scanShape(), mid.scanIn);
  return mid;
}

} // namespace

AttentionOutputs fwp::ref::attention(const AttentionConfig &config,
                                     const AttentionShape &shape,
                                     const std::vector<double> &x,
                                     const AttentionParams &params,
                                     const std::vector<double> &initialState) {
  const ModuleLayout layout = validateModule(
      config, shape, x, params, initialState, "fwp::ref::attention");
  Intermediates mid = runToScan(config, layout, x, params, initialState);
  const std::size_t rows = layout.rows(), dModel = layout.dModel;
  AttentionOutputs out;
  out.y = linear(mid.scanOut.y, params.wO, rows, dModel, dModel);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t o = 0; o < dModel; ++o)
      out.y[r * dModel + o] += params.bO[o];
  out.finalState = std::move(mid.scanOut.finalState);
  return out;
}

AttentionGradients fwp::ref::attentionBackward(
    const AttentionConfig &config, const AttentionShape &shape,
    const std::vector<double> &x, const AttentionParams &params,
    const std::vector<double> &dy, const std::vector<double> &initialState,
    const std::vector<double> &dFinalState) {
  const char *where = "fwp::ref::attentionBackward";
  const ModuleLayout layout =
      validateModule(config, shape, x, params, initialState, where);
  const std::size_t rows = layout.rows(), dModel = layout.dModel;
  detail::requireSize(dy, rows * dModel, "dy", "[seqLen, batch, dModel]",
                      where);
  detail::requireSizeOrEmpty(dFinalState, layout.stateCount(), "dFinalState",
                             "[batch, heads, dHead, 2*dHead*nu]", where);
  const Intermediates mid = runToScan(config, layout, x, params, initialState);

  AttentionGradients grads;
  // Output layer.
  grads.wO = linearWeightGradient(dy, mid.scanOut.y, rows, dModel, dModel);
  grads.bO.assign(dModel, 0.0);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t o = 0; o < dModel; ++o)
      grads.bO[o] += dy[r * dModel + o];
  std::vector<double> dHeadsOut(rows * dModel, 0.0);
  addLinearInputGradient(dy, params.wO, rows, dModel, dModel, dHeadsOut);

  // Scan, then DPFP for q and k and the sigmoid for the gate.
  const ScanGradients dScan = scanBackward(config.rule, layout.scanShape(),
                                           mid.scanIn, dHeadsOut, dFinalState);
  const std::vector<double> dRawQ =
      featureMapBackward(mid.rawQ, dScan.q, layout);
  const std::vector<double> dRawK =
      featureMapBackward(mid.rawK, dScan.k, layout);
  grads.initialState = dScan.initialState;

  // Projections: each one contributes to dx and owns its weight gradient.
  grads.x.assign(x.size(), 0.0);
  grads.wQ = linearWeightGradient(dRawQ, x, rows, dModel, dModel);
  grads.wK = linearWeightGradient(dRawK, x, rows, dModel, dModel);
  grads.wV = linearWeightGradient(dScan.v, x, rows, dModel, dModel);
  addLinearInputGradient(dRawQ, params.wQ, rows, dModel, dModel, grads.x);
  addLinearInputGradient(dRawK, params.wK, rows, dModel, dModel, grads.x);
  addLinearInputGradient(dScan.v, params.wV, rows, dModel, dModel, grads.x);
  if (config.rule == Rule::Delta) {
    std::vector<double> dLogit(dScan.beta.size());
    for (std::size_t n = 0; n < dLogit.size(); ++n) {
      const double gate = mid.scanIn.beta[n];
      dLogit[n] = dScan.beta[n] * gate * (1.0 - gate);
    }
    grads.wBeta = linearWeightGradient(dLogit, x, rows, dModel, layout.heads);
    addLinearInputGradient(dLogit, params.wBeta, rows, dModel, layout.heads,
                           grads.x);
  } else {
    // No gate in the sum rule: wBeta (if given at all) does not matter.
    grads.wBeta.assign(params.wBeta.size(), 0.0);
  }
  return grads;
}
