//===- CudaRuntimeTest.cpp - Tests of the CUDA driver runtime -------------===//
//
// Manifest, launch-shape and argument checking tests run everywhere. Tests
// that need a GPU skip visibly ("no usable CUDA GPU: ...") when the driver or
// a device is missing.
//
//===----------------------------------------------------------------------===//

#include "RuntimeTestUtils.h"

#include "fwp/Runtime/Cuda.h"
#include "fwp/Runtime/KernelSet.h"
#include "fwp/Runtime/Manifest.h"

#include <gtest/gtest.h>

#include <dlfcn.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <string>
#include <vector>

using namespace fwp::rt;
using fwp::test::contains;
using fwp::test::iota;
using fwp::test::messageOf;
using fwp::test::writeFile;

namespace {

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

std::string parseError(const std::string &text) {
  return messageOf<ManifestError>(
      [&] { Manifest::parse(text, "test.manifest"); });
}

std::string tempPath(const std::string &name) {
  return ::testing::TempDir() + "fwp_runtime_test_" + std::to_string(getpid()) +
         "_" + name;
}

const char *const kScanManifest = R"(# written by a test
fwp-kernels 1

kernel fwp_scan_fwd grid batch*heads chunks 1 block 128 1 1 shared 16384
arg ptr q      # queries
arg ptr k
arg i64 seq_len
arg f32 eps
arg i32 flags
arg f64 scale
kernel fwp_scan_bwd grid 4*batch 1 1 block 256 2 1 shared 65536
arg ptr dy
)";

Manifest scanManifest() { return Manifest::parse(kScanManifest, "scan"); }

//===----------------------------------------------------------------------===//
// Manifest parsing and writing
//===----------------------------------------------------------------------===//

TEST(ManifestTest, ParsesKernelsAndArgs) {
  Manifest m = scanManifest();
  ASSERT_EQ(m.kernels.size(), 2u);
  const KernelSpec &fwd = m.kernels[0];
  EXPECT_EQ(fwd.name, "fwp_scan_fwd");
  EXPECT_EQ(fwd.grid[0].factors, (std::vector<std::string>{"batch", "heads"}));
  EXPECT_EQ(fwd.grid[1].str(), "chunks");
  EXPECT_EQ(fwd.grid[2].str(), "1");
  EXPECT_EQ(fwd.block, (std::array<unsigned, 3>{128, 1, 1}));
  EXPECT_EQ(fwd.sharedBytes, 16384u);
  ASSERT_EQ(fwd.args.size(), 6u);
  EXPECT_EQ(fwd.args[0], (ArgSpec{ArgKind::Ptr, "q"}));
  EXPECT_EQ(fwd.args[2], (ArgSpec{ArgKind::I64, "seq_len"}));
  EXPECT_EQ(fwd.args[3], (ArgSpec{ArgKind::F32, "eps"}));
  EXPECT_EQ(fwd.args[4], (ArgSpec{ArgKind::I32, "flags"}));
  EXPECT_EQ(fwd.args[5], (ArgSpec{ArgKind::F64, "scale"}));
  EXPECT_EQ(m.kernels[1].grid[0].str(), "4*batch");
  EXPECT_EQ(m.find("fwp_scan_bwd"), &m.kernels[1]);
  EXPECT_EQ(m.find("nope"), nullptr);
}

TEST(ManifestTest, SerializeParseRoundTrip) {
  Manifest m = scanManifest();
  std::string text = m.serialize();
  Manifest again = Manifest::parse(text, "serialized");
  EXPECT_EQ(again, m);
  EXPECT_EQ(again.serialize(), text);
}

TEST(ManifestTest, SerializeWritesTheDocumentedFormat) {
  Manifest m;
  KernelSpec k;
  k.name = "fwp_copy";
  k.grid = {*SizeExpr::parse("n"), *SizeExpr::parse("2*b"),
            *SizeExpr::parse("1")};
  k.block = {64, 1, 1};
  k.sharedBytes = 0;
  k.args = {{ArgKind::Ptr, "src"}, {ArgKind::I32, "n"}};
  m.kernels.push_back(k);
  EXPECT_EQ(m.serialize(),
            "fwp-kernels 1\n"
            "kernel fwp_copy grid n 2*b 1 block 64 1 1 shared 0\n"
            "arg ptr src\n"
            "arg i32 n\n");
}

