//===- ArgumentChecks.h - Argument validation for the reference -*- C++ -*-===//
//
// Small helpers shared by the reference's entry points. Every failure throws
// std::invalid_argument whose message names the function, the argument and
// the expected size, so a caller sees at once which layout it got wrong.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_LIB_REFERENCE_ARGUMENTCHECKS_H
#define FWP_LIB_REFERENCE_ARGUMENTCHECKS_H

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace fwp::ref::detail {

[[noreturn]] inline void fail(const char *where, const std::string &what) {
  throw std::invalid_argument(std::string(where) + ": " + what);
}

/// Shapes are signed in the API; reject negatives before any size_t math.
inline std::size_t requireNonNegative(int64_t value, const char *name,
                                      const char *where) {
  if (value < 0)
    fail(where,
         std::string(name) + " must be >= 0, got " + std::to_string(value));
  return static_cast<std::size_t>(value);
}

inline void requireSize(const std::vector<double> &values, std::size_t expected,
                        const char *name, const char *layout,
                        const char *where) {
  if (values.size() != expected)
    fail(where, std::string(name) + " has " + std::to_string(values.size()) +
                    " elements, expected " + std::to_string(expected) + " (" +
                    layout + ")");
}

/// Optional tensors (initial state, final-state gradient) are either empty,
/// meaning zero, or complete.
inline void requireSizeOrEmpty(const std::vector<double> &values,
                               std::size_t expected, const char *name,
                               const char *layout, const char *where) {
  if (!values.empty())
    requireSize(values, expected, name, layout, where);
}

/// DPFP is defined for 1 <= nu <= 2d - 1 and a strictly positive eps; the
/// negated comparison also rejects a NaN eps.
inline void requireValidDpfp(std::size_t keySize, int64_t nu, double eps,
                             const char *where) {
  const int64_t maxNu = 2 * static_cast<int64_t>(keySize) - 1;
  if (nu < 1 || nu > maxNu)
    fail(where, "nu must be in [1, 2*d-1] = [1, " + std::to_string(maxNu) +
                    "] for d = " + std::to_string(keySize) + ", got " +
                    std::to_string(nu));
  if (!(eps > 0.0))
    fail(where, "eps must be > 0, got " + std::to_string(eps));
}

} // namespace fwp::ref::detail

#endif // FWP_LIB_REFERENCE_ARGUMENTCHECKS_H
