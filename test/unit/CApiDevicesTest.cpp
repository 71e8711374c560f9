//===- CApiDevicesTest.cpp - *_cuda calls on any device of a machine ------===//
//
// On the stand-in driver with two devices (FWP_EMU_DEVICES=2), as on a
// machine with two GPUs where PyTorch's tensors live on cuda:1: a call names
// its device in fwp_cuda_call, its modules are loaded in that device's
// context (the stand-in driver, like CUDA's, refuses to launch a function
// in another context than its module's) and it matches the float64
// reference on each device in turn.
//
//===----------------------------------------------------------------------===//

#include "fwp/CApi.h"
#include "fwp/Reference/Reference.h"
#include "fwp/Runtime/Cuda.h"

#include "TestUtils.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace {

std::vector<double> random(std::mt19937 &rng, size_t n) {
  std::uniform_real_distribution<double> uniform(-0.5, 0.5);
  std::vector<double> values(n);
  for (double &v : values)
    v = uniform(rng);
  return values;
}

fwp::rt::DeviceBuffer onDevice(const std::vector<double> &values) {
  return fwp::rt::DeviceBuffer::fromHost(
      std::vector<float>(values.begin(), values.end()));
}

void *address(const fwp::rt::DeviceBuffer &buffer) {
  return reinterpret_cast<void *>(buffer.ptr());
}

class CApiDevicesTest : public ::testing::Test {
protected:
  void SetUp() override {
    std::string whyNot;
    if (!fwp::rt::cudaUsable(&whyNot))
      GTEST_SKIP() << "no usable CUDA GPU: " << whyNot;
    int count = 0;
    fwp::rt::boundDriver().cuDeviceGetCount(&count);
    if (count < 2)
      GTEST_SKIP() << "one CUDA device (the stand-in driver has "
                      "FWP_EMU_DEVICES=2 in make test)";
  }
};

// The module's forward on device 1, then device 0, then device 1 again,
// each with its own buffers: one description, modules per device.
TEST_F(CApiDevicesTest, ForwardRunsOnTheDeviceTheCallNames) {
  const int64_t steps = 13, batch = 2, heads = 2, dHead = 4, dm = heads * dHead;
  std::mt19937 rng(5);
  fwp::ref::AttentionParams p{random(rng, dm * dm), random(rng, dm * dm),
                              random(rng, dm * dm), random(rng, heads * dm),
                              random(rng, dm * dm), random(rng, dm)};
  std::vector<double> x = random(rng, steps * batch * dm);
  fwp::ref::AttentionConfig config;
  config.heads = heads;
  config.nu = 1;
  std::vector<double> expected =
      fwp::ref::attention(config, {steps, batch, dm}, x, p).y;
  fwp_attention *module =
      fwp_attention_create("cuda", "f32", "delta", heads, dHead, 1, 1e-6, 8);
  ASSERT_NE(module, nullptr) << fwp_last_error();
  for (int device : {1, 0, 1}) {
    fwp::rt::DeviceScope scope(device); // the buffers live on `device`
    std::vector<fwp::rt::DeviceBuffer> in;
    for (const std::vector<double> *values :
         {&x, &p.wQ, &p.wK, &p.wV, &p.wBeta, &p.wO, &p.bO})
      in.push_back(onDevice(*values));
    fwp::rt::DeviceBuffer y(x.size() * sizeof(float));
    fwp_cuda_call call{nullptr, nullptr, nullptr, nullptr, device};
    ASSERT_EQ(fwp_attention_forward_cuda(
                  module, &call, steps, batch, address(in[0]), address(in[1]),
                  address(in[2]), address(in[3]), address(in[4]),
                  address(in[5]), address(in[6]), address(y)),
              0)
        << "device " << device << ": " << fwp_last_error();
    std::vector<float> got = y.toHost<float>();
    EXPECT_LE(fwp::test::relativeError(
                  std::vector<double>(got.begin(), got.end()), expected),
              1e-5)
        << "device " << device;
  }
  fwp_attention_destroy(module);
}

TEST_F(CApiDevicesTest, AMissingDeviceIsNamed) {
  fwp_scan *scan =
      fwp_scan_create("cuda", "f32", "delta", "batch_first", 4, 4, 0, 1e-6, 0);
  ASSERT_NE(scan, nullptr) << fwp_last_error();
  // Addresses that are never read: the device is looked up first.
  std::vector<void *> fake(7, reinterpret_cast<void *>(uintptr_t(1) << 40));
  fwp_cuda_call call{nullptr, nullptr, nullptr, nullptr, 7};
  EXPECT_NE(fwp_scan_forward_cuda(scan, &call, 1, 1, 1, fake[0], fake[1],
                                  fake[2], fake[3], fake[4], fake[5], fake[6]),
            0);
  EXPECT_NE(std::string(fwp_last_error()).find("device 7"), std::string::npos)
      << fwp_last_error();
  call.device = -1;
  EXPECT_NE(fwp_scan_forward_cuda(scan, &call, 1, 1, 1, fake[0], fake[1],
                                  fake[2], fake[3], fake[4], fake[5], fake[6]),
            0);
  EXPECT_NE(std::string(fwp_last_error()).find("device is -1"),
            std::string::npos)
      << fwp_last_error();
  fwp_scan_destroy(scan);
}

} // namespace
