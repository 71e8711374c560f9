//===- EmulatorConversionTest.cpp - cvt between every kind of type --------===//
//
// The emulator's cvt between every kind of type, case by case from
// EmulatorCasesConversion.cpp, where each case cites the PTX ISA section its
// answers rest on. The same cases run on a GPU through fwp-ptx-conformance.
//
//===----------------------------------------------------------------------===//

#include "EmulatorTestUtils.h"

#include <gtest/gtest.h>

using namespace fwp::emu::test;
namespace cases = fwp::conformance;

namespace {

TEST(EmulatorConversion, IntegerWideningSignOrZeroExtends) {
  expectCasesPass(cases::conversionIntegerWideningSignOrZeroExtends());
}

TEST(EmulatorConversion, IntegerNarrowingTruncatesOrSaturates) {
  expectCasesPass(cases::conversionIntegerNarrowingTruncatesOrSaturates());
}

TEST(EmulatorConversion, FloatToIntegerRoundsClampsAndMapsNaN) {
  expectCasesPass(cases::conversionFloatToIntegerRoundsClampsAndMapsNaN());
}

TEST(EmulatorConversion, IntegerToFloatRoundsWithTheModifier) {
  expectCasesPass(cases::conversionIntegerToFloatRoundsWithTheModifier());
}

TEST(EmulatorConversion, F32AndF64ConvertExactlyOrWithRounding) {
  expectCasesPass(cases::conversionF32AndF64ConvertExactlyOrWithRounding());
}

TEST(EmulatorConversion, SatClampsToTheUnitIntervalAndNaNToZero) {
  expectCasesPass(cases::conversionSatClampsToTheUnitIntervalAndNaNToZero());
}

TEST(EmulatorConversion, F32ToF16RoundsToNearestEvenOverflowsAndKeepsNaN) {
  expectCasesPass(
      cases::conversionF32ToF16RoundsToNearestEvenOverflowsAndKeepsNaN());
}

TEST(EmulatorConversion, F32ToBf16RoundsToNearestEvenOverflowsAndKeepsNaN) {
  expectCasesPass(
      cases::conversionF32ToBf16RoundsToNearestEvenOverflowsAndKeepsNaN());
}

TEST(EmulatorConversion, PackedX2PutsTheFirstOperandInTheUpperHalf) {
  expectCasesPass(cases::conversionPackedX2PutsTheFirstOperandInTheUpperHalf());
}

TEST(EmulatorConversion, Tf32RoundsToNearestTiesAwayAndKeepsInfAndNaN) {
  expectCasesPass(
      cases::conversionTf32RoundsToNearestTiesAwayAndKeepsInfAndNaN());
}

} // namespace
