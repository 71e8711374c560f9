//===- EmulatorErrorTest.cpp - What the emulator refuses and reports ------===//
//
// Programs the emulator must not run quietly: text that does not parse, an
// instruction it does not know, accesses out of bounds or misaligned ("all
// PTX instructions that access memory require that the address be aligned to
// a multiple of the access size", PTX ISA "Alignment"), reads of memory no
// one wrote, and the data races its checks look for: two threads of a CTA
// storing one shared word with no bar.sync between, a cp.async destination
// read before cp.async.wait_group, two CTAs storing one global word. Each
// report must say where: the kernel, and for faults the PTX line. Each race
// test has a twin that differs only in the synchronization and runs cleanly.
//
//===----------------------------------------------------------------------===//

#include "EmulatorTestUtils.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <regex>

using namespace fwp::emu::test;
using fwp::emu::Dim3;
using fwp::emu::LaunchError;

namespace {

/// The 1-based line of `ptx` holding `needle`, 0 if none.
int lineOf(const std::string &ptx, const std::string &needle) {
  size_t at = ptx.find(needle);
  if (at == std::string::npos)
    return 0;
  return 1 + static_cast<int>(std::count(ptx.begin(), ptx.begin() + at, '\n'));
}

bool mentionsLine(const std::string &text, int line) {
  return std::regex_search(
      text, std::regex("(^|[^0-9])" + std::to_string(line) + "([^0-9]|$)"));
}

std::string lowered(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return text;
}

/// A kernel `name(.param .u64 in, .param .u64 out)` with `body` after the
/// prologue of inOutKernel, renamed.
std::string namedKernel(const std::string &name, const std::string &decls,
                        const std::string &body,
                        const std::string &preamble = "") {
  std::string ptx = inOutKernel(decls, body, preamble);
  ptx.replace(ptx.find("test_kernel"), 11, name);
  return ptx;
}

/// Launches `name` from `ptx` with a 64-byte written input and a 64-byte
/// output.
LaunchOutcome launchWithBuffers(const std::string &ptx, const std::string &name,
                                Dim3 grid, Dim3 block, bool writeInput = true,
                                bool checks = true) {
  fwp::emu::DeviceMemory memory;
  uint64_t in = memory.allocate(64), out = memory.allocate(64);
  if (writeInput)
    memory.fill(in, 0, 64);
  memory.fill(out, 0, 64);
  fwp::emu::LaunchOptions options;
  options.checks = checks;
  return launchPtx(ptx, name, grid, block, {in, out}, memory, options);
}

/// Launches `name` from `ptx`, which must load and run without a finding.
void expectRunsClean(const std::string &ptx, const std::string &name, Dim3 grid,
                     Dim3 block) {
  EXPECT_TRUE(
      expectCleanLaunch(launchWithBuffers(ptx, name, grid, block), ptx));
}

/// Launches `name` from `ptx` (loading), which must end in a fault whose
/// report contains `what`.
void expectReported(const std::string &ptx, const std::string &name, Dim3 grid,
                    Dim3 block, const std::string &what) {
  LaunchOutcome outcome = launchWithBuffers(ptx, name, grid, block);
  ASSERT_TRUE(outcome.loaded) << outcome.loadError;
  EXPECT_NE(outcome.result.error, LaunchError::None)
      << name << " ran without a report";
  EXPECT_NE(outcome.result.report.find(what), std::string::npos)
      << outcome.result.report;
}

TEST(EmulatorErrors, UnknownInstructionIsRefusedNamingItAndTheKernel) {
  std::string ptx = namedKernel("kernel_with_bad_opcode", "  .reg .b32 %r1;\n",
                                "  mov.u32 %r1, 1;\n"
                                "  frobnicate.b32 %r1, %r1;\n");
  LaunchOutcome outcome =
      launchWithBuffers(ptx, "kernel_with_bad_opcode", Dim3{1}, Dim3{32});
  std::string message =
      outcome.loaded ? outcome.result.report : outcome.loadError;
  EXPECT_TRUE(!outcome.loaded || outcome.result.error != LaunchError::None)
      << "a kernel with an unknown instruction ran";
  EXPECT_NE(message.find("frobnicate"), std::string::npos) << message;
  EXPECT_NE(message.find("kernel_with_bad_opcode"), std::string::npos)
      << message;
}

TEST(EmulatorErrors, MalformedPtxFailsToParseNamingTheLine) {
  std::string ptx = namedKernel("malformed", "  .reg .b32 %r1;\n",
                                "  ld.global.u32 %r1, [%inp;\n"
                                "  st.global.u32 [%outp], %r1;\n");
  int line = lineOf(ptx, "[%inp;");
  ASSERT_GT(line, 0);
  std::string error;
  EXPECT_FALSE(fwp::emu::parsePtx(ptx, error)) << "unbalanced [ parsed";
  EXPECT_NE(error.find("line " + std::to_string(line)), std::string::npos)
      << "the error should name line " << line << ": " << error;
}

// Line information's DWARF sections (Triton's PTX carries them unless told
// not to) are skipped like .file and .loc; one left open is an error.
TEST(EmulatorErrors, DebugSectionsAreSkippedAndAnUnterminatedOneIsRefused) {
  const char *section = "\n.section .debug_abbrev\n{\n.b8 1\n.b8 17\n}\n"
                        ".section .debug_info\n{\n.b32 66\n.b8 2, 0\n}\n";
  std::string ptx = namedKernel("with_debug_sections", "  .reg .b32 %r1;\n",
                                "  mov.u32 %r1, 7;\n"
                                "  st.global.u32 [%outp], %r1;\n") +
                    section;
  LaunchOutcome outcome =
      launchWithBuffers(ptx, "with_debug_sections", Dim3{1}, Dim3{1});
  EXPECT_TRUE(expectCleanLaunch(outcome, ptx));
  std::string open = ptx.substr(0, ptx.rfind('}'));
  std::string error;
  EXPECT_FALSE(fwp::emu::parsePtx(open, error)) << "an open .section parsed";
  EXPECT_NE(error.find("unterminated .section"), std::string::npos) << error;
}

TEST(EmulatorErrors, UndeclaredRegisterFailsToParseNamingTheLine) {
  std::string ptx = namedKernel("undeclared", "  .reg .b32 %r1;\n",
                                "  add.u32 %r1, %r77, 1;\n"
                                "  st.global.u32 [%outp], %r1;\n");
  int line = lineOf(ptx, "%r77");
  std::string error;
  EXPECT_FALSE(fwp::emu::parsePtx(ptx, error)) << "%r77 is not declared";
  EXPECT_NE(error.find("line " + std::to_string(line)), std::string::npos)
      << error;
}

TEST(EmulatorErrors, OutOfBoundsGlobalLoadIsAnIllegalAddressAtItsLine) {
  std::string ptx = namedKernel("reads_past_the_end", "  .reg .b32 %r1;\n",
                                "  ld.global.u32 %r1, [%inp+1048576];\n"
                                "  st.global.u32 [%outp], %r1;\n");
  int line = lineOf(ptx, "[%inp+1048576]");
  LaunchOutcome outcome =
      launchWithBuffers(ptx, "reads_past_the_end", Dim3{1}, Dim3{32});
  ASSERT_TRUE(outcome.loaded) << outcome.loadError;
  EXPECT_EQ(outcome.result.error, LaunchError::IllegalAddress)
      << outcome.result.report;
  EXPECT_NE(outcome.result.report.find("reads_past_the_end"), std::string::npos)
      << outcome.result.report;
  EXPECT_TRUE(mentionsLine(outcome.result.report, line))
      << "the report should name PTX line " << line << ": "
      << outcome.result.report;
}

TEST(EmulatorErrors, MisalignedGlobalLoadIsAMisalignedAddress) {
  std::string ptx = namedKernel("misaligned_load", "  .reg .b32 %r1;\n",
                                "  ld.global.u32 %r1, [%inp+2];\n"
                                "  st.global.u32 [%outp], %r1;\n");
  LaunchOutcome outcome =
      launchWithBuffers(ptx, "misaligned_load", Dim3{1}, Dim3{1});
  ASSERT_TRUE(outcome.loaded) << outcome.loadError;
  EXPECT_EQ(outcome.result.error, LaunchError::MisalignedAddress)
      << outcome.result.report;
  EXPECT_NE(outcome.result.report.find("misaligned_load"), std::string::npos)
      << outcome.result.report;
}

TEST(EmulatorErrors, ReadingGlobalMemoryNeverWrittenFailsTheLaunch) {
  std::string ptx = namedKernel("reads_unwritten", "  .reg .b32 %r1;\n",
                                "  ld.global.u32 %r1, [%inp+8];\n"
                                "  st.global.u32 [%outp], %r1;\n");
  LaunchOutcome outcome = launchWithBuffers(ptx, "reads_unwritten", Dim3{1},
                                            Dim3{1}, /*writeInput=*/false);
  ASSERT_TRUE(outcome.loaded) << outcome.loadError;
  EXPECT_NE(outcome.result.error, LaunchError::None)
      << "a read of never-written memory passed";
  EXPECT_NE(outcome.result.report.find("reads_unwritten"), std::string::npos)
      << outcome.result.report;
  EXPECT_TRUE(std::regex_search(lowered(outcome.result.report),
                                std::regex("written|initiali[sz]ed")))
      << outcome.result.report;
  // The same load of written memory is fine.
  outcome = launchWithBuffers(ptx, "reads_unwritten", Dim3{1}, Dim3{1});
  EXPECT_TRUE(expectCleanLaunch(outcome, ptx));
}

// Threads 0 and 32 (two warps) store one shared word. Without a bar.sync
// between the stores their order is undefined: a race the checks report.
TEST(EmulatorErrors, SharedStoresFromTwoWarpsWithoutBarSyncAreARace) {
  const char *decls = "  .reg .pred %p<3>;\n  .reg .b32 %r1;\n";
  const char *shared = ".shared .align 4 .b32 word;\n\n";
  std::string racy = namedKernel("shared_race", decls, R"(
  setp.eq.u32 %p1, %t, 0;
  setp.eq.u32 %p2, %t, 32;
  or.pred %p0, %p1, %p2;
  @%p0 st.shared.u32 [word], %t;
  bar.sync 0;
  ld.shared.u32 %r1, [word];
  @%p1 st.global.u32 [%outp], %r1;
)",
                                 shared);
  LaunchOutcome outcome =
      launchWithBuffers(racy, "shared_race", Dim3{1}, Dim3{64});
  ASSERT_TRUE(outcome.loaded) << outcome.loadError;
  EXPECT_NE(outcome.result.error, LaunchError::None)
      << "the shared-memory race went unreported";
  EXPECT_NE(outcome.result.report.find("shared_race"), std::string::npos)
      << outcome.result.report;
  // Without the checks the same launch runs.
  outcome = launchWithBuffers(racy, "shared_race", Dim3{1}, Dim3{64}, true,
                              /*checks=*/false);
  EXPECT_TRUE(expectCleanLaunch(outcome, racy));
  // A bar.sync between the two stores orders them: no race.
  std::string ordered = namedKernel("shared_ordered", decls, R"(
  setp.eq.u32 %p1, %t, 0;
  setp.eq.u32 %p2, %t, 32;
  @%p1 st.shared.u32 [word], %t;
  bar.sync 0;
  @%p2 st.shared.u32 [word], %t;
  bar.sync 0;
  ld.shared.u32 %r1, [word];
  @%p1 st.global.u32 [%outp], %r1;
)",
                                    shared);
  outcome = launchWithBuffers(ordered, "shared_ordered", Dim3{1}, Dim3{64});
  EXPECT_TRUE(expectCleanLaunch(outcome, ordered));
}

