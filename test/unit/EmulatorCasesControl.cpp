//===- EmulatorCasesControl.cpp - Branches, loops, brx.idx, exit, sregs ---===//
//
// Control flow (PTX ISA "Control Flow Instructions": bra, brx.idx, exit;
// "Divergence of Threads in Control Constructs") with lanes of one warp
// taking different paths, and the special registers ("Special Registers":
// %tid, %ntid, %ctaid, %nctaid, %laneid) over a 2-D grid.
//
//===----------------------------------------------------------------------===//

#include "EmulatorCases.h"

namespace fwp::conformance {

// Odd and even lanes of each warp take different paths, odd lanes split again
// on bit 1, and all lanes reconverge before the last add and the store.
CaseList controlDivergentBranchesReconvergeBeforeTheJoin() {
  std::string ptx = inOutKernel(
      "  .reg .b32 %r<10>;\n  .reg .b64 %rd9;\n  .reg .pred %p<3>;\n",
      std::string(R"(
  and.b32 %r1, %t, 1;
  setp.eq.u32 %p1, %r1, 0;
  @%p1 bra EVEN;
  mul.lo.u32 %r9, %t, 3;
  and.b32 %r2, %t, 2;
  setp.ne.u32 %p2, %r2, 0;
  @!%p2 bra ODD_DONE;
  add.u32 %r9, %r9, 1000;
ODD_DONE:
  bra.uni JOIN;
EVEN:
  add.u32 %r9, %t, 100;
JOIN:
  add.u32 %r9, %r9, 7;
)") + kStoreR9ToOut);
  return {perThreadCase("divergent branches nested two deep, then the join",
                        ptx, 64, [](uint32_t t) {
                          return t % 2 == 0
                                     ? t + 100 + 7
                                     : 3 * t + (t % 4 == 3 ? 1000 : 0) + 7;
                        })};
}

// Each lane runs the loop t + 1 times: sum = 0 + 1 + ... + t.
CaseList controlLoopsRunADifferentTripCountPerLane() {
  std::string ptx =
      inOutKernel("  .reg .b32 %r<10>;\n  .reg .b64 %rd9;\n  .reg .pred %p1;\n",
                  std::string(R"(
  mov.u32 %r1, 0;
  mov.u32 %r9, 0;
LOOP:
  add.u32 %r9, %r9, %r1;
  add.u32 %r1, %r1, 1;
  setp.le.u32 %p1, %r1, %t;
  @%p1 bra LOOP;
)") + kStoreR9ToOut);
  return {perThreadCase("a loop of t + 1 trips in lane t", ptx, 64,
                        [](uint32_t t) { return t * (t + 1) / 2; })};
}

// brx.idx: "tlist ... is accessed as a zero-based sequence using index"; the
// list is a .branchtargets directive in the function.
CaseList controlBrxIdxJumpsToTheIndexedTargetPerLane() {
  std::string ptx =
      inOutKernel("  .reg .b32 %r<10>;\n  .reg .b64 %rd9;\n", std::string(R"(
  rem.u32 %r1, %t, 3;
TARGETS:
  .branchtargets CASE0, CASE1, CASE2;
  brx.idx %r1, TARGETS;
CASE0:
  mov.u32 %r9, 111;
  bra.uni JOIN;
CASE1:
  mov.u32 %r9, 222;
  bra.uni JOIN;
CASE2:
  mov.u32 %r9, 333;
JOIN:
  add.u32 %r9, %r9, %t;
)") + kStoreR9ToOut);
  return {perThreadCase("brx.idx to target t % 3", ptx, 32, [](uint32_t t) {
    const uint32_t base[3] = {111, 222, 333};
    return base[t % 3] + t;
  })};
}

// exit ends the executing thread only: the others go on (through a loop and a
// divergent branch), and the exited lanes' words are never written.
CaseList controlExitEndsOnlyTheLanesThatTakeIt() {
  std::string ptx = inOutKernel(
      "  .reg .b32 %r<10>;\n  .reg .b64 %rd9;\n  .reg .pred %p<3>;\n",
      std::string(R"(
  setp.ge.u32 %p1, %t, 20;
  @%p1 exit;
  mov.u32 %r9, 1;
  mov.u32 %r1, 0;
LOOP:
  shl.b32 %r9, %r9, 1;
  add.u32 %r1, %r1, 1;
  setp.lt.u32 %p2, %r1, %t;
  @%p2 bra LOOP;
  add.u32 %r9, %r9, %t;
)") + kStoreR9ToOut);
  // The loop body runs max(t, 1) times.
  return {
      perThreadCase("lanes 20-31 exit, the rest loop", ptx, 32, [](uint32_t t) {
        return t >= 20 ? kSentinel32 : (2u << (t ? t - 1 : 0)) + t;
      })};
}

// Every thread of a 3 x 2 grid of 24 x 2 CTAs writes its special registers at
// its own linear position. Thread IDs are linear as x + y * ntid.x (PTX ISA
// "Thread Hierarchy: Cooperative Thread Arrays"), and "each warp contains
// threads of consecutive, increasing thread IDs with the first warp
// containing thread 0" (PTX ISA "A Set of SIMT Multiprocessors"), so with 48
// threads a CTA the second warp is partial and %laneid is the linear ID mod
// 32.
CaseList controlSpecialRegistersDescribeA2DGridOfPartialWarps() {
  std::string ptx = inOutKernel("  .reg .b32 %r<16>;\n  .reg .b64 %rd1;\n",
                                R"(
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, %tid.y;
  mov.u32 %r3, %tid.z;
  mov.u32 %r4, %ntid.x;
  mov.u32 %r5, %ntid.y;
  mov.u32 %r6, %ctaid.x;
  mov.u32 %r7, %ctaid.y;
  mov.u32 %r8, %nctaid.x;
  mov.u32 %r9, %nctaid.y;
  mov.u32 %r10, %laneid;
  mad.lo.u32 %r11, %r7, %r8, %r6;
  mul.lo.u32 %r12, %r4, %r5;
  mad.lo.u32 %r13, %r2, %r4, %r1;
  mad.lo.u32 %r11, %r11, %r12, %r13;
  mul.wide.u32 %rd1, %r11, 40;
  add.s64 %rd1, %outp, %rd1;
  st.global.v2.u32 [%rd1], {%r1, %r2};
  st.global.v2.u32 [%rd1+8], {%r3, %r4};
  st.global.v2.u32 [%rd1+16], {%r5, %r6};
  st.global.v2.u32 [%rd1+24], {%r7, %r8};
  st.global.v2.u32 [%rd1+32], {%r9, %r10};
)");
  constexpr unsigned gridX = 3, gridY = 2, blockX = 24, blockY = 2;
  constexpr unsigned perCta = blockX * blockY;
  constexpr unsigned slots = gridX * gridY * perCta;
  return {inOutCase<uint32_t>(
      ptx, {}, slots * 10, Shape{gridX, gridY, 1}, Shape{blockX, blockY, 1},
      [](const std::vector<uint32_t> &got) {
        const char *names[10] = {"tid.x",    "tid.y",   "tid.z",   "ntid.x",
                                 "ntid.y",   "ctaid.x", "ctaid.y", "nctaid.x",
                                 "nctaid.y", "laneid"};
        // One verdict per register, over every thread of the grid (the index
        // is the thread's linear position in the grid).
        std::vector<std::vector<uint32_t>> seen(10), expected(10);
        for (unsigned slot = 0; slot < slots; ++slot) {
          unsigned cta = slot / perCta, linear = slot % perCta;
          const uint32_t values[10] = {
              linear % blockX, linear / blockX, 0,     blockX, blockY,
              cta % gridX,     cta / gridX,     gridX, gridY,  linear % 32};
          for (int i = 0; i < 10; ++i) {
            size_t at = slot * 10 + i;
            seen[i].push_back(at < got.size() ? got[at] : kSentinel32);
            expected[i].push_back(values[i]);
          }
        }
        std::vector<Verdict> verdicts;
        for (int i = 0; i < 10; ++i)
          verdicts.push_back(compareWords(
              std::string("%") + names[i] +
                  " of every thread of a 3 x 2 grid of 24 x 2 CTAs",
              seen[i], expected[i]));
        return verdicts;
      })};
}

} // namespace fwp::conformance
