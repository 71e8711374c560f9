//===- JIT.cpp - compile(), its cache, and CompiledAttention --------------===//

#include "Kernel.h"

#include <atomic>
#include <chrono>
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

/// a * b * c, or -1 if it overflows.
int64_t elementCount(int64_t a, int64_t b, int64_t c) {
  int64_t n;
  if (__builtin_mul_overflow(a, b, &n) || __builtin_mul_overflow(n, c, &n))
    return -1;
  return n;
}

void checkForwardArgs(const KernelDesc &desc, const ForwardArgs &a) {
  if (a.seqLen < 0 || a.batch < 0)
    throw std::invalid_argument(
        "forward: seqLen and batch must be >= 0, got seqLen = " +
        std::to_string(a.seqLen) + ", batch = " + std::to_string(a.batch));
  // The byte size must fit too: at most 8 bytes per element.
  int64_t elements = elementCount(a.seqLen, a.batch, desc.dModel());
  if (elements < 0 || elements > INT64_MAX / 8)
    throw std::invalid_argument(
        "forward: seqLen * batch * dModel = " + std::to_string(a.seqLen) +
        " * " + std::to_string(a.batch) + " * " +
        std::to_string(desc.dModel()) + " overflows");
  const std::pair<const char *, const void *> buffers[] = {
      {"x", a.x},         {"wQ", a.wQ}, {"wK", a.wK}, {"wV", a.wV},
      {"wBeta", a.wBeta}, {"wO", a.wO}, {"bO", a.bO}, {"y", a.y}};
  for (const auto &[name, pointer] : buffers)
    if (!pointer)
      throw std::invalid_argument(std::string("forward: buffer ") + name +
                                  " is null");
}

void checkDType(const KernelDesc &desc, DType given) {
  if (desc.dtype != given)
    throw std::invalid_argument(
        std::string("forward: called with ") +
        (given == DType::F32 ? "float" : "double") +
        " buffers, but the kernel was compiled for " +
        (desc.dtype == DType::F32 ? "float (f32)" : "double (f64)"));
}

/// Refusals that need no compilation; they are never cached.
void checkCompilable(const KernelDesc &desc) {
  desc.validate();
  if (desc.backend == Backend::Cuda)
    throw std::runtime_error("the CUDA backend is not available yet (" +
                             desc.str() + ")");
}

} // namespace

//===----------------------------------------------------------------------===//
// CompiledAttention
//===----------------------------------------------------------------------===//

CompiledAttention::CompiledAttention(std::unique_ptr<Impl> impl)
    : impl(std::move(impl)) {}

CompiledAttention::~CompiledAttention() = default;

const KernelDesc &CompiledAttention::desc() const { return impl->desc; }

double CompiledAttention::compileSeconds() const {
  return impl->compileSeconds;
}

void CompiledAttention::forward(int64_t seqLen, int64_t batch, const void *x,
                                const void *wQ, const void *wK, const void *wV,
                                const void *wBeta, const void *wO,
                                const void *bO, void *y) const {
  ForwardArgs args{seqLen, batch, x, wQ, wK, wV, wBeta, wO, bO, y};
  // Nothing to read or write; the buffers may then be null.
  if (seqLen == 0 || batch == 0) {
    if (seqLen < 0 || batch < 0)
      checkForwardArgs(impl->desc, args);
    return;
  }
  checkForwardArgs(impl->desc, args);
  impl->forward(args);
}

void CompiledAttention::forward(int64_t seqLen, int64_t batch, const float *x,
                                const float *wQ, const float *wK,
                                const float *wV, const float *wBeta,
                                const float *wO, const float *bO,
                                float *y) const {
  checkDType(impl->desc, DType::F32);
  forward(seqLen, batch, static_cast<const void *>(x), wQ, wK, wV, wBeta, wO,
          bO, static_cast<void *>(y));
}

void CompiledAttention::forward(int64_t seqLen, int64_t batch, const double *x,
                                const double *wQ, const double *wK,
                                const double *wV, const double *wBeta,
                                const double *wO, const double *bO,
                                double *y) const {
  checkDType(impl->desc, DType::F64);
  forward(seqLen, batch, static_cast<const void *>(x), wQ, wK, wV, wBeta, wO,
          bO, static_cast<void *>(y));
}

//===----------------------------------------------------------------------===//
// compile
//===----------------------------------------------------------------------===//

std::shared_ptr<const CompiledAttention>
compileUncached(const KernelDesc &desc) {
  checkCompilable(desc);
  ++compilations;
  auto start = std::chrono::steady_clock::now();
  std::unique_ptr<CompiledAttention::Impl> impl = compileCpu(desc);
  impl->compileSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  // The constructor is private: make_shared cannot reach it.
  return KernelPtr(new CompiledAttention(std::move(impl)));
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

std::size_t compileCount() { return compilations.load(); }

} // namespace fwp::jit
