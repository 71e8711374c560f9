//===- EmulatorTestUtils.h - Small PTX kernels run on the emulator -*- C++
//-*-===//
//
// Helpers of the emulator's per-instruction tests: build a PTX module around
// a few instructions, run it on fresh emulated device memory and read the
// results back. A launch or parse failure fails the calling test with the
// emulator's own report, and the helpers then return sentinel-filled results
// so that the caller's expectations fail too instead of reading garbage.
//
// The expected values the tests compare against are worked out by hand from
// NVIDIA's PTX ISA document (each test cites the section); nothing here
// computes an expectation.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_TEST_UNIT_EMULATORTESTUTILS_H
#define FWP_TEST_UNIT_EMULATORTESTUTILS_H

#include "fwp/Emulator/Launch.h"
#include "fwp/Emulator/Memory.h"
#include "fwp/Emulator/Ptx.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace fwp::emu::test {

/// The byte output buffers are filled with before a launch: a result word the
/// kernel never stored reads back as 0xa5a5..., which no test expects.
constexpr uint8_t kSentinelByte = 0xa5;
constexpr uint32_t kSentinel32 = 0xa5a5a5a5u;
constexpr uint64_t kSentinel64 = 0xa5a5a5a5a5a5a5a5ull;

/// The module header every test kernel uses.
inline std::string ptxHeader() {
  return ".version 8.0\n.target sm_90\n.address_size 64\n\n";
}

inline uint32_t bitsOf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}
inline uint64_t bitsOf(double value) {
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}
inline float floatOf(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}
inline double doubleOf(uint64_t bits) {
  double value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}
inline bool isNanF32(uint32_t bits) {
  return (bits & 0x7f800000u) == 0x7f800000u && (bits & 0x007fffffu) != 0;
}
inline bool isNanF16(uint32_t bits) {
  return (bits & 0x7c00u) == 0x7c00u && (bits & 0x03ffu) != 0;
}
inline bool isNanBf16(uint32_t bits) {
  return (bits & 0x7f80u) == 0x7f80u && (bits & 0x007fu) != 0;
}

/// How many f32 values lie between `a` and `b` (0 when equal, 1 for
/// neighbours; +0 and -0 count as equal). Both must be non-NaN.
inline int64_t ulpDistance(float a, float b) {
  auto ordered = [](float value) {
    int64_t bits = bitsOf(value);
    return bits & 0x80000000 ? -(bits & 0x7fffffff) : bits;
  };
  int64_t distance = ordered(a) - ordered(b);
  return distance < 0 ? -distance : distance;
}

/// What a launch came to: whether the text parsed (and the kernel exists),
/// and the emulator's result when it did.
struct LaunchOutcome {
  bool loaded = false;
  std::string loadError; // parse error or "no kernel named ..."
  LaunchResult result;
};

/// Parses `ptx` and launches `kernelName` with all-.u64 parameters (device
/// pointers or plain values), cuLaunchKernel style.
inline LaunchOutcome
launchPtx(const std::string &ptx, const std::string &kernelName, Dim3 grid,
          Dim3 block, std::vector<uint64_t> parameters, DeviceMemory &memory,
          LaunchOptions options = LaunchOptions{}, unsigned dynamicShared = 0) {
  LaunchOutcome outcome;
  std::unique_ptr<Module> module = parsePtx(ptx, outcome.loadError);
  if (!module)
    return outcome;
  const Kernel *kernel = module->kernel(kernelName);
  if (!kernel) {
    outcome.loadError = "no kernel named " + kernelName;
    return outcome;
  }
  outcome.loaded = true;
  std::vector<void *> pointers;
  for (uint64_t &parameter : parameters)
    pointers.push_back(&parameter);
  outcome.result = launch(*kernel, grid, block, dynamicShared, pointers.data(),
                          memory, Chip::forSm(90), options);
  return outcome;
}

