//===- EmulatorMatrixTest.cpp - mma.sync and ldmatrix ---------------------===//
//
// The emulator's warp-level matrix instructions, mma.sync and ldmatrix, case by
// case from EmulatorCasesMatrix.cpp, where each case cites the PTX ISA section
// its answers rest on. The same cases run on a GPU through fwp-ptx-conformance.
//
//===----------------------------------------------------------------------===//

#include "EmulatorTestUtils.h"

#include <gtest/gtest.h>

using namespace fwp::emu::test;
namespace cases = fwp::conformance;

namespace {

TEST(EmulatorMatrix, MmaTf32M16n8k8MatchesTheProductExactly) {
  expectCasesPass(cases::matrixMmaTf32M16n8k8MatchesTheProductExactly());
}

TEST(EmulatorMatrix, MmaBf16M16n8k16MatchesTheProductExactly) {
  expectCasesPass(cases::matrixMmaBf16M16n8k16MatchesTheProductExactly());
}

TEST(EmulatorMatrix, MmaF16M16n8k16MatchesTheProductExactly) {
  expectCasesPass(cases::matrixMmaF16M16n8k16MatchesTheProductExactly());
}

TEST(EmulatorMatrix, MmaTf32IgnoresTheLow13MantissaBits) {
  expectCasesPass(cases::matrixMmaTf32IgnoresTheLow13MantissaBits());
}

TEST(EmulatorMatrix, MmaRandomOperandsAreWithinSinglePrecisionAccumulation) {
  expectCasesPass(
      cases::matrixMmaRandomOperandsAreWithinSinglePrecisionAccumulation());
}

TEST(EmulatorMatrix, LdmatrixGivesEachLaneItsRowFragment) {
  expectCasesPass(cases::matrixLdmatrixGivesEachLaneItsRowFragment());
}

} // namespace
