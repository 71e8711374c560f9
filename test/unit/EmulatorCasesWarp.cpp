//===- EmulatorCasesWarp.cpp - shfl.sync ----------------------------------===//
//
// PTX ISA "Data Movement and Conversion Instructions: shfl.sync": each lane
// takes register a from a source lane that .up, .down, .bfly or .idx
// compute from b and c (c[4:0] the clamp value, c[12:8] a mask that splits
// the warp into segments), or keeps its own where that lane is out of
// range, which the optional predicate destination tells. The answers are
// the ISA's own examples worked out in closed form: the butterfly
// reduction's warp total, the scan's prefix sums, a broadcast within
// segments of 8 lanes, and a shift down that stops at a segment's end. Two
// warps, so that a lane reads its own warp only.
//
//===----------------------------------------------------------------------===//

#include "EmulatorCases.h"

namespace fwp::conformance {
namespace {

constexpr unsigned kThreads = 64;

const char *kDeclarations =
    "  .reg .b32 %r<10>;\n  .reg .b64 %rd9;\n  .reg .pred %p<2>;\n";

KernelCase perThread(const std::string &name, const std::string &body,
                     uint32_t (*expected)(uint32_t)) {
  return perThreadCase(name, inOutKernel(kDeclarations, body + kStoreR9ToOut),
                       kThreads, expected);
}

} // namespace

// The ISA's butterfly reduction (.bfly by 16, 8, 4, 2, 1, clamp 31): every
// lane ends with the sum over its warp of 3 lane + 1, 3 * 496 + 32.
CaseList warpShflBflyReductionGivesEveryLaneTheWarpTotal() {
  std::string body = R"(
  and.b32 %r1, %t, 31;
  mad.lo.u32 %r2, %r1, 3, 1;
  shfl.sync.bfly.b32 %r3, %r2, 16, 31, -1;
  add.u32 %r2, %r2, %r3;
  shfl.sync.bfly.b32 %r3, %r2, 8, 31, -1;
  add.u32 %r2, %r2, %r3;
  shfl.sync.bfly.b32 %r3, %r2, 4, 31, -1;
  add.u32 %r2, %r2, %r3;
  shfl.sync.bfly.b32 %r3, %r2, 2, 31, -1;
  add.u32 %r2, %r2, %r3;
  shfl.sync.bfly.b32 %r3, %r2, 1, 31, -1;
  add.u32 %r9, %r2, %r3;
)";
  return {perThread("shfl.sync.bfly butterfly sum", body,
                    [](uint32_t) { return 1520u; })};
}

// The ISA's inclusive scan: .up by 1, 2, 4, 8, 16 with c = 0, adding only
// where the predicate says the source lane was in range (lane >= offset).
// Thread t holds t + 1, so lane l of warp w ends with the sum of
// 32 w + i + 1 over i = 0 .. l.
CaseList warpShflUpInclusiveScanAddsWhereThePredicateHolds() {
  std::string body = R"(
  add.u32 %r2, %t, 1;
  shfl.sync.up.b32 %r3|%p1, %r2, 1, 0, -1;
  @%p1 add.u32 %r2, %r3, %r2;
  shfl.sync.up.b32 %r3|%p1, %r2, 2, 0, -1;
  @%p1 add.u32 %r2, %r3, %r2;
  shfl.sync.up.b32 %r3|%p1, %r2, 4, 0, -1;
  @%p1 add.u32 %r2, %r3, %r2;
  shfl.sync.up.b32 %r3|%p1, %r2, 8, 0, -1;
  @%p1 add.u32 %r2, %r3, %r2;
  shfl.sync.up.b32 %r3|%p1, %r2, 16, 0, -1;
  @%p1 add.u32 %r2, %r3, %r2;
  mov.b32 %r9, %r2;
)";
  return {perThread("shfl.sync.up inclusive scan", body, [](uint32_t t) {
    uint32_t lane = t % 32, base = t - lane;
    return (lane + 1) * base + (lane + 1) * (lane + 2) / 2;
  })};
}

// Segments of 8 lanes (c = 0x181f: mask 0x18, clamp 31). .idx 3 gives every
// lane the value of lane 3 of its segment; .down 2 gives lane l the value of
// lane l + 2 where that is in l's segment (l mod 8 <= 5), else its own with
// the predicate false (marked here by the top bit). Thread t holds 7 t + 5.
CaseList warpShflIdxAndDownStayInsideSegments() {
  std::string broadcast = R"(
  mad.lo.u32 %r2, %t, 7, 5;
  shfl.sync.idx.b32 %r9, %r2, 3, 0x181f, -1;
)";
  std::string down = R"(
  mad.lo.u32 %r2, %t, 7, 5;
  shfl.sync.down.b32 %r3|%p1, %r2, 2, 0x181f, -1;
  or.b32 %r4, %r3, 0x80000000;
  selp.b32 %r9, %r3, %r4, %p1;
)";
  return {perThread("shfl.sync.idx in segments of 8", broadcast,
                    [](uint32_t t) { return 7 * (t - t % 8 + 3) + 5; }),
          perThread("shfl.sync.down in segments of 8", down, [](uint32_t t) {
            return t % 8 <= 5 ? 7 * (t + 2) + 5 : (7 * t + 5) | 0x80000000u;
          })};
}

} // namespace fwp::conformance