/// Adds a test failure describing `outcome` unless it loaded and ran cleanly;
/// true when it did.
inline bool expectCleanLaunch(const LaunchOutcome &outcome,
                              const std::string &ptx) {
  if (!outcome.loaded) {
    ADD_FAILURE() << "the PTX did not load: " << outcome.loadError
                  << "\n--- PTX ---\n"
                  << ptx;
    return false;
  }
  if (outcome.result.error != LaunchError::None) {
    ADD_FAILURE() << "the launch failed (error "
                  << static_cast<int>(outcome.result.error)
                  << "): " << outcome.result.report << "\n--- PTX ---\n"
                  << ptx;
    return false;
  }
  return true;
}

struct LaunchShape {
  Dim3 grid{1, 1, 1};
  Dim3 block{32, 1, 1};
};

/// Runs `kernelName(.param .u64 in, .param .u64 out)` with `in` holding
/// `input` and `out` (`outputWords` words, sentinel-filled) read back after.
template <typename Word>
std::vector<Word> runInOut(const std::string &ptx,
                           const std::vector<Word> &input, size_t outputWords,
                           LaunchShape shape,
                           const std::string &kernelName = "test_kernel",
                           LaunchOptions options = LaunchOptions{}) {
  DeviceMemory memory;
  size_t inputBytes = input.size() * sizeof(Word);
  size_t outputBytes = outputWords * sizeof(Word);
  uint64_t in = memory.allocate(inputBytes ? inputBytes : sizeof(Word));
  uint64_t out = memory.allocate(outputBytes ? outputBytes : sizeof(Word));
  std::vector<Word> output(outputWords);
  std::memset(output.data(), kSentinelByte, outputBytes);
  if (!in || !out) {
    ADD_FAILURE() << "device allocation failed";
    return output;
  }
  if (inputBytes)
    memory.copyIn(in, input.data(), inputBytes);
  memory.fill(out, kSentinelByte, outputBytes ? outputBytes : sizeof(Word));
  LaunchOutcome outcome = launchPtx(ptx, kernelName, shape.grid, shape.block,
                                    {in, out}, memory, options);
  if (expectCleanLaunch(outcome, ptx) && outputBytes)
    memory.copyOut(output.data(), out, outputBytes);
  return output;
}

template <typename Word>
std::vector<Word> runInOut(const std::string &ptx,
                           const std::vector<Word> &input, size_t outputWords,
                           unsigned threads = 32,
                           const std::string &kernelName = "test_kernel") {
  return runInOut<Word>(ptx, input, outputWords,
                        LaunchShape{Dim3{1, 1, 1}, Dim3{threads, 1, 1}},
                        kernelName);
}

/// The prologue of a `test_kernel(.param .u64 in, .param .u64 out)`: leaves
/// the global addresses of the buffers in %inp and %outp (.b64) and %tid.x in
/// %t (.b32). `declarations` are the kernel's own .reg lines.
inline std::string inOutKernel(const std::string &declarations,
                               const std::string &body,
                               const std::string &preamble = "") {
  return ptxHeader() + preamble +
         ".visible .entry test_kernel(.param .u64 in, .param .u64 out)\n"
         "{\n"
         "  .reg .b64 %inp, %outp;\n"
         "  .reg .b32 %t;\n" +
         declarations +
         "  ld.param.u64 %inp, [in];\n"
         "  ld.param.u64 %outp, [out];\n"
         "  cvta.to.global.u64 %inp, %inp;\n"
         "  cvta.to.global.u64 %outp, %outp;\n"
         "  mov.u32 %t, %tid.x;\n" +
         body + "  ret;\n}\n";
}

