//===- EmulatorCasesApprox.cpp - Approximate floating-point cases ---------===//
//
// The .approx and .full instructions (PTX ISA "Floating Point Instructions":
// ex2, lg2, rsqrt, sin, cos, tanh, rcp.approx, div.approx, div.full) are
// allowed an error; each case holds the result to the bound the ISA states in
// the instruction's Notes, against the exact value (long double), and to the
// instruction's table of special-case results exactly.
//
//===----------------------------------------------------------------------===//

#include "EmulatorCases.h"

#include <sstream>
#include <utility>

namespace fwp::conformance {
namespace {

constexpr uint32_t kInf = 0x7f800000, kNegInf = 0xff800000;
constexpr uint32_t kMinusZero = 0x80000000, kQuietNaN = 0x7fc00000;

using Exact = long double (*)(long double);

long double exp2Exact(long double x) { return std::exp2(x); }
long double log2Exact(long double x) { return std::log2(x); }
long double rsqrtExact(long double x) { return 1.0L / std::sqrt(x); }
long double sinExact(long double x) { return std::sin(x); }
long double cosExact(long double x) { return std::cos(x); }
long double tanhExact(long double x) { return std::tanh(x); }

std::string describe(float value) {
  std::ostringstream text;
  text << value;
  return text.str();
}

/// `instruction d, a;` on each input, within `maxUlps` of the correctly
/// rounded `exact(x)`.
KernelCase withinUlps(const std::string &instruction,
                      const std::vector<float> &inputs, Exact exact,
                      int64_t maxUlps) {
  std::vector<ElementCase> cases;
  for (float x : inputs)
    cases.push_back({"of " + describe(x),
                     {bitsOf(x)},
                     0,
                     Match::WithinUlpsF32,
                     exact(x),
                     static_cast<long double>(maxUlps)});
  return elementwise("f32", {"f32"}, instruction + " %d, %a;", 4, cases);
}

/// `instruction d, a;` on each input, within `bound` of `exact(x)`, or
/// within `bound * |exact(x)|` when `relative`.
KernelCase withinError(const std::string &instruction,
                       const std::vector<float> &inputs, Exact exact,
                       double bound, bool relative) {
  std::vector<ElementCase> cases;
  for (float x : inputs) {
    long double reference = exact(x);
    long double allowed = relative ? bound * std::fabs(reference) : bound;
    cases.push_back({"of " + describe(x),
                     {bitsOf(x)},
                     0,
                     Match::WithinF32,
                     reference,
                     allowed});
  }
  return elementwise("f32", {"f32"}, instruction + " %d, %a;", 4, cases);
}

/// Each special input gives exactly its tabled result (any NaN where the
/// table says NaN).
KernelCase
specialCases(const std::string &instruction,
             const std::vector<std::pair<uint32_t, uint32_t>> &table) {
  std::vector<ElementCase> cases;
  for (auto [input, result] : table) {
    std::string what = "special case " + hex(input);
    if (isNanF32(result))
      cases.push_back(anyNaNF32(what, {input}));
    else
      cases.push_back({what, {input}, result});
  }
  return elementwise("f32", {"f32"}, instruction + " %d, %a;", 4, cases);
}

} // namespace

// Floating Point Instructions: ex2: "The maximum ulp error is 2 ulp from
// correctly rounded result across the full range of inputs", with the table
// -Inf -> +0.0, -0.0 -> +1.0, +0.0 -> +1.0, +Inf -> +Inf, NaN -> NaN.
CaseList approxEx2IsWithinTwoUlpAndFollowsItsTable() {
  std::vector<float> inputs = {1.0f,  -1.0f,    10.0f,  0.5f,   -3.3f,
                               7.77f, -20.125f, 0.001f, 100.5f, -126.0f};
  CaseList cases = {withinUlps("ex2.approx.ftz.f32", inputs, exp2Exact, 2),
                    withinUlps("ex2.approx.f32", inputs, exp2Exact, 2)};
  for (const char *instruction : {"ex2.approx.f32", "ex2.approx.ftz.f32"})
    cases.push_back(specialCases(instruction, {{kNegInf, 0},
                                               {kMinusZero, 0x3f800000},
                                               {0, 0x3f800000},
                                               {kInf, kInf},
                                               {kQuietNaN, kQuietNaN}}));
  return cases;
}

// ex2: "ex2.ftz.f32 flushes subnormal inputs and results to sign-preserving
// zero"; without .ftz subnormals are supported (sm_20+). 2^-130 is subnormal
// (the smallest normal f32 is 2^-126) and exactly representable.
CaseList approxEx2FtzFlushesASubnormalResultToPlusZero() {
  return {
      elementwise("f32", {"f32"}, "ex2.approx.ftz.f32 %d, %a;", 4,
                  {{"2^-130 under .ftz", {bitsOf(-130.0f)}, 0},
                   {"2^-140.5 under .ftz", {bitsOf(-140.5f)}, 0}}),
      withinUlps("ex2.approx.f32", {-130.0f}, exp2Exact, 2),
  };
}

// lg2: "The maximum absolute error is 2^-22 when the input operand is in the
// range (0.5, 2). For positive finite inputs outside of this interval,
// maximum relative error is 2^-22." Table: -Inf, -normal -> NaN; -0.0, +0.0
// -> -Inf; +Inf -> +Inf.
CaseList approxLg2IsWithinTheStatedErrorAndFollowsItsTable() {
  const double bound = std::ldexp(1.0, -22);
  return {
      withinError("lg2.approx.ftz.f32", {0.75f, 1.0f, 1.5f, 1.999f, 0.501f},
                  log2Exact, bound, /*relative=*/false),
      withinError("lg2.approx.ftz.f32", {8.0f, 1000.0f, 1e-20f, 3e30f, 0.1f},
                  log2Exact, bound, /*relative=*/true),
      withinError("lg2.approx.f32", {std::ldexp(1.0f, -149)}, log2Exact, bound,
                  /*relative=*/true),
      specialCases("lg2.approx.ftz.f32", {{kNegInf, kQuietNaN},
                                          {bitsOf(-2.0f), kQuietNaN},
                                          {kMinusZero, kNegInf},
                                          {0, kNegInf},
                                          {kInf, kInf},
                                          {kQuietNaN, kQuietNaN},
                                          // A flushed subnormal is +0.
                                          {0x00000001, kNegInf}}),
  };
}

// rsqrt: "The maximum relative error for rsqrt.f32 over the entire positive
// finite floating-point range is 2^-22.9." Table: -Inf, -normal -> NaN; -0.0
// -> -Inf; +0.0 -> +Inf; +Inf -> +0.0.
CaseList approxRsqrtIsWithinTheStatedErrorAndFollowsItsTable() {
  return {
      withinError("rsqrt.approx.ftz.f32",
                  {4.0f, 2.0f, 0.1f, 1e30f, 3e-30f, 7.0f}, rsqrtExact,
                  std::exp2(-22.9), /*relative=*/true),
      withinError("rsqrt.approx.f32", {1e-40f}, rsqrtExact, std::exp2(-22.9),
                  /*relative=*/true),
      specialCases("rsqrt.approx.ftz.f32", {{kNegInf, kQuietNaN},
                                            {bitsOf(-1.0f), kQuietNaN},
                                            {kMinusZero, kNegInf},
                                            {0, kInf},
                                            {kInf, 0},
                                            {kQuietNaN, kQuietNaN}}),
  };
}

// sin, cos: maximum absolute error 2^-20.5 over [-2pi, 2pi] and 2^-14.7
// over [-100pi, 100pi]. sin: -0.0 -> -0.0, +0.0 -> +0.0, +-Inf -> NaN; cos:
// +-0.0 -> +1.0, +-Inf -> NaN.
CaseList approxSinCosAreWithinTheStatedAbsoluteError() {
  std::vector<float> nearZero = {0.5f, 1.0f, -2.0f, 3.0f, 6.0f, -6.2f, 1e-3f};
  std::vector<float> wide = {100.0f, -250.0f, 300.0f};
  CaseList cases;
  for (const char *instruction : {"sin.approx.ftz.f32", "sin.approx.f32"}) {
    cases.push_back(
        withinError(instruction, nearZero, sinExact, std::exp2(-20.5), false));
    cases.push_back(
        withinError(instruction, wide, sinExact, std::exp2(-14.7), false));
  }
  for (const char *instruction : {"cos.approx.ftz.f32", "cos.approx.f32"}) {
    cases.push_back(
        withinError(instruction, nearZero, cosExact, std::exp2(-20.5), false));
    cases.push_back(
        withinError(instruction, wide, cosExact, std::exp2(-14.7), false));
  }
  cases.push_back(specialCases("sin.approx.ftz.f32", {{kMinusZero, kMinusZero},
                                                      {0, 0},
                                                      {kInf, kQuietNaN},
                                                      {kNegInf, kQuietNaN},
                                                      {kQuietNaN, kQuietNaN}}));
  cases.push_back(specialCases("cos.approx.ftz.f32", {{kMinusZero, 0x3f800000},
                                                      {0, 0x3f800000},
                                                      {kInf, kQuietNaN},
                                                      {kQuietNaN, kQuietNaN}}));
  return cases;
}

// tanh: "The maximum relative error over the entire floating point range is
// 2^-11"; -Inf -> -1.0, -0.0 -> -0.0, +Inf -> 1.0; "The subnormal inputs
// gets passed through to the output".
CaseList approxTanhIsWithinTheStatedErrorAndPassesSubnormalsThrough() {
  return {
      withinError("tanh.approx.f32", {0.5f, -1.0f, 3.0f, 0.01f, 8.0f, -0.3f},
                  tanhExact, std::ldexp(1.0, -11), /*relative=*/true),
      specialCases("tanh.approx.f32", {{kNegInf, 0xbf800000},
                                       {kMinusZero, kMinusZero},
                                       {0, 0},
                                       {kInf, 0x3f800000},
                                       {kQuietNaN, kQuietNaN},
                                       {0x00000123, 0x00000123},
                                       {0x80000123, 0x80000123}}),
  };
}

// rcp.approx.f32: "The maximum ulp error is 1 across the full range of
// inputs"; -Inf -> -0.0, -0.0 -> -Inf, +0.0 -> +Inf, +Inf -> +0.0.
CaseList approxRcpApproxIsWithinOneUlpAndFollowsItsTable() {
  return {
      withinUlps(
          "rcp.approx.ftz.f32", {3.0f, 10.0f, 0.7f, -1e30f, 1e-30f},
          [](long double x) { return 1.0L / x; }, 1),
      specialCases("rcp.approx.ftz.f32", {{kNegInf, kMinusZero},
                                          {kMinusZero, kNegInf},
                                          {0, kInf},
                                          {kInf, 0},
                                          {kQuietNaN, kQuietNaN}}),
  };
}

// div: "div.full.f32 implements a relatively fast, full-range approximation
// ... The maximum ulp error is 2 across the full range of inputs."
// "div.approx.f32 implements a fast approximation to divide, computed as
// d = a * (1/b). For |b| in [2^-126, 2^126], the maximum ulp error is 2. For
// 2^126 < |b| < 2^128, if a is infinity, div.approx.f32 returns NaN, otherwise
// it returns a sign-preserving zero."
CaseList approxDivFullAndDivApproxMeetTheirBounds() {
  const float twoPow127 = std::ldexp(1.0f, 127);
  auto quotient = [](float a, float b) -> ElementCase {
    return {describe(a) + " / " + describe(b),
            {bitsOf(a), bitsOf(b)},
            0,
            Match::WithinUlpsF32,
            static_cast<long double>(a) / b,
            2};
  };
  std::vector<std::pair<float, float>> ordinary = {
      {1.0f, 3.0f}, {22.0f, 7.0f}, {-5.0f, 0.3f}, {1e30f, 3e-5f}};
  CaseList cases;
  for (const char *instruction : {"div.full.f32", "div.full.ftz.f32",
                                  "div.approx.f32", "div.approx.ftz.f32"}) {
    std::vector<ElementCase> quotients;
    for (auto [a, b] : ordinary)
      quotients.push_back(quotient(a, b));
    cases.push_back(elementwise("f32", {"f32", "f32"},
                                std::string(instruction) + " %d, %a, %b;", 4,
                                quotients));
  }
  // 3 / 2^127 = 1.5 * 2^-126 = 0x00c00000, normal: div.full gets it...
  cases.push_back(elementwise("f32", {"f32", "f32"}, "div.full.f32 %d, %a, %b;",
                              4, {quotient(3.0f, twoPow127)}));
  // ... and div.approx, whose 1/b is out of range, returns signed zeros/NaN.
  cases.push_back(elementwise(
      "f32", {"f32", "f32"}, "div.approx.f32 %d, %a, %b;", 4,
      {{"3 / 2^127", {bitsOf(3.0f), bitsOf(twoPow127)}, 0},
       {"-3 / 2^127", {bitsOf(-3.0f), bitsOf(twoPow127)}, kMinusZero},
       {"3 / -2^127", {bitsOf(3.0f), bitsOf(-twoPow127)}, kMinusZero},
       anyNaNF32("inf / 2^127", {kInf, bitsOf(twoPow127)})}));
  return cases;
}

} // namespace fwp::conformance
