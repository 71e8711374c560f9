//===- EmulatorApproxTest.cpp - Approximate floating-point instructions ---===//
//
// The .approx and .full instructions (PTX ISA "Floating Point Instructions":
// ex2, lg2, rsqrt, sin, cos, tanh, rcp.approx, div.approx, div.full) are
// allowed an error; each test holds the emulator to the bound the ISA states
// in the instruction's Notes, against the exact value (long double), and to
// the instruction's table of special-case results exactly.
//
//===----------------------------------------------------------------------===//

#include "EmulatorTestUtils.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace fwp::emu::test;

namespace {

constexpr uint32_t kInf = 0x7f800000, kNegInf = 0xff800000;
constexpr uint32_t kMinusZero = 0x80000000, kQuietNaN = 0x7fc00000;

/// Runs `instruction` (e.g. "ex2.approx.ftz.f32") as `instruction d, a;`
/// once per input and returns the result bits.
std::vector<uint32_t> runUnary(const std::string &instruction,
                               const std::vector<uint32_t> &inputs) {
  std::vector<std::vector<uint64_t>> cases;
  for (uint32_t bits : inputs)
    cases.push_back({bits});
  std::vector<uint64_t> got =
      runElementwise("f32", {"f32"}, instruction + " %d, %a;", cases, 4);
  return std::vector<uint32_t>(got.begin(), got.end());
}

std::vector<uint32_t>
runBinary(const std::string &instruction,
          const std::vector<std::pair<float, float>> &ab) {
  std::vector<std::vector<uint64_t>> cases;
  for (auto [a, b] : ab)
    cases.push_back({bitsOf(a), bitsOf(b)});
  std::vector<uint64_t> got = runElementwise(
      "f32", {"f32", "f32"}, instruction + " %d, %a, %b;", cases, 4);
  return std::vector<uint32_t>(got.begin(), got.end());
}

std::vector<uint32_t> bitsOfAll(const std::vector<float> &values) {
  std::vector<uint32_t> bits;
  for (float value : values)
    bits.push_back(bitsOf(value));
  return bits;
}

/// Expects each result within `maxUlps` of the correctly rounded `exact(x)`.
void expectWithinUlps(const std::string &instruction,
                      const std::vector<float> &inputs,
                      long double (*exact)(long double), int64_t maxUlps) {
  std::vector<uint32_t> got = runUnary(instruction, bitsOfAll(inputs));
  for (size_t i = 0; i < inputs.size() && i < got.size(); ++i) {
    float reference = static_cast<float>(exact(inputs[i]));
    EXPECT_LE(ulpDistance(floatOf(got[i]), reference), maxUlps)
        << instruction << " of " << inputs[i] << " gave " << floatOf(got[i])
        << " (" << hex(got[i]) << "), exact " << reference;
  }
}

/// Expects |result - exact(x)| <= bound, or <= bound * |exact(x)| when
/// `relative`.
void expectWithinError(const std::string &instruction,
                       const std::vector<float> &inputs,
                       long double (*exact)(long double), double bound,
                       bool relative) {
  std::vector<uint32_t> got = runUnary(instruction, bitsOfAll(inputs));
  for (size_t i = 0; i < inputs.size() && i < got.size(); ++i) {
    long double reference = exact(inputs[i]);
    long double error = std::fabs(floatOf(got[i]) - reference);
    long double allowed = relative ? bound * std::fabs(reference) : bound;
    EXPECT_LE(error, allowed)
        << instruction << " of " << inputs[i] << " gave " << floatOf(got[i])
        << " (" << hex(got[i]) << "), exact " << static_cast<double>(reference);
  }
}

/// Expects each special input to give exactly its tabled result (any NaN
/// where the table says NaN).
void expectSpecialCases(
    const std::string &instruction,
    const std::vector<std::pair<uint32_t, uint32_t>> &table) {
  std::vector<uint32_t> inputs;
  for (auto [input, result] : table)
    inputs.push_back(input);
  std::vector<uint32_t> got = runUnary(instruction, inputs);
  for (size_t i = 0; i < table.size() && i < got.size(); ++i) {
    if (isNanF32(table[i].second))
      EXPECT_TRUE(isNanF32(got[i]))
          << instruction << " of " << hex(table[i].first) << " gave "
          << hex(got[i]) << ", expected NaN";
    else
      EXPECT_EQ(hex(got[i]), hex(table[i].second))
          << instruction << " of " << hex(table[i].first);
  }
}

long double exp2Exact(long double x) { return std::exp2(x); }
long double log2Exact(long double x) { return std::log2(x); }
long double rsqrtExact(long double x) { return 1.0L / std::sqrt(x); }
long double sinExact(long double x) { return std::sin(x); }
long double cosExact(long double x) { return std::cos(x); }
long double tanhExact(long double x) { return std::tanh(x); }
long double recipExact(long double x) { return 1.0L / x; }

// Floating Point Instructions: ex2: "The maximum ulp error is 2 ulp from
// correctly rounded result across the full range of inputs", with the table
// -Inf -> +0.0, -0.0 -> +1.0, +0.0 -> +1.0, +Inf -> +Inf, NaN -> NaN.
TEST(EmulatorApprox, Ex2IsWithinTwoUlpAndFollowsItsTable) {
  std::vector<float> inputs = {1.0f,  -1.0f,    10.0f,  0.5f,   -3.3f,
                               7.77f, -20.125f, 0.001f, 100.5f, -126.0f};
  expectWithinUlps("ex2.approx.ftz.f32", inputs, exp2Exact, 2);
  expectWithinUlps("ex2.approx.f32", inputs, exp2Exact, 2);
  for (const char *instruction : {"ex2.approx.f32", "ex2.approx.ftz.f32"})
    expectSpecialCases(instruction, {{kNegInf, 0},
                                     {kMinusZero, 0x3f800000},
                                     {0, 0x3f800000},
                                     {kInf, kInf},
                                     {kQuietNaN, kQuietNaN}});
}

// ex2: "ex2.ftz.f32 flushes subnormal inputs and results to sign-preserving
// zero"; without .ftz subnormals are supported (sm_20+). 2^-130 is subnormal
// (the smallest normal f32 is 2^-126) and exactly representable.
TEST(EmulatorApprox, Ex2FtzFlushesASubnormalResultToPlusZero) {
  std::vector<uint32_t> got =
      runUnary("ex2.approx.ftz.f32", {bitsOf(-130.0f), bitsOf(-140.5f)});
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(hex(got[0]), hex(0)) << "2^-130 under .ftz";
  EXPECT_EQ(hex(got[1]), hex(0)) << "2^-140.5 under .ftz";
  got = runUnary("ex2.approx.f32", {bitsOf(-130.0f)});
  EXPECT_LE(ulpDistance(floatOf(got.at(0)), std::ldexp(1.0f, -130)), 2)
      << "2^-130 without .ftz gave " << hex(got.at(0));
}

// lg2: "The maximum absolute error is 2^-22 when the input operand is in the
// range (0.5, 2). For positive finite inputs outside of this interval,
// maximum relative error is 2^-22." Table: -Inf, -normal -> NaN; -0.0, +0.0
// -> -Inf; +Inf -> +Inf.
TEST(EmulatorApprox, Lg2IsWithinTheStatedErrorAndFollowsItsTable) {
  const double bound = std::ldexp(1.0, -22);
  expectWithinError("lg2.approx.ftz.f32", {0.75f, 1.0f, 1.5f, 1.999f, 0.501f},
                    log2Exact, bound, /*relative=*/false);
  expectWithinError("lg2.approx.ftz.f32", {8.0f, 1000.0f, 1e-20f, 3e30f, 0.1f},
                    log2Exact, bound, /*relative=*/true);
  expectWithinError("lg2.approx.f32", {std::ldexp(1.0f, -149)}, log2Exact,
                    bound, /*relative=*/true);
  expectSpecialCases("lg2.approx.ftz.f32", {{kNegInf, kQuietNaN},
                                            {bitsOf(-2.0f), kQuietNaN},
                                            {kMinusZero, kNegInf},
                                            {0, kNegInf},
                                            {kInf, kInf},
                                            {kQuietNaN, kQuietNaN},
                                            // A flushed subnormal is +0.
                                            {0x00000001, kNegInf}});
}

// rsqrt: "The maximum relative error for rsqrt.f32 over the entire positive
// finite floating-point range is 2^-22.9." Table: -Inf, -normal -> NaN; -0.0
// -> -Inf; +0.0 -> +Inf; +Inf -> +0.0.
TEST(EmulatorApprox, RsqrtIsWithinTheStatedErrorAndFollowsItsTable) {
  expectWithinError("rsqrt.approx.ftz.f32",
                    {4.0f, 2.0f, 0.1f, 1e30f, 3e-30f, 7.0f}, rsqrtExact,
                    std::exp2(-22.9), /*relative=*/true);
  expectWithinError("rsqrt.approx.f32", {1e-40f}, rsqrtExact, std::exp2(-22.9),
                    /*relative=*/true);
  expectSpecialCases("rsqrt.approx.ftz.f32", {{kNegInf, kQuietNaN},
                                              {bitsOf(-1.0f), kQuietNaN},
                                              {kMinusZero, kNegInf},
                                              {0, kInf},
                                              {kInf, 0},
                                              {kQuietNaN, kQuietNaN}});
}

// sin, cos: maximum absolute error 2^-20.5 over [-2pi, 2pi] and 2^-14.7
// over [-100pi, 100pi]. sin: -0.0 -> -0.0, +0.0 -> +0.0, +-Inf -> NaN; cos:
// +-0.0 -> +1.0, +-Inf -> NaN.
TEST(EmulatorApprox, SinCosAreWithinTheStatedAbsoluteError) {
  std::vector<float> nearZero = {0.5f, 1.0f, -2.0f, 3.0f, 6.0f, -6.2f, 1e-3f};
  std::vector<float> wide = {100.0f, -250.0f, 300.0f};
  for (const char *instruction : {"sin.approx.ftz.f32", "sin.approx.f32"}) {
    expectWithinError(instruction, nearZero, sinExact, std::exp2(-20.5), false);
    expectWithinError(instruction, wide, sinExact, std::exp2(-14.7), false);
  }
  for (const char *instruction : {"cos.approx.ftz.f32", "cos.approx.f32"}) {
    expectWithinError(instruction, nearZero, cosExact, std::exp2(-20.5), false);
    expectWithinError(instruction, wide, cosExact, std::exp2(-14.7), false);
  }
  expectSpecialCases("sin.approx.ftz.f32", {{kMinusZero, kMinusZero},
                                            {0, 0},
                                            {kInf, kQuietNaN},
                                            {kNegInf, kQuietNaN},
                                            {kQuietNaN, kQuietNaN}});
  expectSpecialCases("cos.approx.ftz.f32", {{kMinusZero, 0x3f800000},
                                            {0, 0x3f800000},
                                            {kInf, kQuietNaN},
                                            {kQuietNaN, kQuietNaN}});
}

// tanh: "The maximum relative error over the entire floating point range is
// 2^-11"; -Inf -> -1.0, -0.0 -> -0.0, +Inf -> 1.0; "The subnormal inputs
// gets passed through to the output".
TEST(EmulatorApprox, TanhIsWithinTheStatedErrorAndPassesSubnormalsThrough) {
  expectWithinError("tanh.approx.f32", {0.5f, -1.0f, 3.0f, 0.01f, 8.0f, -0.3f},
                    tanhExact, std::ldexp(1.0, -11), /*relative=*/true);
  expectSpecialCases("tanh.approx.f32", {{kNegInf, 0xbf800000},
                                         {kMinusZero, kMinusZero},
                                         {0, 0},
                                         {kInf, 0x3f800000},
                                         {kQuietNaN, kQuietNaN},
                                         {0x00000123, 0x00000123},
                                         {0x80000123, 0x80000123}});
}

// rcp.approx.f32: "The maximum ulp error is 1 across the full range of
// inputs"; -Inf -> -0.0, -0.0 -> -Inf, +0.0 -> +Inf, +Inf -> +0.0.
TEST(EmulatorApprox, RcpApproxIsWithinOneUlpAndFollowsItsTable) {
  expectWithinUlps("rcp.approx.ftz.f32", {3.0f, 10.0f, 0.7f, -1e30f, 1e-30f},
                   recipExact, 1);
  expectSpecialCases("rcp.approx.ftz.f32", {{kNegInf, kMinusZero},
                                            {kMinusZero, kNegInf},
                                            {0, kInf},
                                            {kInf, 0},
                                            {kQuietNaN, kQuietNaN}});
}

// div: "div.full.f32 implements a relatively fast, full-range approximation
// ... The maximum ulp error is 2 across the full range of inputs."
// "div.approx.f32 implements a fast approximation to divide, computed as
// d = a * (1/b). For |b| in [2^-126, 2^126], the maximum ulp error is 2. For
// 2^126 < |b| < 2^128, if a is infinity, div.approx.f32 returns NaN, otherwise
// it returns a sign-preserving zero."
TEST(EmulatorApprox, DivFullAndDivApproxMeetTheirBounds) {
  const float twoPow127 = std::ldexp(1.0f, 127);
  std::vector<std::pair<float, float>> ordinary = {
      {1.0f, 3.0f}, {22.0f, 7.0f}, {-5.0f, 0.3f}, {1e30f, 3e-5f}};
  for (const char *instruction : {"div.full.f32", "div.full.ftz.f32",
                                  "div.approx.f32", "div.approx.ftz.f32"}) {
    std::vector<uint32_t> got = runBinary(instruction, ordinary);
    for (size_t i = 0; i < ordinary.size() && i < got.size(); ++i) {
      float exact = static_cast<float>(
          static_cast<long double>(ordinary[i].first) / ordinary[i].second);
      EXPECT_LE(ulpDistance(floatOf(got[i]), exact), 2)
          << instruction << " " << ordinary[i].first << " / "
          << ordinary[i].second << " gave " << floatOf(got[i]);
    }
  }
  // 3 / 2^127 = 1.5 * 2^-126 = 0x00c00000, normal: div.full gets it...
  std::vector<uint32_t> got = runBinary("div.full.f32", {{3.0f, twoPow127}});
  EXPECT_LE(ulpDistance(floatOf(got.at(0)), std::ldexp(1.5f, -126)), 2)
      << "div.full.f32 3 / 2^127 gave " << hex(got.at(0));
  // ... and div.approx, whose 1/b is out of range, returns signed zeros/NaN.
  got = runBinary("div.approx.f32", {{3.0f, twoPow127},
                                     {-3.0f, twoPow127},
                                     {3.0f, -twoPow127},
                                     {INFINITY, twoPow127}});
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(hex(got[0]), hex(0)) << "div.approx 3 / 2^127";
  EXPECT_EQ(hex(got[1]), hex(kMinusZero)) << "div.approx -3 / 2^127";
  EXPECT_EQ(hex(got[2]), hex(kMinusZero)) << "div.approx 3 / -2^127";
  EXPECT_TRUE(isNanF32(got[3]))
      << "div.approx inf / 2^127 gave " << hex(got[3]);
}

} // namespace
