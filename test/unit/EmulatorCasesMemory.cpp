//===- EmulatorCasesMemory.cpp - ld, st, atom and cp.async cases ----------===//
//
// The state spaces (PTX ISA "State Spaces": .param, .global, .shared) through
// ld/st of every width and .v2/.v4 vectors ("Data Movement and Conversion
// Instructions: ld, st"), bar.sync between threads ("Parallel
// Synchronization and Communication Instructions: bar"), atom ("...: atom")
// and cp.async with its groups ("Data Movement and Conversion Instructions:
// cp.async, cp.async.commit_group, cp.async.wait_group").
//
//===----------------------------------------------------------------------===//

#include "EmulatorCases.h"

#include <algorithm>

namespace fwp::conformance {
namespace {

Verdict compareBits(std::string name, uint64_t got, uint64_t expected) {
  return {std::move(name), got == expected, hex(got), hex(expected)};
}

} // namespace

// Kernel parameters of every size, read with ld.param. A narrow load into a
// wider register: "The value loaded is sign-extended to the destination
// register width for signed integers, and is zero-extended to the
// destination register width for unsigned and bit-size types" (ld, Notes).
CaseList memoryParamSpaceReadsScalarsOfEveryWidthAndVectors() {
  KernelCase kernelCase;
  kernelCase.ptx = ptxHeader() + R"(
.visible .entry params_kernel(.param .u64 out, .param .u8 v8,
    .param .u16 v16, .param .u32 v32, .param .u64 v64, .param .f32 vf,
    .param .align 16 .b8 blob[16])
{
  .reg .b64 %rd<3>;
  .reg .b32 %r<10>;
  .reg .b16 %rs<4>;
  .reg .f32 %f1;
  ld.param.u64 %rd1, [out];
  cvta.to.global.u64 %rd1, %rd1;
  ld.param.u8 %rs1, [v8];
  cvt.u32.u16 %r1, %rs1;
  st.global.u32 [%rd1], %r1;
  ld.param.u16 %rs2, [v16];
  cvt.u32.u16 %r2, %rs2;
  st.global.u32 [%rd1+4], %r2;
  ld.param.u32 %r3, [v32];
  st.global.u32 [%rd1+8], %r3;
  ld.param.u64 %rd2, [v64];
  st.global.u64 [%rd1+16], %rd2;
  ld.param.f32 %f1, [vf];
  st.global.f32 [%rd1+24], %f1;
  ld.param.v4.u32 {%r4, %r5, %r6, %r7}, [blob];
  st.global.v4.u32 [%rd1+32], {%r4, %r5, %r6, %r7};
  ld.param.s8 %rs3, [blob+5];
  cvt.s32.s16 %r8, %rs3;
  st.global.u32 [%rd1+48], %r8;
  ld.param.v2.u16 {%rs1, %rs2}, [blob+12];
  st.global.v2.u16 [%rd1+52], {%rs1, %rs2};
  ret;
}
)";
  kernelCase.kernel = "params_kernel";
  std::vector<uint8_t> blob(16);
  for (int i = 0; i < 16; ++i)
    blob[i] = static_cast<uint8_t>(0x10 + i);
  blob[5] = 0x85;
  kernelCase.arguments = {Argument::buffer({}, 14 * 4),
                          Argument::value<uint8_t>(0xfe),
                          Argument::value<uint16_t>(0xbeef),
                          Argument::value<uint32_t>(0xdeadbeef),
                          Argument::value<uint64_t>(0x0123456789abcdefull),
                          Argument::value<float>(1.5f),
                          Argument{false, blob, 0}};
  kernelCase.judge = [](const Buffers &buffers) {
    const std::vector<uint32_t> expected = {
        0xfe,       0xbeef,     0xdeadbeef, kSentinel32,
        0x89abcdef, 0x01234567, 0x3fc00000, kSentinel32,
        0x13121110, 0x17168514, 0x1b1a1918, 0x1f1e1d1c,
        0xffffff85, // ld.param.s8 of 0x85 sign-extends
        0x1f1e1d1c};
    return std::vector<Verdict>{
        compareWords("ld.param of .u8 .u16 .u32 .u64 .f32, .v4 .v2 and .s8",
                     wordsOf<uint32_t>(buffers.at(0)), expected)};
  };
  return {kernelCase};
}

