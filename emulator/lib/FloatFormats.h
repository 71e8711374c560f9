//===- FloatFormats.h - f16, bf16 and tf32; PTX's float rules ---*- C++ -*-===//

#ifndef FWP_EMULATOR_FLOATFORMATS_H
#define FWP_EMULATOR_FLOATFORMATS_H

#include "fwp/Emulator/Ptx.h"

#include <cstdint>

namespace fwp::emu {

/// The NaN that f32 arithmetic writes (the hardware's; f64 keeps payloads).
constexpr uint32_t kCanonicalNanF32 = 0x7fffffff;
constexpr uint16_t kCanonicalNanF16 = 0x7fff;
constexpr uint16_t kCanonicalNanBF16 = 0x7fff;

float halfToFloat(uint16_t bits);
float bfloatToFloat(uint16_t bits);
/// `value` rounded to f16 or bf16 (Rn, Rz, Rm, Rp; Rna for ties away);
/// NaN becomes the canonical NaN of the format, overflow inf or the largest
/// finite value as the rounding says.
uint16_t floatToHalf(double value, Rounding rounding);
uint16_t floatToBfloat(double value, Rounding rounding);
/// cvt.rna.tf32.f32: 10 mantissa bits, nearest with ties away from zero,
/// the low 13 bits zero; NaN and infinities kept.
uint32_t floatToTf32(uint32_t bits);

/// Subnormal f32 to a zero of the same sign (.ftz).
float flushSubnormal(float value);

/// Sets the host's rounding mode for the life of the object.
class RoundingScope {
public:
  explicit RoundingScope(Rounding rounding);
  ~RoundingScope();
  RoundingScope(const RoundingScope &) = delete;
  RoundingScope &operator=(const RoundingScope &) = delete;

private:
  int saved_;
};

} // namespace fwp::emu

#endif // FWP_EMULATOR_FLOATFORMATS_H
