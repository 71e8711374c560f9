//===- DiskCacheTest.cpp - Compiled entry points kept on disk -------------===//
//
// The disk cache against what users do to it: a second process (a fresh
// kernel) finds what the first compiled, many writers at once, entries that
// are truncated, corrupt or foreign, a directory that cannot be written; and
// its key, which must change with everything that changes the code. Every
// kernel's output is checked against the float64 reference.
//
//===----------------------------------------------------------------------===//

#include "fwp/JIT/JIT.h"
#include "fwp/JIT/Scan.h"
#include "fwp/Reference/Reference.h"
#include "fwp/Runtime/ModuleInfo.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>
#include <unistd.h>

namespace fs = std::filesystem;
using fwp::jit::CompileOptions;
using fwp::jit::EntryPoint;
using fwp::jit::KernelDesc;

namespace {

KernelDesc smallDesc() {
  KernelDesc d;
  d.heads = 2;
  d.dHead = 4;
  d.nu = 1;
  d.chunkSize = 4;
  return d;
}

/// A fresh, empty cache directory of this test.
fs::path freshCache(const std::string &name) {
  fs::path dir = fs::path(::testing::TempDir()) /
                 ("fwp-cache-" + name + "-" + std::to_string(getpid()));
  fs::remove_all(dir);
  return dir;
}

CompileOptions inCache(const fs::path &dir) {
  CompileOptions options;
  options.cacheDirectory = dir.string();
  return options;
}

/// Runs the forward of a kernel made with `options` on random inputs and
/// returns its largest error relative to the float64 reference.
double forwardError(const KernelDesc &desc, const CompileOptions &options) {
  auto kernel = fwp::jit::compileUncached(desc, options);
  int64_t T = 7, B = 2, dm = desc.dModel();
  std::mt19937 rng(5);
  std::normal_distribution<double> normal(0, 0.5);
  auto random = [&](size_t n) {
    std::vector<double> v(n);
    for (double &x : v)
      x = normal(rng);
    return v;
  };
  std::vector<double> x = random(T * B * dm);
  fwp::ref::AttentionParams p{random(dm * dm), random(dm * dm),
                              random(dm * dm), random(desc.heads * dm),
                              random(dm * dm), random(dm)};
  auto f32 = [](const std::vector<double> &v) {
    return std::vector<float>(v.begin(), v.end());
  };
  std::vector<float> y(T * B * dm);
  kernel->forward(T, B, f32(x).data(), f32(p.wQ).data(), f32(p.wK).data(),
                  f32(p.wV).data(), f32(p.wBeta).data(), f32(p.wO).data(),
                  f32(p.bO).data(), y.data());
  fwp::ref::AttentionConfig config{desc.heads, desc.nu, desc.eps};
  std::vector<double> expected =
      fwp::ref::attention(config, {T, B, dm}, x, p).y;
  double scale = 0, error = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    scale = std::max(scale, std::abs(expected[i]));
    error = std::max(error, std::abs(y[i] - expected[i]));
  }
  return error / scale;
}

/// The only entry directory of a cache.
fs::path onlyEntry(const fs::path &cache) {
  std::vector<fs::path> entries;
  for (const auto &e : fs::directory_iterator(cache / "v1"))
    if (e.path().filename().string()[0] != '.')
      entries.push_back(e.path());
  EXPECT_EQ(entries.size(), 1u);
  return entries.empty() ? fs::path() : entries[0];
}

TEST(DiskCacheTest, ASecondKernelLoadsWhatTheFirstCompiled) {
  fs::path cache = freshCache("reuse");
  KernelDesc desc = smallDesc();
  auto before = fwp::jit::diskCacheCounts();
  EXPECT_LT(forwardError(desc, inCache(cache)), 1e-5);
  auto first = fwp::jit::diskCacheCounts();
  EXPECT_EQ(first.compilations, before.compilations + 1);
  EXPECT_LT(forwardError(desc, inCache(cache)), 1e-5);
  auto second = fwp::jit::diskCacheCounts();
  EXPECT_EQ(second.compilations, first.compilations);
  EXPECT_EQ(second.hits, first.hits + 1);
  // Only what ran was compiled: the forward.
  fwp::rt::ModuleInfo info = fwp::rt::readModuleInfo(onlyEntry(cache));
  EXPECT_EQ(info.entry, EntryPoint::Forward);
}