// ld.global of each width: ld.s8/ld.s16 into a 32-bit register sign-extend,
// ld.u8/ld.u16 zero-extend (ld, Notes, as above); narrow stores write only
// their bytes (the rest of the word keeps the sentinel).
CaseList memoryGlobalLoadsAndStoresOfEveryWidthAndVector() {
  std::string ptx = inOutKernel(R"(
  .reg .b32 %r<16>;
  .reg .s32 %s<3>;
  .reg .b64 %rd<4>;
  .reg .f32 %f1;
  .reg .b16 %rs1;
)",
                                R"(
  mov.b32 %r1, 0x11;
  st.global.b8 [%outp], %r1;
  mov.b16 %rs1, 0x2222;
  st.global.b16 [%outp+4], %rs1;
  ld.global.u8 %r2, [%inp];
  st.global.u32 [%outp+8], %r2;
  ld.global.s8 %s1, [%inp];
  st.global.s32 [%outp+12], %s1;
  ld.global.u16 %r3, [%inp+2];
  st.global.u32 [%outp+16], %r3;
  ld.global.s16 %s2, [%inp+2];
  st.global.s32 [%outp+20], %s2;
  ld.global.b32 %r4, [%inp+4];
  st.global.b32 [%outp+24], %r4;
  ld.global.b64 %rd1, [%inp+8];
  st.global.b64 [%outp+32], %rd1;
  ld.global.f32 %f1, [%inp+16];
  st.global.f32 [%outp+40], %f1;
  ld.global.v2.b32 {%r5, %r6}, [%inp+24];
  st.global.v2.b32 [%outp+48], {%r5, %r6};
  ld.global.v4.b32 {%r7, %r8, %r9, %r10}, [%inp+32];
  st.global.v4.b32 [%outp+64], {%r7, %r8, %r9, %r10};
  ld.global.v2.b64 {%rd2, %rd3}, [%inp+48];
  st.global.v2.b64 [%outp+80], {%rd2, %rd3};
)");
  std::vector<uint32_t> input = {
      0x8001ff80, 0xcafef00d, 0x89abcdef, 0x01234567, 0x40490fdb, 0,
      0x11111111, 0x22222222, 0x33333333, 0x44444444, 0x55555555, 0x66666666,
      0x77777777, 0x88888888, 0x99999999, 0xaaaaaaaa};
  return {inOutCase<uint32_t>(
      ptx, input, 24, Shape{}, Shape{1, 1, 1},
      [](const std::vector<uint32_t> &got) {
        const uint32_t s = kSentinel32;
        const std::vector<uint32_t> expected = {
            0xa5a5a511, // st.b8 wrote one byte
            0xa5a52222, // st.b16 wrote two bytes
            0x80,       0xffffff80, 0x8001,     0xffff8001, 0xcafef00d,
            s,          0x89abcdef, 0x01234567, 0x40490fdb, s,
            0x11111111, 0x22222222, s,          s,          0x33333333,
            0x44444444, 0x55555555, 0x66666666, 0x77777777, 0x88888888,
            0x99999999, 0xaaaaaaaa};
        return std::vector<Verdict>{
            compareWords("ld/st.global of every width, .v2, .v4 and .v2.b64",
                         got, expected)};
      })};
}

