//===- Scan.cpp - Step-by-step fast-weight scan and its backward ----------===//
//
// The recurrence of docs/delta-rule-math.md section 3, one step at a
// time, and its backward derived directly from that recurrence by walking
// time in reverse. Deliberately not the chunked form of sections 4-5: the
// reference must stay an independent check of the compiled kernels.
//
//===----------------------------------------------------------------------===//

#include "fwp/Reference/Reference.h"

#include "ArgumentChecks.h"

#include <algorithm>
#include <cstddef>

using namespace fwp::ref;

namespace {

/// Validated sizes and the offsets of one (step, batch, head) row in each
/// layout of Reference.h.
struct ScanLayout {
  std::size_t seqLen, batch, heads, dFeature, dValue;

  std::size_t rowIndex(std::size_t t, std::size_t b, std::size_t h) const {
    return (t * batch + b) * heads + h;
  }
  std::size_t featureOffset(std::size_t t, std::size_t b, std::size_t h) const {
    return rowIndex(t, b, h) * dFeature;
  }
  std::size_t valueOffset(std::size_t t, std::size_t b, std::size_t h) const {
    return rowIndex(t, b, h) * dValue;
  }
  std::size_t stateSize() const { return dValue * dFeature; }
  std::size_t stateOffset(std::size_t b, std::size_t h) const {
    return (b * heads + h) * stateSize();
  }
  std::size_t rows() const { return seqLen * batch * heads; }
  std::size_t allStatesSize() const { return batch * heads * stateSize(); }
};

ScanLayout validateScan(Rule rule, const ScanShape &shape, const ScanInputs &in,
                        const char *where) {
  using namespace fwp::ref::detail;
  ScanLayout layout{requireNonNegative(shape.seqLen, "seqLen", where),
                    requireNonNegative(shape.batch, "batch", where),
                    requireNonNegative(shape.heads, "heads", where),
                    requireNonNegative(shape.dFeature, "dFeature", where),
                    requireNonNegative(shape.dValue, "dValue", where)};
  const std::size_t rows = layout.rows();
  requireSize(in.q, rows * layout.dFeature, "q",
              "[seqLen, batch, heads, dFeature]", where);
  requireSize(in.k, rows * layout.dFeature, "k",
              "[seqLen, batch, heads, dFeature]", where);
  requireSize(in.v, rows * layout.dValue, "v", "[seqLen, batch, heads, dValue]",
              where);
  if (rule == Rule::Delta)
    requireSize(in.beta, rows, "beta", "[seqLen, batch, heads]", where);
  else
    requireSizeOrEmpty(in.beta, rows, "beta", "[seqLen, batch, heads]", where);
  requireSizeOrEmpty(in.initialState, layout.allStatesSize(), "initialState",
                     "[batch, heads, dValue, dFeature]", where);
  return layout;
}

/// Fast weights W of one (batch, head): dValue x dFeature, row-major.
using Matrix = std::vector<double>;

/// out = W key (dValue entries): what W retrieves for `key`.
std::vector<double> retrieve(const Matrix &w, const double *key,
                             std::size_t dValue, std::size_t dFeature) {
  std::vector<double> out(dValue, 0.0);
  for (std::size_t r = 0; r < dValue; ++r)
    for (std::size_t c = 0; c < dFeature; ++c)
      out[r] += w[r * dFeature + c] * key[c];
  return out;
}

/// out = W^T vec (dFeature entries).
std::vector<double> retrieveTransposed(const Matrix &w, const double *vec,
                                       std::size_t dValue,
                                       std::size_t dFeature) {
  std::vector<double> out(dFeature, 0.0);
  for (std::size_t r = 0; r < dValue; ++r)
    for (std::size_t c = 0; c < dFeature; ++c)
      out[c] += w[r * dFeature + c] * vec[r];
  return out;
}

/// W += column * row^T.
void addOuterProduct(Matrix &w, const double *column, const double *row,
                     std::size_t dValue, std::size_t dFeature) {
  for (std::size_t r = 0; r < dValue; ++r)
    for (std::size_t c = 0; c < dFeature; ++c)
      w[r * dFeature + c] += column[r] * row[c];
}

/// The value u_t each step writes with W_t = W_{t-1} + u_t K_t^T:
/// delta rule beta (v - W_{t-1} K), sum rule v.
std::vector<double> writtenValue(Rule rule, const Matrix &previous,
                                 const double *key, const double *value,
                                 double beta, std::size_t dValue,
                                 std::size_t dFeature) {
  std::vector<double> written(value, value + dValue);
  if (rule == Rule::Sum)
    return written;
  const std::vector<double> retrieved =
      retrieve(previous, key, dValue, dFeature);
  for (std::size_t r = 0; r < dValue; ++r)
    written[r] = beta * (value[r] - retrieved[r]);
  return written;
}

Matrix initialMatrix(const ScanLayout &layout, const std::vector<double> &all,
                     std::size_t b, std::size_t h) {
  if (all.empty())
    return Matrix(layout.stateSize(), 0.0);
  const auto begin = all.begin() + layout.stateOffset(b, h);
  return Matrix(begin, begin + layout.stateSize());
}

double betaAt(Rule rule, const ScanInputs &in, std::size_t row) {
  return rule == Rule::Delta ? in.beta[row] : 1.0;
}

/// Runs one (batch, head) forward, writing y, and returns W_0 .. W_T (the
/// backward needs every one of them; the reference favours obviousness over
/// memory).
std::vector<Matrix> runHead(Rule rule, const ScanLayout &layout,
                            const ScanInputs &in, std::size_t b, std::size_t h,
                            std::vector<double> &y) {
  const std::size_t dv = layout.dValue, dk = layout.dFeature;
  std::vector<Matrix> states{initialMatrix(layout, in.initialState, b, h)};
  states.reserve(layout.seqLen + 1);
  for (std::size_t t = 0; t < layout.seqLen; ++t) {
    const double *key = &in.k[layout.featureOffset(t, b, h)];
    const double *query = &in.q[layout.featureOffset(t, b, h)];
    const double *value = &in.v[layout.valueOffset(t, b, h)];
    Matrix w = states.back();
    const std::vector<double> written =
        writtenValue(rule, w, key, value,
                     betaAt(rule, in, layout.rowIndex(t, b, h)), dv, dk);
    addOuterProduct(w, written.data(), key, dv, dk);
    // The read sees this step's write (y_t = W_t Q_t).
    const std::vector<double> out = retrieve(w, query, dv, dk);
    std::copy(out.begin(), out.end(), y.begin() + layout.valueOffset(t, b, h));
    states.push_back(std::move(w));
  }
  return states;
}

double dot(const double *a, const double *b, std::size_t n) {
  double total = 0.0;
  for (std::size_t i = 0; i < n; ++i)
    total += a[i] * b[i];
  return total;
}

/// Reverse-time backward of one (batch, head). On entry dW = dL/dW_T; on
/// exit dW = dL/dW_0. Per step, with dW = dL/dW_t:
///   y_t = W_t Q_t           dQ_t = W_t^T dy_t,   dW += dy_t Q_t^T
///   W_t = W_{t-1} + u K^T   du = dW K,  dK = dW^T u,  dW_{t-1} gets dW
///   delta: u = beta (v - W_{t-1} K)
///     dv = beta du, dbeta = <du, v - W_{t-1} K>, dvbar = -beta du,
///     dK += W_{t-1}^T dvbar, dW_{t-1} += dvbar K^T
///   sum:   u = v, dv = du
void backwardHead(Rule rule, const ScanLayout &layout, const ScanInputs &in,
                  const std::vector<double> &dy, const std::vector<Matrix> &w,
                  std::size_t b, std::size_t h, Matrix &dW,
                  ScanGradients &grads) {
  const std::size_t dv = layout.dValue, dk = layout.dFeature;
  for (std::size_t t = layout.seqLen; t-- > 0;) {
    const std::size_t fOff = layout.featureOffset(t, b, h);
    const std::size_t vOff = layout.valueOffset(t, b, h);
    const std::size_t row = layout.rowIndex(t, b, h);
    const double *key = &in.k[fOff], *query = &in.q[fOff];
    const double *value = &in.v[vOff], *dOut = &dy[vOff];
    const Matrix &current = w[t + 1], &previous = w[t];

    const std::vector<double> dQuery =
        retrieveTransposed(current, dOut, dv, dk);
    std::copy(dQuery.begin(), dQuery.end(), grads.q.begin() + fOff);
    addOuterProduct(dW, dOut, query, dv, dk);

    const double beta = betaAt(rule, in, row);
    const std::vector<double> written =
        writtenValue(rule, previous, key, value, beta, dv, dk);
    const std::vector<double> dWritten = retrieve(dW, key, dv, dk);
    std::vector<double> dKey = retrieveTransposed(dW, written.data(), dv, dk);

    if (rule == Rule::Sum) {
      std::copy(dWritten.begin(), dWritten.end(), grads.v.begin() + vOff);
    } else {
      const std::vector<double> retrieved = retrieve(previous, key, dv, dk);
      std::vector<double> dRetrieved(dv), mismatch(dv);
      for (std::size_t r = 0; r < dv; ++r) {
        grads.v[vOff + r] = beta * dWritten[r];
        dRetrieved[r] = -beta * dWritten[r];
        mismatch[r] = value[r] - retrieved[r];
      }
      grads.beta[row] = dot(dWritten.data(), mismatch.data(), dv);
      const std::vector<double> dKeyRead =
          retrieveTransposed(previous, dRetrieved.data(), dv, dk);
      for (std::size_t c = 0; c < dk; ++c)
        dKey[c] += dKeyRead[c];
      // Must come after every use of dW as dL/dW_t above.
      addOuterProduct(dW, dRetrieved.data(), key, dv, dk);
    }
    std::copy(dKey.begin(), dKey.end(), grads.k.begin() + fOff);
  }
}

} // namespace