TEST(ManifestTest, HeaderOnlyIsEmpty) {
  EXPECT_TRUE(Manifest::parse("fwp-kernels 1\n", "x").kernels.empty());
}

TEST(ManifestParseErrorTest, UnknownDirective) {
  std::string msg = parseError("fwp-kernels 1\nkernal k grid 1 1 1 block 1 1 1 "
                               "shared 0\n");
  EXPECT_TRUE(contains(msg, "test.manifest:2: unknown directive 'kernal'"));
}

TEST(ManifestParseErrorTest, BadGridTerm) {
  for (const char *term : {"batch**heads", "0", "2x", "-1", "*n", "n*"}) {
    std::string msg =
        parseError(std::string("fwp-kernels 1\n\nkernel k grid 1 ") + term +
                   " 1 block 1 1 1 shared 0\n");
    EXPECT_TRUE(contains(msg, "test.manifest:3: bad grid dimension '" +
                                  std::string(term) + "'"));
  }
}

TEST(ManifestParseErrorTest, UnknownArgKind) {
  std::string msg = parseError("fwp-kernels 1\nkernel k grid 1 1 1 block 1 1 "
                               "1 shared 0\narg u8 x\n");
  EXPECT_TRUE(contains(msg, "test.manifest:3: unknown arg kind 'u8'"));
}

TEST(ManifestParseErrorTest, ArgBeforeKernel) {
  std::string msg = parseError("fwp-kernels 1\narg ptr x\n");
  EXPECT_TRUE(contains(msg, "test.manifest:2: 'arg' before any 'kernel'"));
}

TEST(ManifestParseErrorTest, MissingHeader) {
  EXPECT_TRUE(contains(parseError(""), "test.manifest: missing header"));
  EXPECT_TRUE(contains(parseError("# only a comment\n"), "missing header"));
  std::string msg = parseError("# c\nkernel k grid 1 1 1 block 1 1 1 shared 0");
  EXPECT_TRUE(contains(msg, "test.manifest:2: missing header"));
}

TEST(ManifestParseErrorTest, UnsupportedVersion) {
  EXPECT_TRUE(contains(parseError("fwp-kernels 2\n"),
                       "test.manifest:1: unsupported manifest version '2'"));
  EXPECT_TRUE(contains(parseError("fwp-kernels\n"),
                       "test.manifest:1: malformed header"));
}

TEST(ManifestParseErrorTest, MalformedKernelLine) {
  std::string msg = parseError("fwp-kernels 1\nkernel k grid 1 1 block 1 1 1 "
                               "shared 0\n");
  EXPECT_TRUE(contains(msg, "test.manifest:2: malformed kernel line"));
  msg = parseError("fwp-kernels 1\nkernel k grid 1 1 1 block 0 1 1 shared 0\n");
  EXPECT_TRUE(contains(msg, "test.manifest:2: bad block dimension '0'"));
  msg = parseError("fwp-kernels 1\nkernel k grid 1 1 1 block 1 1 1 shared x\n");
  EXPECT_TRUE(contains(msg, "bad shared memory size 'x'"));
  msg =
      parseError("fwp-kernels 1\nkernel 9k grid 1 1 1 block 1 1 1 shared 0\n");
  EXPECT_TRUE(contains(msg, "bad kernel name '9k'"));
}

TEST(ManifestParseErrorTest, MalformedArgLine) {
  std::string head =
      "fwp-kernels 1\nkernel k grid 1 1 1 block 1 1 1 shared 0\n";
  EXPECT_TRUE(contains(parseError(head + "arg ptr\n"),
                       "test.manifest:3: malformed arg line"));
  EXPECT_TRUE(contains(parseError(head + "arg ptr a-b\n"),
                       "test.manifest:3: bad arg name 'a-b'"));
}

