//===- EmulatorTestUtils.h - PTX kernels run on the emulator ----*- C++ -*-===//
//
// Helpers of the emulator's tests. The instruction tests' cases live in
// EmulatorCases.h (shared with the conformance runner, which runs them
// through a CUDA driver); expectCasesPass runs them here on the emulator
// library directly. launchPtx serves the tests that look at how a launch
// fails or what it counts (EmulatorErrorTest, EmulatorCountersTest).
//
// A launch or parse failure fails the calling test with the emulator's own
// report, and the judge then sees the sentinel-filled buffers, so that the
// case's checks fail too instead of reading garbage.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_TEST_UNIT_EMULATORTESTUTILS_H
#define FWP_TEST_UNIT_EMULATORTESTUTILS_H

#include "EmulatorCases.h"

#include "fwp/Emulator/Launch.h"
#include "fwp/Emulator/Memory.h"
#include "fwp/Emulator/Ptx.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace fwp::emu::test {

using conformance::bitsOf;
using conformance::CaseList;
using conformance::doubleOf;
using conformance::floatOf;
using conformance::hex;
using conformance::inOutKernel;
using conformance::isNanBf16;
using conformance::isNanF16;
using conformance::isNanF32;
using conformance::KernelCase;
using conformance::kSentinel32;
using conformance::kSentinel64;
using conformance::kSentinelByte;
using conformance::ptxHeader;
using conformance::ulpDistance;
using conformance::Verdict;

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

/// Runs `kernelCase` on fresh emulated device memory and returns its judge's
/// verdicts.
inline std::vector<Verdict> runOnEmulator(const KernelCase &kernelCase) {
  DeviceMemory memory;
  std::vector<std::vector<uint8_t>> values; // each parameter's bytes
  std::vector<uint64_t> buffers;
  conformance::Buffers contents;
  for (const conformance::Argument &argument : kernelCase.arguments) {
    if (!argument.isBuffer) {
      values.push_back(argument.bytes);
      continue;
    }
    std::vector<uint8_t> bytes(std::max<size_t>(argument.bufferBytes, 8),
                               kSentinelByte);
    std::copy_n(argument.bytes.begin(),
                std::min(argument.bytes.size(), bytes.size()), bytes.begin());
    uint64_t address = memory.allocate(bytes.size());
    if (!address || !memory.copyIn(address, bytes.data(), bytes.size()))
      ADD_FAILURE() << "device allocation failed";
    values.push_back(conformance::bytesOf(std::vector<uint64_t>{address}));
    buffers.push_back(address);
    bytes.resize(argument.bufferBytes);
    contents.push_back(std::move(bytes));
  }
  std::vector<void *> pointers;
  for (std::vector<uint8_t> &value : values)
    pointers.push_back(value.data());
  LaunchOutcome outcome;
  std::unique_ptr<Module> module = parsePtx(kernelCase.ptx, outcome.loadError);
  const Kernel *kernel = module ? module->kernel(kernelCase.kernel) : nullptr;
  if (module && !kernel)
    outcome.loadError = "no kernel named " + kernelCase.kernel;
  outcome.loaded = kernel != nullptr;
  if (kernel) {
    const conformance::Shape &g = kernelCase.grid, &b = kernelCase.block;
    outcome.result =
        launch(*kernel, Dim3{g.x, g.y, g.z}, Dim3{b.x, b.y, b.z}, 0,
               pointers.data(), memory, Chip::forSm(90), LaunchOptions{});
  }
  if (expectCleanLaunch(outcome, kernelCase.ptx))
    for (size_t i = 0; i < buffers.size(); ++i)
      memory.copyOut(contents[i].data(), buffers[i], contents[i].size());
  return kernelCase.judge(contents);
}

/// Runs each case on the emulator and expects every one of its verdicts to
/// pass, naming the case, what it got and what the ISA says.
inline void expectCasesPass(const CaseList &cases) {
  for (const KernelCase &kernelCase : cases) {
    std::vector<Verdict> verdicts = runOnEmulator(kernelCase);
    EXPECT_FALSE(verdicts.empty()) << "a case without checks:\n"
                                   << kernelCase.ptx;
    for (const Verdict &verdict : verdicts)
      EXPECT_TRUE(verdict.passed) << verdict.name << ": got " << verdict.got
                                  << ", expected " << verdict.expected;
  }
}

} // namespace fwp::emu::test

#endif // FWP_TEST_UNIT_EMULATORTESTUTILS_H