/// y of `scan` on random inputs, relative to the float64 reference.
double scanError(const fwp::jit::CompiledScan &scan) {
  const auto &d = scan.desc();
  int64_t T = 9, B = 2, H = 2;
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> unit(0, 1);
  auto random = [&](size_t n) {
    std::vector<double> v(n);
    for (double &x : v)
      x = unit(rng) / static_cast<double>(d.dInput);
    return v;
  };
  size_t rows = T * B * H;
  fwp::ref::ScanInputs in{random(rows * d.dInput),
                          random(rows * d.dInput),
                          random(rows * d.dValue),
                          random(rows),
                          {}};
  std::vector<double> y(rows * d.dValue), state(B * H * d.dValue * d.dInput);
  scan.forward(T, B, H, in.q.data(), in.k.data(), in.v.data(), in.beta.data(),
               nullptr, y.data(), state.data());
  std::vector<double> expected =
      fwp::ref::scan(fwp::ref::Rule::Delta, {T, B, H, d.dInput, d.dValue}, in)
          .y;
  double scale = 0, error = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    scale = std::max(scale, std::abs(expected[i]));
    error = std::max(error, std::abs(y[i] - expected[i]));
  }
  return error / scale;
}

TEST(DiskCacheTest, ASecondScanLoadsWhatTheFirstCompiled) {
  fs::path cache = freshCache("scan");
  fwp::jit::ScanDesc desc;
  desc.dInput = 4;
  desc.dValue = 3;
  desc.chunkSize = 4;
  auto first = fwp::jit::compileScanUncached(desc, cache.string());
  EXPECT_FALSE(first->fromDiskCache);
  EXPECT_LT(scanError(*first), 1e-12);
  auto second = fwp::jit::compileScanUncached(desc, cache.string());
  EXPECT_TRUE(second->fromDiskCache);
  EXPECT_LT(scanError(*second), 1e-12);
  fwp::rt::ModuleInfo info = fwp::rt::readModuleInfo(onlyEntry(cache));
  EXPECT_EQ(info.key.rfind(desc.str() + " target=", 0), 0u) << info.key;
  // Another description is another entry.
  desc.dValue = 5;
  EXPECT_FALSE(
      fwp::jit::compileScanUncached(desc, cache.string())->fromDiskCache);
}

TEST(DiskCacheTest, ConcurrentWritersLeaveOneValidEntry) {
  fs::path cache = freshCache("concurrent");
  std::vector<double> errors(6);
  std::vector<std::thread> threads;
  for (double &error : errors)
    threads.emplace_back(
        [&] { error = forwardError(smallDesc(), inCache(cache)); });
  for (std::thread &t : threads)
    t.join();
  for (double error : errors)
    EXPECT_LT(error, 1e-5);
  fwp::rt::readModuleInfo(onlyEntry(cache)); // verifies every file
}

void expectRecompiledAfter(const std::string &name,
                           const std::function<void(const fs::path &)> &harm) {
  fs::path cache = freshCache(name);
  ASSERT_LT(forwardError(smallDesc(), inCache(cache)), 1e-5);
  harm(onlyEntry(cache));
  auto before = fwp::jit::diskCacheCounts();
  EXPECT_LT(forwardError(smallDesc(), inCache(cache)), 1e-5);
  auto after = fwp::jit::diskCacheCounts();
  EXPECT_EQ(after.rejected, before.rejected + 1);
  EXPECT_EQ(after.compilations, before.compilations + 1);
  fwp::rt::readModuleInfo(onlyEntry(cache)); // replaced by a valid entry
}

/// Replaces `file` by `edit` of its bytes. A new file, not a write in
/// place: this process still has the old one mapped (dlopen), as another
/// process that harmed the cache would not.
void replaceFile(const fs::path &file,
                 const std::function<void(std::string &)> &edit) {
  std::ifstream in(file, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)),
                    std::istreambuf_iterator<char>());
  edit(bytes);
  fs::path next = file.string() + ".new";
  std::ofstream(next, std::ios::binary) << bytes;
  fs::rename(next, file);
}

