//===- fwp-ptx-conformance.cpp - The emulator's PTX cases on a real GPU ---===//
//
//   fwp-ptx-conformance [FAMILY...]
//
// Runs the PTX instruction cases of EmulatorTest (test/unit/EmulatorCases.h:
// small kernels with answers worked out by hand from NVIDIA's PTX ISA)
// through the CUDA driver API, so that one command on a machine with an
// NVIDIA GPU checks that the ISA semantics the emulator was built on are the
// hardware's. Run with LD_LIBRARY_PATH naming fwp's stand-in driver
// (build/lib/emulated-cuda), the same command runs them on the emulator.
// FAMILY (integer, float, approx, conversion, memory, control, matrix)
// narrows the run.
//
// Prints one line per check, `PASS <family> <case>` or `FAIL <family> <case>:
// got ... expected ...`, then `conformance: N passed, M failed`. Cases whose
// answer the ISA leaves to the implementation (KernelCase::emulatorOnly) are
// not run. Exit status: 0 when every check passed, 1 when one failed, 2 when
// there is no usable CUDA device (with the reason) or FAMILY names none.
//
// The kernels are written for sm_90 (.version 8.0, so a CUDA 12 driver); on
// an older chip the .target is lowered to the chip's, and cases needing newer
// instructions (sm_80: cp.async, bf16, tf32 mma) fail to load there, each
// naming the JIT's error. Runtime only: no MLIR, no LLVM, no emulator.
//
//===----------------------------------------------------------------------===//

#include "EmulatorCases.h"

#include "fwp/Runtime/Cuda.h"
#include "fwp/Runtime/Driver.h"
#include "fwp/Runtime/Error.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <set>
#include <string>
#include <vector>

using fwp::conformance::Argument;
using fwp::conformance::Buffers;
using fwp::conformance::KernelCase;
using fwp::conformance::Verdict;

namespace {

/// The chip the kernels were written for (ptxHeader's .target).
constexpr int kWrittenForSm = 90;

/// `ptx` for a chip older than sm_90: the same text with its .target lowered,
/// which loads wherever the instructions used exist.
std::string forChip(std::string ptx, int computeCapability) {
  if (computeCapability >= kWrittenForSm)
    return ptx;
  const std::string target = ".target sm_90";
  size_t at = ptx.find(target);
  if (at != std::string::npos)
    ptx.replace(at, target.size(),
                ".target sm_" + std::to_string(computeCapability));
  return ptx;
}

/// `text` with its line breaks (a JIT log's) as " | ", so that each check
/// stays on one line of the output.
std::string oneLine(std::string text) {
  for (size_t at = text.find('\n'); at != std::string::npos;
       at = text.find('\n', at))
    text.replace(at, 1, " | ");
  return text;
}

/// Runs `kernelCase` through the driver and returns its judge's verdicts; a
/// failure to load or launch fails each of them with the driver's message.
std::vector<Verdict> runThroughDriver(const KernelCase &kernelCase,
                                      int computeCapability) {
  Buffers contents;
  for (const Argument &argument : kernelCase.arguments) {
    if (!argument.isBuffer)
      continue;
    std::vector<uint8_t> bytes(argument.bufferBytes,
                               fwp::conformance::kSentinelByte);
    std::copy_n(argument.bytes.begin(),
                std::min(argument.bytes.size(), bytes.size()), bytes.begin());
    contents.push_back(std::move(bytes));
  }
  std::string failure;
  try {
    fwp::rt::Module module(forChip(kernelCase.ptx, computeCapability),
                           kernelCase.family + " case");
    fwp::rt::CUfunction function = module.function(kernelCase.kernel);
    // Every buffer is written in full (contents, then the sentinel), so
    // that no byte a kernel reads is uninitialised; at least 8 bytes, so
    // that an empty input still has an address.
    std::vector<fwp::rt::DeviceBuffer> buffers;
    std::vector<fwp::rt::CUdeviceptr> addresses;
    for (const std::vector<uint8_t> &bytes : contents) {
      std::vector<uint8_t> padded = bytes;
      padded.resize(std::max<size_t>(padded.size(), 8),
                    fwp::conformance::kSentinelByte);
      buffers.push_back(fwp::rt::DeviceBuffer::fromHost(padded));
      addresses.push_back(buffers.back().ptr());
    }
    std::vector<void *> parameters;
    size_t nextBuffer = 0;
    for (const Argument &argument : kernelCase.arguments)
      parameters.push_back(argument.isBuffer
                               ? static_cast<void *>(&addresses[nextBuffer++])
                               : const_cast<uint8_t *>(argument.bytes.data()));
    const fwp::conformance::Shape &grid = kernelCase.grid;
    const fwp::conformance::Shape &block = kernelCase.block;
    fwp::rt::launch(function, fwp::rt::Dim3{grid.x, grid.y, grid.z},
                    fwp::rt::Dim3{block.x, block.y, block.z}, 0, nullptr,
                    parameters.data());
    fwp::rt::Context::primary().synchronize();
    for (size_t i = 0; i < contents.size(); ++i)
      buffers[i].copyToHost(contents[i].data(), contents[i].size());
  } catch (const std::exception &error) {
    failure = error.what();
  }
  std::vector<Verdict> verdicts = kernelCase.judge(contents);
  if (!failure.empty())
    for (Verdict &verdict : verdicts) {
      verdict.passed = false;
      verdict.got = "no result (" + failure + ")";
    }
  return verdicts;
}

} // namespace