TEST(ManifestParseErrorTest, Duplicates) {
  std::string kernel = "kernel k grid 1 1 1 block 1 1 1 shared 0\n";
  EXPECT_TRUE(contains(parseError("fwp-kernels 1\n" + kernel + kernel),
                       "test.manifest:3: duplicate kernel 'k'"));
  EXPECT_TRUE(contains(
      parseError("fwp-kernels 1\n" + kernel + "arg ptr a\narg i64 a\n"),
      "test.manifest:4: duplicate arg 'a' in kernel 'k'"));
  EXPECT_TRUE(contains(parseError("fwp-kernels 1\nfwp-kernels 1\n"),
                       "test.manifest:2: duplicate header"));
}

//===----------------------------------------------------------------------===//
// Launch shapes
//===----------------------------------------------------------------------===//

TEST(LaunchShapeTest, ResolvesProductsOfSizes) {
  Manifest m = scanManifest();
  LaunchShape shape =
      m.kernels[0].resolveShape({{"batch", 3}, {"heads", 8}, {"chunks", 5}});
  EXPECT_EQ(shape.grid.x, 24u);
  EXPECT_EQ(shape.grid.y, 5u);
  EXPECT_EQ(shape.grid.z, 1u);
  EXPECT_EQ(shape.block.x, 128u);
  EXPECT_EQ(shape.block.y, 1u);
  EXPECT_EQ(shape.sharedBytes, 16384u);
  LaunchShape bwd = m.kernels[1].resolveShape({{"batch", 3}});
  EXPECT_EQ(bwd.grid.x, 12u);
  EXPECT_EQ(bwd.block.y, 2u);
}

TEST(LaunchShapeTest, MissingSizeNameIsAnError) {
  Manifest m = scanManifest();
  std::string msg = messageOf<LaunchError>([&] {
    m.kernels[0].resolveShape({{"batch", 3}, {"chunks", 5}});
  });
  EXPECT_TRUE(contains(msg, "kernel 'fwp_scan_fwd': grid x: size 'heads' "
                            "used by 'batch*heads' was not provided"));
  EXPECT_TRUE(contains(msg, "provided: batch, chunks"));
}

TEST(LaunchShapeTest, OutOfRangeGridIsAnError) {
  Manifest m = scanManifest();
  std::string msg = messageOf<LaunchError>([&] {
    m.kernels[0].resolveShape({{"batch", 3}, {"heads", 0}, {"chunks", 5}});
  });
  EXPECT_TRUE(contains(msg, "grid x 'batch*heads' = 0 is outside"));
  msg = messageOf<LaunchError>([&] {
    m.kernels[0].resolveShape({{"batch", 1}, {"heads", 1}, {"chunks", 70000}});
  });
  EXPECT_TRUE(contains(msg, "grid y 'chunks' = 70000 is outside [1, 65535]"));
  msg = messageOf<LaunchError>([&] {
    m.kernels[0].resolveShape(
        {{"batch", int64_t(1) << 40}, {"heads", int64_t(1) << 40}});
  });
  EXPECT_TRUE(contains(msg, "out of range"));
}

//===----------------------------------------------------------------------===//
// Argument checking (no GPU needed)
//===----------------------------------------------------------------------===//

Sizes scanSizes() { return {{"batch", 2}, {"heads", 4}, {"chunks", 3}}; }

ArgValues scanArgs() {
  return {{"q", ArgValue::ptr(0x1000)},   {"k", ArgValue::ptr(0x2000)},
          {"seq_len", ArgValue::i64(77)}, {"eps", ArgValue::f32(0.5f)},
          {"flags", ArgValue::i32(-3)},   {"scale", ArgValue::f64(2.25)}};
}

TEST(PrepareLaunchTest, PacksArgumentsInParameterOrder) {
  Manifest m = scanManifest();
  ArgValues values = scanArgs();
  PreparedLaunch p = prepareLaunch(m, "fwp_scan_fwd", scanSizes(), values);
  EXPECT_EQ(p.kernel, &m.kernels[0]);
  EXPECT_EQ(p.shape.grid.x, 8u);
  ASSERT_EQ(p.args.size(), 6u);
  EXPECT_EQ(*static_cast<CUdeviceptr *>(p.args[0]), 0x1000u);
  EXPECT_EQ(*static_cast<CUdeviceptr *>(p.args[1]), 0x2000u);
  EXPECT_EQ(*static_cast<int64_t *>(p.args[2]), 77);
  EXPECT_EQ(*static_cast<float *>(p.args[3]), 0.5f);
  EXPECT_EQ(*static_cast<int32_t *>(p.args[4]), -3);
  EXPECT_EQ(*static_cast<double *>(p.args[5]), 2.25);
  EXPECT_EQ(p.args[2], values.at("seq_len").address());
}