// cp.async writes become visible to the thread "only after" the wait on its
// group (Data Movement and Conversion Instructions: cp.async.wait_group).
TEST(EmulatorErrors, ReadingACpAsyncDestinationBeforeTheWaitIsReported) {
  const char *decls = "  .reg .b32 %r<4>;\n  .reg .b64 %rd<3>;\n";
  const char *shared = ".shared .align 16 .b8 staging[128];\n\n";
  auto kernel = [&](const std::string &name, bool readFirst) {
    std::string read = "  ld.shared.u32 %r3, [%r1];\n";
    return namedKernel(name, decls,
                       std::string(R"(
  shl.b32 %r2, %t, 2;
  mov.u32 %r1, staging;
  add.u32 %r1, %r1, %r2;
  mul.wide.u32 %rd0, %t, 4;
  add.s64 %rd1, %inp, %rd0;
  add.s64 %rd2, %outp, %rd0;
  cp.async.ca.shared.global [%r1], [%rd1], 4;
  cp.async.commit_group;
)") + (readFirst ? read : "") +
                           "  cp.async.wait_group 0;\n" +
                           (readFirst ? "" : read) +
                           "  st.global.u32 [%rd2], %r3;\n",
                       shared);
  };
  std::string early = kernel("reads_before_wait", true);
  LaunchOutcome outcome =
      launchWithBuffers(early, "reads_before_wait", Dim3{1}, Dim3{16});
  ASSERT_TRUE(outcome.loaded) << outcome.loadError;
  EXPECT_NE(outcome.result.error, LaunchError::None)
      << "reading a cp.async destination before the wait went unreported";
  EXPECT_NE(outcome.result.report.find("reads_before_wait"), std::string::npos)
      << outcome.result.report;
  std::string late = kernel("reads_after_wait", false);
  outcome = launchWithBuffers(late, "reads_after_wait", Dim3{1}, Dim3{16});
  EXPECT_TRUE(expectCleanLaunch(outcome, late));
}

