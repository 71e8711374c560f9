//===- ModuleInfo.h - What a compiled module directory holds ----*- C++ -*-===//
//
// A compiled entry point of the FastWeightsAttention module (its forward or
// its backward, for one backend) is a directory of files that the runtime
// loads without MLIR or LLVM (docs/compiled-modules.md):
//
//   module.txt        this manifest: what was compiled, for what, and the
//                     size and checksum of every other file
//   kernel.so         Backend cpu: a shared object with a C ABI
//   plan.fwp, *.ptx   Backend cuda: a launch plan and its PTX modules
//
// The manifest is what makes a directory trustworthy: a truncated, corrupt
// or half-written directory fails readModuleInfo with a ModuleError naming
// the file, and a directory compiled for something else (a foreign cache
// entry) is told apart by its key.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_RUNTIME_MODULEINFO_H
#define FWP_RUNTIME_MODULEINFO_H

#include "fwp/Runtime/ElementType.h"
#include "fwp/Runtime/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace fwp::rt {

/// A compiled module directory that cannot be used: missing, truncated or
/// corrupt files, or a malformed manifest.
class ModuleError : public Error {
public:
  using Error::Error;
};

using ::fwp::Backend;
using ::fwp::EntryPoint;
using ::fwp::entryPointName;

/// FNV-1a, 64 bits: a checksum that catches truncation and corruption (not
/// tampering; the cache is the user's own directory).
uint64_t checksum64(const std::string &bytes);

/// The manifest of a compiled module directory.
struct ModuleInfo {
  static constexpr int kVersion = 1;
  static constexpr const char *kFileName = "module.txt";

  /// Everything the module was compiled for, as one line; the disk cache
  /// compares it with the key it looks for.
  std::string key;
  Backend backend = Backend::Cpu;
  EntryPoint entry = EntryPoint::Forward;
  DType dtype = DType::F32;
  int64_t heads = 1;
  int64_t dModel = 1;

  struct File {
    std::string name;
    uint64_t size = 0;
    uint64_t checksum = 0;
  };
  std::vector<File> files;

  /// The manifest as text (parse reads it back).
  std::string str() const;
  /// Parses manifest text; errors throw ModuleError "<source>: ...".
  static ModuleInfo parse(const std::string &text, const std::string &source);
};

/// Reads `<dir>/module.txt` and checks that every file it lists has its
/// size and checksum. Throws ModuleError naming the file otherwise.
ModuleInfo readModuleInfo(const std::string &dir);

/// Records the size and checksum of each of `fileNames` (files in `dir`) in
/// `info.files` and writes `<dir>/module.txt`. Throws Error if a file cannot
/// be read or the manifest cannot be written.
void writeModuleInfo(const std::string &dir, ModuleInfo info,
                     const std::vector<std::string> &fileNames);

} // namespace fwp::rt

#endif // FWP_RUNTIME_MODULEINFO_H