// One thread's .shared accesses of each width over one 16-byte line; the
// last is ld.shared.s8, which sign-extends (ld, Notes).
CaseList memorySharedLoadsAndStoresOfEveryWidth() {
  std::string ptx = inOutKernel(R"(
  .reg .b32 %r<12>;
  .reg .b64 %rd<2>;
  .reg .b16 %rs1;
)",
                                R"(
  mov.b32 %r1, 0x03020100;
  mov.b32 %r2, 0x07060504;
  mov.b32 %r3, 0x0b0a0908;
  mov.b32 %r4, 0x0f0e0d0c;
  st.shared.v4.b32 [line], {%r1, %r2, %r3, %r4};
  mov.b32 %r5, 0xaa;
  st.shared.b8 [line+1], %r5;
  mov.b16 %rs1, 0xbbcc;
  st.shared.b16 [line+6], %rs1;
  mov.u32 %r6, line;
  ld.shared.b32 %r7, [%r6];
  st.global.b32 [%outp], %r7;
  ld.shared.u16 %r8, [%r6+2];
  st.global.b32 [%outp+4], %r8;
  ld.shared.b64 %rd1, [line+8];
  st.global.b64 [%outp+8], %rd1;
  ld.shared.v2.b32 {%r9, %r10}, [line];
  st.global.v2.b32 [%outp+16], {%r9, %r10};
  ld.shared.s8 %r11, [line+1];
  st.global.b32 [%outp+24], %r11;
)",
                                ".shared .align 16 .b8 line[16];\n\n");
  return {inOutCase<uint32_t>(
      ptx, {}, 7, Shape{}, Shape{1, 1, 1},
      [](const std::vector<uint32_t> &got) {
        const std::vector<uint32_t> expected = {
            0x0302aa00, 0x0302,     0x0b0a0908, 0x0f0e0d0c,
            0x0302aa00, 0xbbcc0504, 0xffffffaa};
        return std::vector<Verdict>{
            compareWords("ld/st.shared of .b8 .b16 .b32 .b64 .v2 .v4 and .s8",
                         got, expected)};
      })};
}

// bar.sync: "all prior memory accesses requested by the threads are performed
// relative to all threads participating in the barrier", so a word stored by
// a thread of the other warp before bar.sync is read back after it.
CaseList memorySharedStoreIsSeenByAnotherWarpAfterBarSync() {
  std::string ptx = inOutKernel(R"(
  .reg .b32 %r<8>;
  .reg .b64 %rd1;
)",
                                R"(
  mad.lo.u32 %r1, %t, 7, 1;
  shl.b32 %r2, %t, 2;
  mov.u32 %r3, words;
  add.u32 %r4, %r3, %r2;
  st.shared.u32 [%r4], %r1;
  bar.sync 0;
  add.u32 %r5, %t, 33;
  and.b32 %r5, %r5, 63;
  shl.b32 %r5, %r5, 2;
  add.u32 %r5, %r3, %r5;
  ld.shared.u32 %r6, [%r5];
  mul.wide.u32 %rd1, %t, 4;
  add.s64 %rd1, %outp, %rd1;
  st.global.u32 [%rd1], %r6;
)",
                                ".shared .align 4 .b32 words[64];\n\n");
  return {inOutCase<uint32_t>(ptx, {}, 64, Shape{}, Shape{64, 1, 1},
                              [](const std::vector<uint32_t> &got) {
                                std::vector<uint32_t> expected(64);
                                for (uint32_t t = 0; t < 64; ++t)
                                  expected[t] = ((t + 33) % 64) * 7 + 1;
                                return std::vector<Verdict>{compareWords(
                                    "thread t reads the word thread t + 33 "
                                    "stored before bar.sync",
                                    got, expected)};
                              })};
}

