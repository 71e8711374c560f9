//===- JIT.cpp - compile(), its caches, and CompiledAttention -------------===//
//
// Two caches: kernels by description in this process (compile()), and each
// kernel's entry points on disk across processes (DiskCache.h). An entry
// point is prepared on its first use: found on disk and loaded through the
// runtime, or compiled into the disk cache first.
//
//===----------------------------------------------------------------------===//

#include "CallChecks.h"
#include "DiskCache.h"
#include "Kernel.h"

#include "fwp/Runtime/AttentionEntry.h"
#include "fwp/Runtime/Plan.h"

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <stdexcept>

namespace fwp::jit {

namespace {

using KernelPtr = std::shared_ptr<const CompiledAttention>;

std::atomic<std::size_t> compilations{0};

/// Kernels by KernelDesc::str(). A shared_future per entry lets every
/// request for a description that is being compiled wait for that one
/// compilation, without holding the mutex while it runs.
struct Cache {
  std::mutex mutex;
  std::map<std::string, std::shared_future<KernelPtr>> entries;
};

Cache &cache() {
  // Never destroyed, on purpose: kernels are used until the process ends,
  // and destroying execution engines during static destruction could run
  // after LLVM's own statics are gone.
  static Cache *instance = new Cache;
  return *instance;
}

/// The PTX modules and launch plan of a CUDA entry point's directory.
void readDeviceCode(const std::string &dir, std::string &plan,
                    std::map<std::string, std::string> &ptx) {
  plan = rt::readTextFile(dir + "/plan.fwp");
  for (const std::string &module : rt::Plan::parse(plan, dir).modules)
    ptx[module] = rt::readTextFile(fmt::format("{}/{}.ptx", dir, module));
}

/// Refusals that need no compilation; they are never cached.
void checkCompilable(const KernelDesc &desc) { desc.validate(); }

} // namespace

//===----------------------------------------------------------------------===//
// CompiledAttention
//===----------------------------------------------------------------------===//

struct CompiledAttention::Impl {
  Impl(const KernelDesc &desc, const CompileOptions &options)
      : desc(desc), options(options) {}

  /// One entry point, prepared once.
  struct Slot {
    std::mutex mutex;
    std::unique_ptr<const rt::AttentionEntry> entry;
    bool fromDiskCache = false;
    std::string plan;                       // CUDA: the launch plan's text
    std::map<std::string, std::string> ptx; // CUDA: module -> PTX
  };

  Slot &slot(EntryPoint entry) const {
    return slots[entry == EntryPoint::Forward ? 0 : 1];
  }

  /// The entry point, compiled or loaded on the first call.
  const rt::AttentionEntry &prepare(EntryPoint entry) const {
    Slot &s = slot(entry);
    std::lock_guard<std::mutex> lock(s.mutex);
    if (!s.entry)
      load(entry, s);
    return *s.entry;
  }

  void load(EntryPoint entry, Slot &s) const {
    auto start = std::chrono::steady_clock::now();
    std::string key = cacheKey(desc, entry, options);
    CompileOptions entryOptions = options;
    if (!options.dumpDirectory.empty())
      entryOptions.dumpDirectory +=
          std::string("/") + rt::entryPointName(entry);
    auto compileInto = [&](const std::string &dir) {
      if (desc.backend == Backend::Cpu)
        compileCpuEntry(desc, entry, key, dir, entryOptions);
      else
        compileCudaEntry(desc, entry, key, dir, entryOptions);
    };
    std::unique_ptr<const rt::AttentionEntry> loaded;
    auto loadFrom = [&](const std::string &dir) {
      loaded = rt::AttentionEntry::load(dir);
      if (desc.backend == Backend::Cuda)
        readDeviceCode(dir, s.plan, s.ptx);
    };
    CachedEntry where =
        findOrCompile(cacheDirectory(), key, compileInto, loadFrom);
    if (where.temporary)
      removeTree(where.dir);
    s.entry = std::move(loaded);
    s.fromDiskCache = where.hit;
    std::lock_guard<std::mutex> lock(secondsMutex);
    compileSeconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
  }

