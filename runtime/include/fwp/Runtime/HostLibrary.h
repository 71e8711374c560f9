//===- HostLibrary.h - A CPU kernel.so and calls of its functions -*- C++
//-*-===//
//
// The CPU half of a compiled module directory (ModuleInfo.h): `kernel.so`,
// loaded with dlopen, whose functions take MLIR's C interface, one pointer
// per buffer to a memref descriptor
//
//   struct { T *allocated; T *aligned; int64_t offset;
//            int64_t sizes[rank]; int64_t strides[rank]; }
//
// over row-major buffers. The whole module's entries (AttentionEntry.h) and
// the bare scan (fwp/JIT/Scan.h) call their kernels through it.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_RUNTIME_HOSTLIBRARY_H
#define FWP_RUNTIME_HOSTLIBRARY_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace fwp::rt {

/// A row-major buffer and its sizes, as a function of the library sees it.
struct HostBuffer {
  const void *data;
  std::vector<int64_t> sizes;
};

class HostLibrary {
public:
  /// The most buffers a function may take.
  static constexpr size_t kMaxBuffers = 16;

  /// Loads `<dir>/kernel.so` and looks up each of `symbols`; throws
  /// ModuleError naming the file and what is missing. The file may be
  /// removed once this returns. Never unloaded: a kernel may still run on
  /// another thread while the last reference goes at shutdown.
  static std::unique_ptr<HostLibrary>
  load(const std::string &dir, const std::vector<std::string> &symbols);

  /// Calls the function `symbols[index]` with one memref descriptor per
  /// buffer, in order (at most kMaxBuffers). May be called from several
  /// threads at once.
  void call(size_t index, const std::vector<HostBuffer> &buffers) const;

private:
  HostLibrary(std::string path, std::vector<void *> functions)
      : path(std::move(path)), functions(std::move(functions)) {}

  std::string path;
  std::vector<void *> functions;
};

} // namespace fwp::rt

#endif // FWP_RUNTIME_HOSTLIBRARY_H
