//===- CudaRuntimeTest.cpp - Tests of the CUDA driver runtime -------------===//
//
// Driver-loading tests run everywhere. Tests that need a GPU skip visibly
// ("no usable CUDA GPU: ...") when the driver or a device is missing.
//
//===----------------------------------------------------------------------===//

#include "RuntimeTestUtils.h"

#include "fwp/Runtime/Cuda.h"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cstdint>
#include <string>
#include <vector>

using namespace fwp::rt;
using fwp::test::contains;
using fwp::test::iota;
using fwp::test::messageOf;

namespace {

//===----------------------------------------------------------------------===//
// Driver loading
//===----------------------------------------------------------------------===//

bool driverLibraryLoads() {
  void *library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library)
    dlclose(library);
  return library != nullptr;
}

TEST(CudaDriverTest, MissingDriverSaysNoCudaDriver) {
  if (driverLibraryLoads())
    GTEST_SKIP() << "libcuda.so.1 is present on this machine";
  std::string why;
  EXPECT_FALSE(cudaUsable(&why));
  EXPECT_TRUE(contains(why, "no CUDA driver: could not load libcuda.so.1 ("));
  EXPECT_TRUE(contains(messageOf<CudaError>([] { driver(); }),
                       "no CUDA driver: could not load libcuda.so.1"));
  EXPECT_TRUE(contains(messageOf<CudaError>([] { DeviceBuffer buffer(16); }),
                       "no CUDA driver"));
}

TEST(CudaDriverTest, CudaUsableIsStableAndExplainsItself) {
  std::string why1, why2;
  bool usable = cudaUsable(&why1);
  EXPECT_EQ(cudaUsable(&why2), usable);
  EXPECT_EQ(cudaUsable(), usable);
  if (!usable) {
    EXPECT_FALSE(why1.empty());
    EXPECT_EQ(why1, why2);
  }
}

TEST(CudaDriverTest, EmptyBufferNeedsNoDriver) {
  DeviceBuffer empty;
  EXPECT_EQ(empty.size(), 0u);
  EXPECT_EQ(empty.ptr(), 0u);
  DeviceBuffer zeroBytes(0);
  EXPECT_EQ(zeroBytes.size(), 0u);
}

//===----------------------------------------------------------------------===//
// GPU tests
//===----------------------------------------------------------------------===//

// Hand-written PTX (checked with `ptxas -arch=sm_90`). The low target keeps it
// loadable on any GPU from sm_60 on; the driver JIT-compiles it for the device.
const char *const kTestPtx = R"(
.version 7.0
.target sm_60
.address_size 64

// y[i] = a * x[i] + y[i] for i < n
.visible .entry fwp_test_axpy(
    .param .u64 x,
    .param .u64 y,
    .param .f32 a,
    .param .u64 n)
{
    .reg .pred %p<2>;
    .reg .b32 %r<4>;
    .reg .f32 %f<5>;
    .reg .b64 %rd<10>;

    ld.param.u64 %rd1, [x];
    ld.param.u64 %rd2, [y];
    ld.param.f32 %f1, [a];
    ld.param.u64 %rd3, [n];
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %tid.x;
    mul.wide.u32 %rd4, %r1, %r2;
    cvt.u64.u32 %rd5, %r3;
    add.s64 %rd4, %rd4, %rd5;
    setp.ge.s64 %p1, %rd4, %rd3;
    @%p1 bra DONE;
    shl.b64 %rd5, %rd4, 2;
    cvta.to.global.u64 %rd6, %rd1;
    cvta.to.global.u64 %rd7, %rd2;
    add.s64 %rd8, %rd6, %rd5;
    add.s64 %rd9, %rd7, %rd5;
    ld.global.f32 %f2, [%rd8];
    ld.global.f32 %f3, [%rd9];
    fma.rn.f32 %f4, %f1, %f2, %f3;
    st.global.f32 [%rd9], %f4;
DONE:
    ret;
}

.extern .shared .align 16 .b8 fwp_test_smem[];

