//===- DiskCache.h - Compiled modules kept on disk between processes -*- C++
//-*-===//
//
// Each compiled entry point is a directory (fwp/Runtime/ModuleInfo.h) kept
// under
//
//   $FWP_CACHE_DIR, else $XDG_CACHE_HOME/fwp, else $HOME/.cache/fwp
//
// as v1/<hash of the key>/. FWP_CACHE=off turns the cache off (every process
// compiles, into a private temporary directory).
//
// Why it is safe to share between processes:
// - An entry is compiled into a private temporary directory next to its
//   final place and renamed into place in one step, so nobody sees half an
//   entry; of two processes compiling the same key, the first rename wins
//   and the other process uses the winner's entry.
// - Every entry carries a manifest with its key and every file's size and
//   checksum; an entry that does not verify (truncated, corrupt, or compiled
//   for another key that hashed alike) is reported once, on stderr, and
//   replaced by a fresh compilation.
// - A directory that cannot be written is a warning, not a failure: the
//   process compiles into a temporary directory instead.
//
// Internal to lib/JIT.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_LIB_JIT_DISKCACHE_H
#define FWP_LIB_JIT_DISKCACHE_H

#include "fwp/JIT/JIT.h"

#include <cstddef>
#include <functional>
#include <string>

namespace fwp::jit {

/// Where a compiled entry point was found or made.
struct CachedEntry {
  std::string dir;
  /// A private directory outside the cache (the cache is off or could not
  /// be written): the caller removes it once the entry is loaded.
  bool temporary = false;
  /// Found in the cache, not compiled.
  bool hit = false;
};

/// The cache directory the environment selects; empty if FWP_CACHE=off.
std::string cacheDirectoryFromEnvironment();

/// Finds the valid entry for `key` under `cacheDir`, or compiles one with
/// `compileInto(dir)` (which writes the entry's files and manifest into the
/// empty directory `dir`) and publishes it. An empty `cacheDir` compiles
/// into a temporary directory. `load(dir)` is called on the entry found or
/// made; if it throws rt::ModuleError for an entry found in the cache, the
/// entry is replaced by a fresh compilation as a corrupt one would be.
/// Errors of `compileInto` propagate (nothing is published).
CachedEntry
findOrCompile(const std::string &cacheDir, const std::string &key,
              const std::function<void(const std::string &)> &compileInto,
              const std::function<void(const std::string &)> &load);

/// Removes a directory and everything in it; errors are ignored.
void removeTree(const std::string &dir);

} // namespace fwp::jit

#endif // FWP_LIB_JIT_DISKCACHE_H