// atom: "Atomically loads the original value at location a into destination
// register d, performs a reduction operation with operand b and the value in
// location a, and stores the result". Every partial sum below is exact (whole
// multiples of 1/4 under 2^22), so the float totals do not depend on order.
CaseList memoryAtomicsFromManyThreadsOfManyCtasCombineExactly() {
  constexpr unsigned ctas = 4, threads = 64, total = ctas * threads;
  KernelCase kernelCase;
  kernelCase.ptx = ptxHeader() + R"(
.visible .entry atomics(.param .u64 acc_param, .param .u64 olds_param)
{
  .reg .b64 %acc, %olds, %rd<3>;
  .reg .b32 %r<12>;
  .reg .f32 %f<3>;
  .reg .f64 %fd<3>;
  ld.param.u64 %acc, [acc_param];
  ld.param.u64 %olds, [olds_param];
  cvta.to.global.u64 %acc, %acc;
  cvta.to.global.u64 %olds, %olds;
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mad.lo.u32 %r4, %r2, %r3, %r1;
  add.u32 %r5, %r1, 1;
  atom.global.add.u32 %r6, [%acc], %r5;
  cvt.rn.f32.u32 %f1, %r5;
  mul.rn.f32 %f1, %f1, 0f3E800000;
  atom.global.add.f32 %f2, [%acc+4], %f1;
  cvt.rn.f64.u32 %fd1, %r5;
  mul.rn.f64 %fd1, %fd1, 0d3FE0000000000000;
  atom.global.add.f64 %fd2, [%acc+8], %fd1;
  atom.global.add.u32 %r7, [%acc+16], 1;
  mul.wide.u32 %rd1, %r4, 4;
  add.s64 %rd2, %olds, %rd1;
  st.global.u32 [%rd2], %r7;
  mul.lo.u32 %r8, %r1, 3;
  atom.global.max.u32 %r9, [%acc+20], %r8;
  add.u32 %r10, %r4, 1;
  atom.global.cas.b32 %r11, [%acc+24], 0, %r10;
  st.global.u32 [%rd2+1024], %r11;
  ret;
}
)";
  kernelCase.kernel = "atomics";
  kernelCase.grid = {ctas, 1, 1};
  kernelCase.block = {threads, 1, 1};
  kernelCase.arguments = {Argument::buffer(std::vector<uint8_t>(32, 0), 32),
                          Argument::buffer({}, 2 * 1024)};
  kernelCase.judge = [](const Buffers &buffers) {
    std::vector<uint32_t> sums = wordsOf<uint32_t>(buffers.at(0));
    std::vector<uint32_t> returned = wordsOf<uint32_t>(buffers.at(1));
    sums.resize(8, kSentinel32);
    returned.resize(2 * total, kSentinel32);
    std::vector<Verdict> verdicts;
    // 4 CTAs * (1 + 2 + ... + 64) = 4 * 2080.
    verdicts.push_back(compareBits("atom.add.u32 total", sums[0], 8320));
    verdicts.push_back(
        compareBits("atom.add.f32 total", sums[1], bitsOf(2080.0f)));
    verdicts.push_back(compareBits("atom.add.f64 total",
                                   sums[2] | uint64_t(sums[3]) << 32,
                                   bitsOf(4160.0)));
    verdicts.push_back(compareBits("the counter", sums[4], total));
    verdicts.push_back(compareBits("atom.max.u32", sums[5], 63u * 3));
    // The old values the counter's atom.add returned are 0..total-1, each
    // once.
    std::vector<uint32_t> counterOlds(returned.begin(),
                                      returned.begin() + total);
    std::sort(counterOlds.begin(), counterOlds.end());
    std::vector<uint32_t> everyCount(total);
    for (uint32_t i = 0; i < total; ++i)
      everyCount[i] = i;
    verdicts.push_back(
        compareWords("sorted old values of the counter's atom.add.u32",
                     counterOlds, everyCount));
    // atom.cas(0 -> id + 1): exactly one thread saw 0 and won; all others
    // saw the winner's value, which is what the word holds.
    unsigned winners = 0;
    Verdict agree{"atom.cas: the winner's id + 1 is in the word and every "
                  "loser saw it",
                  true, "", ""};
    for (uint32_t i = 0; i < total; ++i) {
      uint32_t old = returned[256 + i];
      uint32_t expected = old == 0 ? i + 1 : old;
      winners += old == 0;
      if (sums[6] != expected && agree.passed) {
        agree.passed = false;
        agree.got = "word " + hex(sums[6]) + ", thread " + std::to_string(i) +
                    " saw " + hex(old);
        agree.expected = "word " + hex(expected);
      }
    }
    verdicts.push_back(agree);
    verdicts.push_back(
        compareBits("atom.cas: threads whose cas saw 0", winners, 1));
    return verdicts;
  };
  return {kernelCase};
}

