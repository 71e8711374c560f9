//===- fwp-compile-bench.cpp - Where compile time goes, cold and warm -----===//
//
// For the description of `make demo` (CPU, f32, delta rule, heads=4,
// d_head=16, nu=2): the cold compile of each entry point at each LLVM
// optimisation level (disk cache off), the forward's run time with the code
// of each level, and the warm path (a new kernel finding the entry in the
// disk cache: what a second process pays). One table row per figure.
// Then, stage by stage (fwp-to-cpu's passes, LLVM's optimiser, code
// generation, linking), the default level's cold compile of the demo's
// description and of issue 28's yardstick (fwp-bench --shape
// 1024,2,128,4,2: d_model 128, 4 heads, nu 2).
//
//===----------------------------------------------------------------------===//

#include "fwp/JIT/JIT.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <random>
#include <unistd.h>
#include <vector>

using fwp::jit::EntryPoint;

namespace {

double now() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

fwp::jit::KernelDesc cpuDesc(int64_t heads, int64_t dHead, int64_t nu) {
  fwp::jit::KernelDesc desc;
  desc.heads = heads;
  desc.dHead = dHead;
  desc.nu = nu;
  return desc;
}

fwp::jit::KernelDesc demoDesc() { return cpuDesc(4, 16, 2); }

/// Each entry point's cold compile at the default level, stage by stage.
void printStages(const fwp::jit::KernelDesc &desc) {
  fmt::print("\nstages of a cold compile at O{}: {}\n| entry point | stage "
             "| seconds |\n|---|---|---|\n",
             fwp::jit::kDefaultCpuOptLevel, desc.str());
  for (EntryPoint entry : {EntryPoint::Forward, EntryPoint::Backward}) {
    std::string dir = fmt::format("/tmp/fwp-compile-bench-{}-stages", getpid());
    fwp::jit::StageTimes stages = fwp::jit::compileEntry(desc, entry, dir);
    std::filesystem::remove_all(dir);
    double total = 0;
    for (const auto &[stage, seconds] : stages) {
      fmt::print("| {} | {} | {:.3f} |\n", fwp::entryPointName(entry), stage,
                 seconds);
      total += seconds;
    }
    fmt::print("| {} | total | {:.3f} |\n", fwp::entryPointName(entry), total);
  }
}

/// Median milliseconds of the forward at T=1024, B=4.
double forwardMs(const fwp::jit::CompiledAttention &kernel) {
  int64_t T = 1024, B = 4, dm = kernel.desc().dModel(), h = kernel.desc().heads;
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0, 0.3f);
  auto random = [&](size_t n) {
    std::vector<float> v(n);
    for (float &x : v)
      x = normal(rng);
    return v;
  };
  auto x = random(T * B * dm), wq = random(dm * dm), wk = random(dm * dm),
       wv = random(dm * dm), wb = random(h * dm), wo = random(dm * dm),
       bo = random(dm);
  std::vector<float> y(x.size());
  std::vector<double> ms;
  for (int i = 0; i < 7; ++i) {
    double start = now();
    kernel.forward(T, B, x.data(), wq.data(), wk.data(), wv.data(), wb.data(),
                   wo.data(), bo.data(), y.data());
    ms.push_back((now() - start) * 1e3);
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

} // namespace

int main() {
  fwp::jit::KernelDesc desc = demoDesc();
  fmt::print("fwp-compile-bench: {}\n", desc.str());
  fmt::print("| opt level | forward compile (s) | backward compile (s) | "
             "forward T=1024 B=4 (ms) |\n|---|---|---|---|\n");
  for (int level = 0; level <= 3; ++level) {
    fwp::jit::CompileOptions options;
    options.useDiskCache = false;
    options.cpuOptLevel = level;
    auto forward = fwp::jit::compileUncached(desc, options);
    forward->prepare(EntryPoint::Forward);
    auto backward = fwp::jit::compileUncached(desc, options);
    backward->prepare(EntryPoint::Backward);
    fmt::print("| O{} | {:.2f} | {:.2f} | {:.2f} |\n", level,
               forward->compileSeconds(), backward->compileSeconds(),
               forwardMs(*forward));
  }

  std::string cache = fmt::format("/tmp/fwp-compile-bench-{}", getpid());
  fwp::jit::CompileOptions options;
  options.cacheDirectory = cache;
  auto cold = fwp::jit::compileUncached(desc, options);
  cold->prepare(EntryPoint::Forward);
  auto warm = fwp::jit::compileUncached(desc, options);
  warm->prepare(EntryPoint::Forward);
  fmt::print("\ndefault level O{}: cold forward (compile into the disk "
             "cache) {:.1f} ms; warm forward (a new kernel loading it) "
             "{:.2f} ms, {}\n",
             fwp::jit::kDefaultCpuOptLevel, cold->compileSeconds() * 1e3,
             warm->compileSeconds() * 1e3,
             warm->loadedFromDiskCache(EntryPoint::Forward) ? "a cache hit"
                                                            : "NOT a hit");
  std::filesystem::remove_all(cache);

  printStages(demoDesc());
  printStages(cpuDesc(4, 32, 2));
  return warm->loadedFromDiskCache(EntryPoint::Forward) ? 0 : 1;
}
