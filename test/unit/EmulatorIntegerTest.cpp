//===- EmulatorIntegerTest.cpp - Integer, logic and compare instructions --===//
//
// The emulator's integer arithmetic, logic and shift, and comparison and
// selection, case by case from EmulatorCasesInteger.cpp, where each case cites
// the PTX ISA section its answers rest on. The same cases run on a GPU through
// fwp-ptx-conformance.
//
//===----------------------------------------------------------------------===//

#include "EmulatorTestUtils.h"

#include <gtest/gtest.h>

using namespace fwp::emu::test;
namespace cases = fwp::conformance;

namespace {

TEST(EmulatorInteger, AddAndSubWrapModuloTheWidth) {
  expectCasesPass(cases::integerAddAndSubWrapModuloTheWidth());
}

TEST(EmulatorInteger, MulLoHiAndWideTakeTheRightHalfOfTheProduct) {
  expectCasesPass(cases::integerMulLoHiAndWideTakeTheRightHalfOfTheProduct());
}

TEST(EmulatorInteger, MadAddsTheLowOrWideProduct) {
  expectCasesPass(cases::integerMadAddsTheLowOrWideProduct());
}

TEST(EmulatorInteger, DivAndRemSignedAndUnsigned) {
  expectCasesPass(cases::integerDivAndRemSignedAndUnsigned());
}

TEST(EmulatorInteger, ShiftAmountsBeyondTheWidthClampToTheWidth) {
  expectCasesPass(cases::integerShiftAmountsBeyondTheWidthClampToTheWidth());
}

TEST(EmulatorInteger, BitwiseLogicPopcClzCnot) {
  expectCasesPass(cases::integerBitwiseLogicPopcClzCnot());
}

TEST(EmulatorInteger, BitFieldExtractSignAndZeroExtends) {
  expectCasesPass(cases::integerBitFieldExtractSignAndZeroExtends());
}

TEST(EmulatorInteger, MinMaxNegAbsAreSignAware) {
  expectCasesPass(cases::integerMinMaxNegAbsAreSignAware());
}

TEST(EmulatorInteger, SetpComparesSignedOrUnsignedAndSelpSelects) {
  expectCasesPass(cases::integerSetpComparesSignedOrUnsignedAndSelpSelects());
}

} // namespace