// A copy committed but never waited for has no defined result when its
// thread exits (cp.async.wait_group: the copies of a group complete only at
// the wait).
TEST(EmulatorErrors, ExitingWithACpAsyncPendingIsReported) {
  const char *decls = "  .reg .b32 %r<3>;\n  .reg .b64 %rd<2>;\n";
  const char *shared = ".shared .align 16 .b8 staging[128];\n\n";
  std::string ptx = namedKernel("exits_pending", decls, R"(
  shl.b32 %r2, %t, 2;
  mov.u32 %r1, staging;
  add.u32 %r1, %r1, %r2;
  mul.wide.u32 %rd0, %t, 4;
  add.s64 %rd1, %inp, %rd0;
  cp.async.ca.shared.global [%r1], [%rd1], 4;
  cp.async.commit_group;
)",
                                shared);
  LaunchOutcome outcome =
      launchWithBuffers(ptx, "exits_pending", Dim3{1}, Dim3{16});
  ASSERT_TRUE(outcome.loaded) << outcome.loadError;
  EXPECT_NE(outcome.result.error, LaunchError::None);
  EXPECT_NE(outcome.result.report.find("never waited for"), std::string::npos)
      << outcome.result.report;
}

// Threads storing the two halves of one word (16-bit stores side by side,
// as bf16 outputs are written) touch different bytes: no race.
TEST(EmulatorErrors, HalvesOfAWordStoredByTwoThreadsAreNoRace) {
  const char *decls = "  .reg .b64 %rd1;\n  .reg .b16 %h1;\n";
  std::string ptx = namedKernel("halves", decls, R"(
  mul.wide.u32 %rd1, %t, 2;
  add.s64 %rd1, %outp, %rd1;
  cvt.u16.u32 %h1, %t;
  st.global.u16 [%rd1], %h1;
)");
  LaunchOutcome outcome = launchWithBuffers(ptx, "halves", Dim3{1}, Dim3{32});
  EXPECT_TRUE(expectCleanLaunch(outcome, ptx));
}