TEST(DiskCacheTest, TruncatedEntryIsRecompiled) {
  expectRecompiledAfter("truncated", [](const fs::path &entry) {
    replaceFile(entry / "kernel.so",
                [](std::string &b) { b.resize(b.size() / 2); });
  });
}

TEST(DiskCacheTest, CorruptEntryIsRecompiled) {
  expectRecompiledAfter("corrupt", [](const fs::path &entry) {
    replaceFile(entry / "kernel.so", [](std::string &b) { b[100] ^= 0x5a; });
  });
}

TEST(DiskCacheTest, ForeignEntryIsRecompiled) {
  expectRecompiledAfter("foreign", [](const fs::path &entry) {
    fwp::rt::ModuleInfo info = fwp::rt::readModuleInfo(entry);
    info.key = "cpu f64 sum heads=9";
    std::ofstream(entry / "module.txt") << info.str();
  });
}

TEST(DiskCacheTest, MissingManifestIsRecompiled) {
  expectRecompiledAfter("manifest", [](const fs::path &entry) {
    fs::remove(entry / "module.txt");
  });
}

TEST(DiskCacheTest, UnwritableDirectoryWarnsAndStillRuns) {
  if (geteuid() == 0)
    GTEST_SKIP() << "running as root: permissions do not stop root's writes";
  fs::path cache = freshCache("readonly");
  fs::create_directories(cache);
  fs::permissions(cache, fs::perms::owner_read | fs::perms::owner_exec);
  EXPECT_LT(forwardError(smallDesc(), inCache(cache)), 1e-5);
  fs::permissions(cache, fs::perms::owner_all);
}

TEST(DiskCacheTest, CacheUnderAFileStillRuns) {
  // The same failure as a read-only directory, also for root: the cache's
  // parent is a plain file, so nothing can be created under it.
  fs::path file = freshCache("file");
  std::ofstream(file) << "not a directory";
  EXPECT_LT(forwardError(smallDesc(), inCache(file / "cache")), 1e-5);
  fs::remove(file);
}

TEST(DiskCacheTest, OffCompilesEveryTime) {
  CompileOptions off;
  off.useDiskCache = false;
  auto before = fwp::jit::diskCacheCounts();
  EXPECT_LT(forwardError(smallDesc(), off), 1e-5);
  EXPECT_LT(forwardError(smallDesc(), off), 1e-5);
  EXPECT_EQ(fwp::jit::diskCacheCounts().compilations, before.compilations + 2);
}

TEST(DiskCacheTest, KeyChangesWithEveryFieldAndTheChip) {
  KernelDesc base = smallDesc();
  std::string key = fwp::jit::cacheKey(base, EntryPoint::Forward);
  EXPECT_EQ(fwp::jit::cacheKey(base, EntryPoint::Forward), key);
  std::vector<std::function<void(KernelDesc &)>> changes = {
      [](KernelDesc &d) { d.rule = fwp::jit::Rule::Sum; },
      [](KernelDesc &d) { d.nu = 2; },
      [](KernelDesc &d) { d.eps = 1e-5; },
      [](KernelDesc &d) { d.heads = 4; },
      [](KernelDesc &d) { d.dHead = 8; },
      [](KernelDesc &d) { d.dtype = fwp::jit::DType::F64; },
      [](KernelDesc &d) { d.chunkSize = 8; },
      [](KernelDesc &d) { d.backend = fwp::jit::Backend::Cuda; },
  };
  for (auto &change : changes) {
    KernelDesc d = base;
    change(d);
    EXPECT_NE(fwp::jit::cacheKey(d, EntryPoint::Forward), key) << d.str();
  }
  EXPECT_NE(fwp::jit::cacheKey(base, EntryPoint::Backward), key);
  CompileOptions o0;
  o0.cpuOptLevel = 0;
  EXPECT_NE(fwp::jit::cacheKey(base, EntryPoint::Forward, o0), key);
  KernelDesc sm90 = base, sm80 = base;
  sm90.backend = sm80.backend = fwp::jit::Backend::Cuda;
  sm80.chip = "sm_80";
  EXPECT_NE(fwp::jit::cacheKey(sm80, EntryPoint::Forward),
            fwp::jit::cacheKey(sm90, EntryPoint::Forward));
  // The key names the compiler that made the code.
  EXPECT_NE(key.find(fwp::jit::compilerBuildId()), std::string::npos);
}

} // namespace
