//===- ElementType.h - Element types and element counts ---------*- C++ -*-===//
//
// The element count of a shape, as plans, the runtime and the code around
// them count it, and the conversions of the 16-bit storage types.
//
// Header only: code that does not link the runtime (the .npy reader, the
// JIT's argument checks) shares these definitions without a library.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_RUNTIME_ELEMENTTYPE_H
#define FWP_RUNTIME_ELEMENTTYPE_H

#include "fwp/Vocabulary.h"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace fwp::rt {

// The element types themselves are the vocabulary's (fwp/Vocabulary.h).
using ::fwp::DType;
using ::fwp::dtypeBytes;
using ::fwp::dtypeName;
using ::fwp::parseDType;

/// `x` rounded to the nearest bfloat16 (ties to even), as its bits; NaN
/// stays NaN.
inline uint16_t toBf16(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((bits >> 16) | 0x40);
  bits += 0x7fffu + ((bits >> 16) & 1);
  return static_cast<uint16_t>(bits >> 16);
}

inline float fromBf16(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float x;
  std::memcpy(&x, &bits, 4);
  return x;
}

/// `x` rounded to the nearest IEEE half (ties to even; subnormals; overflow
/// to infinity), as its bits.
inline uint16_t toF16(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) // NaN
    return sign | 0x7e00u;
  if (magnitude >= 0x477ff000u) // rounds to >= 65520: infinity
    return sign | 0x7c00u;
  if (magnitude < 0x38800000u) { // below 2^-14: a subnormal half (or zero)
    // The value in units of 2^-24, rounded to nearest even.
    float scaled = std::fabs(x) * 16777216.0f; // exact: a power of two
    float rounded = std::nearbyint(scaled);    // ties to even by default
    return sign | static_cast<uint16_t>(rounded);
  }
  // Normal: rebias the exponent (127 -> 15), round the 13 dropped bits.
  uint32_t half = magnitude - (112u << 23);
  half += 0xfffu + ((half >> 13) & 1);
  return sign | static_cast<uint16_t>(half >> 13);
}

inline float fromF16(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ffu;
  float magnitude;
  if (exponent == 0)
    magnitude = std::ldexp(static_cast<float>(mantissa), -24);
  else if (exponent == 31)
    magnitude = mantissa ? std::numeric_limits<float>::quiet_NaN()
                         : std::numeric_limits<float>::infinity();
  else
    magnitude = std::ldexp(static_cast<float>(mantissa | 0x400u),
                           static_cast<int>(exponent) - 25);
  uint32_t bits;
  std::memcpy(&bits, &magnitude, 4);
  bits |= sign;
  float x;
  std::memcpy(&x, &bits, 4);
  return x;
}

/// The product of `sizes` (1 for rank 0); nullopt if a size is negative or
/// the product does not fit int64_t. A zero size makes the product 0 however
/// large the other sizes are.
inline std::optional<int64_t> elementCount(const std::vector<int64_t> &sizes) {
  bool empty = false;
  for (int64_t size : sizes) {
    if (size < 0)
      return std::nullopt;
    empty = empty || size == 0;
  }
  if (empty)
    return 0;
  int64_t count = 1;
  for (int64_t size : sizes) {
    if (count > std::numeric_limits<int64_t>::max() / size)
      return std::nullopt;
    count *= size;
  }
  return count;
}

} // namespace fwp::rt

#endif // FWP_RUNTIME_ELEMENTTYPE_H
