//===- ExecuteConvert.cpp - cvt and cvta ----------------------------------===//
//
// PTX ISA 9.7.9.21 (cvt) and 9.7.9.19 (cvta). Integer sources are extended
// by their own signedness before they are cut or clamped (.sat) to the
// destination. Float-to-integer conversions round as .rni/.rzi/.rmi/.rpi
// say, clamp to the destination's range, and give 0 for NaN. Conversions to
// f16, bf16 and tf32 round as their modifier says; .x2 forms put the first
// source in the upper half. Compiled with -frounding-math.
//
//===----------------------------------------------------------------------===//

#include "FloatFormats.h"
#include "Handlers.h"
#include "Lanes.h"

#include <cmath>
#include <limits>

namespace fwp::emu {
namespace {

bool isHalfLike(Type t) { return t == Type::F16 || t == Type::BF16; }

/// A float source's value (exact in a double).
double floatValue(Type type, uint64_t bits) {
  switch (type) {
  case Type::F16:
    return halfToFloat(uint16_t(bits));
  case Type::BF16:
    return bfloatToFloat(uint16_t(bits));
  case Type::F32:
    return bitsAs<float>(bits);
  default:
    return bitsAs<double>(bits);
  }
}

/// An integer source, extended by its signedness, as a 128-bit value.
__int128 integerValue(Type type, uint64_t bits) {
  unsigned width = 8 * sizeOf(type);
  bits = truncateBits(bits, width / 8);
  if (isSigned(type) && width < 64 && (bits >> (width - 1)) & 1)
    bits |= ~uint64_t(0) << width;
  return isSigned(type) ? __int128(int64_t(bits)) : __int128(bits);
}

void integerRange(Type type, __int128 &low, __int128 &high) {
  unsigned width = 8 * sizeOf(type);
  if (isSigned(type)) {
    high = (__int128(1) << (width - 1)) - 1;
    low = -high - 1;
  } else {
    low = 0;
    high = (__int128(1) << width) - 1;
  }
}

double roundForInteger(double value, Rounding rounding) {
  switch (rounding) {
  case Rounding::Rzi:
    return std::trunc(value);
  case Rounding::Rmi:
    return std::floor(value);
  case Rounding::Rpi:
    return std::ceil(value);
  default:
    return std::nearbyint(value); // .rni: the scope rounds to nearest even
  }
}

uint64_t toInteger(const Instruction &inst, uint64_t bits) {
  Type from = inst.sourceType, to = inst.type;
  __int128 low, high;
  integerRange(to, low, high);
  __int128 value;
  if (isFloat(from)) {
    double v = floatValue(from, bits);
    // NaN gives 0, except from .f64 or to a 64-bit integer: 1 << (width-1).
    if (std::isnan(v))
      return from == Type::F64 || sizeOf(to) == 8
                 ? uint64_t(1) << (8 * sizeOf(to) - 1)
                 : 0;
    v = roundForInteger(v, inst.rounding);
    if (v <= double(low))
      value = low;
    else if (v >= double(high))
      value = high;
    else
      value = __int128(v);
  } else {
    value = integerValue(from, bits);
    if (inst.sat)
      value = std::min(std::max(value, low), high);
  }
  return truncateBits(uint64_t(value), sizeOf(to));
}

/// An f32 or f64 result (rounded in the scope's mode).
uint64_t toWideFloat(const Instruction &inst, uint64_t bits) {
  Type from = inst.sourceType;
  bool toF32 = inst.type == Type::F32;
  if (!isFloat(from)) {
    __int128 v = integerValue(from, bits);
    if (toF32)
      return asBits(isSigned(from) ? float(int64_t(v)) : float(uint64_t(v)));
    return asBits(isSigned(from) ? double(int64_t(v)) : double(uint64_t(v)));
  }
  double v = floatValue(from, bits);
  bool roundsToInteger =
      inst.rounding == Rounding::Rni || inst.rounding == Rounding::Rzi ||
      inst.rounding == Rounding::Rmi || inst.rounding == Rounding::Rpi;
  if (inst.ftz && from == Type::F32)
    v = flushSubnormal(float(v));
  if (roundsToInteger && !std::isnan(v))
    v = roundForInteger(v, inst.rounding);
  if (inst.sat)
    v = std::isnan(v) ? 0.0 : std::min(std::max(v, 0.0), 1.0);
  if (!toF32)
    return asBits(v);
  float f = float(v); // rounded by the scope's mode
  if (inst.ftz)
    f = flushSubnormal(f);
  if (std::isnan(v) && from != Type::F32)
    return kCanonicalNanF32;
  if (std::isnan(v)) // an f32 NaN passes through as it is
    return bits & 0xffffffffu;
  return asBits(f);
}

uint16_t toHalfLike(const Instruction &inst, Type to, double v) {
  if (inst.relu && !std::isnan(v) && v < 0)
    v = 0;
  return to == Type::F16 ? floatToHalf(v, inst.rounding)
                         : floatToBfloat(v, inst.rounding);
}

void execCvt(Exec &e) {
  const Instruction &inst = e.inst;
  RoundingScope scope(inst.rounding);
  forLanes(e.mask, [&](int lane) {
    uint64_t a = read(e, inst.operands[1], lane), out;
    if (inst.type == Type::F16x2 || inst.type == Type::BF16x2) {
      Type half = inst.type == Type::F16x2 ? Type::F16 : Type::BF16;
      uint64_t b = read(e, inst.operands[2], lane);
      out = uint64_t(toHalfLike(inst, half, bitsAs<float>(a))) << 16 |
            toHalfLike(inst, half, bitsAs<float>(b));
    } else if (inst.type == Type::TF32) {
      out = floatToTf32(uint32_t(a));
    } else if (isHalfLike(inst.type)) {
      out = toHalfLike(inst, inst.type, floatValue(inst.sourceType, a));
    } else if (isFloat(inst.type)) {
      out = toWideFloat(inst, a);
    } else {
      out = widenSigned(e, inst.operands[0], inst.type, toInteger(inst, a));
    }
    write(e, inst.operands[0], lane, out);
  });
}

/// Global addresses are generic addresses here; shared ones sit in a
/// window of the generic space.
void execCvta(Exec &e) {
  const Instruction &inst = e.inst;
  forLanes(e.mask, [&](int lane) {
    uint64_t a = read(e, inst.operands[1], lane);
    if (inst.space == Space::Shared)
      a = inst.to ? a - kSharedWindow : a + kSharedWindow;
    write(e, inst.operands[0], lane, truncateBits(a, sizeOf(inst.type)));
  });
}

bool supportedCvt(const Instruction &inst) {
  Type to = inst.type, from = inst.sourceType;
  if (to == Type::TF32)
    return from == Type::F32 && inst.rounding == Rounding::Rna;
  if (to == Type::F16x2 || to == Type::BF16x2)
    return from == Type::F32 && inst.operands.size() == 3;
  auto known = [](Type t) {
    return t != Type::None && t != Type::Pred && t != Type::B128 &&
           t != Type::F16x2 && t != Type::BF16x2 && t != Type::TF32;
  };
  return known(to) && known(from) && inst.operands.size() == 2;
}

} // namespace

Handler conversionHandler(const Instruction &inst) {
  if (inst.op == Opcode::Cvt)
    return supportedCvt(inst) ? execCvt : nullptr;
  if (inst.op == Opcode::Cvta)
    return inst.space == Space::Global || inst.space == Space::Shared ? execCvta
                                                                      : nullptr;
  return nullptr;
}

} // namespace fwp::emu