// out[i] = in[i] * scale for i < n, staged through the top `ntid` floats of
// a dynamic shared buffer of `shared_floats` floats, so the launch must
// really provide all of it.
.visible .entry fwp_test_shared_scale(
    .param .u64 in,
    .param .u64 out,
    .param .f64 scale,
    .param .u32 n,
    .param .u32 shared_floats)
{
    .reg .pred %p<3>;
    .reg .b32 %r<8>;
    .reg .f32 %f<3>;
    .reg .f64 %fd<4>;
    .reg .b64 %rd<12>;

    ld.param.u64 %rd1, [in];
    ld.param.u64 %rd2, [out];
    ld.param.f64 %fd1, [scale];
    ld.param.u32 %r1, [n];
    ld.param.u32 %r7, [shared_floats];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.s32 %r5, %r2, %r3, %r4;
    setp.ge.u32 %p1, %r5, %r1;
    mov.f32 %f1, 0f00000000;
    cvta.to.global.u64 %rd3, %rd1;
    mul.wide.u32 %rd4, %r5, 4;
    @%p1 bra STAGE;
    add.s64 %rd5, %rd3, %rd4;
    ld.global.f32 %f1, [%rd5];
STAGE:
    sub.u32 %r6, %r7, %r3;
    add.u32 %r6, %r6, %r4;
    mov.u64 %rd6, fwp_test_smem;
    mul.wide.u32 %rd7, %r6, 4;
    add.s64 %rd8, %rd6, %rd7;
    st.shared.f32 [%rd8], %f1;
    bar.sync 0;
    ld.shared.f32 %f2, [%rd8];
    @%p1 bra END;
    cvt.f64.f32 %fd2, %f2;
    mul.f64 %fd3, %fd2, %fd1;
    cvt.rn.f32.f64 %f2, %fd3;
    cvta.to.global.u64 %rd9, %rd2;
    add.s64 %rd10, %rd9, %rd4;
    st.global.f32 [%rd10], %f2;
END:
    ret;
}
)";

constexpr unsigned kSharedFloats = 16384; // 64 KiB: above the 48 KiB default
constexpr unsigned kBlock = 128;

class CudaGpuTest : public fwp::test::GpuTest {};

/// A 1-D grid of kBlock-thread blocks covering `n` elements.
Dim3 blocksFor(int64_t n) {
  return {unsigned((n + kBlock - 1) / kBlock), 1, 1};
}

TEST_F(CudaGpuTest, ContextDescribesTheDevice) {
  Context &context = Context::primary();
  EXPECT_EQ(&context, &Context::primary());
  EXPECT_FALSE(context.deviceName().empty());
  EXPECT_GE(context.computeCapability(), 30);
  context.synchronize();
}

TEST_F(CudaGpuTest, DeviceBufferCopiesAndZeroes) {
  std::vector<float> host = iota(1000, 1);
  DeviceBuffer buffer = DeviceBuffer::fromHost(host);
  EXPECT_EQ(buffer.size(), host.size() * sizeof(float));
  EXPECT_EQ(buffer.toHost<float>(), host);

  Stream stream;
  std::vector<float> other = iota(1000, -5), back(1000);
  buffer.copyFromHostAsync(other.data(), buffer.size(), stream);
  buffer.copyToHostAsync(back.data(), buffer.size(), stream);
  stream.synchronize();
  EXPECT_EQ(back, other);

  buffer.zeroAsync(stream);
  stream.synchronize();
  EXPECT_EQ(buffer.toHost<float>(), std::vector<float>(1000, 0.0f));
  buffer.copyFromHost(host.data(), buffer.size());
  buffer.zero();
  EXPECT_EQ(buffer.toHost<float>(), std::vector<float>(1000, 0.0f));

  EXPECT_TRUE(contains(messageOf<Error>([&] {
                         buffer.copyFromHost(host.data(), buffer.size() + 4);
                       }),
                       "do not fit"));
  DeviceBuffer moved = std::move(buffer);
  EXPECT_EQ(buffer.ptr(), 0u);
  EXPECT_EQ(moved.size(), host.size() * sizeof(float));
}

