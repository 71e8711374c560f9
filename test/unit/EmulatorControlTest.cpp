//===- EmulatorControlTest.cpp - Branches, loops, brx.idx, exit, sregs ----===//
//
// The emulator's control flow and the special registers, case by case from
// EmulatorCasesControl.cpp, where each case cites the PTX ISA section its
// answers rest on. The same cases run on a GPU through fwp-ptx-conformance.
//
//===----------------------------------------------------------------------===//

#include "EmulatorTestUtils.h"

#include <gtest/gtest.h>

using namespace fwp::emu::test;
namespace cases = fwp::conformance;

namespace {

TEST(EmulatorControl, DivergentBranchesReconvergeBeforeTheJoin) {
  expectCasesPass(cases::controlDivergentBranchesReconvergeBeforeTheJoin());
}

TEST(EmulatorControl, LoopsRunADifferentTripCountPerLane) {
  expectCasesPass(cases::controlLoopsRunADifferentTripCountPerLane());
}

TEST(EmulatorControl, BrxIdxJumpsToTheIndexedTargetPerLane) {
  expectCasesPass(cases::controlBrxIdxJumpsToTheIndexedTargetPerLane());
}

TEST(EmulatorControl, ExitEndsOnlyTheLanesThatTakeIt) {
  expectCasesPass(cases::controlExitEndsOnlyTheLanesThatTakeIt());
}

TEST(EmulatorControl, SpecialRegistersDescribeA2DGridOfPartialWarps) {
  expectCasesPass(
      cases::controlSpecialRegistersDescribeA2DGridOfPartialWarps());
}

} // namespace