// Two CTAs storing one global word with plain st.global: nothing orders them.
TEST(EmulatorErrors, TwoCtasStoringTheSameGlobalWordAreReported) {
  const char *decls = "  .reg .pred %p1;\n  .reg .b32 %r1;\n"
                      "  .reg .b64 %rd1;\n";
  auto kernel = [&](const std::string &name, bool sameWord) {
    return namedKernel(name, decls,
                       std::string(R"(
  mov.u32 %r1, %ctaid.x;
  setp.eq.u32 %p1, %t, 0;
  mul.wide.u32 %rd1, %r1, )") +
                           (sameWord ? "0" : "4") + R"(;
  add.s64 %rd1, %outp, %rd1;
  @%p1 st.global.u32 [%rd1], %r1;
)");
  };
  std::string racy = kernel("ctas_share_a_word", true);
  LaunchOutcome outcome =
      launchWithBuffers(racy, "ctas_share_a_word", Dim3{2}, Dim3{32});
  ASSERT_TRUE(outcome.loaded) << outcome.loadError;
  EXPECT_NE(outcome.result.error, LaunchError::None)
      << "two CTAs storing one word went unreported";
  EXPECT_NE(outcome.result.report.find("ctas_share_a_word"), std::string::npos)
      << outcome.result.report;
  std::string apart = kernel("ctas_own_words", false);
  outcome = launchWithBuffers(apart, "ctas_own_words", Dim3{2}, Dim3{32});
  EXPECT_TRUE(expectCleanLaunch(outcome, apart));
}

