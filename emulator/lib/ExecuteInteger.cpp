//===- ExecuteInteger.cpp - Integer and bit instructions ------------------===//
//
// PTX ISA 9.7.1 (integer arithmetic), 9.7.8 (logic and shift), 9.7.9
// (comparison and selection). Wrapping arithmetic runs on the unsigned type
// of the operand's width; signedness matters only where the ISA says so
// (mul.hi/.wide, div, rem, min, max, shr, comparisons).
//
//===----------------------------------------------------------------------===//

#include "Handlers.h"
#include "Lanes.h"

#include <limits>

namespace fwp::emu {
namespace {

template <typename F> void integerBinary(Exec &e, F f) {
  withIntegerType(e.inst.type, [&](auto t) {
    using T = decltype(t);
    binaryLanes<T>(e, [&](T a, T b) { return f(a, b); });
  });
}

/// add.sat.s32 clamps instead of wrapping (ISA: add).
int32_t saturate(int64_t value) {
  return int32_t(
      std::max<int64_t>(std::min<int64_t>(value, INT32_MAX), INT32_MIN));
}

void execAdd(Exec &e) {
  if (e.inst.sat)
    return binaryLanes<int32_t>(
        e, [](int32_t a, int32_t b) { return saturate(int64_t(a) + b); });
  integerBinary(e, [](auto a, auto b) {
    using U = Unsigned<decltype(a)>;
    return decltype(a)(U(a) + U(b));
  });
}

void execSub(Exec &e) {
  if (e.inst.sat)
    return binaryLanes<int32_t>(
        e, [](int32_t a, int32_t b) { return saturate(int64_t(a) - b); });
  integerBinary(e, [](auto a, auto b) {
    using U = Unsigned<decltype(a)>;
    return decltype(a)(U(a) - U(b));
  });
}

/// The full product of a and b, as the double-width type (64-bit operands:
/// __int128).
template <typename T> auto fullProduct(T a, T b) {
  if constexpr (sizeof(T) == 8) {
    using Wide =
        std::conditional_t<std::is_signed_v<T>, __int128, unsigned __int128>;
    return Wide(a) * Wide(b);
  } else {
    using Wide = std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>;
    return Wide(a) * Wide(b);
  }
}

/// mul/mad: .lo keeps the low half of the product, .hi the high half, .wide
/// the whole product in a destination of twice the width.
template <typename T> uint64_t productBits(const Instruction &inst, T a, T b) {
  auto product = fullProduct(a, b);
  unsigned bits = 8 * sizeof(T);
  if (inst.wide)
    return uint64_t(product);
  if (inst.hi)
    return truncateBits(uint64_t(product >> bits), sizeof(T));
  return truncateBits(uint64_t(product), sizeof(T));
}

void execMul(Exec &e) {
  withIntegerType(e.inst.type, [&](auto t) {
    using T = decltype(t);
    forLanes(e.mask, [&](int lane) {
      write(e, e.inst.operands[0], lane,
            productBits<T>(e.inst, operandAs<T>(e, 1, lane),
                           operandAs<T>(e, 2, lane)));
    });
  });
}

void execMad(Exec &e) {
  withIntegerType(e.inst.type, [&](auto t) {
    using T = decltype(t);
    unsigned resultBytes = e.inst.wide ? 2 * sizeof(T) : sizeof(T);
    forLanes(e.mask, [&](int lane) {
      uint64_t product = productBits<T>(e.inst, operandAs<T>(e, 1, lane),
                                        operandAs<T>(e, 2, lane));
      uint64_t addend = read(e, e.inst.operands[3], lane);
      write(e, e.inst.operands[0], lane,
            truncateBits(product + addend, resultBytes));
    });
  });
}

/// Division by zero has no defined result in PTX; the emulator gives all
/// ones (as the hardware does for unsigned division) rather than trap.
void execDiv(Exec &e) {
  integerBinary(e, [](auto a, auto b) -> decltype(a) {
    using T = decltype(a);
    if (b == 0)
      return T(~Unsigned<T>(0));
    if (std::is_signed_v<T> && a == std::numeric_limits<T>::min() && b == T(-1))
      return a;
    return T(a / b);
  });
}

void execRem(Exec &e) {
  integerBinary(e, [](auto a, auto b) -> decltype(a) {
    using T = decltype(a);
    if (b == 0)
      return a;
    if (std::is_signed_v<T> && b == T(-1))
      return 0;
    return T(a % b);
  });
}

void execMin(Exec &e) {
  integerBinary(e, [](auto a, auto b) { return std::min(a, b); });
}
void execMax(Exec &e) {
  integerBinary(e, [](auto a, auto b) { return std::max(a, b); });
}

void execAbs(Exec &e) {
  withIntegerType(e.inst.type, [&](auto t) {
    using T = decltype(t);
    unaryLanes<T>(e, [](T a) {
      using U = Unsigned<T>;
      return T(a < 0 ? U(0) - U(a) : U(a));
    });
  });
}

void execNeg(Exec &e) {
  withIntegerType(e.inst.type, [&](auto t) {
    using T = decltype(t);
    unaryLanes<T>(e, [](T a) { return T(Unsigned<T>(0) - Unsigned<T>(a)); });
  });
}

/// Logic on bits; on predicates the registers hold 0 or 1.
template <typename F> void bitwise(Exec &e, F f) {
  if (e.inst.type == Type::Pred)
    return forLanes(e.mask, [&](int lane) {
      uint64_t a = read(e, e.inst.operands[1], lane);
      uint64_t b =
          e.inst.operands.size() > 2 ? read(e, e.inst.operands[2], lane) : 0;
      write(e, e.inst.operands[0], lane, f(a, b) & 1);
    });
  unsigned bytes = sizeOf(e.inst.type);
  forLanes(e.mask, [&](int lane) {
    uint64_t a = read(e, e.inst.operands[1], lane);
    uint64_t b =
        e.inst.operands.size() > 2 ? read(e, e.inst.operands[2], lane) : 0;
    write(e, e.inst.operands[0], lane, truncateBits(f(a, b), bytes));
  });
}

void execAnd(Exec &e) {
  bitwise(e, [](uint64_t a, uint64_t b) { return a & b; });
}
void execOr(Exec &e) {
  bitwise(e, [](uint64_t a, uint64_t b) { return a | b; });
}
void execXor(Exec &e) {
  bitwise(e, [](uint64_t a, uint64_t b) { return a ^ b; });
}
void execNot(Exec &e) {
  bitwise(e, [](uint64_t a, uint64_t) { return ~a; });
}
void execCnot(Exec &e) {
  bitwise(e, [](uint64_t a, uint64_t) { return uint64_t(a == 0); });
}

/// Shift amounts are unsigned 32-bit and clamp at the width (ISA: shl, shr).
void execShl(Exec &e) {
  unsigned bits = 8 * sizeOf(e.inst.type);
  forLanes(e.mask, [&](int lane) {
    uint64_t a = read(e, e.inst.operands[1], lane);
    uint32_t n = uint32_t(read(e, e.inst.operands[2], lane));
    write(e, e.inst.operands[0], lane,
          n >= bits ? 0 : truncateBits(a << n, bits / 8));
  });
}

void execShr(Exec &e) {
  withIntegerType(e.inst.type, [&](auto t) {
    using T = decltype(t);
    unsigned bits = 8 * sizeof(T);
    forLanes(e.mask, [&](int lane) {
      T a = operandAs<T>(e, 1, lane);
      uint32_t n = uint32_t(read(e, e.inst.operands[2], lane));
      T result = n >= bits ? (a < 0 ? T(-1) : T(0)) : T(a >> n);
      writeAs<T>(e, 0, lane, result);
    });
  });
}

void execPopc(Exec &e) {
  forLanes(e.mask, [&](int lane) {
    uint64_t a = read(e, e.inst.operands[1], lane);
    write(e, e.inst.operands[0], lane, uint32_t(__builtin_popcountll(a)));
  });
}

void execClz(Exec &e) {
  unsigned bits = 8 * sizeOf(e.inst.type);
  forLanes(e.mask, [&](int lane) {
    uint64_t a = truncateBits(read(e, e.inst.operands[1], lane), bits / 8);
    uint32_t zeros = a == 0 ? bits : __builtin_clzll(a) - (64 - bits);
    write(e, e.inst.operands[0], lane, zeros);
  });
}

void execBrev(Exec &e) {
  unsigned bits = 8 * sizeOf(e.inst.type);
  forLanes(e.mask, [&](int lane) {
    uint64_t a = read(e, e.inst.operands[1], lane), r = 0;
    for (unsigned i = 0; i < bits; ++i)
      r |= ((a >> i) & 1) << (bits - 1 - i);
    write(e, e.inst.operands[0], lane, r);
  });
}

/// bfe: the field of `len` bits at `pos`, sign-extended from its top bit
/// for signed types (ISA: bfe; pos and len taken modulo 256).
void execBfe(Exec &e) {
  withIntegerType(e.inst.type, [&](auto t) {
    using T = decltype(t);
    unsigned bits = 8 * sizeof(T);
    forLanes(e.mask, [&](int lane) {
      uint64_t a = truncateBits(read(e, e.inst.operands[1], lane), sizeof(T));
      unsigned pos = read(e, e.inst.operands[2], lane) & 0xff;
      unsigned len = read(e, e.inst.operands[3], lane) & 0xff;
      bool sign = false;
      if (std::is_signed_v<T>)
        sign = len == 0 ? false : (a >> std::min(pos + len - 1, bits - 1)) & 1;
      uint64_t r = sign ? ~uint64_t(0) : 0;
      for (unsigned i = 0; i < len && i < bits; ++i)
        if (pos + i < bits)
          r = (r & ~(uint64_t(1) << i)) | (((a >> (pos + i)) & 1) << i);
      write(e, e.inst.operands[0], lane, truncateBits(r, sizeof(T)));
    });
  });
}

void execBfi(Exec &e) {
  unsigned bits = 8 * sizeOf(e.inst.type);
  forLanes(e.mask, [&](int lane) {
    uint64_t a = read(e, e.inst.operands[1], lane);
    uint64_t b = read(e, e.inst.operands[2], lane);
    unsigned pos = read(e, e.inst.operands[3], lane) & 0xff;
    unsigned len = read(e, e.inst.operands[4], lane) & 0xff;
    for (unsigned i = 0; i < len && pos + i < bits; ++i)
      b = (b & ~(uint64_t(1) << (pos + i))) | (((a >> i) & 1) << (pos + i));
    write(e, e.inst.operands[0], lane, truncateBits(b, bits / 8));
  });
}

/// prmt.b32 (default mode): each selector nibble picks one of the eight
/// bytes of {b, a}; its top bit replicates that byte's sign.
void execPrmt(Exec &e) {
  forLanes(e.mask, [&](int lane) {
    uint64_t a = read(e, e.inst.operands[1], lane) & 0xffffffffu;
    uint64_t b = read(e, e.inst.operands[2], lane) & 0xffffffffu;
    uint32_t c = uint32_t(read(e, e.inst.operands[3], lane));
    uint64_t bytes = (b << 32) | a;
    uint32_t r = 0;
    for (int i = 0; i < 4; ++i) {
      unsigned selector = (c >> (4 * i)) & 0xf;
      uint32_t byte = (bytes >> (8 * (selector & 7))) & 0xff;
      if (selector & 8)
        byte = (byte & 0x80) ? 0xff : 0;
      r |= byte << (8 * i);
    }
    write(e, e.inst.operands[0], lane, r);
  });
}

void execShf(Exec &e) {
  forLanes(e.mask, [&](int lane) {
    uint64_t a = read(e, e.inst.operands[1], lane) & 0xffffffffu;
    uint64_t b = read(e, e.inst.operands[2], lane) & 0xffffffffu;
    uint32_t n = uint32_t(read(e, e.inst.operands[3], lane));
    n = e.inst.shiftClamp ? std::min(n, 32u) : n & 31;
    uint64_t joined = (b << 32) | a;
    uint32_t r =
        e.inst.left ? uint32_t((joined << n) >> 32) : uint32_t(joined >> n);
    write(e, e.inst.operands[0], lane, r);
  });
}

} // namespace

Handler integerHandler(const Instruction &inst) {
  bool integer = !isFloat(inst.type) && inst.type != Type::None;
  bool logic = integer || inst.type == Type::Pred;
  switch (inst.op) {
  case Opcode::Add:
    return integer ? execAdd : nullptr;
  case Opcode::Sub:
    return integer ? execSub : nullptr;
  case Opcode::Mul:
    return integer ? execMul : nullptr;
  case Opcode::Mad:
    return integer ? execMad : nullptr;
  case Opcode::Div:
    return integer ? execDiv : nullptr;
  case Opcode::Rem:
    return integer ? execRem : nullptr;
  case Opcode::Min:
    return integer ? execMin : nullptr;
  case Opcode::Max:
    return integer ? execMax : nullptr;
  case Opcode::Abs:
    return integer ? execAbs : nullptr;
  case Opcode::Neg:
    return integer ? execNeg : nullptr;
  case Opcode::And:
    return logic ? execAnd : nullptr;
  case Opcode::Or:
    return logic ? execOr : nullptr;
  case Opcode::Xor:
    return logic ? execXor : nullptr;
  case Opcode::Not:
    return logic ? execNot : nullptr;
  case Opcode::Cnot:
    return integer ? execCnot : nullptr;
  case Opcode::Shl:
    return integer ? execShl : nullptr;
  case Opcode::Shr:
    return integer ? execShr : nullptr;
  case Opcode::Popc:
    return integer ? execPopc : nullptr;
  case Opcode::Clz:
    return integer ? execClz : nullptr;
  case Opcode::Brev:
    return integer ? execBrev : nullptr;
  case Opcode::Bfe:
    return integer ? execBfe : nullptr;
  case Opcode::Bfi:
    return integer ? execBfi : nullptr;
  case Opcode::Prmt:
    return inst.type == Type::B32 ? execPrmt : nullptr;
  case Opcode::Shf:
    return inst.type == Type::B32 ? execShf : nullptr;
  default:
    return nullptr;
  }
}

} // namespace fwp::emu