int main(int argc, char **argv) {
  std::set<std::string> families(argv + 1, argv + argc);
  if (families.count("--help") || families.count("-h")) {
    std::printf("usage: fwp-ptx-conformance [FAMILY...]\n"
                "runs the emulator's PTX cases through the CUDA driver\n");
    return 0;
  }
  std::vector<KernelCase> cases = fwp::conformance::allCases();
  for (const std::string &family : families)
    if (std::none_of(cases.begin(), cases.end(),
                     [&](const KernelCase &c) { return c.family == family; })) {
      std::printf("fwp-ptx-conformance: no family named %s (integer, float, "
                  "approx, conversion, memory, control, warp, matrix)\n",
                  family.c_str());
      return 2;
    }
  std::string whyNot;
  int computeCapability = 0;
  std::string device;
  try {
    if (fwp::rt::cudaUsable(&whyNot)) {
      fwp::rt::Context &context = fwp::rt::Context::primary();
      computeCapability = context.computeCapability();
      device = context.deviceName();
    }
  } catch (const std::exception &error) {
    whyNot = error.what();
  }
  if (device.empty()) {
    std::printf("fwp-ptx-conformance: no usable CUDA device: %s\n",
                whyNot.c_str());
    return 2;
  }
  std::printf("fwp-ptx-conformance: %s, compute capability %d.%d\n",
              device.c_str(), computeCapability / 10, computeCapability % 10);
  auto start = std::chrono::steady_clock::now();
  unsigned passed = 0, failed = 0, leftOutChecks = 0, leftOutKernels = 0;
  for (const KernelCase &kernelCase : cases) {
    if (!families.empty() && !families.count(kernelCase.family))
      continue;
    if (kernelCase.emulatorOnly) {
      // Judged on the sentinel-filled buffers only to count its checks.
      Buffers unrun;
      for (const Argument &argument : kernelCase.arguments)
        if (argument.isBuffer)
          unrun.emplace_back(argument.bufferBytes,
                             fwp::conformance::kSentinelByte);
      leftOutChecks += kernelCase.judge(unrun).size();
      ++leftOutKernels;
      continue;
    }
    for (const Verdict &verdict :
         runThroughDriver(kernelCase, computeCapability)) {
      if (verdict.passed) {
        ++passed;
        std::printf("PASS %s %s\n", kernelCase.family.c_str(),
                    verdict.name.c_str());
      } else {
        ++failed;
        std::printf("FAIL %s %s: got %s expected %s\n",
                    kernelCase.family.c_str(), verdict.name.c_str(),
                    oneLine(verdict.got).c_str(),
                    oneLine(verdict.expected).c_str());
      }
    }
    std::fflush(stdout);
  }
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  std::printf("not run: %u checks in %u kernels whose answers the ISA "
              "leaves to the implementation (emulator only); %.2f s\n",
              leftOutChecks, leftOutKernels, seconds);
  std::printf("conformance: %u passed, %u failed\n", passed, failed);
  return failed ? 1 : 0;
}
