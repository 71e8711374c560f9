//===- DiskCache.cpp - Compiled modules kept on disk between processes ----===//

#include "DiskCache.h"

#include "fwp/Runtime/ModuleInfo.h"

#include <fmt/format.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <set>
#include <stdexcept>
#include <system_error>
#include <unistd.h>

namespace fs = std::filesystem;

namespace fwp::jit {
namespace {

std::mutex statsMutex;
DiskCacheCounts counts;

void count(std::size_t DiskCacheCounts::*counter) {
  std::lock_guard<std::mutex> lock(statsMutex);
  ++(counts.*counter);
}

/// Prints `message` on stderr the first time it is given for `topic`.
void warnOnce(const std::string &topic, const std::string &message) {
  static std::mutex mutex;
  static std::set<std::string> *reported = new std::set<std::string>;
  std::lock_guard<std::mutex> lock(mutex);
  if (reported->insert(topic).second)
    std::fprintf(stderr, "fwp: warning: %s\n", message.c_str());
}

/// A name no other process or thread uses at the same time.
std::string uniqueName(const char *prefix) {
  static std::atomic<unsigned> counter{0};
  return fmt::format("{}-{}-{}", prefix, getpid(), counter++);
}

std::string environment(const char *name) {
  const char *value = std::getenv(name);
  return value ? value : "";
}

/// A new private directory under $TMPDIR (or /tmp).
std::string makeTemporaryDirectory() {
  std::string base = environment("TMPDIR");
  std::string pattern = (base.empty() ? "/tmp" : base) + "/fwp-XXXXXX";
  if (!mkdtemp(pattern.data()))
    throw std::runtime_error(
        fmt::format("cannot create a temporary directory {}: {}", pattern,
                    std::strerror(errno)));
  return pattern;
}

/// Compiles into a private temporary directory and loads from there.
CachedEntry
compileTemporary(const std::function<void(const std::string &)> &compileInto,
                 const std::function<void(const std::string &)> &load) {
  CachedEntry entry{makeTemporaryDirectory(), /*temporary=*/true};
  try {
    count(&DiskCacheCounts::compilations);
    compileInto(entry.dir);
    load(entry.dir);
  } catch (...) {
    removeTree(entry.dir);
    throw;
  }
  return entry;
}

/// Checks the entry in `dir` (manifest, files, key) and loads it; false,
/// after reporting why once, if it is not usable.
bool tryLoad(const std::string &dir, const std::string &key,
             const std::function<void(const std::string &)> &load) {
  try {
    rt::ModuleInfo info = rt::readModuleInfo(dir);
    if (info.key != key)
      throw rt::ModuleError(fmt::format("{}: compiled for '{}', not for '{}'",
                                        dir, info.key, key));
    load(dir);
    return true;
  } catch (const rt::ModuleError &error) {
    count(&DiskCacheCounts::rejected);
    warnOnce("entry " + dir, fmt::format("ignoring the cache entry {} ({}); "
                                         "compiling it again",
                                         dir, error.what()));
    return false;
  }
}

/// Moves an entry that failed to verify out of the way and deletes it.
void discard(const std::string &dir) {
  std::string trash = fs::path(dir).parent_path() / uniqueName(".trash");
  if (::rename(dir.c_str(), trash.c_str()) == 0)
    removeTree(trash);
}

} // namespace

std::string cacheDirectoryFromEnvironment() {
  std::string mode = environment("FWP_CACHE");
  if (mode == "off" || mode == "0")
    return "";
  std::string dir = environment("FWP_CACHE_DIR");
  if (!dir.empty())
    return dir;
  std::string xdg = environment("XDG_CACHE_HOME");
  if (!xdg.empty())
    return xdg + "/fwp";
  std::string home = environment("HOME");
  if (!home.empty())
    return home + "/.cache/fwp";
  return "";
}

void removeTree(const std::string &dir) {
  std::error_code ignored;
  fs::remove_all(dir, ignored);
}

CachedEntry
findOrCompile(const std::string &cacheDir, const std::string &key,
              const std::function<void(const std::string &)> &compileInto,
              const std::function<void(const std::string &)> &load) {
  if (cacheDir.empty())
    return compileTemporary(compileInto, load);
  std::string versionDir = cacheDir + "/v1";
  std::string entryDir =
      fmt::format("{}/{:016x}", versionDir, rt::checksum64(key));

  std::error_code ec;
  if (fs::exists(entryDir, ec)) {
    if (tryLoad(entryDir, key, load)) {
      count(&DiskCacheCounts::hits);
      return {entryDir, false, true};
    }
    discard(entryDir);
  }

  std::string staging = versionDir + "/" + uniqueName(".tmp");
  fs::create_directories(staging, ec);
  if (ec) {
    warnOnce("unwritable " + cacheDir,
             fmt::format("cannot write the kernel cache {} ({}); compiling "
                         "without it",
                         cacheDir, ec.message()));
    return compileTemporary(compileInto, load);
  }
  try {
    count(&DiskCacheCounts::compilations);
    compileInto(staging);
  } catch (...) {
    removeTree(staging);
    throw;
  }
  // Publish in one step. If another process published the same key first,
  // rename fails (the target is a non-empty directory): use its entry.
  if (::rename(staging.c_str(), entryDir.c_str()) == 0) {
    load(entryDir);
    return {entryDir, false, false};
  }
  int renameError = errno;
  if ((renameError == EEXIST || renameError == ENOTEMPTY) &&
      tryLoad(entryDir, key, load)) {
    removeTree(staging);
    return {entryDir, false, false};
  }
  warnOnce("unpublishable " + entryDir,
           fmt::format("cannot publish the cache entry {} ({}); using a "
                       "private copy",
                       entryDir, std::strerror(renameError)));
  load(staging);
  return {staging, /*temporary=*/true, false};
}

DiskCacheCounts diskCacheCounts() {
  std::lock_guard<std::mutex> lock(statsMutex);
  return counts;
}

} // namespace fwp::jit