// cp.async: "Writes performed by cp.async operations are made visible to the
// executing thread only after ... the completion of cp.async.wait_group on
// the cp.async-group in which the cp.async belongs"; wait_group N waits
// "till only N or fewer of the most recent cp.async-groups are pending". So
// after wait_group 1 the first group's copy is readable; after wait_group 0,
// the second's; a neighbour's copy is read after bar.sync.
CaseList memoryCpAsyncCopiesOf4And8And16BytesLandByGroup() {
  std::string ptx = inOutKernel(R"(
  .reg .b32 %r<16>;
  .reg .b64 %rd<8>;
)",
                                R"(
  shl.b32 %r1, %t, 2;
  shl.b32 %r2, %t, 3;
  shl.b32 %r3, %t, 4;
  mov.u32 %r4, sa;
  add.u32 %r4, %r4, %r1;
  mov.u32 %r5, sb;
  add.u32 %r5, %r5, %r2;
  mov.u32 %r6, sc;
  add.u32 %r6, %r6, %r3;
  cvt.u64.u32 %rd1, %r1;
  add.s64 %rd1, %inp, %rd1;
  cvt.u64.u32 %rd2, %r2;
  add.s64 %rd2, %inp, %rd2;
  cvt.u64.u32 %rd3, %r3;
  add.s64 %rd3, %inp, %rd3;
  cp.async.ca.shared.global [%r4], [%rd1], 4;
  cp.async.commit_group;
  cp.async.ca.shared.global [%r5], [%rd2+128], 8;
  cp.async.ca.shared.global [%r6], [%rd3+384], 16;
  cp.async.commit_group;
  cp.async.wait_group 1;
  ld.shared.u32 %r7, [%r4];
  cp.async.wait_group 0;
  ld.shared.v2.u32 {%r8, %r9}, [%r5];
  ld.shared.v4.u32 {%r10, %r11, %r12, %r13}, [%r6];
  cvt.u64.u32 %rd4, %r1;
  add.s64 %rd4, %outp, %rd4;
  st.global.u32 [%rd4], %r7;
  cvt.u64.u32 %rd5, %r2;
  add.s64 %rd5, %outp, %rd5;
  st.global.v2.u32 [%rd5+128], {%r8, %r9};
  cvt.u64.u32 %rd6, %r3;
  add.s64 %rd6, %outp, %rd6;
  st.global.v4.u32 [%rd6+384], {%r10, %r11, %r12, %r13};
  bar.sync 0;
  add.u32 %r14, %t, 1;
  and.b32 %r14, %r14, 31;
  shl.b32 %r14, %r14, 2;
  mov.u32 %r15, sa;
  add.u32 %r15, %r15, %r14;
  ld.shared.u32 %r15, [%r15];
  st.global.u32 [%rd4+896], %r15;
)",
                                ".shared .align 16 .b8 sa[128];\n"
                                ".shared .align 16 .b8 sb[256];\n"
                                ".shared .align 16 .b8 sc[512];\n\n");
  std::vector<uint32_t> input(224);
  for (uint32_t i = 0; i < input.size(); ++i)
    input[i] = 0x1000 + 7 * i;
  return {inOutCase<uint32_t>(
      ptx, input, 256, Shape{}, Shape{32, 1, 1},
      [input](const std::vector<uint32_t> &got) {
        std::vector<uint32_t> copied(
            got.begin(), got.begin() + std::min<size_t>(got.size(), 224));
        std::vector<uint32_t> neighbours, expectedNeighbours;
        for (uint32_t t = 0; t < 32; ++t) {
          neighbours.push_back(224 + t < got.size() ? got[224 + t]
                                                    : kSentinel32);
          expectedNeighbours.push_back(input[(t + 1) % 32]);
        }
        return std::vector<Verdict>{
            compareWords("cp.async of 4, 8 and 16 bytes, read after the "
                         "wait_group of their group",
                         copied, input),
            compareWords("the neighbour's 4-byte copy, read after bar.sync",
                         neighbours, expectedNeighbours)};
      })};
}

} // namespace fwp::conformance
