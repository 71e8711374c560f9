//===- EmulatorControlTest.cpp - Branches, sregs, warp shuffles -----------===//
//
// The emulator's control flow, the special registers and the warp's
// shuffles, case by case from EmulatorCasesControl.cpp and
// EmulatorCasesWarp.cpp, where each case cites the PTX ISA section its
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

TEST(EmulatorWarp, ShflBflyReductionGivesEveryLaneTheWarpTotal) {
  expectCasesPass(cases::warpShflBflyReductionGivesEveryLaneTheWarpTotal());
}

TEST(EmulatorWarp, ShflUpInclusiveScanAddsWhereThePredicateHolds) {
  expectCasesPass(cases::warpShflUpInclusiveScanAddsWhereThePredicateHolds());
}

TEST(EmulatorWarp, ShflIdxAndDownStayInsideSegments) {
  expectCasesPass(cases::warpShflIdxAndDownStayInsideSegments());
}

} // namespace