TEST(PrepareLaunchTest, MissingArgumentIsAnError) {
  Manifest m = scanManifest();
  ArgValues values = scanArgs();
  values.erase("eps");
  std::string msg = messageOf<LaunchError>(
      [&] { prepareLaunch(m, "fwp_scan_fwd", scanSizes(), values); });
  EXPECT_TRUE(contains(
      msg, "kernel 'fwp_scan_fwd': argument 'eps' (f32) was not supplied"));
}

TEST(PrepareLaunchTest, WrongKindIsAnError) {
  Manifest m = scanManifest();
  ArgValues values = scanArgs();
  values.at("seq_len") = ArgValue::i32(77);
  std::string msg = messageOf<LaunchError>(
      [&] { prepareLaunch(m, "fwp_scan_fwd", scanSizes(), values); });
  EXPECT_TRUE(contains(msg, "kernel 'fwp_scan_fwd': argument 'seq_len' is "
                            "i64 but i32 was supplied"));
}

TEST(PrepareLaunchTest, UndeclaredArgumentIsAnError) {
  Manifest m = scanManifest();
  ArgValues values = scanArgs();
  values.emplace("extra", ArgValue::f32(1));
  std::string msg = messageOf<LaunchError>(
      [&] { prepareLaunch(m, "fwp_scan_fwd", scanSizes(), values); });
  EXPECT_TRUE(contains(msg, "kernel 'fwp_scan_fwd' has no argument 'extra' "
                            "(arguments: q, k, seq_len, eps, flags, scale)"));
}

TEST(PrepareLaunchTest, UnknownKernelIsAnError) {
  Manifest m = scanManifest();
  std::string msg = messageOf<LaunchError>(
      [&] { prepareLaunch(m, "fwp_scan", scanSizes(), scanArgs()); });
  EXPECT_TRUE(contains(msg, "no kernel 'fwp_scan' in the manifest (kernels: "
                            "fwp_scan_fwd, fwp_scan_bwd)"));
}

TEST(PrepareLaunchTest, MissingSizeIsAnError) {
  Manifest m = scanManifest();
  std::string msg = messageOf<LaunchError>([&] {
    prepareLaunch(m, "fwp_scan_fwd", {{"batch", 1}}, scanArgs());
  });
  EXPECT_TRUE(contains(msg, "size 'heads'"));
}

//===----------------------------------------------------------------------===//
// Files
//===----------------------------------------------------------------------===//

TEST(ManifestFileTest, LoadsAndNamesTheFileInErrors) {
  std::string good = tempPath("good.manifest");
  writeFile(good, kScanManifest);
  EXPECT_EQ(loadManifestFile(good), scanManifest());

  std::string bad = tempPath("bad.manifest");
  writeFile(bad, "fwp-kernels 1\nlaunch k\n");
  EXPECT_TRUE(contains(messageOf<ManifestError>([&] { loadManifestFile(bad); }),
                       bad + ":2: unknown directive 'launch'"));
  std::remove(good.c_str());
  std::remove(bad.c_str());
}

TEST(ManifestFileTest, MissingFileIsNamed) {
  std::string missing = tempPath("does_not_exist");
  std::string msg = messageOf<Error>([&] { loadManifestFile(missing); });
  EXPECT_TRUE(contains(msg, "cannot read file '" + missing + "'"));
  // KernelSet::load reads the manifest before touching the driver.
  msg = messageOf<Error>([&] { KernelSet::load(missing); });
  EXPECT_TRUE(contains(msg, "cannot read file '" + missing + ".manifest'"));
}

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

const char *const kTestManifest = R"(fwp-kernels 1
kernel fwp_test_axpy grid blocks 1 1 block 128 1 1 shared 0
arg ptr x
arg ptr y
arg f32 a
arg i64 n
kernel fwp_test_shared_scale grid blocks 1 1 block 128 1 1 shared 65536
arg ptr in
arg ptr out
arg f64 scale
arg i32 n
arg i32 shared_floats
)";

