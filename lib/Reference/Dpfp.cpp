//===- Dpfp.cpp - DPFP feature map and its gradient -----------------------===//
//
// phi'(k) of docs/delta-rule-math.md section 2, with the roll order of
// the seeds' code (torch.roll(x, shifts=i)), not the seed text's i + j.
//
//===----------------------------------------------------------------------===//

#include "fwp/Reference/Reference.h"

#include "ArgumentChecks.h"

#include <cstddef>

using namespace fwp::ref;

namespace {

/// x = relu(concat(k, -k)): one non-negative copy of each sign of k.
std::vector<double> signedRelu(const std::vector<double> &k) {
  const std::size_t d = k.size();
  std::vector<double> x(2 * d, 0.0);
  for (std::size_t j = 0; j < d; ++j) {
    x[j] = k[j] > 0.0 ? k[j] : 0.0;
    x[d + j] = k[j] < 0.0 ? -k[j] : 0.0;
  }
  return x;
}

/// Index that torch.roll(x, shifts=shift) moves to position j: (j - shift)
/// mod n. Callers guarantee 0 < shift < n.
std::size_t rolledSource(std::size_t j, std::size_t shift, std::size_t n) {
  return (j + n - shift) % n;
}

/// Unnormalized phi: phi[(i-1)*2d + j] = x[j] * x[(j - i) mod 2d].
std::vector<double> unnormalizedFeatures(const std::vector<double> &x,
                                         std::size_t nu) {
  const std::size_t n = x.size();
  std::vector<double> phi(n * nu);
  for (std::size_t i = 1; i <= nu; ++i)
    for (std::size_t j = 0; j < n; ++j)
      phi[(i - 1) * n + j] = x[j] * x[rolledSource(j, i, n)];
  return phi;
}

double sum(const std::vector<double> &values) {
  double total = 0.0;
  for (double value : values)
    total += value;
  return total;
}

} // namespace

std::vector<double> fwp::ref::dpfp(const std::vector<double> &k, int64_t nu,
                                   double eps) {
  detail::requireValidDpfp(k.size(), nu, eps, "fwp::ref::dpfp");
  std::vector<double> phi =
      unnormalizedFeatures(signedRelu(k), static_cast<std::size_t>(nu));
  // phi >= 0, so the normalizer is >= eps > 0: an all-zero key gives 0, not
  // NaN.
  const double normalizer = sum(phi) + eps;
  for (double &value : phi)
    value /= normalizer;
  return phi;
}

std::vector<double> fwp::ref::dpfpBackward(const std::vector<double> &k,
                                           const std::vector<double> &g,
                                           int64_t nu, double eps) {
  const char *where = "fwp::ref::dpfpBackward";
  detail::requireValidDpfp(k.size(), nu, eps, where);
  const std::size_t d = k.size(), n = 2 * d;
  const std::size_t nuSize = static_cast<std::size_t>(nu);
  detail::requireSize(g, n * nuSize, "g", "2 * d * nu", where);

  const std::vector<double> x = signedRelu(k);
  const std::vector<double> phi = unnormalizedFeatures(x, nuSize);
  const double normalizer = sum(phi) + eps;

  // phi' = phi / s with s = sum(phi) + eps: every phi[m] also moves s, hence
  // the common term dot(g, phi) / s^2.
  double gDotPhi = 0.0;
  for (std::size_t m = 0; m < phi.size(); ++m)
    gDotPhi += g[m] * phi[m];
  const double common = gDotPhi / (normalizer * normalizer);

  // Each feature is a product of two entries of x; both receive gradient.
  std::vector<double> dx(n, 0.0);
  for (std::size_t i = 1; i <= nuSize; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      const std::size_t m = (i - 1) * n + j, source = rolledSource(j, i, n);
      const double dPhi = g[m] / normalizer - common;
      dx[j] += dPhi * x[source];
      dx[source] += dPhi * x[j];
    }
  }

  // Through relu(k) and relu(-k); at k == 0 both branches are off (the
  // subgradient 0, which is also the true derivative of the quadratic phi).
  std::vector<double> dk(d, 0.0);
  for (std::size_t j = 0; j < d; ++j) {
    if (k[j] > 0.0)
      dk[j] = dx[j];
    else if (k[j] < 0.0)
      dk[j] = -dx[d + j];
  }
  return dk;
}
