//===- EmulatorCasesConversion.cpp - cvt between every kind of type -------===//
//
// cvt (PTX ISA "Data Movement and Conversion Instructions: cvt", its Integer
// Notes and Floating Point Notes, and "Operand Size Exceeding
// Instruction-Type Size" for how narrow values sit in wide registers) against
// hand-worked bit patterns: integer widening and narrowing, float-to-integer
// rounding, clamping and NaN, integer-to-float rounding, f32/f64, f16/bf16
// with ties, overflow and NaN, the packed x2 forms and tf32.
//
//===----------------------------------------------------------------------===//

#include "EmulatorCases.h"

#include <utility>

namespace fwp::conformance {
namespace {

constexpr uint64_t kQuietNaN32 = 0x7fc00000;
constexpr uint64_t kNaNLowPayload32 = 0x7f800001; // NaN by its low bit only
constexpr uint64_t kInf32 = 0x7f800000, kNegInf32 = 0xff800000;
constexpr uint64_t kQuietNaN64 = 0x7ff8000000000000;

uint64_t f32(float value) { return bitsOf(value); }
uint64_t f64(double value) { return bitsOf(value); }

} // namespace

// A source register wider than the instruction type is chopped to the type's
// low bits; a destination wider than the type is sign-extended for signed
// types and zero-extended otherwise ("Operand Size Exceeding
// Instruction-Type Size"). The b32 sources below carry junk above the byte
// or half-word the conversion reads.
CaseList conversionIntegerWideningSignOrZeroExtends() {
  return {
      elementwise("s32", {"b32"}, "cvt.s32.s8 %d, %a;", 4,
                  {{"low byte 0x80 is -128", {0x12345680}, 0xffffff80},
                   {"low byte 0x7f", {0x1234567f}, 0x7f}}),
      elementwise("u32", {"b32"}, "cvt.u32.u8 %d, %a;", 4,
                  {{"low byte 0x80 is 128", {0x12345680}, 0x80}}),
      elementwise("s32", {"b32"}, "cvt.s32.s16 %d, %a;", 4,
                  {{"low half 0x8000", {0x00018000}, 0xffff8000}}),
      elementwise("u32", {"b32"}, "cvt.u32.u16 %d, %a;", 4,
                  {{"low half 0x8000", {0x00018000}, 0x8000}}),
      elementwise("s64", {"s32"}, "cvt.s64.s32 %d, %a;", 8,
                  {{"MININT32", {0x80000000}, 0xffffffff80000000ull}}),
      elementwise("u64", {"u32"}, "cvt.u64.u32 %d, %a;", 8,
                  {{"2^31 zero-extends", {0x80000000}, 0x80000000}}),
      elementwise("s64", {"u32"}, "cvt.s64.u32 %d, %a;", 8,
                  {{"the source type decides: u32 zero-extends",
                    {0x80000000},
                    0x80000000}}),
  };
}

// Narrowing keeps the low bits; .sat "limits the result to MININT..MAXINT
// for the size of the operation" (cvt, Integer Notes, Saturation modifier).
CaseList conversionIntegerNarrowingTruncatesOrSaturates() {
  return {
      elementwise("u32", {"u64"}, "cvt.u32.u64 %d, %a;", 4,
                  {{"high word dropped", {0x1234567880000001ull}, 0x80000001}}),
      elementwise("s32", {"s64"}, "cvt.s32.s64 %d, %a;", 4,
                  {{"2^32 + 2^31 + 1 keeps its low word",
                    {0x0000000180000001ull},
                    0x80000001}}),
      elementwise("u16", {"u32"}, "cvt.u16.u32 %d, %a;", 2,
                  {{"low half", {0x12345678}, 0x5678}}),
      // cvt Notes: "The result of conversion is sign-extended to the
      // destination register width for signed integers": an .s8 result fills a
      // 16-bit one.
      elementwise("s16", {"s32"}, "cvt.s8.s32 %d, %a;", 2,
                  {{"0x1ff keeps 0xff = -1", {0x1ff}, 0xffff}}),
      elementwise("s32", {"s64"}, "cvt.sat.s32.s64 %d, %a;", 4,
                  {{"2^40 saturates", {1ull << 40}, 0x7fffffff},
                   {"-2^40 saturates", {0xffffff0000000000ull}, 0x80000000},
                   {"in range", {0xfffffffffffffffbull}, 0xfffffffb}}),
      elementwise("u32", {"s32"}, "cvt.sat.u32.s32 %d, %a;", 4,
                  {{"-5 saturates to 0", {0xfffffffb}, 0}}),
      elementwise("s32", {"u32"}, "cvt.sat.s32.u32 %d, %a;", 4,
                  {{"2^32-1 saturates to MAXINT", {0xffffffff}, 0x7fffffff}}),
      elementwise("s16", {"s32"}, "cvt.sat.s8.s32 %d, %a;", 2,
                  {{"300 saturates to 127", {300}, 0x7f},
                   {"-300 saturates to -128", {0xfffffed4}, 0xff80}}),
  };
}

// cvt Integer Notes: .rni nearest even, .rzi toward zero, .rmi toward -inf,
// .rpi toward +inf; "For float-to-integer conversions, the result is clamped
// to the destination range by default"; a NaN input gives "Zero if source is
// not .f64 and destination is not .s64, .u64. Otherwise 1 << (BitWidth(dst)
// - 1)".
CaseList conversionFloatToIntegerRoundsClampsAndMapsNaN() {
  return {
      elementwise("s32", {"f32"}, "cvt.rni.s32.f32 %d, %a;", 4,
                  {{"2.5 ties to even 2", {f32(2.5f)}, 2},
                   {"3.5 ties to even 4", {f32(3.5f)}, 4},
                   {"-2.5 ties to even -2", {f32(-2.5f)}, 0xfffffffe},
                   {"1e10 clamps to MAXINT", {f32(1e10f)}, 0x7fffffff},
                   {"-1e10 clamps to MININT", {f32(-1e10f)}, 0x80000000},
                   {"+inf clamps to MAXINT", {kInf32}, 0x7fffffff},
                   {"-inf clamps to MININT", {kNegInf32}, 0x80000000},
                   {"NaN gives 0", {kQuietNaN32}, 0}}),
      elementwise("s32", {"f32"}, "cvt.rzi.s32.f32 %d, %a;", 4,
                  {{"2.7 -> 2", {f32(2.7f)}, 2},
                   {"-2.7 -> -2", {f32(-2.7f)}, 0xfffffffe}}),
      elementwise("s32", {"f32"}, "cvt.rmi.s32.f32 %d, %a;", 4,
                  {{"-2.1 -> -3", {f32(-2.1f)}, 0xfffffffd},
                   {"2.9 -> 2", {f32(2.9f)}, 2}}),
      elementwise("s32", {"f32"}, "cvt.rpi.s32.f32 %d, %a;", 4,
                  {{"-2.9 -> -2", {f32(-2.9f)}, 0xfffffffe},
                   {"2.1 -> 3", {f32(2.1f)}, 3}}),
      elementwise("u32", {"f32"}, "cvt.rzi.u32.f32 %d, %a;", 4,
                  {{"-3.5 clamps to 0", {f32(-3.5f)}, 0},
                   {"5e9 clamps to 2^32-1", {f32(5e9f)}, 0xffffffff},
                   {"3.99 -> 3", {f32(3.99f)}, 3},
                   {"NaN gives 0", {kQuietNaN32}, 0}}),
      elementwise("s16", {"f32"}, "cvt.rzi.s16.f32 %d, %a;", 2,
                  {{"40000 clamps to 32767", {f32(40000.0f)}, 0x7fff}}),
      elementwise(
          "s64", {"f32"}, "cvt.rzi.s64.f32 %d, %a;", 8,
          {{"-2.5 -> -2", {f32(-2.5f)}, 0xfffffffffffffffeull},
           {"1e19 clamps to MAXINT64", {f32(1e19f)}, 0x7fffffffffffffffull},
           {"NaN to .s64 gives 1 << 63",
            {kQuietNaN32},
            0x8000000000000000ull}}),
      elementwise("u64", {"f32"}, "cvt.rzi.u64.f32 %d, %a;", 8,
                  {{"NaN to .u64 gives 1 << 63",
                    {kQuietNaN32},
                    0x8000000000000000ull}}),
      elementwise("s32", {"f64"}, "cvt.rzi.s32.f64 %d, %a;", 4,
                  {{"2^40 clamps", {f64(1099511627776.0)}, 0x7fffffff},
                   {"NaN from .f64 gives 1 << 31", {kQuietNaN64}, 0x80000000}}),
      elementwise("s32", {"f64"}, "cvt.rni.s32.f64 %d, %a;", 4,
                  {{"2.5 ties to even", {f64(2.5)}, 2}}),
  };
}

// cvt Floating Point Notes: rounding is required for integer-to-float
// conversions: 2^24 + 1 and 2^24 + 3 are ties in f32.
CaseList conversionIntegerToFloatRoundsWithTheModifier() {
  return {
      elementwise("f32", {"s32"}, "cvt.rn.f32.s32 %d, %a;", 4,
                  {{"2^24+1 ties down to even 2^24", {16777217}, 0x4b800000},
                   {"2^24+3 ties up to even 2^24+4", {16777219}, 0x4b800002},
                   {"-(2^24+1)", {0xfefffffful}, 0xcb800000}}),
      elementwise("f32", {"s32"}, "cvt.rp.f32.s32 %d, %a;", 4,
                  {{"2^24+1 up", {16777217}, 0x4b800001}}),
      elementwise("f32", {"s32"}, "cvt.rm.f32.s32 %d, %a;", 4,
                  {{"-(2^24+1) down", {0xfefffffful}, 0xcb800001}}),
      elementwise("f32", {"s32"}, "cvt.rz.f32.s32 %d, %a;", 4,
                  {{"2^24+3 toward zero", {16777219}, 0x4b800001}}),
      elementwise("f32", {"u32"}, "cvt.rn.f32.u32 %d, %a;", 4,
                  {{"2^32-1 is unsigned: 2^32", {0xffffffff}, 0x4f800000}}),
      elementwise(
          "f32", {"u64"}, "cvt.rn.f32.u64 %d, %a;", 4,
          {{"2^64-1 -> 2^64", {0xffffffffffffffffull}, 0x5f800000},
           {"2^63 + 2^39 ties to even 2^63",
            {0x8000008000000000ull},
            0x5f000000},
           {"2^63 + 2^39 + 1 rounds up", {0x8000008000000001ull}, 0x5f000001}}),
      elementwise(
          "f64", {"u64"}, "cvt.rn.f64.u64 %d, %a;", 8,
          {{"2^64-1 -> 2^64", {0xffffffffffffffffull}, 0x43f0000000000000ull}}),
      elementwise("f64", {"s64"}, "cvt.rn.f64.s64 %d, %a;", 8,
                  {{"-1", {0xffffffffffffffffull}, 0xbff0000000000000ull}}),
  };
}

CaseList conversionF32AndF64ConvertExactlyOrWithRounding() {
  CaseList cases;
  // Widening is exact and needs no rounding modifier.
  cases.push_back(elementwise(
      "f64", {"f32"}, "cvt.f64.f32 %d, %a;", 8,
      {{"0.1f exactly", {f32(0.1f)}, 0x3fb99999a0000000ull},
       {"-inf", {kNegInf32}, 0xfff0000000000000ull},
       {"subnormal 2^-149 is normal in f64", {1}, 0x36a0000000000000ull}}));
  cases.push_back(
      elementwise("f32", {"f64"}, "cvt.rn.f32.f64 %d, %a;", 4,
                  {{"0.1 rounds up", {f64(0.1)}, 0x3dcccccd},
                   {"1e300 overflows to +inf", {f64(1e300)}, kInf32},
                   {"1e-40 becomes subnormal", {f64(1e-40)}, 0x000116c2}}));
  cases.push_back(
      elementwise("f32", {"f64"}, "cvt.rz.f32.f64 %d, %a;", 4,
                  {{"0.1 truncated", {f64(0.1)}, 0x3dcccccc},
                   {"1e300 stops at FLT_MAX", {f64(1e300)}, 0x7f7fffff}}));
  cases.push_back(elementwise("f32", {"f64"}, "cvt.rn.f32.f64 %d, %a;", 4,
                              {anyNaNF32("f64 NaN -> f32", {kQuietNaN64})}));
  cases.push_back(elementwise("f64", {"f32"}, "cvt.f64.f32 %d, %a;", 8,
                              {anyNaNF64("f32 NaN -> f64", {kQuietNaN32})}));
  // Same-size conversions with an integer rounding give an integral float.
  cases.push_back(elementwise("f32", {"f32"}, "cvt.rni.f32.f32 %d, %a;", 4,
                              {{"2.5 -> 2.0", {f32(2.5f)}, 0x40000000},
                               {"-3.5 -> -4.0", {f32(-3.5f)}, 0xc0800000}}));
  cases.push_back(elementwise("f32", {"f32"}, "cvt.rzi.f32.f32 %d, %a;", 4,
                              {{"-2.7 -> -2.0", {f32(-2.7f)}, 0xc0000000}}));
  cases.push_back(elementwise("f32", {"f32"}, "cvt.rmi.f32.f32 %d, %a;", 4,
                              {{"-0.5 -> -1.0", {f32(-0.5f)}, 0xbf800000}}));
  cases.push_back(elementwise("f32", {"f32"}, "cvt.rpi.f32.f32 %d, %a;", 4,
                              {{"1.5 -> 2.0", {f32(1.5f)}, 0x40000000}}));
  return cases;
}

// cvt Floating Point Notes, Saturation modifier: ".sat limits the result to
// the range [0.0, 1.0]. NaN results are flushed to positive zero."
CaseList conversionSatClampsToTheUnitIntervalAndNaNToZero() {
  return {
      elementwise("f32", {"f32"}, "cvt.sat.f32.f32 %d, %a;", 4,
                  {{"1.5 -> 1", {f32(1.5f)}, 0x3f800000},
                   {"-0.5 -> +0", {f32(-0.5f)}, 0},
                   {"0.25 unchanged", {f32(0.25f)}, 0x3e800000},
                   {"+inf -> 1", {kInf32}, 0x3f800000},
                   {"-inf -> +0", {kNegInf32}, 0},
                   {"NaN -> +0", {kQuietNaN32}, 0}}),
  };
}

// f16: 5 exponent and 10 mantissa bits, max 65504; .rn is "rounding to
// nearest, with ties to even" (cvt Floating Point Notes), so 65520, halfway
// between 65504 and 2^16, goes to the even side, which overflows to inf.
CaseList conversionF32ToF16RoundsToNearestEvenOverflowsAndKeepsNaN() {
  CaseList cases;
  cases.push_back(elementwise(
      "b16", {"f32"}, "cvt.rn.f16.f32 %d, %a;", 2,
      {{"1.0", {f32(1.0f)}, 0x3c00},
       {"65504 is the largest f16", {f32(65504.0f)}, 0x7bff},
       {"65519 rounds down to 65504", {f32(65519.0f)}, 0x7bff},
       {"65520 ties to even: inf", {f32(65520.0f)}, 0x7c00},
       {"1e6 overflows to inf", {f32(1e6f)}, 0x7c00},
       {"-1e6 overflows to -inf", {f32(-1e6f)}, 0xfc00},
       {"1 + 2^-11 ties to even 1.0", {0x3f801000}, 0x3c00},
       {"1 + 3 * 2^-11 ties to even 1 + 2^-9", {0x3f803000}, 0x3c02},
       {"2^-24 is the smallest subnormal", {0x33800000}, 0x0001},
       {"2^-25 ties to even 0", {0x33000000}, 0x0000},
       {"3 * 2^-26 rounds up to 2^-24", {0x33400000}, 0x0001},
       {"-0", {0x80000000}, 0x8000},
       {"inf", {kInf32}, 0x7c00}}));
  cases.push_back(
      elementwise("b16", {"f32"}, "cvt.rz.f16.f32 %d, %a;", 2,
                  {{"65520 toward zero", {f32(65520.0f)}, 0x7bff},
                   {"1e6 toward zero stops at 65504", {f32(1e6f)}, 0x7bff},
                   {"1 + 3 * 2^-11 toward zero", {0x3f803000}, 0x3c01}}));
  // A NaN must not round into inf.
  cases.push_back(elementwise(
      "b16", {"f32"}, "cvt.rn.f16.f32 %d, %a;", 2,
      {anyNaNF16("a quiet NaN", {kQuietNaN32}),
       anyNaNF16("a NaN by its low bit only", {kNaNLowPayload32})}));
  cases.push_back(elementwise("f32", {"b16"}, "cvt.f32.f16 %d, %a;", 4,
                              {{"1 + 2^-10", {0x3c01}, 0x3f802000},
                               {"subnormal 2^-24", {0x0001}, 0x33800000},
                               {"65504", {0x7bff}, 0x477fe000},
                               {"inf", {0x7c00}, kInf32},
                               {"-inf", {0xfc00}, kNegInf32},
                               {"-0", {0x8000}, 0x80000000}}));
  cases.push_back(elementwise("f32", {"b16"}, "cvt.f32.f16 %d, %a;", 4,
                              {anyNaNF32("f16 NaN -> f32", {0x7e00})}));
  return cases;
}

// bf16: 8 exponent and 7 mantissa bits ("Alternate Floating-Point Data
// Formats"): the top half of an f32, rounded.
CaseList conversionF32ToBf16RoundsToNearestEvenOverflowsAndKeepsNaN() {
  CaseList cases;
  cases.push_back(elementwise(
      "b16", {"f32"}, "cvt.rn.bf16.f32 %d, %a;", 2,
      {{"1.0", {0x3f800000}, 0x3f80},
       {"0x3f808000 ties to even 0x3f80", {0x3f808000}, 0x3f80},
       {"0x3f818000 ties to even 0x3f82", {0x3f818000}, 0x3f82},
       {"0x3f808001 is above the tie", {0x3f808001}, 0x3f81},
       {"FLT_MAX overflows to inf", {0x7f7fffff}, 0x7f80},
       {"-FLT_MAX overflows to -inf", {0xff7fffff}, 0xff80},
       {"an f32 subnormal stays subnormal", {0x00010000}, 0x0001}}));
  cases.push_back(
      elementwise("b16", {"f32"}, "cvt.rz.bf16.f32 %d, %a;", 2,
                  {{"0x3f81ffff truncates", {0x3f81ffff}, 0x3f81},
                   {"FLT_MAX stays finite", {0x7f7fffff}, 0x7f7f}}));
  // A NaN must not round into inf.
  cases.push_back(elementwise(
      "b16", {"f32"}, "cvt.rn.bf16.f32 %d, %a;", 2,
      {anyNaNBf16("a quiet NaN", {kQuietNaN32}),
       anyNaNBf16("a NaN by its low bit only", {kNaNLowPayload32})}));
  cases.push_back(elementwise("f32", {"b16"}, "cvt.f32.bf16 %d, %a;", 4,
                              {{"0x3f81", {0x3f81}, 0x3f810000},
                               {"-inf", {0xff80}, kNegInf32},
                               {"subnormal", {0x0001}, 0x00010000}}));
  return cases;
}

// cvt Description: for .f16x2 and .bf16x2 "the value converted from input a
// is stored in the upper half of d and the value converted from input b is
// stored in the lower half of d".
CaseList conversionPackedX2PutsTheFirstOperandInTheUpperHalf() {
  return {
      elementwise(
          "b32", {"f32", "f32"}, "cvt.rn.bf16x2.f32 %d, %a, %b;", 4,
          {{"a = 1 high, b = 2 low", {f32(1.0f), f32(2.0f)}, 0x3f804000},
           {"each half rounds", {0x3f808001, f32(-1.0f)}, 0x3f81bf80}}),
      elementwise(
          "b32", {"f32", "f32"}, "cvt.rn.f16x2.f32 %d, %a, %b;", 4,
          {{"a = 1 high, b = 2 low", {f32(1.0f), f32(2.0f)}, 0x3c004000},
           {"each half rounds", {f32(-2.0f), f32(65520.0f)}, 0xc0007c00}}),
  };
}

// cvt.rna.tf32.f32: .rna is "rounding to nearest, with ties away from zero";
// tf32 keeps 10 mantissa bits. The ISA leaves tf32's register layout
// "implementation defined" (Alternate Floating-Point Data Formats); these
// expectations assume the layout this emulator's mma reads (and NVIDIA
// hardware uses): the f32 encoding with its 13 low mantissa bits zero. Being
// implementation-defined, they run on the emulator only.
CaseList conversionTf32RoundsToNearestTiesAwayAndKeepsInfAndNaN() {
  const char *why = "the ISA leaves tf32's layout implementation-defined "
                    "(Alternate Floating-Point Data Formats)";
  CaseList cases;
  cases.push_back(elementwise(
      "b32", {"f32"}, "cvt.rna.tf32.f32 %d, %a;", 4,
      {{"1.0 is exact", {0x3f800000}, 0x3f800000},
       {"below the tie", {0x3f800fff}, 0x3f800000},
       {"a tie goes away from zero (not to even)", {0x3f801000}, 0x3f802000},
       {"a negative tie goes away from zero", {0xbf801000}, 0xbf802000},
       {"above the tie", {0x3f802fff}, 0x3f802000},
       {"a tie on an odd value", {0x3f803000}, 0x3f804000},
       {"+inf", {kInf32}, kInf32},
       {"-inf", {kNegInf32}, kNegInf32}}));
  // Dropping the low bits must not turn a NaN into inf.
  cases.push_back(elementwise(
      "b32", {"f32"}, "cvt.rna.tf32.f32 %d, %a;", 4,
      {anyNaNF32("a quiet NaN", {kQuietNaN32}),
       anyNaNF32("a NaN by its low bit only", {kNaNLowPayload32})}));
  for (KernelCase &kernelCase : cases)
    kernelCase = onlyOnTheEmulator(std::move(kernelCase), why);
  return cases;
}

} // namespace fwp::conformance
