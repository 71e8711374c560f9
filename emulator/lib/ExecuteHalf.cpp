//===- ExecuteHalf.cpp - f16 and bf16 arithmetic --------------------------===//
//
// PTX ISA 9.7.4, "Half Precision Floating-Point Instructions": add, sub, mul,
// fma, neg, abs, min and max on .f16, .f16x2, .bf16 and .bf16x2, the packed
// forms on each 16-bit half of a .b32 alike. Their one rounding is .rn, the
// default. A result is computed in double, rounded to odd, and then rounded
// to nearest even in the 16-bit format: rounded to odd, 53 bits keep the
// second rounding to 11 or 8 bits correct where a plain double could land
// exactly on a tie (a bf16 fma whose product is a tie and whose addend is
// far below it). .ftz (f16) flushes subnormal inputs and results to a zero
// of the same sign, .sat (f16) clamps to [0, 1] with NaN to +0, .relu (fma)
// takes negative results to +0; a NaN result is the canonical NaN. This file
// is compiled with -frounding-math.
//
//===----------------------------------------------------------------------===//

#include "FloatFormats.h"
#include "Handlers.h"
#include "Lanes.h"

#include <cfenv>
#include <cmath>

namespace fwp::emu {
namespace {

bool isBfloat(Type type) { return type == Type::BF16 || type == Type::BF16x2; }
bool isPacked(Type type) { return type == Type::F16x2 || type == Type::BF16x2; }

/// One 16-bit format's rules for an instruction.
struct Half {
  const Instruction &inst;
  bool bfloat = isBfloat(inst.type);

  double value(uint16_t bits) const {
    return bfloat ? bfloatToFloat(bits) : halfToFloat(bits);
  }
  bool isNaN(uint16_t bits) const { return std::isnan(value(bits)); }
  uint16_t canonicalNaN() const {
    return bfloat ? kCanonicalNanBF16 : kCanonicalNanF16;
  }
  uint16_t flushed(uint16_t bits) const {
    bool subnormal = bfloat ? (bits & 0x7f80) == 0 && (bits & 0x007f) != 0
                            : (bits & 0x7c00) == 0 && (bits & 0x03ff) != 0;
    return inst.ftz && subnormal ? bits & 0x8000 : bits;
  }
  /// The instruction's result from the exact value rounded to odd.
  uint16_t result(double odd) const {
    uint16_t bits = flushed(bfloat ? floatToBfloat(odd, Rounding::Rn)
                                   : floatToHalf(odd, Rounding::Rn));
    double v = value(bits);
    if (inst.sat)
      bits = std::isnan(v) ? 0
             : v < 0       ? 0
             : v > 1       ? (bfloat ? 0x3f80 : 0x3c00)
                           : bits;
    if (inst.relu)
      bits = std::isnan(v) ? canonicalNaN() : v < 0 ? 0 : bits;
    return bits;
  }
};

/// f(), computed toward zero, with its last bit set if it was inexact.
template <typename F> double roundedToOdd(F f) {
  int saved = std::fegetround();
  std::fesetround(FE_TOWARDZERO);
  std::feclearexcept(FE_INEXACT);
  double value = f();
  bool inexact = std::fetestexcept(FE_INEXACT);
  std::fesetround(saved);
  if (inexact && std::isfinite(value))
    value = bitsAs<double>(asBits(value) | 1);
  return value;
}

/// Applies `op` to the 16-bit elements of the sources, one element or two
/// (low half, then high half) a lane.
template <unsigned Sources, typename Op> void halfLanes(Exec &e, Op op) {
  Half half{e.inst};
  bool packed = isPacked(e.inst.type);
  forLanes(e.mask, [&](int lane) {
    uint32_t sources[Sources];
    for (unsigned i = 0; i < Sources; ++i)
      sources[i] = uint32_t(read(e, e.inst.operands[i + 1], lane));
    uint32_t result = 0;
    for (unsigned element = 0; element < (packed ? 2u : 1u); ++element) {
      uint16_t inputs[Sources];
      for (unsigned i = 0; i < Sources; ++i)
        inputs[i] = half.flushed(uint16_t(sources[i] >> (16 * element)));
      result |= uint32_t(op(half, inputs)) << (16 * element);
    }
    write(e, e.inst.operands[0], lane,
          packed ? uint64_t(result) : uint64_t(result & 0xffff));
  });
}

template <typename F> void arithmetic2(Exec &e, F f) {
  halfLanes<2>(e, [&](const Half &h, const uint16_t *in) {
    double a = h.value(in[0]), b = h.value(in[1]);
    return h.result(roundedToOdd([&] { return f(a, b); }));
  });
}

void execAdd(Exec &e) {
  arithmetic2(e, [](double a, double b) { return a + b; });
}
void execSub(Exec &e) {
  arithmetic2(e, [](double a, double b) { return a - b; });
}
void execMul(Exec &e) {
  arithmetic2(e, [](double a, double b) { return a * b; });
}
void execFma(Exec &e) {
  halfLanes<3>(e, [](const Half &h, const uint16_t *in) {
    double a = h.value(in[0]), b = h.value(in[1]), c = h.value(in[2]);
    return h.result(roundedToOdd([&] { return std::fma(a, b, c); }));
  });
}

void execNeg(Exec &e) {
  halfLanes<1>(e, [](const Half &, const uint16_t *in) {
    return uint16_t(in[0] ^ 0x8000);
  });
}
void execAbs(Exec &e) {
  halfLanes<1>(e, [](const Half &, const uint16_t *in) {
    return uint16_t(in[0] & 0x7fff);
  });
}

/// min/max: a NaN loses to a number, two NaNs give the canonical NaN, and
/// -0 is below +0.
template <bool isMax> void execMinMax(Exec &e) {
  halfLanes<2>(e, [](const Half &h, const uint16_t *in) {
    bool nanA = h.isNaN(in[0]), nanB = h.isNaN(in[1]);
    if (nanA && nanB)
      return h.canonicalNaN();
    if (nanA || nanB)
      return nanA ? in[1] : in[0];
    double a = h.value(in[0]), b = h.value(in[1]);
    if (a == b) // +0 and -0: the sign decides
      return bool(in[0] & 0x8000) != isMax ? in[0] : in[1];
    return (a < b) != isMax ? in[0] : in[1];
  });
}

} // namespace

Handler halfHandler(const Instruction &inst) {
  Type type = inst.type;
  if (type != Type::F16 && type != Type::F16x2 && !isBfloat(type))
    return nullptr;
  // Only .rn rounds here; .ftz and .sat are f16's, .relu fma's.
  if (inst.rounding != Rounding::None && inst.rounding != Rounding::Rn)
    return nullptr;
  if (isBfloat(type) && (inst.ftz || inst.sat))
    return nullptr;
  if (inst.relu && inst.op != Opcode::Fma)
    return nullptr;
  switch (inst.op) {
  case Opcode::Add:
    return execAdd;
  case Opcode::Sub:
    return execSub;
  case Opcode::Mul:
    return execMul;
  case Opcode::Fma:
    return inst.rounding == Rounding::Rn ? execFma : nullptr;
  case Opcode::Neg:
    return inst.sat ? nullptr : execNeg;
  case Opcode::Abs:
    return inst.sat ? nullptr : execAbs;
  case Opcode::Min:
    return inst.sat ? nullptr : execMinMax<false>;
  case Opcode::Max:
    return inst.sat ? nullptr : execMinMax<true>;
  default:
    return nullptr;
  }
}

} // namespace fwp::emu
