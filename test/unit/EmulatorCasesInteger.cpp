//===- EmulatorCasesInteger.cpp - Integer, logic and compare cases --------===//
//
// Integer arithmetic (PTX ISA "Integer Arithmetic Instructions"), logic and
// shift ("Logic and Shift Instructions") and comparison and selection
// ("Comparison and Selection Instructions", with the operator tables of
// "Predicated Execution: Comparisons"), against values worked out by hand
// from the ISA text.
//
//===----------------------------------------------------------------------===//

#include "EmulatorCases.h"

namespace fwp::conformance {
namespace {

constexpr uint64_t kMinusOne32 = 0xffffffffull;
constexpr uint64_t kMinusOne64 = 0xffffffffffffffffull;

} // namespace

CaseList integerAddAndSubWrapModuloTheWidth() {
  return {
      elementwise("u32", {"u32", "u32"}, "add.u32 %d, %a, %b;", 4,
                  {{"2^32-1 + 1 wraps to 0", {0xffffffff, 1}, 0},
                   {"plain sum", {40, 2}, 42}}),
      // add.s32 without .sat wraps; add.sat.s32 clamps to MININT..MAXINT
      // (Integer Arithmetic Instructions: add, "Saturation modifier").
      elementwise(
          "s32", {"s32", "s32"}, "add.s32 %d, %a, %b;", 4,
          {{"MAXINT + 1 wraps to MININT", {0x7fffffff, 1}, 0x80000000}}),
      elementwise(
          "s32", {"s32", "s32"}, "add.sat.s32 %d, %a, %b;", 4,
          {{"MAXINT + 1 saturates", {0x7fffffff, 1}, 0x7fffffff},
           {"MININT + -1 saturates", {0x80000000, kMinusOne32}, 0x80000000}}),
      elementwise("u32", {"u32", "u32"}, "sub.u32 %d, %a, %b;", 4,
                  {{"0 - 1 wraps to 2^32-1", {0, 1}, kMinusOne32}}),
      elementwise("u64", {"u64", "u64"}, "add.u64 %d, %a, %b;", 8,
                  {{"the carry reaches the high word",
                    {0xffffffff, 1},
                    0x100000000ull}}),
      elementwise("s64", {"s64", "s64"}, "sub.s64 %d, %a, %b;", 8,
                  {{"0 - 1", {0, 1}, kMinusOne64}}),
      elementwise("u16", {"u16", "u16"}, "add.u16 %d, %a, %b;", 2,
                  {{"16-bit wrap", {0xffff, 1}, 0}}),
  };
}

CaseList integerMulLoHiAndWideTakeTheRightHalfOfTheProduct() {
  return {
      elementwise("s32", {"s32", "s32"}, "mul.lo.s32 %d, %a, %b;", 4,
                  {{"-3 * 5", {0xfffffffd, 5}, 0xfffffff1}}),
      // mul.hi: the upper n bits of the 2n-bit product; signed and unsigned
      // differ for the same bits: 0x80000000 * 2 is -2^32 signed, 2^32
      // unsigned.
      elementwise("u32", {"u32", "u32"}, "mul.hi.u32 %d, %a, %b;", 4,
                  {{"(2^32-1)^2 = 0xfffffffe_00000001",
                    {kMinusOne32, kMinusOne32},
                    0xfffffffe},
                   {"2^31 * 2 = 2^32", {0x80000000, 2}, 1}}),
      elementwise("s32", {"s32", "s32"}, "mul.hi.s32 %d, %a, %b;", 4,
                  {{"-2^31 * 2 = -2^32", {0x80000000, 2}, kMinusOne32}}),
      // mul.wide: the whole 64-bit product of 32-bit operands.
      elementwise("s64", {"s32", "s32"}, "mul.wide.s32 %d, %a, %b;", 8,
                  {{"-2 * 3", {0xfffffffe, 3}, 0xfffffffffffffffaull}}),
      elementwise("u64", {"u32", "u32"}, "mul.wide.u32 %d, %a, %b;", 8,
                  {{"(2^32-2) * 3", {0xfffffffe, 3}, 0x2fffffffaull}}),
      elementwise("u64", {"u64", "u64"}, "mul.hi.u64 %d, %a, %b;", 8,
                  {{"(2^64-1) * 2 = 2^65 - 2", {kMinusOne64, 2}, 1}}),
      elementwise("s64", {"s64", "s64"}, "mul.hi.s64 %d, %a, %b;", 8,
                  {{"-1 * 2 = -2", {kMinusOne64, 2}, kMinusOne64}}),
      elementwise("u64", {"u64", "u64"}, "mul.lo.u64 %d, %a, %b;", 8,
                  {{"2^32 * 2^32 wraps to 0", {1ull << 32, 1ull << 32}, 0},
                   {"3 * 5", {3, 5}, 15}}),
  };
}

CaseList integerMadAddsTheLowOrWideProduct() {
  return {
      elementwise("s32", {"s32", "s32", "s32"}, "mad.lo.s32 %d, %a, %b, %c;", 4,
                  {{"7 * -3 + 100", {7, 0xfffffffd, 100}, 79}}),
      elementwise("u32", {"u32", "u32", "u32"}, "mad.lo.u32 %d, %a, %b, %c;", 4,
                  {{"2^16 * 2^16 drops out of the low half",
                    {0x10000, 0x10000, 5},
                    5}}),
      elementwise("u64", {"u32", "u32", "u64"}, "mad.wide.u32 %d, %a, %b, %c;",
                  8,
                  {{"(2^32-1)^2 + 1",
                    {kMinusOne32, kMinusOne32, 1},
                    0xfffffffe00000002ull}}),
  };
}

// Integer Arithmetic Instructions: div and rem, "d = a / b" and "d = a % b".
// Division by zero is unspecified and not tested. For negative operands the
// ISA says rem "is machine-dependent and depends on whether divide rounds
// towards zero or negative infinity"; the signed rem cases pin the
// round-toward-zero (C) convention, which is the one the emulator must share
// with the hardware, but being machine-dependent they run on the emulator
// only.
CaseList integerDivAndRemSignedAndUnsigned() {
  return {
      elementwise("u32", {"u32", "u32"}, "div.u32 %d, %a, %b;", 4,
                  {{"7 / 2", {7, 2}, 3},
                   {"(2^32-1) / 2 is unsigned", {kMinusOne32, 2}, 0x7fffffff}}),
      elementwise("s32", {"s32", "s32"}, "div.s32 %d, %a, %b;", 4,
                  {{"-7 / 2 rounds toward zero", {0xfffffff9, 2}, 0xfffffffd},
                   {"-1 / 2 is signed", {kMinusOne32, 2}, 0}}),
      elementwise(
          "u32", {"u32", "u32"}, "rem.u32 %d, %a, %b;", 4,
          {{"7 % 3", {7, 3}, 1}, {"(2^32-1) % 10", {kMinusOne32, 10}, 5}}),
      onlyOnTheEmulator(
          elementwise("s32", {"s32", "s32"}, "rem.s32 %d, %a, %b;", 4,
                      {{"-7 % 3 takes the dividend's sign",
                        {0xfffffff9, 3},
                        kMinusOne32},
                       {"7 % -3", {7, 0xfffffffd}, 1}}),
          "rem of negative operands is machine-dependent (Integer Arithmetic "
          "Instructions: rem, Notes)"),
      elementwise(
          "s64", {"s64", "s64"}, "div.s64 %d, %a, %b;", 8,
          {{"-9 / 4", {0xfffffffffffffff7ull, 4}, 0xfffffffffffffffeull}}),
      elementwise("u64", {"u64", "u64"}, "rem.u64 %d, %a, %b;", 8,
                  {{"(2^64-1) % 7", {kMinusOne64, 7}, 1}}),
  };
}

// Logic and Shift Instructions: shl, shr: "Shift amounts greater than the
// register width N are clamped to N"; "Signed shifts fill with the sign bit,
// unsigned and untyped shifts fill with 0". The amount is always a .u32.
CaseList integerShiftAmountsBeyondTheWidthClampToTheWidth() {
  return {
      elementwise("b32", {"b32", "u32"}, "shl.b32 %d, %a, %b;", 4,
                  {{"1 << 31", {1, 31}, 0x80000000},
                   {"1 << 32 shifts everything out", {1, 32}, 0},
                   {"1 << 33 clamps to 32", {1, 33}, 0},
                   {"huge amounts clamp too", {kMinusOne32, 0xffffffff}, 0}}),
      elementwise(
          "s32", {"s32", "u32"}, "shr.s32 %d, %a, %b;", 4,
          {{"-16 >> 2 is arithmetic", {0xfffffff0, 2}, 0xfffffffc},
           {"MININT >> 40 gives the sign fill", {0x80000000, 40}, kMinusOne32},
           {"MAXINT >> 40 gives 0", {0x7fffffff, 40}, 0}}),
      elementwise("u32", {"u32", "u32"}, "shr.u32 %d, %a, %b;", 4,
                  {{"2^31 >> 4 fills with 0", {0x80000000, 4}, 0x08000000},
                   {"2^31 >> 40 gives 0", {0x80000000, 40}, 0}}),
      elementwise(
          "b32", {"b32", "u32"}, "shr.b32 %d, %a, %b;", 4,
          {{"untyped shifts fill with 0", {0x80000000, 4}, 0x08000000}}),
      elementwise("b64", {"b64", "u32"}, "shl.b64 %d, %a, %b;", 8,
                  {{"1 << 63", {1, 63}, 0x8000000000000000ull},
                   {"1 << 64 clamps to 64", {1, 64}, 0},
                   {"the amount is 32-bit, not 6-bit masked", {1, 65}, 0}}),
      elementwise(
          "s64", {"s64", "u32"}, "shr.s64 %d, %a, %b;", 8,
          {{"MININT64 >> 100", {0x8000000000000000ull, 100}, kMinusOne64}}),
      elementwise("b16", {"b16", "u32"}, "shl.b16 %d, %a, %b;", 2,
                  {{"16-bit width", {0x8001, 1}, 0x0002},
                   {"16-bit clamp", {0x8001, 17}, 0}}),
      elementwise("s16", {"s16", "u32"}, "shr.s16 %d, %a, %b;", 2,
                  {{"16-bit sign fill", {0x8000, 20}, 0xffff}}),
  };
}

CaseList integerBitwiseLogicPopcClzCnot() {
  return {
      elementwise("b32", {"b32", "b32"}, "and.b32 %d, %a, %b;", 4,
                  {{"and", {0xff00ff00, 0x0ff00ff0}, 0x0f000f00}}),
      elementwise("b32", {"b32", "b32"}, "or.b32 %d, %a, %b;", 4,
                  {{"or", {0xff00ff00, 0x0ff00ff0}, 0xfff0fff0}}),
      elementwise("b32", {"b32", "b32"}, "xor.b32 %d, %a, %b;", 4,
                  {{"xor", {0xff00ff00, 0x0ff00ff0}, 0xf0f0f0f0}}),
      elementwise("b32", {"b32"}, "not.b32 %d, %a;", 4,
                  {{"not", {0xff00ff00}, 0x00ff00ff}}),
      elementwise("b64", {"b64", "b64"}, "xor.b64 %d, %a, %b;", 8,
                  {{"64-bit xor", {kMinusOne64, 0xf0}, 0xffffffffffffff0full}}),
      // cnot: d = (a == 0) ? 1 : 0 (C's !), not a bitwise complement.
      elementwise("b32", {"b32"}, "cnot.b32 %d, %a;", 4,
                  {{"!0 is 1", {0}, 1}, {"!5 is 0", {5}, 0}}),
      // popc and clz write a .u32 whatever the source width.
      elementwise("u32", {"b32"}, "popc.b32 %d, %a;", 4,
                  {{"popc", {0xf0f0f0f1}, 17}, {"popc 0", {0}, 0}}),
      elementwise("u32", {"b64"}, "popc.b64 %d, %a;", 4,
                  {{"popc of 64 ones", {kMinusOne64}, 64}}),
      elementwise("u32", {"b32"}, "clz.b32 %d, %a;", 4,
                  {{"clz 0 is the width", {0}, 32},
                   {"clz 1", {1}, 31},
                   {"clz 2^31", {0x80000000}, 0}}),
      elementwise("u32", {"b64"}, "clz.b64 %d, %a;", 4,
                  {{"clz.b64 1", {1}, 63}}),
  };
}

// Integer Arithmetic Instructions: bfe. The sign bit of the field is
// a[min(pos+len-1, msb)] for signed types; bits past the msb of the source
// are that sign bit; len 0 gives 0.
CaseList integerBitFieldExtractSignAndZeroExtends() {
  return {
      elementwise(
          "u32", {"u32", "u32", "u32"}, "bfe.u32 %d, %a, %b, %c;", 4,
          {{"byte 1", {0xabcd1234, 8, 8}, 0x12},
           {"field running past bit 31 is cut", {0xabcd1234, 28, 8}, 0xa}}),
      elementwise(
          "s32", {"s32", "u32", "u32"}, "bfe.s32 %d, %a, %b, %c;", 4,
          {{"negative nibble sign-extends", {0x0000f000, 12, 4}, kMinusOne32},
           {"positive nibble", {0x00007000, 12, 4}, 7},
           {"length 0 gives 0", {kMinusOne32, 4, 0}, 0},
           {"start past the msb replicates bit 31",
            {0x80000000, 40, 4},
            kMinusOne32}}),
  };
}

CaseList integerMinMaxNegAbsAreSignAware() {
  return {
      elementwise("s32", {"s32", "s32"}, "min.s32 %d, %a, %b;", 4,
                  {{"signed min(-1, 1)", {kMinusOne32, 1}, kMinusOne32}}),
      elementwise("u32", {"u32", "u32"}, "min.u32 %d, %a, %b;", 4,
                  {{"unsigned min(2^32-1, 1)", {kMinusOne32, 1}, 1}}),
      elementwise("s32", {"s32", "s32"}, "max.s32 %d, %a, %b;", 4,
                  {{"signed max(-1, 1)", {kMinusOne32, 1}, 1}}),
      elementwise("u32", {"u32", "u32"}, "max.u32 %d, %a, %b;", 4,
                  {{"unsigned max(2^32-1, 1)", {kMinusOne32, 1}, kMinusOne32}}),
      elementwise("s64", {"s64", "s64"}, "min.s64 %d, %a, %b;", 8,
                  {{"signed 64-bit", {kMinusOne64, 1}, kMinusOne64}}),
      elementwise("u64", {"u64", "u64"}, "max.u64 %d, %a, %b;", 8,
                  {{"unsigned 64-bit", {kMinusOne64, 1}, kMinusOne64}}),
      elementwise("s32", {"s32"}, "neg.s32 %d, %a;", 4,
                  {{"-5", {5}, 0xfffffffb},
                   {"-MININT wraps to MININT", {0x80000000}, 0x80000000}}),
      elementwise("s32", {"s32"}, "abs.s32 %d, %a;", 4,
                  {{"|-7|", {0xfffffff9}, 7}, {"|7|", {7}, 7}}),
      elementwise("s64", {"s64"}, "abs.s64 %d, %a;", 8,
                  {{"|-2^40|", {0xffffff0000000000ull}, 0x10000000000ull}}),
  };
}

// Predicated Execution: Comparisons, Table "Operators for Signed Integer,
// Unsigned Integer, and Bit-Size Types": lt/gt compare signed, lo/hi
// unsigned. selp d, a, b, p gives a when p is true.
CaseList integerSetpComparesSignedOrUnsignedAndSelpSelects() {
  CaseList cases;
  auto compare = [](const std::string &setp) {
    return setp + " %p0, %a, %b;\n  selp.u32 %d, 1, 0, %p0;";
  };
  const uint64_t m1 = kMinusOne32;
  cases.push_back(
      elementwise("u32", {"s32", "s32"}, compare("setp.lt.s32"), 4,
                  {{"-1 < 1 signed", {m1, 1}, 1}, {"1 < -1", {1, m1}, 0}}));
  cases.push_back(elementwise(
      "u32", {"u32", "u32"}, compare("setp.lo.u32"), 4,
      {{"2^32-1 <u 1 is false", {m1, 1}, 0}, {"1 <u 2^32-1", {1, m1}, 1}}));
  cases.push_back(elementwise("u32", {"u32", "u32"}, compare("setp.hi.u32"), 4,
                              {{"2^32-1 >u 1", {m1, 1}, 1}}));
  cases.push_back(
      elementwise("u32", {"s32", "s32"}, compare("setp.ge.s32"), 4,
                  {{"equal is ge", {7, 7}, 1}, {"-1 >= 1", {m1, 1}, 0}}));
  cases.push_back(elementwise("u32", {"u32", "u32"}, compare("setp.ls.u32"), 4,
                              {{"equal is ls", {7, 7}, 1}}));
  cases.push_back(
      elementwise("u32", {"b32", "b32"}, compare("setp.ne.b32"), 4,
                  {{"bit-size ne", {1, 2}, 1}, {"bit-size eq", {2, 2}, 0}}));
  cases.push_back(elementwise("u32", {"s64", "s64"}, compare("setp.lt.s64"), 4,
                              {{"64-bit signed", {kMinusOne64, 0}, 1}}));
  cases.push_back(elementwise("u32", {"u32", "u32"},
                              "setp.eq.u32 %p0, %a, 3;\n"
                              "  selp.b32 %d, %a, %b, %p0;",
                              4,
                              {{"a == 3: selp picks a", {3, 9}, 3},
                               {"a != 3: selp picks b", {4, 9}, 9}}));
  // A negated guard runs the instruction where the predicate is false.
  cases.push_back(elementwise("u32", {"u32", "u32"},
                              "setp.eq.u32 %p0, %a, 3;\n"
                              "  mov.u32 %d, %a;\n"
                              "  @!%p0 add.u32 %d, %d, %b;",
                              4,
                              {{"a == 3: the add is skipped", {3, 100}, 3},
                               {"a != 3: the add runs", {4, 100}, 104}}));
  return cases;
}

} // namespace fwp::conformance
