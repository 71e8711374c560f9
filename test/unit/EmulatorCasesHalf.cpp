//===- EmulatorCasesHalf.cpp - f16 and bf16 arithmetic cases --------------===//
//
// PTX ISA "Half Precision Floating-Point Instructions": add, sub, mul, fma,
// neg, abs, min, max on .f16, .bf16 and their packed .x2 forms, .rn only.
// Operands are chosen so that the exact result falls on or next to a tie
// between two 16-bit neighbours; every expected bit pattern was worked out
// by hand, and the comments give the exact value. f16: 1 sign, 5 exponent,
// 10 fraction bits (1.0 = 0x3c00, ulp 2^-10 at 1); bf16: 8 exponent and 7
// fraction bits (1.0 = 0x3f80, ulp 2^-7 at 1).
//
//===----------------------------------------------------------------------===//

#include "EmulatorCases.h"

namespace fwp::conformance {

CaseList halfAddSubMulRoundToNearestEven() {
  return {
      elementwise(
          "b16", {"b16", "b16"}, "add.rn.f16 %d, %a, %b;", 2,
          {{"1 + 2^-11 ties to even 1", {0x3c00, 0x1000}, 0x3c00},
           {"(1 + 2^-10) + 2^-11 ties to even 1 + 2^-9",
            {0x3c01, 0x1000},
            0x3c02},
           {"1 + 1.5 * 2^-11 is above the tie", {0x3c00, 0x1200}, 0x3c01},
           {"65504 + 8 stays 65504", {0x7bff, 0x4800}, 0x7bff},
           {"65504 + 65504 overflows to inf", {0x7bff, 0x7bff}, 0x7c00},
           {"subnormals add exactly", {0x0001, 0x0001}, 0x0002}}),
      elementwise("b16", {"b16", "b16"}, "sub.rn.f16 %d, %a, %b;", 2,
                  {{"1 - 2^-12 ties to even 1", {0x3c00, 0x0c00}, 0x3c00},
                   {"1 - 1 is +0", {0x3c00, 0x3c00}, 0x0000},
                   anyNaNF16("inf - inf is NaN", {0x7c00, 0x7c00})}),
      elementwise(
          "b16", {"b16", "b16"}, "mul.rn.f16 %d, %a, %b;", 2,
          {{"(1 + 2^-10)^2 = 1 + 2^-9 + 2^-20 rounds down",
            {0x3c01, 0x3c01},
            0x3c02},
           {"1.5 * 1.5 = 2.25", {0x3e00, 0x3e00}, 0x4080},
           {"2^-14 * 0.5 is the subnormal 2^-15", {0x0400, 0x3800}, 0x0200}}),
      elementwise("b16", {"b16", "b16"}, "add.rn.bf16 %d, %a, %b;", 2,
                  {{"1 + 2^-8 ties to even 1", {0x3f80, 0x3b80}, 0x3f80},
                   {"(1 + 2^-7) + 2^-8 ties to even 1 + 2^-6",
                    {0x3f81, 0x3b80},
                    0x3f82},
                   {"1 + 2^-100 stays 1", {0x3f80, 0x0d80}, 0x3f80},
                   {"max + max overflows to inf", {0x7f7f, 0x7f7f}, 0x7f80}}),
      elementwise("b16", {"b16", "b16"}, "mul.rn.bf16 %d, %a, %b;", 2,
                  {{"(1 + 2^-7)^2 = 1 + 2^-6 + 2^-14 rounds down",
                    {0x3f81, 0x3f81},
                    0x3f82}}),
  };
}

// fma: "computes a * b + c in infinite precision and then rounds".
CaseList halfFmaRoundsOnce() {
  return {
      elementwise("b16", {"b16", "b16", "b16"}, "fma.rn.bf16 %d, %a, %b, %c;",
                  2,
                  {{"(1 + 2^-4)^2 = 1 + 2^-3 + 2^-8 ties to even",
                    {0x3f88, 0x3f88, 0},
                    0x3f90},
                   {"the same tie plus 2^-100 rounds up",
                    {0x3f88, 0x3f88, 0x0d80},
                    0x3f91}}),
      elementwise("b16", {"b16", "b16", "b16"}, "fma.rn.f16 %d, %a, %b, %c;", 2,
                  {{"(1 + 2^-6)(1 + 2^-5) = 1 + 3 * 2^-6 + 2^-11 ties to even",
                    {0x3c10, 0x3c20, 0},
                    0x3c30},
                   {"the same tie plus 2^-24 rounds up",
                    {0x3c10, 0x3c20, 0x0001},
                    0x3c31}}),
      elementwise("b16", {"b16", "b16", "b16"},
                  "fma.rn.relu.bf16 %d, %a, %b, %c;", 2,
                  {{"-1 * 1 + 0 is negative: +0", {0xbf80, 0x3f80, 0}, 0},
                   {"1 * 1 + 1 = 2", {0x3f80, 0x3f80, 0x3f80}, 0x4000}}),
  };
}

// .sat "clamps the result to [0.0, 1.0]; NaN results are flushed to +0.0";
// .ftz flushes subnormal inputs and results to sign-preserving zero.
CaseList halfSatAndFtz() {
  return {
      elementwise("b16", {"b16", "b16"}, "add.rn.sat.f16 %d, %a, %b;", 2,
                  {{"1 + 1 clamps to 1", {0x3c00, 0x3c00}, 0x3c00},
                   {"-1 + 0 clamps to +0", {0xbc00, 0x0000}, 0x0000},
                   {"NaN + 1 is +0", {0x7e00, 0x3c00}, 0x0000}}),
      elementwise(
          "b16", {"b16", "b16"}, "mul.rn.ftz.f16 %d, %a, %b;", 2,
          {{"2^-14 * 0.5 = 2^-15 flushes to +0", {0x0400, 0x3800}, 0x0000},
           {"-2^-14 * 0.5 flushes to -0", {0x8400, 0x3800}, 0x8000},
           {"a subnormal input is zero: 2^-24 * 2^10 = 0",
            {0x0001, 0x6400},
            0x0000}}),
  };
}

// neg and abs change the sign; min and max: "if one input is NaN, the
// result is the other", -0 below +0; .x2 forms work on each half.
CaseList halfSignMinMaxAndPackedPairs() {
  return {
      elementwise("b16", {"b16"}, "neg.f16 %d, %a;", 2,
                  {{"-(1)", {0x3c00}, 0xbc00}, {"-(-0)", {0x8000}, 0x0000}}),
      elementwise("b16", {"b16"}, "abs.bf16 %d, %a;", 2,
                  {{"|-1|", {0xbf80}, 0x3f80}}),
      elementwise("b16", {"b16", "b16"}, "min.f16 %d, %a, %b;", 2,
                  {{"min(NaN, 1) = 1", {0x7e00, 0x3c00}, 0x3c00},
                   {"min(3, 2) = 2", {0x4200, 0x4000}, 0x4000}}),
      elementwise("b16", {"b16", "b16"}, "max.bf16 %d, %a, %b;", 2,
                  {{"max(-0, +0) = +0", {0x8000, 0x0000}, 0x0000},
                   {"max(1, NaN) = 1", {0x3f80, 0x7fc0}, 0x3f80}}),
      elementwise("b16", {"b16", "b16"}, "min.bf16 %d, %a, %b;", 2,
                  {{"min(+0, -0) = -0", {0x0000, 0x8000}, 0x8000}}),
      elementwise("b32", {"b32"}, "neg.f16x2 %d, %a;", 4,
                  {{"each half negated", {0x3c00bc00}, 0xbc003c00}}),
      elementwise(
          "b32", {"b32", "b32"}, "add.rn.f16x2 %d, %a, %b;", 4,
          {{"(2, 1) + (2, 1) = (4, 2)", {0x40003c00, 0x40003c00}, 0x44004000},
           {"each half rounds: (1, 1) + (2^-11, 1.5 * 2^-11)",
            {0x3c003c00, 0x10001200},
            0x3c003c01}}),
      elementwise(
          "b32", {"b32", "b32"}, "mul.rn.bf16x2 %d, %a, %b;", 4,
          {{"(2, 1) * (1, 2) = (2, 2)", {0x40003f80, 0x3f804000}, 0x40004000}}),
  };
}

} // namespace fwp::conformance
