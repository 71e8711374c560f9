//===- RuntimeOnlyTest.cpp - Compiled entry points run by fwp-exec --------===//
//
// The runtime-only path: entry points compiled by the JIT into a cache
// directory are run by fwp-exec, a program that links neither MLIR nor LLVM,
// forward and backward, and checked against the float64 reference.
//
//===----------------------------------------------------------------------===//

#include "fwp/JIT/JIT.h"
#include "fwp/Reference/Reference.h"
#include "fwp/Support/Npy.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>
#include <unistd.h>

namespace fs = std::filesystem;
using fwp::jit::EntryPoint;

namespace {

std::string output(const std::string &command) {
  std::string text;
  FILE *pipe = popen(command.c_str(), "r");
  char buffer[512];
  while (pipe && fgets(buffer, sizeof buffer, pipe))
    text += buffer;
  if (pipe)
    pclose(pipe);
  return text;
}

TEST(RuntimeOnlyTest, FwpExecLinksNeitherMlirNorLlvm) {
  std::string libraries = output("ldd " FWP_EXEC_PATH " 2>&1");
  ASSERT_NE(libraries.find("libc.so"), std::string::npos) << libraries;
  EXPECT_EQ(libraries.find("libMLIR"), std::string::npos) << libraries;
  EXPECT_EQ(libraries.find("libLLVM"), std::string::npos) << libraries;
}

/// The directory of the one entry in a fresh cache.
fs::path entryDir(const fs::path &cache) {
  for (const auto &e : fs::directory_iterator(cache / "v1"))
    if (e.path().filename().string()[0] != '.')
      return e.path();
  return {};
}

void save(const fs::path &dir, const std::string &name,
          const std::vector<int64_t> &shape, const std::vector<double> &v) {
  fwp::npy::write((dir / (name + ".npy")).string(),
                  {shape, fwp::rt::DType::F32, v});
}

double relativeError(const std::vector<double> &got,
                     const std::vector<double> &expected) {
  double scale = 0, error = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    scale = std::max(scale, std::abs(expected[i]));
    error = std::max(error, std::abs(got[i] - expected[i]));
  }
  return error / std::max(scale, 1e-30);
}

TEST(RuntimeOnlyTest, ForwardAndBackwardMatchTheReference) {
  fwp::jit::KernelDesc desc;
  desc.heads = 2;
  desc.dHead = 4;
  desc.nu = 2;
  desc.chunkSize = 4;
  int64_t T = 9, B = 2, dm = desc.dModel(), H = desc.heads;
  fs::path root = fs::path(::testing::TempDir()) /
                  ("fwp-runtime-only-" + std::to_string(getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "in");

  std::mt19937 rng(11);
  std::normal_distribution<double> normal(0, 0.5);
  auto random = [&](size_t n) {
    std::vector<double> v(n);
    for (double &x : v)
      x = static_cast<float>(normal(rng)); // exact in the f32 inputs
    return v;
  };
  std::vector<double> x = random(T * B * dm), dy = random(T * B * dm);
  fwp::ref::AttentionParams p{random(dm * dm), random(dm * dm), random(dm * dm),
                              random(H * dm),  random(dm * dm), random(dm)};
  std::vector<int64_t> steps = {T, B, dm}, square = {dm, dm};
  save(root / "in", "x", steps, x);
  save(root / "in", "dy", steps, dy);
  save(root / "in", "w_q", square, p.wQ);
  save(root / "in", "w_k", square, p.wK);
  save(root / "in", "w_v", square, p.wV);
  save(root / "in", "w_beta", {H, dm}, p.wBeta);
  save(root / "in", "w_o", square, p.wO);
  save(root / "in", "b_o", {dm}, p.bO);
  fwp::ref::AttentionConfig config{H, desc.nu, desc.eps};
  auto y = fwp::ref::attention(config, {T, B, dm}, x, p).y;
  auto g = fwp::ref::attentionBackward(config, {T, B, dm}, x, p, dy);

  for (EntryPoint entry : {EntryPoint::Forward, EntryPoint::Backward}) {
    std::string name = fwp::rt::entryPointName(entry);
    fs::path cache = root / ("cache-" + name);
    fwp::jit::CompileOptions options;
    options.cacheDirectory = cache.string();
    fwp::jit::compileUncached(desc, options)->prepare(entry);
    fs::path out = root / ("out-" + name);
    std::string command = std::string(FWP_EXEC_PATH) + " " +
                          entryDir(cache).string() + " " +
                          (root / "in").string() + " " + out.string() + " 2>&1";
    std::string log = output(command);
    SCOPED_TRACE(command + "\n" + log);
    auto read = [&](const char *file) {
      return fwp::npy::read((out / file).string()).values;
    };
    if (entry == EntryPoint::Forward) {
      EXPECT_LT(relativeError(read("y.npy"), y), 1e-5);
      continue;
    }
    EXPECT_LT(relativeError(read("dx.npy"), g.x), 1e-4);
    EXPECT_LT(relativeError(read("dw_q.npy"), g.wQ), 1e-4);
    EXPECT_LT(relativeError(read("dw_k.npy"), g.wK), 1e-4);
    EXPECT_LT(relativeError(read("dw_v.npy"), g.wV), 1e-4);
    EXPECT_LT(relativeError(read("dw_beta.npy"), g.wBeta), 1e-4);
    EXPECT_LT(relativeError(read("dw_o.npy"), g.wO), 1e-4);
    EXPECT_LT(relativeError(read("db_o.npy"), g.bO), 1e-4);
  }
  fs::remove_all(root);
}

TEST(RuntimeOnlyTest, FwpExecRefusesAMissingModule) {
  std::string log = output(std::string(FWP_EXEC_PATH) +
                           " /nonexistent/module /tmp /tmp 2>&1; echo rc=$?");
  EXPECT_NE(log.find("fwp-exec: "), std::string::npos) << log;
  EXPECT_NE(log.find("module.txt"), std::string::npos) << log;
  EXPECT_NE(log.find("rc=2"), std::string::npos) << log;
}

} // namespace
