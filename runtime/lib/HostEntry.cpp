//===- HostEntry.cpp - CPU entry points: a shared object with a C ABI -----===//
//
// The compiler emits the entry point with MLIR's C interface: one pointer per
// buffer to a memref descriptor. A descriptor of rank N is
//
//   struct { T *allocated; T *aligned; int64_t offset;
//            int64_t sizes[N]; int64_t strides[N]; }
//
// which on the 64-bit hosts fwp supports is 3 + 2N int64-sized words with no
// padding; we build it as such an array, so one code path serves every rank
// and dtype.
//
//===----------------------------------------------------------------------===//

#include "fwp/Runtime/AttentionEntry.h"

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <mutex>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace fwp::rt {
namespace {

static_assert(sizeof(void *) == sizeof(int64_t),
              "memref descriptors are built as int64 words");

/// Each call allocates the kernel's workspace (tens of MB at T = 2048) with
/// malloc and frees it at the end. glibc serves blocks that large with
/// fresh mmaps, whose pages fault in, zeroed, on every call: a third of the
/// forward's time at the benchmark's shape. Serving them from the heap and
/// keeping freed memory there (up to 1 GiB) lets the next call reuse the
/// same pages. Process-wide, so once, when the first CPU entry is loaded;
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
std::vector<int64_t> descriptor(const void *data,
                                const std::vector<int64_t> &sizes) {
  size_t rank = sizes.size();
  std::vector<int64_t> words(3 + 2 * rank);
  int64_t address = reinterpret_cast<int64_t>(data);
  words[0] = words[1] = address;
  words[2] = 0;
  int64_t stride = 1;
  for (size_t d = rank; d-- > 0;) {
    words[3 + d] = sizes[d];
    words[3 + rank + d] = stride;
    stride *= sizes[d];
  }
  return words;
}

using Word = int64_t;
using ForwardFn = void (*)(Word *, Word *, Word *, Word *, Word *, Word *,
                           Word *, Word *);
using BackwardFn = void (*)(Word *, Word *, Word *, Word *, Word *, Word *,
                            Word *, Word *, Word *, Word *, Word *, Word *,
                            Word *, Word *, Word *);

class HostEntry final : public AttentionEntry {
public:
  HostEntry(ModuleInfo info, void *library, void *function)
      : AttentionEntry(std::move(info)), library(library), function(function) {}

  // Never dlclose: a kernel may be running on another thread while the last
  // reference goes during shutdown, and the code is small.
  ~HostEntry() override = default;

  void run(int64_t seqLen, int64_t batch,
           const std::vector<const void *> &inputs,
           const std::vector<void *> &outputs) const override {
    AttentionSignature signature = attentionSignature(
        info().entry, seqLen, batch, info().heads, info().dModel);
    std::vector<std::vector<int64_t>> descriptors;
    for (size_t i = 0; i < signature.inputs.size(); ++i)
      descriptors.push_back(descriptor(inputs[i], signature.inputs[i].sizes));
    for (size_t i = 0; i < signature.outputs.size(); ++i)
      descriptors.push_back(descriptor(outputs[i], signature.outputs[i].sizes));
    Word *d[15];
    for (size_t i = 0; i < descriptors.size(); ++i)
      d[i] = descriptors[i].data();
    if (info().entry == EntryPoint::Forward)
      reinterpret_cast<ForwardFn>(function)(d[0], d[1], d[2], d[3], d[4], d[5],
                                            d[6], d[7]);
    else
      reinterpret_cast<BackwardFn>(function)(d[0], d[1], d[2], d[3], d[4], d[5],
                                             d[6], d[7], d[8], d[9], d[10],
                                             d[11], d[12], d[13], d[14]);
  }

private:
  void *library;
  void *function;
};

} // namespace

const char *hostEntrySymbol(EntryPoint entry) {
  return entry == EntryPoint::Forward ? "_mlir_ciface_fwp_attention"
                                      : "_mlir_ciface_fwp_attention_grad";
}

std::unique_ptr<AttentionEntry> loadHostEntry(const std::string &dir,
                                              ModuleInfo info) {
  keepWorkspaceMemory();
  std::string path = fmt::format("{}/kernel.so", dir);
  // RTLD_LOCAL: two kernels export the same symbol names.
  void *library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library)
    throw ModuleError(fmt::format("cannot load '{}': {}", path, dlerror()));
  const char *symbol = hostEntrySymbol(info.entry);
  void *function = dlsym(library, symbol);
  if (!function)
    throw ModuleError(
        fmt::format("'{}' has no entry point '{}'", path, symbol));
  return std::make_unique<HostEntry>(std::move(info), library, function);
}

} // namespace fwp::rt