// Two CTAs storing the two halves of one word (a bf16 output per CTA, side
// by side) write different bytes, which the PTX memory model does not count
// as a conflict; storing the same half is one.
TEST(EmulatorErrors, TwoCtasStoringHalvesOfAWordAreNoConflict) {
  const char *decls = "  .reg .pred %p1;\n  .reg .b32 %r1;\n"
                      "  .reg .b64 %rd1;\n  .reg .b16 %h1;\n";
  auto kernel = [&](const std::string &name, const char *stride) {
    return namedKernel(name, decls, std::string(R"(
  mov.u32 %r1, %ctaid.x;
  setp.eq.u32 %p1, %t, 0;
  mul.wide.u32 %rd1, %r1, )") + stride + R"(;
  add.s64 %rd1, %outp, %rd1;
  cvt.u16.u32 %h1, %r1;
  @%p1 st.global.u16 [%rd1], %h1;
)");
  };
  expectRunsClean(kernel("ctas_store_halves", "2"), "ctas_store_halves",
                  Dim3{2}, Dim3{32});
  expectReported(kernel("ctas_store_one_half", "0"), "ctas_store_one_half",
                 Dim3{2}, Dim3{32}, "written by two CTAs");
}

// shfl.sync where the ISA leaves the result undefined: a value taken from
// a lane that does not execute the shuffle (its a is "unpredictable"), and
// a thread that is not in its own membermask.
TEST(EmulatorErrors, ShflFromALaneThatDoesNotExecuteItIsReported) {
  const char *decls = "  .reg .pred %p1;\n  .reg .b32 %r<3>;\n";
  auto kernel = [&](const std::string &name, const char *shuffle) {
    return namedKernel(name, decls, std::string(R"(
  setp.eq.u32 %p1, %t, 0;
  mov.u32 %r1, %t;
)") + shuffle + R"(
  @%p1 st.global.u32 [%outp], %r2;
)");
  };
  expectReported(kernel("shfl_from_inactive",
                        "  @%p1 shfl.sync.idx.b32 %r2, %r1, 5, 31, 1;"),
                 "shfl_from_inactive", Dim3{1}, Dim3{32}, "from lane 5");
  expectReported(kernel("shfl_outside_membermask",
                        "  shfl.sync.idx.b32 %r2, %r1, 1, 31, 2;"),
                 "shfl_outside_membermask", Dim3{1}, Dim3{32},
                 "not in its membermask");
}

// Lanes that hold copies of one element (Triton's layouts replicate them)
// store it alike, with no barrier between: the same bytes of the same value,
// no race. Different values are one.
TEST(EmulatorErrors, SharedStoresOfTheSameValueByTwoThreadsAreNoRace) {
  const char *decls = "  .reg .pred %p1;\n  .reg .b32 %r<3>;\n"
                      "  .reg .u32 %s;\n";
  const char *shared = ".shared .align 16 .b8 copies[64];\n";
  auto kernel = [&](const std::string &name, const char *value) {
    return namedKernel(name, decls, std::string(R"(
  mov.u32 %s, copies;
  setp.lt.u32 %p1, %t, 2;
  )") + value + R"(
  mov.u32 %r2, 9;
  @%p1 st.shared.v2.b32 [%s], {%r1, %r2};
  bar.sync 0;
  ld.shared.u32 %r1, [%s];
  st.global.u32 [%outp], %r1;
)",
                       shared);
  };
  expectRunsClean(kernel("copies_alike", "mov.u32 %r1, 5;"), "copies_alike",
                  Dim3{1}, Dim3{32});
  expectReported(kernel("copies_differ", "mov.u32 %r1, %t;"), "copies_differ",
                 Dim3{1}, Dim3{32}, "shared-memory race");
}

// Global memory has the same hazard within a CTA: one thread stores a word
// that another thread of the CTA (here of the same warp: Volta's threads
// need not run in lockstep) loads with no barrier between.
TEST(EmulatorErrors, GlobalStoreAndLoadByTwoThreadsWithoutBarSyncAreARace) {
  const char *decls = "  .reg .pred %p<3>;\n  .reg .b32 %r1;\n";
  auto kernel = [&](const std::string &name, const std::string &between) {
    return namedKernel(name, decls, R"(
  setp.eq.u32 %p1, %t, 0;
  setp.eq.u32 %p2, %t, 1;
  @%p1 st.global.u32 [%outp], %t;
)" + between + R"(
  @%p2 ld.global.u32 %r1, [%outp];
  @%p2 st.global.u32 [%outp+4], %r1;
)");
  };
  std::string racy = kernel("global_race", "");
  LaunchOutcome outcome =
      launchWithBuffers(racy, "global_race", Dim3{1}, Dim3{32});
  ASSERT_TRUE(outcome.loaded) << outcome.loadError;
  EXPECT_NE(outcome.result.error, LaunchError::None)
      << "the global-memory race went unreported";
  EXPECT_NE(outcome.result.report.find("global-memory race"), std::string::npos)
      << outcome.result.report;
  std::string ordered = kernel("global_ordered", "  bar.sync 0;\n");
  outcome = launchWithBuffers(ordered, "global_ordered", Dim3{1}, Dim3{32});
  EXPECT_TRUE(expectCleanLaunch(outcome, ordered));
}

} // namespace
