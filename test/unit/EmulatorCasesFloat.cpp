//===- EmulatorCasesFloat.cpp - IEEE floating-point cases -----------------===//
//
// The correctly rounded floating-point instructions (PTX ISA "Floating-Point
// Instructions": add, sub, mul, fma, mad, div, rcp, sqrt, abs, neg, min, max)
// and float setp ("Floating Point Comparisons"), with operands chosen so that
// the exact result is not representable and each rounding modifier lands on
// a different neighbour. Every expected bit pattern was worked out by hand;
// the comments give the exact value.
//
//===----------------------------------------------------------------------===//

#include "EmulatorCases.h"

namespace fwp::conformance {
namespace {

// f32 bit patterns used throughout.
constexpr uint64_t kOne = 0x3f800000;            // 1.0
constexpr uint64_t kOnePlusUlp = 0x3f800001;     // 1 + 2^-23
constexpr uint64_t kOneMinusTwoUlp = 0x3f7ffffe; // 1 - 2^-23 (ulp 2^-24 here)
constexpr uint64_t kMinusOne = 0xbf800000;
constexpr uint64_t kTwoPowMinus24 = 0x33800000; // half an ulp of 1.0
constexpr uint64_t kTwoPowMinus25 = 0x33000000; // a quarter ulp of 1.0
constexpr uint64_t kInf = 0x7f800000, kNegInf = 0xff800000;
constexpr uint64_t kQuietNaN = 0x7fc00000;
constexpr uint64_t kMinusZero = 0x80000000;
constexpr uint64_t kSmallestSubnormal = 0x00000001; // 2^-149

/// One case of an f32 operation under each of .rn .rz .rm .rp.
struct RoundedCase {
  const char *what;
  std::vector<uint64_t> sources;
  uint64_t rn, rz, rm, rp;
};

/// The operation under each of .rn .rz .rm .rp: four kernels.
CaseList roundings(const std::string &opcode, const std::string &type,
                   const std::string &operands,
                   const std::vector<RoundedCase> &cases) {
  CaseList kernels;
  const char *modes[] = {"rn", "rz", "rm", "rp"};
  std::vector<std::string> sourceTypes(cases.front().sources.size(), type);
  for (int mode = 0; mode < 4; ++mode) {
    std::vector<ElementCase> elementCases;
    for (const RoundedCase &c : cases) {
      uint64_t expected[] = {c.rn, c.rz, c.rm, c.rp};
      elementCases.push_back({c.what, c.sources, expected[mode]});
    }
    kernels.push_back(elementwise(type, sourceTypes,
                                  opcode + "." + modes[mode] + "." + type +
                                      " %d, " + operands + ";",
                                  type == "f64" ? 8 : 4, elementCases));
  }
  return kernels;
}

} // namespace

// Floating Point Instructions: add/sub/mul, "Rounding modifiers": .rn
// nearest even, .rz toward zero, .rm toward -inf, .rp toward +inf.
CaseList floatRoundingModifiersPickTheRightNeighbourInAddSubMul() {
  CaseList cases;
  append(cases,
         roundings(
             "add", "f32", "%a, %b",
             {{"1 + (2^-24 + 2^-47): just above half an ulp",
               {kOne, 0x33800001},
               0x3f800001,
               0x3f800000,
               0x3f800000,
               0x3f800001},
              {"1 + 2^-25: a quarter ulp",
               {kOne, kTwoPowMinus25},
               0x3f800000,
               0x3f800000,
               0x3f800000,
               0x3f800001},
              {"-1 - (2^-24 + 2^-47): the mirror image",
               {kMinusOne, 0xb3800001},
               0xbf800001,
               0xbf800000,
               0xbf800001,
               0xbf800000},
              {"1 + 2^-24: a tie, rn goes to the even 1.0",
               {kOne, kTwoPowMinus24},
               0x3f800000,
               0x3f800000,
               0x3f800000,
               0x3f800001},
              {"(1 + 2^-23) + 2^-24: a tie, rn goes up to the even neighbour",
               {kOnePlusUlp, kTwoPowMinus24},
               0x3f800002,
               0x3f800001,
               0x3f800001,
               0x3f800002}}));
  // 1 - 2^-25 lies halfway between 1 - 2^-24 (odd) and 1.0 (even).
  append(cases, roundings("sub", "f32", "%a, %b",
                          {{"1 - 2^-25",
                            {kOne, kTwoPowMinus25},
                            0x3f800000,
                            0x3f7fffff,
                            0x3f7fffff,
                            0x3f800000}}));
  // (1 + 2^-23)^2 = 1 + 2^-22 + 2^-46: only .rp moves past 1 + 2^-22.
  append(cases, roundings("mul", "f32", "%a, %b",
                          {{"(1 + 2^-23)^2",
                            {kOnePlusUlp, kOnePlusUlp},
                            0x3f800002,
                            0x3f800002,
                            0x3f800002,
                            0x3f800003},
                           {"-(1 + 2^-23)^2",
                            {0xbf800001, kOnePlusUlp},
                            0xbf800002,
                            0xbf800002,
                            0xbf800003,
                            0xbf800002}}));
  return cases;
}

// Floating Point Instructions: fma: "computes the product of a and b to
// infinite precision and then adds c ... The resulting value is then
// rounded". mad.rnd.f32 is the same operation (Floating Point Instructions:
// mad, "mad.f32 and fma.f32 are the same" for sm_20+).
CaseList floatFmaRoundsOnceUnderEachModifier() {
  CaseList cases;
  append(cases,
         roundings(
             "fma", "f32", "%a, %b, %c",
             {{"(1 + 2^-23)(1 - 2^-23) - 1 = -2^-46 exactly; a rounded product "
               "would give 0",
               {kOnePlusUlp, kOneMinusTwoUlp, kMinusOne},
               0xa8800000,
               0xa8800000,
               0xa8800000,
               0xa8800000},
              {"(1 + 2^-23)^2 + 2^-24 = 1 + 2^-22 + 2^-24 + 2^-46",
               {kOnePlusUlp, kOnePlusUlp, kTwoPowMinus24},
               0x3f800003,
               0x3f800002,
               0x3f800002,
               0x3f800003},
              {"the negated mirror image",
               {0xbf800001, kOnePlusUlp, 0xb3800000},
               0xbf800003,
               0xbf800002,
               0xbf800003,
               0xbf800002}}));
  cases.push_back(elementwise("f32", {"f32", "f32", "f32"},
                              "mad.rn.f32 %d, %a, %b, %c;", 4,
                              {{"mad.rn.f32 is fused",
                                {kOnePlusUlp, kOneMinusTwoUlp, kMinusOne},
                                0xa8800000}}));
  return cases;
}

CaseList floatF64AddAndFmaRoundLikeIeee() {
  CaseList cases;
  // 1 + 2^-53 is a tie between 1 and 1 + 2^-52: only .rp leaves 1.0.
  append(cases, roundings("add", "f64", "%a, %b",
                          {{"1 + 2^-53",
                            {0x3ff0000000000000, 0x3ca0000000000000},
                            0x3ff0000000000000,
                            0x3ff0000000000000,
                            0x3ff0000000000000,
                            0x3ff0000000000001}}));
  // (1 + 2^-52)(1 - 2^-52) - 1 = -2^-104 exactly (one rounding).
  cases.push_back(elementwise(
      "f64", {"f64", "f64", "f64"}, "fma.rn.f64 %d, %a, %b, %c;", 8,
      {{"fused: -2^-104",
        {0x3ff0000000000001, 0x3feffffffffffffe, 0xbff0000000000000},
        0xb970000000000000}}));
  cases.push_back(elementwise("f64", {"f64", "f64"}, "mul.rn.f64 %d, %a, %b;",
                              8,
                              {{"3 * 0.5",
                                {0x4008000000000000, 0x3fe0000000000000},
                                0x3ff8000000000000}}));
  return cases;
}

// div.rnd, rcp.rnd and sqrt.rnd are "IEEE 754 compliant rounding"
// (Floating Point Instructions: div, rcp, sqrt): correctly rounded.
CaseList floatDivRcpSqrtWithRoundingAreCorrectlyRounded() {
  return {
      elementwise("f32", {"f32", "f32"}, "div.rn.f32 %d, %a, %b;", 4,
                  {{"1/3 = 0x3eaaaaab", {kOne, 0x40400000}, 0x3eaaaaab},
                   {"2/3 = 0x3f2aaaab", {0x40000000, 0x40400000}, 0x3f2aaaab},
                   {"1/10 = 0x3dcccccd", {kOne, 0x41200000}, 0x3dcccccd},
                   {"1/+0 = +inf", {kOne, 0}, kInf},
                   {"-1/+0 = -inf", {kMinusOne, 0}, kNegInf}}),
      elementwise("f32", {"f32", "f32"}, "div.rz.f32 %d, %a, %b;", 4,
                  {{"1/3 truncated", {kOne, 0x40400000}, 0x3eaaaaaa}}),
      elementwise("f64", {"f64", "f64"}, "div.rn.f64 %d, %a, %b;", 8,
                  {{"1/3 in f64",
                    {0x3ff0000000000000, 0x4008000000000000},
                    0x3fd5555555555555}}),
      elementwise("f32", {"f32"}, "rcp.rn.f32 %d, %a;", 4,
                  {{"1/3", {0x40400000}, 0x3eaaaaab},
                   {"1/10", {0x41200000}, 0x3dcccccd},
                   {"1/+0", {0}, kInf},
                   {"1/-0", {kMinusZero}, kNegInf}}),
      elementwise("f64", {"f64"}, "rcp.rn.f64 %d, %a;", 8,
                  {{"1/3 in f64", {0x4008000000000000}, 0x3fd5555555555555}}),
      elementwise("f32", {"f32"}, "sqrt.rn.f32 %d, %a;", 4,
                  {{"sqrt 2 = 0x3fb504f3", {0x40000000}, 0x3fb504f3},
                   {"sqrt 4", {0x40800000}, 0x40000000},
                   {"sqrt -0 = -0", {kMinusZero}, kMinusZero},
                   {"sqrt +inf", {kInf}, kInf}}),
      elementwise(
          "f64", {"f64"}, "sqrt.rn.f64 %d, %a;", 8,
          {{"sqrt 2 in f64", {0x4000000000000000}, 0x3ff6a09e667f3bcd}}),
  };
}

// "Single-precision instructions return an unspecified NaN" (Floating-Point
// Instructions, introduction): only NaN-ness is checked for f32. The same
// paragraph says "NaN payloads are supported for double-precision
// instructions", so an f64 NaN operand's payload comes through.
CaseList floatInvalidOperationsGiveNaN() {
  return {
      elementwise("f32", {"f32", "f32"}, "add.rn.f32 %d, %a, %b;", 4,
                  {anyNaNF32("inf + -inf", {kInf, kNegInf}),
                   anyNaNF32("NaN + 1", {kQuietNaN, kOne}),
                   anyNaNF32("1 + sNaN", {kOne, 0x7f800001})}),
      elementwise("f32", {"f32", "f32"}, "mul.rn.f32 %d, %a, %b;", 4,
                  {anyNaNF32("0 * inf", {0, kInf})}),
      elementwise("f32", {"f32", "f32"}, "div.rn.f32 %d, %a, %b;", 4,
                  {anyNaNF32("0 / 0", {0, 0})}),
      elementwise("f32", {"f32"}, "sqrt.rn.f32 %d, %a;", 4,
                  {anyNaNF32("sqrt(-1)", {kMinusOne})}),
      elementwise("f64", {"f64", "f64"}, "add.rn.f64 %d, %a, %b;", 8,
                  {{"an f64 NaN's payload propagates",
                    {0x7ff8000000000123, 0x3ff0000000000000},
                    0x7ff8000000000123}}),
  };
}

// Floating Point Instructions: min/max: min_num returns the other input when
// exactly one is NaN, NaN when both are; "-0.0 < +0.0 here".
CaseList floatMinMaxReturnTheNumberWhenOneInputIsNaN() {
  CaseList cases;
  cases.push_back(
      elementwise("f32", {"f32", "f32"}, "min.f32 %d, %a, %b;", 4,
                  {{"min(NaN, 1) = 1", {kQuietNaN, kOne}, kOne},
                   {"min(1, NaN) = 1", {kOne, kQuietNaN}, kOne},
                   {"min(-0, +0) = -0", {kMinusZero, 0}, kMinusZero},
                   {"min(+0, -0) = -0", {0, kMinusZero}, kMinusZero},
                   {"min(-inf, 1)", {kNegInf, kOne}, kNegInf}}));
  cases.push_back(
      elementwise("f32", {"f32", "f32"}, "max.f32 %d, %a, %b;", 4,
                  {{"max(NaN, -3) = -3", {kQuietNaN, 0xc0400000}, 0xc0400000},
                   {"max(-3, NaN) = -3", {0xc0400000, kQuietNaN}, 0xc0400000},
                   {"max(-0, +0) = +0", {kMinusZero, 0}, 0}}));
  cases.push_back(elementwise("f64", {"f64", "f64"}, "min.f64 %d, %a, %b;", 8,
                              {{"f64 min(NaN, 2) = 2",
                                {0x7ff8000000000000, 0x4000000000000000},
                                0x4000000000000000}}));
  cases.push_back(
      elementwise("f32", {"f32", "f32"}, "min.f32 %d, %a, %b;", 4,
                  {anyNaNF32("min(NaN, NaN)", {kQuietNaN, kQuietNaN})}));
  return cases;
}

// Floating Point Comparisons: the ordered operators are false when either
// operand is NaN (even ne); the unordered ones (ltu, neu, ...) are true; num
// and nan test for NaN.
CaseList floatSetpOrderedIsFalseAndUnorderedTrueOnNaN() {
  CaseList cases;
  auto compare = [](const std::string &op) {
    return "setp." + op + ".f32 %p0, %a, %b;\n  selp.u32 %d, 1, 0, %p0;";
  };
  std::vector<uint64_t> nanCase = {kQuietNaN, kOne};
  std::vector<uint64_t> less = {kMinusOne, kOne};
  std::vector<uint64_t> greater = {kOne, kMinusOne};
  std::vector<std::string> f32x2 = {"f32", "f32"};
  cases.push_back(elementwise(
      "u32", f32x2, compare("lt"), 4,
      {{"NaN < 1", nanCase, 0}, {"-1 < 1", less, 1}, {"1 < -1", greater, 0}}));
  cases.push_back(elementwise("u32", f32x2, compare("ltu"), 4,
                              {{"NaN <u 1", nanCase, 1},
                               {"-1 <u 1", less, 1},
                               {"1 <u -1", greater, 0}}));
  cases.push_back(elementwise(
      "u32", f32x2, compare("ne"), 4,
      {{"NaN != 1 is ordered: false", nanCase, 0}, {"-1 != 1", less, 1}}));
  cases.push_back(
      elementwise("u32", f32x2, compare("neu"), 4,
                  {{"NaN !=u 1", nanCase, 1}, {"1 !=u 1", {kOne, kOne}, 0}}));
  cases.push_back(
      elementwise("u32", f32x2, compare("geu"), 4,
                  {{"NaN >=u 1", nanCase, 1}, {"-1 >=u 1", less, 0}}));
  cases.push_back(elementwise("u32", f32x2, compare("eq"), 4,
                              {{"-0 == +0", {kMinusZero, 0}, 1},
                               {"NaN == NaN", {kQuietNaN, kQuietNaN}, 0}}));
  cases.push_back(
      elementwise("u32", f32x2, compare("nan"), 4,
                  {{"nan(NaN, 1)", nanCase, 1}, {"nan(-1, 1)", less, 0}}));
  cases.push_back(
      elementwise("u32", f32x2, compare("num"), 4,
                  {{"num(NaN, 1)", nanCase, 0}, {"num(-1, 1)", less, 1}}));
  cases.push_back(elementwise(
      "u32", {"f64", "f64"},
      "setp.gtu.f64 %p0, %a, %b;\n  selp.u32 %d, 1, 0, %p0;", 4,
      {{"f64 NaN >u 1", {0x7ff8000000000000, 0x3ff0000000000000}, 1}}));
  return cases;
}

// Floating Point Instructions: neg and abs change the sign of zeros and
// infinities; for f32 a NaN input "yields unspecified NaN"; "For abs.f64, NaN
// input is passed through unchanged".
CaseList floatNegAndAbsChangeOnlyTheSign() {
  CaseList cases;
  cases.push_back(elementwise("f32", {"f32"}, "neg.f32 %d, %a;", 4,
                              {{"-(+0) = -0", {0}, kMinusZero},
                               {"-(-0) = +0", {kMinusZero}, 0},
                               {"-(+inf)", {kInf}, kNegInf},
                               {"-(1 + 2^-23)", {kOnePlusUlp}, 0xbf800001}}));
  cases.push_back(
      elementwise("f32", {"f32"}, "abs.f32 %d, %a;", 4,
                  {{"|-0| = +0", {kMinusZero}, 0},
                   {"|-inf|", {kNegInf}, kInf},
                   {"|-2^-149| keeps the subnormal", {0x80000001}, 1}}));
  cases.push_back(elementwise("f64", {"f64"}, "abs.f64 %d, %a;", 8,
                              {{"abs.f64 passes a NaN through unchanged",
                                {0xfff8000000000123},
                                0xfff8000000000123},
                               {"|-0| in f64", {0x8000000000000000}, 0}}));
  cases.push_back(elementwise(
      "f64", {"f64"}, "neg.f64 %d, %a;", 8,
      {{"-(2.0) in f64", {0x4000000000000000}, 0xc000000000000000}}));
  for (const char *op : {"neg.f32", "abs.f32"})
    cases.push_back(elementwise("f32", {"f32"}, std::string(op) + " %d, %a;", 4,
                                {anyNaNF32("a quiet NaN", {kQuietNaN}),
                                 anyNaNF32("a negative NaN", {0xffc00001})}));
  return cases;
}

// .ftz "flushes subnormal inputs and results to sign-preserving zero"; by
// default (sm_20+) subnormals are kept (Floating Point Instructions: add,
// mul, "Subnormal numbers").
CaseList floatFtzFlushesSubnormalInputsAndResultsToSignedZero() {
  return {
      elementwise("f32", {"f32", "f32"}, "mul.rn.f32 %d, %a, %b;", 4,
                  {{"2^-149 * 1 is kept",
                    {kSmallestSubnormal, kOne},
                    kSmallestSubnormal},
                   {"2^-100 * 2^-30 = 2^-130 (subnormal) is kept",
                    {0x0d800000, 0x30800000},
                    0x00080000}}),
      elementwise(
          "f32", {"f32", "f32"}, "mul.rn.ftz.f32 %d, %a, %b;", 4,
          {{"subnormal input flushed: 2^-149 * 1",
            {kSmallestSubnormal, kOne},
            0},
           {"-2^-149 * 1 flushes to -0", {0x80000001, kOne}, kMinusZero},
           {"subnormal result 2^-130 flushed", {0x0d800000, 0x30800000}, 0},
           {"-2^-130 flushed to -0", {0x8d800000, 0x30800000}, kMinusZero}}),
      elementwise("f32", {"f32", "f32"}, "add.rn.ftz.f32 %d, %a, %b;", 4,
                  {{"2^-149 + 2^-149 with flushed inputs", {1, 1}, 0}}),
      elementwise("f32", {"f32", "f32"}, "add.rn.f32 %d, %a, %b;", 4,
                  {{"2^-149 + 2^-149 without .ftz", {1, 1}, 2}}),
  };
}

// add/sub/mul/fma .sat: "clamps the result to [0.0, 1.0]. NaN results are
// flushed to +0.0f."
CaseList floatSatClampsToTheUnitIntervalAndNaNToPlusZero() {
  return {
      elementwise(
          "f32", {"f32", "f32"}, "add.rn.sat.f32 %d, %a, %b;", 4,
          {{"0.75 + 0.5 clamps to 1", {0x3f400000, 0x3f000000}, kOne},
           {"-0.75 + 0.5 clamps to +0", {0xbf400000, 0x3f000000}, 0},
           {"0.25 + 0.5 is inside", {0x3e800000, 0x3f000000}, 0x3f400000},
           {"inf + -inf = NaN flushes to +0", {kInf, kNegInf}, 0}}),
      elementwise(
          "f32", {"f32", "f32", "f32"}, "fma.rn.sat.f32 %d, %a, %b, %c;", 4,
          {{"2 * 2 + 0 clamps to 1", {0x40000000, 0x40000000, 0}, kOne}}),
  };
}

} // namespace fwp::conformance