TEST_F(CudaGpuTest, LaunchRunsAxpyOnDeviceBuffers) {
  Module module(kTestPtx, "test.ptx");
  EXPECT_EQ(module.sourceName(), "test.ptx");
  CUfunction axpy = module.function("fwp_test_axpy");
  int64_t n = 1000; // not a multiple of the block size
  std::vector<float> x = iota(n, 0), y = iota(n, 100);
  DeviceBuffer dx = DeviceBuffer::fromHost(x), dy = DeviceBuffer::fromHost(y);
  CUdeviceptr px = dx.ptr(), py = dy.ptr();
  float a = 2.0f;
  void *args[] = {&px, &py, &a, &n};
  launch(axpy, blocksFor(n), {kBlock, 1, 1}, 0, nullptr, args);
  Context::primary().synchronize();
  std::vector<float> result = dy.toHost<float>();
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(result[i], 2.0f * x[i] + y[i]) << "at " << i;
}

TEST_F(CudaGpuTest, LaunchWithMoreThan48KiBOfSharedMemory) {
  Module module(kTestPtx, "test.ptx");
  CUfunction scale = module.function("fwp_test_shared_scale");
  uint32_t n = 300;
  std::vector<float> in = iota(n, 1);
  DeviceBuffer din = DeviceBuffer::fromHost(in), dout(n * sizeof(float));
  Stream stream;
  dout.zeroAsync(stream);
  CUdeviceptr pin = din.ptr(), pout = dout.ptr();
  double factor = 0.5;
  uint32_t sharedFloats = kSharedFloats;
  void *args[] = {&pin, &pout, &factor, &n, &sharedFloats};
  launch(scale, blocksFor(n), {kBlock, 1, 1},
         kSharedFloats * unsigned(sizeof(float)), stream.handle(), args);
  stream.synchronize();
  std::vector<float> out = dout.toHost<float>();
  for (uint32_t i = 0; i < n; ++i)
    ASSERT_EQ(out[i], 0.5f * in[i]) << "at " << i;
}

TEST_F(CudaGpuTest, RawModuleAndLaunch) {
  Module module(kTestPtx, "test.ptx");
  CUfunction axpy = module.function("fwp_test_axpy");
  std::vector<float> x = {1, 2, 3}, y = {10, 20, 30};
  DeviceBuffer dx = DeviceBuffer::fromHost(x), dy = DeviceBuffer::fromHost(y);
  CUdeviceptr px = dx.ptr(), py = dy.ptr();
  float a = -1;
  int64_t n = 3;
  void *args[] = {&px, &py, &a, &n};
  launch(axpy, {1, 1, 1}, {32, 1, 1}, 0, nullptr, args);
  Context::primary().synchronize();
  EXPECT_EQ(dy.toHost<float>(), (std::vector<float>{9, 18, 27}));
}

TEST_F(CudaGpuTest, BadPtxReportsTheLoadFailure) {
  std::string bad = kTestPtx;
  bad.replace(bad.find("fma.rn.f32"), 10, "fma.rn.f33");
  std::string msg =
      messageOf<CudaError>([&] { Module module(bad, "bad.ptx"); });
  EXPECT_TRUE(contains(msg, "cuModuleLoadData"));
  EXPECT_TRUE(contains(msg, "CUDA_ERROR_"));
  EXPECT_TRUE(contains(msg, "bad.ptx"));
}

TEST_F(CudaGpuTest, MissingKernelIsNamed) {
  Module module(kTestPtx, "test.ptx");
  std::string msg =
      messageOf<CudaError>([&] { module.function("fwp_not_there"); });
  EXPECT_TRUE(contains(msg, "kernel 'fwp_not_there' not found in test.ptx"));
  EXPECT_TRUE(contains(msg, "cuModuleGetFunction failed"));
}

} // namespace
