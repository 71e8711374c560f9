//===- CudaScanTest.cpp - The bare scan compiled for CUDA -----------------===//
//
// fwp::jit::compileScan for Backend::Cuda: what the Python package runs on
// CUDA tensors (fwp.delta_rule). Without a GPU: each entry point is
// compiled on its first use into a launch plan on tensor cores, kept in the
// disk cache and found there again; device calls on a CPU scan are refused.
// With one: forward and backward, on host buffers and on device buffers in
// a stream, against the float64 reference (fwp::ref::scan, scanBackward).
//
//===----------------------------------------------------------------------===//

#include "TestUtils.h"
#include "TestValues.h"

#include "fwp/JIT/Scan.h"
#include "fwp/Reference/Reference.h"
#include "fwp/Runtime/Cuda.h"
#include "fwp/Runtime/ElementType.h"
#include "fwp/Runtime/Plan.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace fs = std::filesystem;
using fwp::jit::Backend;
using fwp::jit::DType;
using fwp::jit::Rule;
using fwp::jit::ScanDesc;
using fwp::test::randomValues;
using fwp::test::relativeError;

namespace {

ScanDesc cudaScan(Rule rule, int64_t nu) {
  ScanDesc d;
  d.backend = Backend::Cuda;
  d.rule = rule;
  d.dtype = DType::F32;
  d.dInput = 16;
  d.dValue = 16;
  d.nu = nu;
  d.chunkSize = 16;
  d.initial = true;
  d.dFinalState = true;
  return d;
}

/// A fresh, empty directory for one test.
std::string freshDirectory(const std::string &name) {
  fs::path dir = fs::path(::testing::TempDir()) / ("fwp-cuda-scan-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

/// The entry directories under a disk cache.
std::vector<fs::path> cacheEntries(const std::string &cache) {
  std::vector<fs::path> entries;
  if (fs::exists(cache + "/v1"))
    for (const auto &entry : fs::directory_iterator(cache + "/v1"))
      entries.push_back(entry.path());
  return entries;
}

std::string readFile(const fs::path &path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(CudaScanTest, DescriptionNamesTheBackendAndChecksTheChip) {
  ScanDesc d = cudaScan(Rule::Delta, 1);
  EXPECT_EQ(d.str().rfind("scan cuda f32 delta d_in=16", 0), 0u) << d.str();
  d.chip = "sm_80";
  EXPECT_NE(d.str().find(" chip=sm_80"), std::string::npos) << d.str();
  d.gpuStages = true;
  EXPECT_NE(d.str().find(" gpu-stages"), std::string::npos) << d.str();
  d.chip = "gfx90a";
  EXPECT_THROW(d.validate(), std::invalid_argument);
  d.backend = Backend::Cpu;
  d.chip = "sm_90";
  EXPECT_THROW(d.validate(), std::invalid_argument);
}

TEST(CudaScanTest, CompilesEachEntryPointOnFirstUseWithoutAGpu) {
  std::string cache = freshDirectory("compile");
  ScanDesc d = cudaScan(Rule::Delta, 1);
  auto scan = fwp::jit::compileScanUncached(d, cache);
  EXPECT_TRUE(cacheEntries(cache).empty()) << "compiled before first use";
  scan->prepare();
  std::vector<fs::path> entries = cacheEntries(cache);
  ASSERT_EQ(entries.size(), 2u) << "one launch plan per entry point";
  for (const fs::path &entry : entries) {
    std::string plan = readFile(entry / "plan.fwp");
    EXPECT_NE(plan.find("launch"), std::string::npos) << entry;
    bool tensorCores = false;
    for (const std::string &module : fwp::rt::Plan::parse(plan, "p").modules)
      tensorCores |= readFile(entry / (module + ".ptx")).find("mma.sync") !=
                     std::string::npos;
    EXPECT_TRUE(tensorCores) << entry << ": no mma.sync in any kernel";
  }

  // A second scan of the same description finds both in the cache.
  fwp::jit::DiskCacheCounts before = fwp::jit::diskCacheCounts();
  fwp::jit::compileScanUncached(d, cache)->prepare();
  fwp::jit::DiskCacheCounts after = fwp::jit::diskCacheCounts();
  EXPECT_EQ(after.hits - before.hits, 2u);
  EXPECT_EQ(after.compilations, before.compilations);
}

TEST(CudaScanTest, CpuScanRefusesDeviceBuffers) {
  ScanDesc d = cudaScan(Rule::Sum, 1);
  d.backend = Backend::Cpu;
  d.dtype = DType::F64;
  auto scan = fwp::jit::compileScanUncached(d, "");
  float buffer[16] = {};
  try {
    scan->forwardOnDevice(1, 1, 1, buffer, buffer, buffer, nullptr, nullptr,
                          buffer, buffer, {});
    FAIL() << "a CPU scan ran on device buffers";
  } catch (const std::invalid_argument &e) {
    EXPECT_NE(std::string(e.what()).find("runs on host buffers"),
              std::string::npos)
        << e.what();
  }
}

/// `v` as a buffer of `dtype` (f32 or bf16) holds it.
double roundTo(DType dtype, double v) {
  float f = static_cast<float>(v);
  return dtype == DType::BF16 ? fwp::rt::fromBf16(fwp::rt::toBf16(f)) : f;
}

/// A device copy of `values` in `dtype` (f32 or bf16).
fwp::rt::DeviceBuffer upload(const std::vector<double> &values,
                             DType dtype = DType::F32) {
  if (dtype == DType::F32)
    return fwp::rt::DeviceBuffer::fromHost(
        std::vector<float>(values.begin(), values.end()));
  std::vector<uint16_t> bits;
  for (double v : values)
    bits.push_back(fwp::rt::toBf16(static_cast<float>(v)));
  return fwp::rt::DeviceBuffer::fromHost(bits);
}

std::vector<double> download(const fwp::rt::DeviceBuffer &buffer,
                             DType dtype = DType::F32) {
  if (dtype == DType::F32) {
    std::vector<float> values = buffer.toHost<float>();
    return std::vector<double>(values.begin(), values.end());
  }
  std::vector<double> values;
  for (uint16_t bits : buffer.toHost<uint16_t>())
    values.push_back(fwp::rt::fromBf16(bits));
  return values;
}

/// Forward and backward of a CUDA scan on device buffers, in a stream of
/// its own with a stream-ordered allocator as PyTorch would give, against
/// the float64 reference on DPFP features.
class CudaScanOnGpuTest : public ::testing::TestWithParam<Rule> {
protected:
  void SetUp() override {
    std::string why;
    if (!fwp::rt::cudaUsable(&why))
      GTEST_SKIP() << "no usable CUDA GPU: " << why;
  }
};

/// `d` (DPFP of order 1; f32 or bf16) on device buffers against the
/// reference on the inputs as stored.
void expectDeviceScanMatchesReference(const ScanDesc &d) {
  Rule rule = d.rule;
  auto scan = fwp::jit::compileScanUncached(d, "");
  const int64_t T = 37, B = 2, H = 3, D = 2 * d.dInput;
  size_t rows = T * B * H, states = B * H * d.dValue * D;
  auto values = [&](size_t n, uint64_t seed, double scale) {
    std::vector<double> v = randomValues(n, seed, scale);
    for (double &e : v)
      e = roundTo(d.dtype, e);
    return v;
  };
  std::vector<double> q = values(rows * d.dInput, 1, 1.0),
                      k = values(rows * d.dInput, 2, 1.0),
                      v = values(rows * d.dValue, 3, 1.0),
                      beta = randomValues(rows, 4, 3.0),
                      initial = values(states, 5, 0.5),
                      dy = values(rows * d.dValue, 6, 1.0);
  for (double &b : beta)
    b = roundTo(d.dtype, 1 / (1 + std::exp(-b)));
  if (rule == Rule::Sum)
    beta.clear();
  auto features = [&](const std::vector<double> &raw) {
    std::vector<double> out;
    for (size_t r = 0; r < rows; ++r) {
      std::vector<double> row(raw.begin() + r * d.dInput,
                              raw.begin() + (r + 1) * d.dInput);
      std::vector<double> phi = fwp::ref::dpfp(row, 1, d.eps);
      out.insert(out.end(), phi.begin(), phi.end());
    }
    return out;
  };
  fwp::ref::Rule refRule =
      rule == Rule::Delta ? fwp::ref::Rule::Delta : fwp::ref::Rule::Sum;
  fwp::ref::ScanShape shape{T, B, H, D, d.dValue};
  fwp::ref::ScanInputs in{features(q), features(k), v, beta, initial};
  fwp::ref::ScanOutputs ref = fwp::ref::scan(refRule, shape, in);
  fwp::ref::ScanGradients refGrad =
      fwp::ref::scanBackward(refRule, shape, in, dy, {});

  fwp::rt::Stream stream;
  std::vector<std::unique_ptr<fwp::rt::DeviceBuffer>> scratch;
  fwp::rt::DeviceCall call;
  call.stream = stream.handle();
  call.allocate = [&](size_t bytes) {
    scratch.push_back(std::make_unique<fwp::rt::DeviceBuffer>(bytes));
    return scratch.back()->ptr();
  };
  call.release = [](uint64_t) {}; // freed with `scratch`, after the sync
  auto ptr = [](const fwp::rt::DeviceBuffer &b) {
    return reinterpret_cast<void *>(b.ptr());
  };
  DType dtype = d.dtype;
  size_t bytes = fwp::rt::dtypeBytes(dtype);
  fwp::rt::DeviceBuffer dq_ = upload(q, dtype), dk_ = upload(k, dtype),
                        dv_ = upload(v, dtype), dbeta_ = upload(beta, dtype),
                        dinit = upload(initial, dtype), ddy = upload(dy, dtype),
                        y(rows * d.dValue * bytes), fin(states * bytes),
                        gq(q.size() * bytes), gk(k.size() * bytes),
                        gv(v.size() * bytes), gbeta(beta.size() * bytes),
                        ginit(states * bytes);
  void *betaPtr = rule == Rule::Delta ? ptr(dbeta_) : nullptr;
  scan->forwardOnDevice(T, B, H, ptr(dq_), ptr(dk_), ptr(dv_), betaPtr,
                        ptr(dinit), ptr(y), ptr(fin), call);
  // A null d_final_state is a zero one.
  scan->backwardOnDevice(T, B, H, ptr(dq_), ptr(dk_), ptr(dv_), betaPtr,
                         ptr(dinit), ptr(ddy), nullptr, ptr(gq), ptr(gk),
                         ptr(gv), rule == Rule::Delta ? ptr(gbeta) : nullptr,
                         ptr(ginit), call);
  stream.synchronize();

  auto rawGrad = [&](const std::vector<double> &raw,
                     const std::vector<double> &featureGrad) {
    std::vector<double> out;
    for (size_t r = 0; r < rows; ++r) {
      std::vector<double> row(raw.begin() + r * d.dInput,
                              raw.begin() + (r + 1) * d.dInput);
      std::vector<double> g(featureGrad.begin() + r * D,
                            featureGrad.begin() + (r + 1) * D);
      std::vector<double> dx = fwp::ref::dpfpBackward(row, g, 1, d.eps);
      out.insert(out.end(), dx.begin(), dx.end());
    }
    return out;
  };
  // f32 with the products in tf32x3 (about f32's accuracy); bf16 outputs
  // rounded once from f32, within 2^-8 of the largest more.
  double rounding = dtype == DType::BF16 ? 1.0 / 256 : 0;
  const double bound = rounding + 1e-5, gradBound = rounding + 1e-4;
  auto got = [&](const fwp::rt::DeviceBuffer &b) { return download(b, dtype); };
  EXPECT_LE(relativeError(got(y), ref.y), bound);
  EXPECT_LE(relativeError(got(fin), ref.finalState), bound);
  EXPECT_LE(relativeError(got(gq), rawGrad(q, refGrad.q)), gradBound);
  EXPECT_LE(relativeError(got(gk), rawGrad(k, refGrad.k)), gradBound);
  EXPECT_LE(relativeError(got(gv), refGrad.v), gradBound);
  if (rule == Rule::Delta)
    EXPECT_LE(relativeError(got(gbeta), refGrad.beta), gradBound);
  EXPECT_LE(relativeError(got(ginit), refGrad.initialState), gradBound);
}

TEST_P(CudaScanOnGpuTest, DeviceBuffersMatchReference) {
  expectDeviceScanMatchesReference(cudaScan(GetParam(), 1));
}

/// The scan as the chunk operations' kernels (ScanDesc::gpuStages).
TEST_P(CudaScanOnGpuTest, StageKernelsMatchReference) {
  ScanDesc d = cudaScan(GetParam(), 1);
  d.gpuStages = true;
  expectDeviceScanMatchesReference(d);
}

/// bf16 storage, f32 arithmetic: tile-scan's kernels and the stages'.
TEST_P(CudaScanOnGpuTest, Bfloat16StorageMatchesReference) {
  for (bool stages : {false, true}) {
    SCOPED_TRACE(stages ? "stage kernels" : "tile-scan");
    ScanDesc d = cudaScan(GetParam(), 1);
    d.dtype = DType::BF16;
    d.gpuStages = stages;
    expectDeviceScanMatchesReference(d);
  }
}

/// Scratch from the caller's allocator at an address the kernels' 16-byte
/// copies cannot take is refused, and given back.
TEST_P(CudaScanOnGpuTest, MisalignedScratchIsRefused) {
  ScanDesc d = cudaScan(GetParam(), 1);
  auto scan = fwp::jit::compileScanUncached(d, "");
  const int64_t T = 5, B = 1, H = 1;
  size_t rows = T * B * H, states = B * H * d.dValue * 2 * d.dInput;
  fwp::rt::Stream stream;
  std::vector<std::unique_ptr<fwp::rt::DeviceBuffer>> scratch;
  std::vector<uint64_t> released;
  fwp::rt::DeviceCall call;
  call.stream = stream.handle();
  call.allocate = [&](size_t bytes) {
    scratch.push_back(std::make_unique<fwp::rt::DeviceBuffer>(bytes + 16));
    return scratch.back()->ptr() + 4;
  };
  call.release = [&](uint64_t ptr) { released.push_back(ptr); };
  fwp::rt::DeviceBuffer q(rows * d.dInput * 4), k(rows * d.dInput * 4),
      v(rows * d.dValue * 4), beta(rows * 4), initial(states * 4),
      y(rows * d.dValue * 4), final(states * 4);
  auto ptr = [](const fwp::rt::DeviceBuffer &b) {
    return reinterpret_cast<void *>(b.ptr());
  };
  try {
    scan->forwardOnDevice(T, B, H, ptr(q), ptr(k), ptr(v), ptr(beta),
                          ptr(initial), ptr(y), ptr(final), call);
    FAIL() << "misaligned scratch was taken";
  } catch (const std::exception &e) {
    EXPECT_NE(std::string(e.what()).find("not aligned to 16 bytes"),
              std::string::npos)
        << e.what();
  }
  stream.synchronize();
  ASSERT_FALSE(scratch.empty());
  EXPECT_EQ(released.size(), scratch.size());
}

INSTANTIATE_TEST_SUITE_P(Rules, CudaScanOnGpuTest,
                         ::testing::Values(Rule::Delta, Rule::Sum),
                         [](const auto &info) {
                           return fwp::ruleName(info.param);
                         });

} // namespace
