//===- ExecuteFloat.cpp - f32 and f64 arithmetic --------------------------===//
//
// PTX ISA 9.7.3 (f32/f64; half precision, 9.7.4, is ExecuteHalf.cpp).
// The host's IEEE arithmetic in the instruction's rounding mode gives the
// correctly rounded results the ISA asks of add, sub, mul, fma, div.rn,
// rcp.rn and sqrt.rn. Around it: .ftz flushes subnormal inputs and results
// to zero of the same sign, .sat clamps to [0, 1] with NaN to +0, and a NaN
// result is the canonical NaN (0x7fffffff for f32). Approximate instructions
// use the host's correctly rounded or faithful functions, well within the
// ISA's error bounds. This file is compiled with -frounding-math.
//
//===----------------------------------------------------------------------===//

#include "FloatFormats.h"
#include "Handlers.h"
#include "Lanes.h"

#include <cmath>

namespace fwp::emu {
namespace {

template <typename T> T input(const Instruction &inst, T value) {
  if constexpr (std::is_same_v<T, float>)
    return inst.ftz ? flushSubnormal(value) : value;
  return value;
}

template <typename T> T result(const Instruction &inst, T value) {
  if constexpr (std::is_same_v<T, float>)
    if (inst.ftz)
      value = flushSubnormal(value);
  if (inst.sat)
    value = std::isnan(value) ? T(0) : std::min(std::max(value, T(0)), T(1));
  if constexpr (std::is_same_v<T, float>)
    if (std::isnan(value))
      return bitsAs<float>(kCanonicalNanF32);
  return value;
}

/// Calls f(T{}) for f32 or f64.
template <typename F> void withFloatType(const Instruction &inst, F f) {
  if (inst.type == Type::F32)
    f(float{});
  else
    f(double{});
}

template <typename F> void floatUnary(Exec &e, F f) {
  const Instruction &inst = e.inst;
  withFloatType(inst, [&](auto t) {
    using T = decltype(t);
    RoundingScope scope(inst.rounding);
    unaryLanes<T>(e, [&](T a) { return result(inst, T(f(input(inst, a)))); });
  });
}

template <typename F> void floatBinary(Exec &e, F f) {
  const Instruction &inst = e.inst;
  withFloatType(inst, [&](auto t) {
    using T = decltype(t);
    RoundingScope scope(inst.rounding);
    binaryLanes<T>(e, [&](T a, T b) {
      return result(inst, T(f(input(inst, a), input(inst, b))));
    });
  });
}

void execAdd(Exec &e) {
  floatBinary(e, [](auto a, auto b) { return a + b; });
}
void execSub(Exec &e) {
  floatBinary(e, [](auto a, auto b) { return a - b; });
}
void execMul(Exec &e) {
  floatBinary(e, [](auto a, auto b) { return a * b; });
}
void execDiv(Exec &e) {
  floatBinary(e, [](auto a, auto b) { return a / b; });
}

/// div.approx.f32 computes a * (1 / b): for 2^126 < |b| < 2^128 the
/// reciprocal underflows, so the result is a signed zero, or NaN for an
/// infinite a (ISA: div).
void execDivApprox(Exec &e) {
  floatBinary(e, [](float a, float b) {
    float magnitude = std::fabs(b);
    if (magnitude > 0x1p126f && magnitude < INFINITY)
      return std::isinf(a) ? NAN
                           : std::copysign(0.0f, a) * std::copysign(1.0f, b);
    return a / b;
  });
}

void execFma(Exec &e) {
  const Instruction &inst = e.inst;
  withFloatType(inst, [&](auto t) {
    using T = decltype(t);
    RoundingScope scope(inst.rounding);
    ternaryLanes<T>(e, [&](T a, T b, T c) {
      return result(
          inst, T(std::fma(input(inst, a), input(inst, b), input(inst, c))));
    });
  });
}

/// min/max: a NaN operand loses to a number; -0 is below +0.
template <bool isMax> void execMinMax(Exec &e) {
  floatBinary(e, [](auto a, auto b) {
    if (std::isnan(a))
      return b;
    if (std::isnan(b))
      return a;
    if (a == b)
      return (std::signbit(a) != isMax) ? a : b;
    return isMax ? std::max(a, b) : std::min(a, b);
  });
}

/// neg and abs change the sign bit only, NaN payloads included.
void execNeg(Exec &e) {
  const Instruction &inst = e.inst;
  withFloatType(inst, [&](auto t) {
    using T = decltype(t);
    unaryLanes<T>(e, [&](T a) { return -input(inst, a); });
  });
}

/// abs.f64 passes a NaN through unchanged, its sign too (ISA: abs).
void execAbs(Exec &e) {
  const Instruction &inst = e.inst;
  withFloatType(inst, [&](auto t) {
    using T = decltype(t);
    unaryLanes<T>(e, [&](T a) {
      if (std::is_same_v<T, double> && std::isnan(a))
        return a;
      return std::fabs(input(inst, a));
    });
  });
}

void execCopysign(Exec &e) {
  withFloatType(e.inst, [&](auto t) {
    using T = decltype(t);
    binaryLanes<T>(e, [](T a, T b) { return std::copysign(b, a); });
  });
}

void execRcp(Exec &e) {
  floatUnary(e, [](auto a) { return decltype(a)(1) / a; });
}
void execSqrt(Exec &e) {
  floatUnary(e, [](auto a) { return std::sqrt(a); });
}
void execRsqrt(Exec &e) {
  floatUnary(e, [](auto a) { return decltype(a)(1) / std::sqrt(a); });
}
void execEx2(Exec &e) {
  floatUnary(e, [](auto a) { return std::exp2(a); });
}
void execLg2(Exec &e) {
  floatUnary(e, [](auto a) { return std::log2(a); });
}
void execSin(Exec &e) {
  floatUnary(e, [](auto a) { return std::sin(a); });
}
void execCos(Exec &e) {
  floatUnary(e, [](auto a) { return std::cos(a); });
}
void execTanh(Exec &e) {
  floatUnary(e, [](auto a) { return std::tanh(a); });
}

} // namespace

Handler floatHandler(const Instruction &inst) {
  if (inst.type != Type::F32 && inst.type != Type::F64)
    return nullptr;
  bool f32 = inst.type == Type::F32;
  switch (inst.op) {
  case Opcode::Add:
    return execAdd;
  case Opcode::Sub:
    return execSub;
  case Opcode::Mul:
    return execMul;
  case Opcode::Div:
    return f32 && inst.approx ? execDivApprox : execDiv;
  case Opcode::Fma:
  case Opcode::Mad:
    return execFma;
  case Opcode::Min:
    return execMinMax<false>;
  case Opcode::Max:
    return execMinMax<true>;
  case Opcode::Neg:
    return execNeg;
  case Opcode::Abs:
    return execAbs;
  case Opcode::Copysign:
    return execCopysign;
  case Opcode::Rcp:
    return execRcp;
  case Opcode::Sqrt:
    return execSqrt;
  case Opcode::Rsqrt:
    return execRsqrt;
  case Opcode::Ex2:
    return execEx2;
  case Opcode::Lg2:
    return f32 ? execLg2 : nullptr;
  case Opcode::Sin:
    return f32 ? execSin : nullptr;
  case Opcode::Cos:
    return f32 ? execCos : nullptr;
  case Opcode::Tanh:
    return f32 ? execTanh : nullptr;
  default:
    return nullptr;
  }
}

} // namespace fwp::emu
