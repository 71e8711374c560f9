//===- EmulatorCountersTest.cpp - What a launch counts --------------------===//
//
// The counters the performance model reads, on kernels whose counts are
// worked out by hand: a warp's 32 consecutive 4-byte loads touch 4 sectors
// of 32 bytes, a stride of 32 words touches 32; 32 lanes reading 32 words
// of one shared bank take 32 wavefronts (31 conflicts), consecutive words
// one; an instruction under a guard that holds for 8 lanes counts once
// with 8 active lanes.
//
//===----------------------------------------------------------------------===//

#include "EmulatorTestUtils.h"

#include <gtest/gtest.h>

using namespace fwp::emu;
using namespace fwp::emu::test;

namespace {

/// Runs `body` (after inOutKernel's prologue, with %r1 and %y1 free) on one
/// warp over 4 KiB of written input; its counters.
Counters countersOf(const std::string &body, const std::string &preamble = "",
                    unsigned threads = 32) {
  std::string ptx = inOutKernel(
      "  .reg .b32 %r<4>;\n  .reg .b64 %y<4>;\n  .reg .pred %p<2>;\n", body,
      preamble);
  DeviceMemory memory;
  uint64_t in = memory.allocate(4096), out = memory.allocate(4096);
  memory.fill(in, 0, 4096);
  memory.fill(out, 0, 4096);
  LaunchOutcome outcome =
      launchPtx(ptx, "test_kernel", Dim3{1}, Dim3{threads}, {in, out}, memory);
  EXPECT_TRUE(expectCleanLaunch(outcome, ptx));
  return outcome.result.counters;
}

/// Loads in[t * stride] (4 bytes a lane).
std::string stridedLoad(unsigned strideBytes) {
  return "  mul.wide.u32 %y1, %t, " + std::to_string(strideBytes) +
         ";\n"
         "  add.s64 %y1, %inp, %y1;\n"
         "  ld.global.u32 %r1, [%y1];\n";
}

TEST(EmulatorCounters, CoalescedLoadTouchesFourSectors) {
  Counters c = countersOf(stridedLoad(4));
  EXPECT_EQ(c.globalBytesRequested, 128u);
  EXPECT_EQ(c.globalSectors, 4u);
  EXPECT_EQ(c.distinctGlobalSectors, 4u);
  EXPECT_EQ(c.warpInstructions[size_t(InstructionClass::GlobalMemory)], 1u);
}

TEST(EmulatorCounters, StridedLoadTouchesASectorALane) {
  Counters c = countersOf(stridedLoad(128));
  EXPECT_EQ(c.globalBytesRequested, 128u);
  EXPECT_EQ(c.globalSectors, 32u);
}

/// Shared words t * stride: stride 32 puts every lane in bank 0.
std::string sharedAccess(unsigned strideWords) {
  return "  mul.lo.u32 %r1, %t, " + std::to_string(4 * strideWords) +
         ";\n"
         "  mov.u32 %r2, table;\n"
         "  add.u32 %r1, %r1, %r2;\n"
         "  st.shared.u32 [%r1], %t;\n";
}

TEST(EmulatorCounters, SharedBankConflictsAreCounted) {
  const char *table = ".shared .align 4 .b32 table[1024];\n";
  Counters linear = countersOf(sharedAccess(1), table);
  EXPECT_EQ(linear.sharedWavefronts, 1u);
  EXPECT_EQ(linear.sharedBankConflicts, 0u);
  Counters sameBank = countersOf(sharedAccess(32), table);
  EXPECT_EQ(sameBank.sharedWavefronts, 32u);
  EXPECT_EQ(sameBank.sharedBankConflicts, 31u);
}

TEST(EmulatorCounters, ActiveLanesFollowTheGuard) {
  Counters c = countersOf("  setp.lt.u32 %p1, %t, 8;\n"
                          "  @%p1 add.u32 %r1, %t, 1;\n");
  // ld.param x2, cvta x2, mov, setp, add, ret: 8 warp instructions, all 32
  // lanes active except the add's 8.
  EXPECT_EQ(c.totalWarpInstructions(), 8u);
  EXPECT_EQ(c.activeLanes, 7u * 32 + 8);
}

TEST(EmulatorCounters, BarriersAndCtasAreCounted) {
  Counters c = countersOf("  bar.sync 0;\n  bar.sync 0;\n", "", 64);
  EXPECT_EQ(c.barriers, 4u); // two barriers, two warps
  EXPECT_EQ(c.ctas, 1u);
  EXPECT_EQ(c.threadsPerCta, 64u);
}

TEST(EmulatorCounters, JsonNamesTheKernelAndEveryCounter) {
  Counters c = countersOf(stridedLoad(4));
  std::string json = c.json("test_kernel");
  for (const char *key : {"\"kernel\":\"test_kernel\"", "\"global_sectors\":4",
                          "\"shared_bank_conflicts\":0", "\"mma\":{\"tf32\":0",
                          "\"by_class\":{", "\"active_lane_share\":1"})
    EXPECT_NE(json.find(key), std::string::npos) << key << " in " << json;
}

} // namespace