  /// Empty when the disk cache is off, or when dumping IR (which needs a
  /// compilation).
  std::string cacheDirectory() const {
    if (!options.useDiskCache || !options.dumpDirectory.empty())
      return "";
    return options.cacheDirectory.empty() ? cacheDirectoryFromEnvironment()
                                          : options.cacheDirectory;
  }

  KernelDesc desc;
  CompileOptions options;
  mutable Slot slots[2];
  mutable std::mutex secondsMutex;
  mutable double compileSeconds = 0;
};

CompiledAttention::CompiledAttention(std::unique_ptr<Impl> impl)
    : impl(std::move(impl)) {}

CompiledAttention::~CompiledAttention() = default;

const KernelDesc &CompiledAttention::desc() const { return impl->desc; }

void CompiledAttention::prepare(EntryPoint entry) const {
  impl->prepare(entry);
}

void CompiledAttention::prepareAll() const {
  // Each entry point has its own lock and its own compiler (an MLIR and an
  // LLVM context of its own), so the two run side by side.
  std::future<void> backward = std::async(
      std::launch::async, [this] { impl->prepare(EntryPoint::Backward); });
  std::exception_ptr forwardError;
  try {
    impl->prepare(EntryPoint::Forward);
  } catch (...) {
    forwardError = std::current_exception();
  }
  backward.wait();
  if (forwardError)
    std::rethrow_exception(forwardError);
  backward.get();
}

bool CompiledAttention::loadedFromDiskCache(EntryPoint entry) const {
  Impl::Slot &s = impl->slot(entry);
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.entry && s.fromDiskCache;
}

CompiledAttention::DeviceCode CompiledAttention::deviceCode() const {
  if (impl->desc.backend != Backend::Cuda)
    return {};
  DeviceCode code;
  for (EntryPoint entry : {EntryPoint::Forward, EntryPoint::Backward}) {
    impl->prepare(entry);
    Impl::Slot &s = impl->slot(entry);
    std::lock_guard<std::mutex> lock(s.mutex);
    bool forward = entry == EntryPoint::Forward;
    (forward ? code.forwardPlan : code.backwardPlan) = s.plan;
    (forward ? code.forwardPtx : code.backwardPtx) = s.ptx;
  }
  return code;
}

double CompiledAttention::compileSeconds() const {
  std::lock_guard<std::mutex> lock(impl->secondsMutex);
  return impl->compileSeconds;
}

void CompiledAttention::forward(int64_t seqLen, int64_t batch, const void *x,
                                const void *wQ, const void *wK, const void *wV,
                                const void *wBeta, const void *wO,
                                const void *bO, void *y) const {
  if (!checkForward("forward", impl->desc, seqLen, batch, x, wQ, wK, wV, wBeta,
                    wO, bO, y))
    return;
  impl->prepare(EntryPoint::Forward)
      .run(seqLen, batch, {x, wQ, wK, wV, wBeta, wO, bO}, {y});
}

void CompiledAttention::forward(int64_t seqLen, int64_t batch, const float *x,
                                const float *wQ, const float *wK,
                                const float *wV, const float *wBeta,
                                const float *wO, const float *bO,
                                float *y) const {
  checkDType("forward", impl->desc, DType::F32);
  forward(seqLen, batch, static_cast<const void *>(x), wQ, wK, wV, wBeta, wO,
          bO, static_cast<void *>(y));
}

void CompiledAttention::forward(int64_t seqLen, int64_t batch, const double *x,
                                const double *wQ, const double *wK,
                                const double *wV, const double *wBeta,
                                const double *wO, const double *bO,
                                double *y) const {
  checkDType("forward", impl->desc, DType::F64);
  forward(seqLen, batch, static_cast<const void *>(x), wQ, wK, wV, wBeta, wO,
          bO, static_cast<void *>(y));
}

void CompiledAttention::backward(int64_t seqLen, int64_t batch, const void *x,
                                 const void *wQ, const void *wK, const void *wV,
                                 const void *wBeta, const void *wO,
                                 const void *bO, const void *dy, void *dx,
                                 void *dwQ, void *dwK, void *dwV, void *dwBeta,
                                 void *dwO, void *dbO) const {
  if (!checkBackward(
          "backward", impl->desc, seqLen, batch, x, wQ, wK, wV, wBeta, wO, bO,
          dy, dx, dwQ, dwK, dwV, dwBeta, dwO, dbO,
          [](void *buffer, size_t bytes) { std::memset(buffer, 0, bytes); }))
    return;
  impl->prepare(EntryPoint::Backward)
      .run(seqLen, batch, {x, wQ, wK, wV, wBeta, wO, bO, dy},
           {dx, dwQ, dwK, dwV, dwBeta, dwO, dbO});
}

void CompiledAttention::backward(int64_t seqLen, int64_t batch, const float *x,
                                 const float *wQ, const float *wK,
                                 const float *wV, const float *wBeta,
                                 const float *wO, const float *bO,
                                 const float *dy, float *dx, float *dwQ,
                                 float *dwK, float *dwV, float *dwBeta,
                                 float *dwO, float *dbO) const {
  checkDType("backward", impl->desc, DType::F32);
  backward(seqLen, batch, static_cast<const void *>(x), wQ, wK, wV, wBeta, wO,
           bO, dy, static_cast<void *>(dx), dwQ, dwK, dwV, dwBeta, dwO, dbO);
}

void CompiledAttention::backward(int64_t seqLen, int64_t batch, const double *x,
                                 const double *wQ, const double *wK,
                                 const double *wV, const double *wBeta,
                                 const double *wO, const double *bO,
                                 const double *dy, double *dx, double *dwQ,
                                 double *dwK, double *dwV, double *dwBeta,
                                 double *dwO, double *dbO) const {
  checkDType("backward", impl->desc, DType::F64);
  backward(seqLen, batch, static_cast<const void *>(x), wQ, wK, wV, wBeta, wO,
           bO, dy, static_cast<void *>(dx), dwQ, dwK, dwV, dwBeta, dwO, dbO);
}

namespace {

uint64_t address(const void *p) { return reinterpret_cast<uint64_t>(p); }

void requireCuda(const char *call, const KernelDesc &desc) {
  if (desc.backend != Backend::Cuda)
    throw std::invalid_argument(std::string(call) + ": " + desc.str() +
                                " runs on host buffers, not device ones");
}

} // namespace

void CompiledAttention::forwardOnDevice(int64_t seqLen, int64_t batch,
                                        const void *x, const void *wQ,
                                        const void *wK, const void *wV,
                                        const void *wBeta, const void *wO,
                                        const void *bO, void *y,
                                        const rt::DeviceCall &call) const {
  const char *what = "forward on the device";
  requireCuda(what, impl->desc);
  if (!checkForward(what, impl->desc, seqLen, batch, x, wQ, wK, wV, wBeta, wO,
                    bO, y))
    return;
  impl->prepare(EntryPoint::Forward)
      .runOnDevice(seqLen, batch,
                   {address(x), address(wQ), address(wK), address(wV),
                    address(wBeta), address(wO), address(bO)},
                   {address(y)}, call);
}

void CompiledAttention::backwardOnDevice(
    int64_t seqLen, int64_t batch, const void *x, const void *wQ,
    const void *wK, const void *wV, const void *wBeta, const void *wO,
    const void *bO, const void *dy, void *dx, void *dwQ, void *dwK, void *dwV,
    void *dwBeta, void *dwO, void *dbO, const rt::DeviceCall &call) const {
  const char *what = "backward on the device";
  requireCuda(what, impl->desc);
  if (!checkBackward(what, impl->desc, seqLen, batch, x, wQ, wK, wV, wBeta, wO,
                     bO, dy, dx, dwQ, dwK, dwV, dwBeta, dwO, dbO,
                     [&](void *buffer, size_t bytes) {
                       rt::copyOrZeroOnDevice(call, address(buffer), 0, bytes);
                     }))
    return;
  impl->prepare(EntryPoint::Backward)
      .runOnDevice(seqLen, batch,
                   {address(x), address(wQ), address(wK), address(wV),
                    address(wBeta), address(wO), address(bO), address(dy)},
                   {address(dx), address(dwQ), address(dwK), address(dwV),
                    address(dwBeta), address(dwO), address(dbO)},
                   call);
}

//===----------------------------------------------------------------------===//
// compile
//===----------------------------------------------------------------------===//

std::shared_ptr<const CompiledAttention>
compileUncached(const KernelDesc &desc, const CompileOptions &options) {
  checkCompilable(desc);
  ++compilations;
  // The constructor is private: make_shared cannot reach it.
  return KernelPtr(new CompiledAttention(
      std::make_unique<CompiledAttention::Impl>(desc, options)));
}

std::shared_ptr<const CompiledAttention> compile(const KernelDesc &desc) {
  checkCompilable(desc);
  const std::string key = desc.str();
  Cache &c = cache();
  std::unique_lock<std::mutex> lock(c.mutex);
  auto [it, inserted] = c.entries.try_emplace(key);
  if (!inserted) {
    std::shared_future<KernelPtr> pending = it->second;
    lock.unlock();
    return pending.get(); // rethrows the compilation's error, if any
  }
  std::promise<KernelPtr> promise;
  it->second = promise.get_future().share();
  lock.unlock();

  try {
    KernelPtr kernel = compileUncached(desc);
    promise.set_value(kernel);
    return kernel;
  } catch (...) {
    // Forget the failure before publishing it, so that a request arriving
    // after the waiters were woken compiles again.
    {
      std::lock_guard<std::mutex> relock(c.mutex);
      c.entries.erase(key);
    }
    promise.set_exception(std::current_exception());
    throw;
  }
}

StageTimes compileEntry(const KernelDesc &desc, EntryPoint entry,
                        const std::string &dir, const CompileOptions &options) {
  checkCompilable(desc);
  std::error_code error;
  if (std::filesystem::exists(dir, error))
    throw std::invalid_argument(
        fmt::format("{}: exists already; give a new directory", dir));
  if (!std::filesystem::create_directories(dir, error) || error)
    throw std::runtime_error(
        fmt::format("{}: cannot create the directory: {}", dir,
                    error ? error.message() : "unknown error"));
  CompileOptions entryOptions = options;
  entryOptions.dumpDirectory.clear();
  std::string key = cacheKey(desc, entry, entryOptions);
  try {
    if (desc.backend == Backend::Cpu)
      return compileCpuEntry(desc, entry, key, dir, entryOptions);
    return compileCudaEntry(desc, entry, key, dir, entryOptions);
  } catch (...) {
    removeTree(dir);
    throw;
  }
}

std::size_t compileCount() { return compilations.load(); }

std::string cacheKey(const KernelDesc &desc, EntryPoint entry,
                     const CompileOptions &options) {
  std::string target =
      desc.backend == Backend::Cpu
          ? fmt::format("{} O{}{}", hostTargetDescription(),
                        cpuOptLevel(options),
                        options.cpuGpuTiling ? " gpu-tiling" : "")
          : desc.targetChip();
  if (options.gpuStages &&
      (desc.backend != Backend::Cpu || options.cpuGpuTiling))
    target += " gpu-stages";
  return fmt::format("{} entry={} target={} compiler={}", desc.str(),
                     rt::entryPointName(entry), target, compilerBuildId());
}

} // namespace fwp::jit
