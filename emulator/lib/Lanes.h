//===- Lanes.h - Applying an operation to a warp's lanes --------*- C++ -*-===//
//
// Templates that read an instruction's sources as a C++ type for each lane
// of the exec mask, apply an operation and write the destination, and the
// switches from a PTX type suffix to a C++ type.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_EMULATOR_LANES_H
#define FWP_EMULATOR_LANES_H

#include "Interpreter.h"

#include <type_traits>

namespace fwp::emu {

template <typename T> T operandAs(Exec &e, int index, int lane) {
  return bitsAs<T>(read(e, e.inst.operands[index], lane));
}

template <typename T> void writeAs(Exec &e, int index, int lane, T value) {
  write(e, e.inst.operands[index], lane, asBits(value));
}

template <typename T, typename F> void unaryLanes(Exec &e, F f) {
  forLanes(e.mask, [&](int lane) {
    writeAs<T>(e, 0, lane, T(f(operandAs<T>(e, 1, lane))));
  });
}

template <typename T, typename F> void binaryLanes(Exec &e, F f) {
  forLanes(e.mask, [&](int lane) {
    writeAs<T>(e, 0, lane,
               T(f(operandAs<T>(e, 1, lane), operandAs<T>(e, 2, lane))));
  });
}

template <typename T, typename F> void ternaryLanes(Exec &e, F f) {
  forLanes(e.mask, [&](int lane) {
    writeAs<T>(e, 0, lane,
               T(f(operandAs<T>(e, 1, lane), operandAs<T>(e, 2, lane),
                   operandAs<T>(e, 3, lane))));
  });
}

/// Calls `f(T{})` with T the C++ integer type of `type` (signed or not as
/// the suffix says); false for a type that is not an integer.
template <typename F> bool withIntegerType(Type type, F f) {
  switch (type) {
  case Type::S8:
    f(int8_t{});
    return true;
  case Type::U8:
  case Type::B8:
    f(uint8_t{});
    return true;
  case Type::S16:
    f(int16_t{});
    return true;
  case Type::U16:
  case Type::B16:
    f(uint16_t{});
    return true;
  case Type::S32:
    f(int32_t{});
    return true;
  case Type::U32:
  case Type::B32:
    f(uint32_t{});
    return true;
  case Type::S64:
    f(int64_t{});
    return true;
  case Type::U64:
  case Type::B64:
    f(uint64_t{});
    return true;
  default:
    return false;
  }
}

/// The unsigned type of T's width: arithmetic that wraps is done in it
/// (signed overflow is undefined in C++, modular in PTX).
template <typename T> using Unsigned = std::make_unsigned_t<T>;

} // namespace fwp::emu

#endif // FWP_EMULATOR_LANES_H
