//===- ExecuteSelect.cpp - setp, selp, slct and mov -----------------------===//
//
// PTX ISA 9.7.9 (comparison and selection) and 9.7.9.x (mov). Ordered float
// comparisons are false when an operand is NaN, the unordered ones (`equ`,
// `ltu`, ...) true; `lo`/`ls`/`hi`/`hs` compare as unsigned.
//
//===----------------------------------------------------------------------===//

#include "FloatFormats.h"
#include "Handlers.h"
#include "Lanes.h"

#include <cmath>

namespace fwp::emu {
namespace {

template <typename T> bool compareNumbers(Compare c, T a, T b) {
  switch (c) {
  case Compare::Eq:
  case Compare::Equ:
    return a == b;
  case Compare::Ne:
  case Compare::Neu:
    return a != b;
  case Compare::Lt:
  case Compare::Ltu:
  case Compare::Lo:
    return a < b;
  case Compare::Le:
  case Compare::Leu:
  case Compare::Ls:
    return a <= b;
  case Compare::Gt:
  case Compare::Gtu:
  case Compare::Hi:
    return a > b;
  case Compare::Ge:
  case Compare::Geu:
  case Compare::Hs:
    return a >= b;
  default:
    return false;
  }
}

bool isUnordered(Compare c) {
  return c == Compare::Equ || c == Compare::Neu || c == Compare::Ltu ||
         c == Compare::Leu || c == Compare::Gtu || c == Compare::Geu;
}

template <typename T> bool compareFloats(const Instruction &inst, T a, T b) {
  if constexpr (std::is_same_v<T, float>)
    if (inst.ftz) {
      a = flushSubnormal(a);
      b = flushSubnormal(b);
    }
  bool nan = std::isnan(a) || std::isnan(b);
  if (inst.compare == Compare::Num)
    return !nan;
  if (inst.compare == Compare::Nan)
    return nan;
  if (nan)
    return isUnordered(inst.compare);
  // `ne` is ordered: false for NaN, handled above.
  return compareNumbers(inst.compare, a, b);
}

/// The comparison of operands `first` and `first + 1` for `lane`.
bool compare(Exec &e, int first, int lane) {
  const Instruction &inst = e.inst;
  if (inst.type == Type::F32)
    return compareFloats(inst, operandAs<float>(e, first, lane),
                         operandAs<float>(e, first + 1, lane));
  if (inst.type == Type::F64)
    return compareFloats(inst, operandAs<double>(e, first, lane),
                         operandAs<double>(e, first + 1, lane));
  bool out = false;
  Type type = inst.type;
  // lo/ls/hi/hs compare as unsigned whatever the suffix.
  if (inst.compare == Compare::Lo || inst.compare == Compare::Ls ||
      inst.compare == Compare::Hi || inst.compare == Compare::Hs)
    type = sizeOf(type) == 8   ? Type::U64
           : sizeOf(type) == 4 ? Type::U32
                               : Type::U16;
  withIntegerType(type, [&](auto t) {
    using T = decltype(t);
    out = compareNumbers(inst.compare, operandAs<T>(e, first, lane),
                         operandAs<T>(e, first + 1, lane));
  });
  return out;
}

bool combine(Opcode op, bool a, bool b) {
  switch (op) {
  case Opcode::And:
    return a && b;
  case Opcode::Or:
    return a || b;
  case Opcode::Xor:
    return a != b;
  default:
    return a;
  }
}

/// setp d[|q], a, b[, c]: d = cmp(a, b) op c, q = !cmp(a, b) op c.
void execSetp(Exec &e) {
  const Instruction &inst = e.inst;
  const Operand &dest = inst.operands[0];
  bool paired = dest.kind == Operand::Kind::Vector;
  forLanes(e.mask, [&](int lane) {
    bool result = compare(e, 1, lane);
    bool c = inst.operands.size() > 3 ? read(e, inst.operands[3], lane) : true;
    write(e, paired ? dest.elements[0] : dest, lane,
          combine(inst.combine, result, c));
    if (paired)
      write(e, dest.elements[1], lane, combine(inst.combine, !result, c));
  });
}

/// selp d, a, b, p: a where p holds, else b.
void execSelp(Exec &e) {
  unsigned bytes = sizeOf(e.inst.type);
  forLanes(e.mask, [&](int lane) {
    bool p = read(e, e.inst.operands[3], lane) != 0;
    uint64_t v = read(e, e.inst.operands[p ? 1 : 2], lane);
    write(e, e.inst.operands[0], lane, truncateBits(v, bytes));
  });
}

/// slct d, a, b, c: a if c >= 0, else b (c: .s32 or .f32, the last type).
void execSlct(Exec &e) {
  const Instruction &inst = e.inst;
  unsigned bytes = sizeOf(inst.sourceType);
  forLanes(e.mask, [&](int lane) {
    bool first = inst.type == Type::F32 ? !(operandAs<float>(e, 3, lane) < 0.0f)
                                        : operandAs<int32_t>(e, 3, lane) >= 0;
    uint64_t v = read(e, inst.operands[first ? 1 : 2], lane);
    write(e, inst.operands[0], lane, truncateBits(v, bytes));
  });
}

/// mov d, a; mov d, {a, b} packs the elements, first in the low bits;
/// mov {a, b}, d unpacks.
void execMov(Exec &e) {
  const Instruction &inst = e.inst;
  const Operand &dest = inst.operands[0], &source = inst.operands[1];
  unsigned bytes = sizeOf(inst.type);
  forLanes(e.mask, [&](int lane) {
    if (source.kind == Operand::Kind::Vector) {
      unsigned width = 8 * bytes / unsigned(source.elements.size());
      uint64_t packed = 0;
      for (size_t i = 0; i < source.elements.size(); ++i)
        packed |= truncateBits(read(e, source.elements[i], lane), width / 8)
                  << (i * width);
      write(e, dest, lane, packed);
    } else if (dest.kind == Operand::Kind::Vector) {
      unsigned width = 8 * bytes / unsigned(dest.elements.size());
      uint64_t packed = read(e, source, lane);
      for (size_t i = 0; i < dest.elements.size(); ++i)
        write(e, dest.elements[i], lane,
              truncateBits(packed >> (i * width), width / 8));
    } else {
      write(e, dest, lane,
            inst.type == Type::Pred
                ? read(e, source, lane) != 0
                : truncateBits(read(e, source, lane), bytes));
    }
  });
}

} // namespace

Handler selectionHandler(const Instruction &inst) {
  switch (inst.op) {
  case Opcode::Setp:
    return inst.type != Type::None && inst.type != Type::Pred &&
                   inst.compare != Compare::None && !isFloat(inst.type)
               ? execSetp
           : (inst.type == Type::F32 || inst.type == Type::F64) ? execSetp
                                                                : nullptr;
  case Opcode::Selp:
    return inst.type != Type::None ? execSelp : nullptr;
  case Opcode::Slct:
    return execSlct;
  case Opcode::Mov:
    return inst.type != Type::None ? execMov : nullptr;
  default:
    return nullptr;
  }
}

} // namespace fwp::emu
