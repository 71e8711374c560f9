//===- FloatFormats.cpp - f16, bf16 and tf32; PTX's float rules -----------===//

#include "FloatFormats.h"

#include <cfenv>
#include <cmath>
#include <cstring>

namespace fwp::emu {
namespace {

struct Format {
  int precision; // significand bits, the implicit one included
  int minExponent, maxExponent;
  int exponentBits;
  uint16_t nan;
};
constexpr Format kHalf{11, -14, 15, 5, kCanonicalNanF16};
constexpr Format kBfloat{8, -126, 127, 8, kCanonicalNanBF16};

double roundToInteger(double value, Rounding rounding) {
  switch (rounding) {
  case Rounding::Rz:
    return std::trunc(value);
  case Rounding::Rm:
    return std::floor(value);
  case Rounding::Rp:
    return std::ceil(value);
  case Rounding::Rna:
    return std::round(value);
  default: {
    double floor = std::floor(value), rest = value - floor;
    if (rest > 0.5 || (rest == 0.5 && std::fmod(floor, 2.0) != 0.0))
      return floor + 1;
    return floor;
  }
  }
}

/// Rounds `value` (exact as a double: f32 and f64 inputs) to `format`,
/// then encodes it.
uint16_t roundTo(const Format &format, double value, Rounding rounding) {
  uint16_t sign = std::signbit(value) ? uint16_t(1u << 15) : 0;
  int mantissaBits = format.precision - 1;
  uint16_t infinity =
      uint16_t(((1u << format.exponentBits) - 1) << mantissaBits);
  if (std::isnan(value))
    return format.nan;
  double magnitude = std::fabs(value);
  if (std::isinf(value))
    return sign | infinity;
  if (magnitude == 0)
    return sign;
  int exponent;
  std::frexp(magnitude, &exponent); // magnitude = m 2^exponent, m in [.5, 1)
  int quantum = std::max(exponent - 1, format.minExponent) - mantissaBits;
  Rounding magnitudeRounding = rounding;
  if (sign && rounding == Rounding::Rm)
    magnitudeRounding = Rounding::Rp;
  else if (sign && rounding == Rounding::Rp)
    magnitudeRounding = Rounding::Rm;
  double units =
      roundToInteger(std::ldexp(magnitude, -quantum), magnitudeRounding);
  if (units == 0)
    return sign;
  double rounded = std::ldexp(units, quantum);
  double largest =
      std::ldexp(2.0 - std::ldexp(1.0, -mantissaBits), format.maxExponent);
  if (rounded > largest) {
    bool toInfinity = magnitudeRounding == Rounding::Rn ||
                      magnitudeRounding == Rounding::Rna ||
                      magnitudeRounding == Rounding::Rp ||
                      rounding == Rounding::None;
    return toInfinity ? (sign | infinity) : uint16_t(sign | (infinity - 1));
  }
  std::frexp(rounded, &exponent);
  if (exponent - 1 < format.minExponent) // subnormal
    return sign | uint16_t(units);
  int biased = exponent - 1 + format.maxExponent;
  uint16_t mantissa = uint16_t(
      std::ldexp(rounded, mantissaBits - (exponent - 1)) - (1 << mantissaBits));
  return sign | uint16_t(biased << mantissaBits) | mantissa;
}

} // namespace

float halfToFloat(uint16_t bits) {
  uint32_t sign = uint32_t(bits & 0x8000) << 16;
  int exponent = (bits >> 10) & 0x1f;
  uint32_t mantissa = bits & 0x3ff;
  float value;
  if (exponent == 0x1f) {
    uint32_t f = sign | 0x7f800000 | (mantissa << 13);
    std::memcpy(&value, &f, 4);
    return value;
  }
  value = exponent == 0 ? std::ldexp(float(mantissa), -24)
                        : std::ldexp(float(mantissa | 0x400), exponent - 25);
  return sign ? -value : value;
}

float bfloatToFloat(uint16_t bits) {
  uint32_t f = uint32_t(bits) << 16;
  float value;
  std::memcpy(&value, &f, 4);
  return value;
}

uint16_t floatToHalf(double value, Rounding rounding) {
  return roundTo(kHalf, value, rounding);
}

uint16_t floatToBfloat(double value, Rounding rounding) {
  return roundTo(kBfloat, value, rounding);
}

uint32_t floatToTf32(uint32_t bits) {
  if ((bits & 0x7f800000) == 0x7f800000) // NaN or infinity
    return bits;
  uint32_t sign = bits & 0x80000000u, magnitude = bits & 0x7fffffffu;
  magnitude = (magnitude + 0x1000) & ~0x1fffu; // ties away: add half an ulp
  return sign | magnitude;
}

float flushSubnormal(float value) {
  if (std::fpclassify(value) == FP_SUBNORMAL)
    return std::copysign(0.0f, value);
  return value;
}

RoundingScope::RoundingScope(Rounding rounding) : saved_(std::fegetround()) {
  switch (rounding) {
  case Rounding::Rz:
  case Rounding::Rzi:
    std::fesetround(FE_TOWARDZERO);
    break;
  case Rounding::Rm:
  case Rounding::Rmi:
    std::fesetround(FE_DOWNWARD);
    break;
  case Rounding::Rp:
  case Rounding::Rpi:
    std::fesetround(FE_UPWARD);
    break;
  default:
    std::fesetround(FE_TONEAREST);
  }
}

RoundingScope::~RoundingScope() { std::fesetround(saved_); }

} // namespace fwp::emu
