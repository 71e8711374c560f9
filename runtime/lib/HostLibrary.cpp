//===- HostLibrary.cpp - A CPU kernel.so and calls of its functions -------===//
//
// A descriptor of rank N is, on the 64-bit hosts fwp supports, 3 + 2N
// int64-sized words with no padding; we build it as such an array, so one
// code path serves every rank and dtype.
//
//===----------------------------------------------------------------------===//

#include "fwp/Runtime/HostLibrary.h"
#include "fwp/Runtime/ModuleInfo.h"

#include <fmt/format.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <mutex>
#include <utility>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace fwp::rt {
namespace {

static_assert(sizeof(void *) == sizeof(int64_t),
              "memref descriptors are built as int64 words");

using Word = int64_t;

/// Each call allocates the kernel's workspace (tens of MB at T = 2048) with
/// malloc and frees it at the end. glibc serves blocks that large with
/// fresh mmaps, whose pages fault in, zeroed, on every call: a third of the
/// forward's time at the benchmark's shape. Serving them from the heap and
/// keeping freed memory there (up to 1 GiB) lets the next call reuse the
/// same pages. Process-wide, so once, when the first library is loaded;
/// FWP_KEEP_MEMORY=0 leaves malloc as it is.
void keepWorkspaceMemory() {
  static std::once_flag once;
  std::call_once(once, [] {
    const char *setting = std::getenv("FWP_KEEP_MEMORY");
    if (setting && std::strcmp(setting, "0") == 0)
      return;
#if defined(__GLIBC__)
    mallopt(M_MMAP_THRESHOLD, 32 << 20); // glibc's largest on 64-bit hosts
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
  });
}

/// A memref descriptor over a caller's row-major buffer.
std::vector<Word> descriptor(const HostBuffer &buffer) {
  size_t rank = buffer.sizes.size();
  std::vector<Word> words(3 + 2 * rank);
  Word address = reinterpret_cast<Word>(buffer.data);
  words[0] = words[1] = address;
  words[2] = 0;
  Word stride = 1;
  for (size_t d = rank; d-- > 0;) {
    words[3 + d] = buffer.sizes[d];
    words[3 + rank + d] = stride;
    stride *= buffer.sizes[d];
  }
  return words;
}

/// Calls `function` as a function of exactly sizeof...(I) descriptors.
template <size_t... I>
void invoke(void *function, Word *const *d, std::index_sequence<I...>) {
  using Fn = void (*)(decltype((void)I, static_cast<Word *>(nullptr))...);
  reinterpret_cast<Fn>(function)(d[I]...);
}

using Invoker = void (*)(void *, Word *const *);

template <size_t... N>
constexpr std::array<Invoker, sizeof...(N)>
invokers(std::index_sequence<N...>) {
  return {[](void *f, Word *const *d) {
    invoke(f, d, std::make_index_sequence<N>{});
  }...};
}

/// invokerFor[n] calls a function of n descriptors.
constexpr auto invokerFor =
    invokers(std::make_index_sequence<HostLibrary::kMaxBuffers + 1>{});

} // namespace

std::unique_ptr<HostLibrary>
HostLibrary::load(const std::string &dir,
                  const std::vector<std::string> &symbols) {
  keepWorkspaceMemory();
  std::string path = fmt::format("{}/kernel.so", dir);
  // RTLD_LOCAL: two kernels export the same symbol names.
  void *library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library)
    throw ModuleError(fmt::format("cannot load '{}': {}", path, dlerror()));
  std::vector<void *> functions;
  for (const std::string &symbol : symbols) {
    void *function = dlsym(library, symbol.c_str());
    if (!function)
      throw ModuleError(
          fmt::format("'{}' has no entry point '{}'", path, symbol));
    functions.push_back(function);
  }
  return std::unique_ptr<HostLibrary>(
      new HostLibrary(std::move(path), std::move(functions)));
}

void HostLibrary::call(size_t index,
                       const std::vector<HostBuffer> &buffers) const {
  if (index >= functions.size() || buffers.size() > kMaxBuffers)
    throw Error(fmt::format("'{}': no function {} of {} buffers", path, index,
                            buffers.size()));
  std::vector<std::vector<Word>> descriptors;
  descriptors.reserve(buffers.size());
  std::array<Word *, kMaxBuffers> pointers{};
  for (size_t i = 0; i < buffers.size(); ++i) {
    descriptors.push_back(descriptor(buffers[i]));
    pointers[i] = descriptors.back().data();
  }
  invokerFor[buffers.size()](functions[index], pointers.data());
}

} // namespace fwp::rt
