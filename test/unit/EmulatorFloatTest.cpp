//===- EmulatorFloatTest.cpp - IEEE floating-point instructions -----------===//
//
// The emulator's correctly rounded floating-point instructions and float setp,
// case by case from EmulatorCasesFloat.cpp (EmulatorCasesHalf.cpp for f16
// and bf16), where each case cites the PTX ISA
// section its answers rest on. The same cases run on a GPU through
// fwp-ptx-conformance.
//
//===----------------------------------------------------------------------===//

#include "EmulatorTestUtils.h"

#include <gtest/gtest.h>

using namespace fwp::emu::test;
namespace cases = fwp::conformance;

namespace {

TEST(EmulatorFloat, RoundingModifiersPickTheRightNeighbourInAddSubMul) {
  expectCasesPass(
      cases::floatRoundingModifiersPickTheRightNeighbourInAddSubMul());
}

TEST(EmulatorFloat, FmaRoundsOnceUnderEachModifier) {
  expectCasesPass(cases::floatFmaRoundsOnceUnderEachModifier());
}

TEST(EmulatorFloat, F64AddAndFmaRoundLikeIeee) {
  expectCasesPass(cases::floatF64AddAndFmaRoundLikeIeee());
}

TEST(EmulatorFloat, DivRcpSqrtWithRoundingAreCorrectlyRounded) {
  expectCasesPass(cases::floatDivRcpSqrtWithRoundingAreCorrectlyRounded());
}

TEST(EmulatorFloat, InvalidOperationsGiveNaN) {
  expectCasesPass(cases::floatInvalidOperationsGiveNaN());
}

TEST(EmulatorFloat, MinMaxReturnTheNumberWhenOneInputIsNaN) {
  expectCasesPass(cases::floatMinMaxReturnTheNumberWhenOneInputIsNaN());
}

TEST(EmulatorFloat, SetpOrderedIsFalseAndUnorderedTrueOnNaN) {
  expectCasesPass(cases::floatSetpOrderedIsFalseAndUnorderedTrueOnNaN());
}

TEST(EmulatorFloat, NegAndAbsChangeOnlyTheSign) {
  expectCasesPass(cases::floatNegAndAbsChangeOnlyTheSign());
}

TEST(EmulatorFloat, FtzFlushesSubnormalInputsAndResultsToSignedZero) {
  expectCasesPass(
      cases::floatFtzFlushesSubnormalInputsAndResultsToSignedZero());
}

TEST(EmulatorFloat, SatClampsToTheUnitIntervalAndNaNToPlusZero) {
  expectCasesPass(cases::floatSatClampsToTheUnitIntervalAndNaNToPlusZero());
}

TEST(EmulatorHalf, AddSubMulRoundToNearestEven) {
  expectCasesPass(cases::halfAddSubMulRoundToNearestEven());
}

TEST(EmulatorHalf, FmaRoundsOnce) {
  expectCasesPass(cases::halfFmaRoundsOnce());
}

TEST(EmulatorHalf, SatAndFtz) { expectCasesPass(cases::halfSatAndFtz()); }

TEST(EmulatorHalf, SignMinMaxAndPackedPairs) {
  expectCasesPass(cases::halfSignMinMaxAndPackedPairs());
}

} // namespace