/// An elementwise kernel: thread t loads source operands %a, %b, %c (as many
/// as `sourceTypes` names, of those PTX types) from 8-byte slots
/// in[(t * sources + i) * 8], runs `body`, and stores %d (of PTX type
/// `resultType`) to the 8-byte slot out[t * 8]. The body may use the scratch
/// registers %p<4> (.pred), %x<8> (.b32), %y<8> (.b64), %h<8> (.b16),
/// %fx<8> (.f32) and %fy<8> (.f64).
inline std::string
elementwiseKernel(const std::string &resultType,
                  const std::vector<std::string> &sourceTypes,
                  const std::string &body) {
  static const char *names[] = {"%a", "%b", "%c"};
  std::string declarations = "  .reg .b64 %ia, %oa;\n"
                             "  .reg .pred %p<4>;\n"
                             "  .reg .b32 %x<8>;\n"
                             "  .reg .b64 %y<8>;\n"
                             "  .reg .b16 %h<8>;\n"
                             "  .reg .f32 %fx<8>;\n"
                             "  .reg .f64 %fy<8>;\n"
                             "  .reg ." +
                             resultType + " %d;\n";
  std::string loads;
  size_t sources = sourceTypes.size();
  for (size_t i = 0; i < sources && i < 3; ++i) {
    declarations += "  .reg ." + sourceTypes[i] + " " + names[i] + ";\n";
    loads += "  ld.global." + sourceTypes[i] + " " + names[i] + ", [%ia+" +
             std::to_string(i * 8) + "];\n";
  }
  std::string body2 = "  mul.wide.u32 %ia, %t, " + std::to_string(sources * 8) +
                      ";\n"
                      "  add.s64 %ia, %inp, %ia;\n"
                      "  mul.wide.u32 %oa, %t, 8;\n"
                      "  add.s64 %oa, %outp, %oa;\n" +
                      loads + body + "\n  st.global." + resultType +
                      " [%oa], %d;\n";
  return inOutKernel(declarations, body2);
}

/// Runs elementwiseKernel(resultType, sourceTypes, body) with one thread per
/// case (`cases[t]` holds thread t's source values, low bytes first) and
/// returns each thread's result, masked to the width of `resultBytes`.
inline std::vector<uint64_t> runElementwise(
    const std::string &resultType, const std::vector<std::string> &sourceTypes,
    const std::string &body, const std::vector<std::vector<uint64_t>> &cases,
    unsigned resultBytes) {
  std::vector<uint64_t> input;
  for (const std::vector<uint64_t> &sources : cases) {
    EXPECT_EQ(sources.size(), sourceTypes.size()) << "malformed test case";
    for (size_t i = 0; i < sourceTypes.size(); ++i)
      input.push_back(i < sources.size() ? sources[i] : 0);
  }
  std::string ptx = elementwiseKernel(resultType, sourceTypes, body);
  std::vector<uint64_t> output = runInOut<uint64_t>(
      ptx, input, cases.size(), static_cast<unsigned>(cases.size()));
  if (resultBytes < 8)
    for (uint64_t &word : output)
      word &= (uint64_t(1) << (8 * resultBytes)) - 1;
  return output;
}

/// "0x..." for failure messages.
inline std::string hex(uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx",
                static_cast<unsigned long long>(value));
  return text;
}

/// One thread's sources and its hand-worked result (`what` says why).
struct ElementCase {
  const char *what;
  std::vector<uint64_t> sources;
  uint64_t expected;
};

/// Runs `body` elementwise over `cases` (see elementwiseKernel) and expects
/// each thread's result to equal its case's `expected` bit for bit.
inline void expectElementwise(const std::string &resultType,
                              const std::vector<std::string> &sourceTypes,
                              const std::string &body, unsigned resultBytes,
                              const std::vector<ElementCase> &cases) {
  std::vector<std::vector<uint64_t>> sources;
  for (const ElementCase &c : cases)
    sources.push_back(c.sources);
  std::vector<uint64_t> got =
      runElementwise(resultType, sourceTypes, body, sources, resultBytes);
  for (size_t i = 0; i < cases.size() && i < got.size(); ++i)
    EXPECT_EQ(hex(got[i]), hex(cases[i].expected))
        << "`" << body << "`: " << cases[i].what;
}

} // namespace fwp::emu::test

#endif // FWP_TEST_UNIT_EMULATORTESTUTILS_H
