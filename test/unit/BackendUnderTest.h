//===- BackendUnderTest.h - One test source, every JIT backend --*- C++ -*-===//
//
// The JIT tests are built twice: for Backend::Cpu, and with FWP_TEST_CUDA
// for Backend::Cuda, so that the GPU is held to exactly the cases and bounds
// of the CPU. Tests that run kernels derive their fixture from KernelTest,
// which skips them, saying why, where the backend has no device.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_TEST_UNIT_BACKENDUNDERTEST_H
#define FWP_TEST_UNIT_BACKENDUNDERTEST_H

#include "fwp/JIT/JIT.h"
#include "fwp/Runtime/Driver.h"

#include <gtest/gtest.h>

#include <string>

namespace fwp::test {

#ifdef FWP_TEST_CUDA
constexpr jit::Backend kBackend = jit::Backend::Cuda;
#else
constexpr jit::Backend kBackend = jit::Backend::Cpu;
#endif

class KernelTest : public ::testing::Test {
protected:
  void SetUp() override {
    std::string whyNot;
    if (kBackend == jit::Backend::Cuda && !rt::cudaUsable(&whyNot))
      GTEST_SKIP() << "no usable CUDA GPU: " << whyNot;
  }
};

} // namespace fwp::test

#endif // FWP_TEST_UNIT_BACKENDUNDERTEST_H