ScanOutputs fwp::ref::scan(Rule rule, const ScanShape &shape,
                           const ScanInputs &in) {
  const ScanLayout layout = validateScan(rule, shape, in, "fwp::ref::scan");
  ScanOutputs out;
  out.y.assign(layout.rows() * layout.dValue, 0.0);
  out.finalState.assign(layout.allStatesSize(), 0.0);
  for (std::size_t b = 0; b < layout.batch; ++b) {
    for (std::size_t h = 0; h < layout.heads; ++h) {
      const std::vector<Matrix> states = runHead(rule, layout, in, b, h, out.y);
      std::copy(states.back().begin(), states.back().end(),
                out.finalState.begin() + layout.stateOffset(b, h));
    }
  }
  return out;
}

ScanGradients fwp::ref::scanBackward(Rule rule, const ScanShape &shape,
                                     const ScanInputs &in,
                                     const std::vector<double> &dy,
                                     const std::vector<double> &dFinalState) {
  const char *where = "fwp::ref::scanBackward";
  const ScanLayout layout = validateScan(rule, shape, in, where);
  detail::requireSize(dy, layout.rows() * layout.dValue, "dy",
                      "[seqLen, batch, heads, dValue]", where);
  detail::requireSizeOrEmpty(dFinalState, layout.allStatesSize(), "dFinalState",
                             "[batch, heads, dValue, dFeature]", where);

  ScanGradients grads;
  grads.q.assign(in.q.size(), 0.0);
  grads.k.assign(in.k.size(), 0.0);
  grads.v.assign(in.v.size(), 0.0);
  if (rule == Rule::Delta)
    grads.beta.assign(in.beta.size(), 0.0);
  grads.initialState.assign(layout.allStatesSize(), 0.0);

  std::vector<double> unusedY(layout.rows() * layout.dValue);
  for (std::size_t b = 0; b < layout.batch; ++b) {
    for (std::size_t h = 0; h < layout.heads; ++h) {
      const std::vector<Matrix> states =
          runHead(rule, layout, in, b, h, unusedY);
      Matrix dW = initialMatrix(layout, dFinalState, b, h);
      backwardHead(rule, layout, in, dy, states, b, h, dW, grads);
      std::copy(dW.begin(), dW.end(),
                grads.initialState.begin() + layout.stateOffset(b, h));
    }
  }
  return grads;
}