class CudaGpuTest : public fwp::test::GpuTest {};

Sizes blocksFor(int64_t n) { return {{"blocks", (n + 127) / 128}}; }

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

TEST_F(CudaGpuTest, KernelSetRunsAxpy) {
  KernelSet set(Manifest::parse(kTestManifest, "test.manifest"), kTestPtx,
                "test.ptx");
  const int64_t n = 1000; // not a multiple of the block size
  std::vector<float> x = iota(n, 0), y = iota(n, 100);
  DeviceBuffer dx = DeviceBuffer::fromHost(x), dy = DeviceBuffer::fromHost(y);
  set.launch("fwp_test_axpy", blocksFor(n),
             {{"x", ArgValue::ptr(dx)},
              {"y", ArgValue::ptr(dy)},
              {"a", ArgValue::f32(2.0f)},
              {"n", ArgValue::i64(n)}});
  Context::primary().synchronize();
  std::vector<float> result = dy.toHost<float>();
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(result[i], 2.0f * x[i] + y[i]) << "at " << i;
}

TEST_F(CudaGpuTest, LaunchWithMoreThan48KiBOfSharedMemory) {
  KernelSet set(Manifest::parse(kTestManifest, "test.manifest"), kTestPtx,
                "test.ptx");
  const int32_t n = 300;
  std::vector<float> in = iota(n, 1);
  DeviceBuffer din = DeviceBuffer::fromHost(in), dout(n * sizeof(float));
  Stream stream;
  dout.zeroAsync(stream);
  set.launch("fwp_test_shared_scale", blocksFor(n),
             {{"in", ArgValue::ptr(din)},
              {"out", ArgValue::ptr(dout)},
              {"scale", ArgValue::f64(0.5)},
              {"n", ArgValue::i32(n)},
              {"shared_floats", ArgValue::i32(int32_t(kSharedFloats))}},
             stream.handle());
  stream.synchronize();
  std::vector<float> out = dout.toHost<float>();
  for (int32_t i = 0; i < n; ++i)
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

TEST_F(CudaGpuTest, LoadsKernelSetFromDisk) {
  std::string base = tempPath("axpy");
  writeFile(base + ".ptx", kTestPtx);
  writeFile(base + ".manifest", kTestManifest);
  KernelSet set = KernelSet::load(base);
  EXPECT_EQ(set.module().sourceName(), base + ".ptx");
  std::vector<float> x = {1, 2}, y = {3, 4};
  DeviceBuffer dx = DeviceBuffer::fromHost(x), dy = DeviceBuffer::fromHost(y);
  set.launch("fwp_test_axpy", blocksFor(2),
             {{"x", ArgValue::ptr(dx)},
              {"y", ArgValue::ptr(dy)},
              {"a", ArgValue::f32(3)},
              {"n", ArgValue::i64(2)}});
  EXPECT_EQ(dy.toHost<float>(), (std::vector<float>{6, 10}));
  std::remove((base + ".ptx").c_str());
  std::remove((base + ".manifest").c_str());
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
  Manifest m = Manifest::parse(kTestManifest, "test.manifest");
  m.kernels[0].name = "fwp_not_there";
  std::string msg =
      messageOf<CudaError>([&] { KernelSet set(m, kTestPtx, "test.ptx"); });
  EXPECT_TRUE(contains(msg, "kernel 'fwp_not_there' not found in test.ptx"));
  EXPECT_TRUE(contains(msg, "cuModuleGetFunction failed"));
}

TEST_F(CudaGpuTest, LaunchChecksArgumentsFirst) {
  KernelSet set(Manifest::parse(kTestManifest, "test.manifest"), kTestPtx,
                "test.ptx");
  std::string msg = messageOf<LaunchError>(
      [&] { set.launch("fwp_test_axpy", blocksFor(1), {}); });
  EXPECT_TRUE(contains(msg, "argument 'x' (ptr) was not supplied"));
  EXPECT_TRUE(contains(messageOf<LaunchError>([&] { set.function("nope"); }),
                       "no kernel 'nope' in test.ptx"));
}

} // namespace
