//===- EmulatorApproxTest.cpp - Approximate floating-point instructions ---===//
//
// The emulator's .approx and .full instructions, within the ISA's bounds, case
// by case from EmulatorCasesApprox.cpp, where each case cites the PTX ISA
// section its answers rest on. The same cases run on a GPU through
// fwp-ptx-conformance.
//
//===----------------------------------------------------------------------===//

#include "EmulatorTestUtils.h"

#include <gtest/gtest.h>

using namespace fwp::emu::test;
namespace cases = fwp::conformance;

namespace {

TEST(EmulatorApprox, Ex2IsWithinTwoUlpAndFollowsItsTable) {
  expectCasesPass(cases::approxEx2IsWithinTwoUlpAndFollowsItsTable());
}

TEST(EmulatorApprox, Ex2FtzFlushesASubnormalResultToPlusZero) {
  expectCasesPass(cases::approxEx2FtzFlushesASubnormalResultToPlusZero());
}

TEST(EmulatorApprox, Lg2IsWithinTheStatedErrorAndFollowsItsTable) {
  expectCasesPass(cases::approxLg2IsWithinTheStatedErrorAndFollowsItsTable());
}

TEST(EmulatorApprox, RsqrtIsWithinTheStatedErrorAndFollowsItsTable) {
  expectCasesPass(cases::approxRsqrtIsWithinTheStatedErrorAndFollowsItsTable());
}

TEST(EmulatorApprox, SinCosAreWithinTheStatedAbsoluteError) {
  expectCasesPass(cases::approxSinCosAreWithinTheStatedAbsoluteError());
}

TEST(EmulatorApprox, TanhIsWithinTheStatedErrorAndPassesSubnormalsThrough) {
  expectCasesPass(
      cases::approxTanhIsWithinTheStatedErrorAndPassesSubnormalsThrough());
}

TEST(EmulatorApprox, RcpApproxIsWithinOneUlpAndFollowsItsTable) {
  expectCasesPass(cases::approxRcpApproxIsWithinOneUlpAndFollowsItsTable());
}

TEST(EmulatorApprox, DivFullAndDivApproxMeetTheirBounds) {
  expectCasesPass(cases::approxDivFullAndDivApproxMeetTheirBounds());
}

} // namespace
