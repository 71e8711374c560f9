//===- ModuleInfo.cpp - Manifests of compiled module directories ----------===//
//
// Format (line based, `KEY VALUE`, in this order):
//
//   fwp-module 1
//   key <one line: everything the module was compiled for>
//   backend cpu|cuda
//   entry forward|backward
//   dtype f32|f64
//   heads H
//   d-model D
//   file NAME SIZE CHECKSUM        one per file, CHECKSUM in hex (FNV-1a 64)
//
//===----------------------------------------------------------------------===//

#include "fwp/Runtime/ModuleInfo.h"
#include "fwp/Runtime/Files.h"
#include "fwp/Runtime/Plan.h"

#include <fmt/format.h>

#include <cstdlib>
#include <optional>
#include <sstream>

namespace fwp::rt {

uint64_t checksum64(const std::string &bytes) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (unsigned char byte : bytes) {
    hash ^= byte;
    hash *= 0x100000001b3ull;
  }
  return hash;
}

std::string ModuleInfo::str() const {
  std::string text =
      fmt::format("fwp-module {}\nkey {}\nbackend {}\nentry "
                  "{}\ndtype {}\nheads {}\nd-model {}\n",
                  kVersion, key, backendName(backend), entryPointName(entry),
                  dtypeName(dtype), heads, dModel);
  for (const File &file : files)
    text += fmt::format("file {} {} {:016x}\n", file.name, file.size,
                        file.checksum);
  return text;
}

namespace {

/// Reads the manifest's lines in their fixed order.
class ManifestReader {
public:
  ManifestReader(const std::string &text, const std::string &source)
      : lines(text), source(source) {}

  /// The rest of the next line after `keyword` and one blank.
  std::string expect(const char *keyword) {
    std::string line;
    if (!std::getline(lines, line))
      fail(fmt::format("missing '{}' line", keyword));
    std::string prefix = std::string(keyword) + " ";
    if (line.compare(0, prefix.size(), prefix) != 0)
      fail(fmt::format("expected '{}', got '{}'", keyword, line));
    return line.substr(prefix.size());
  }

  /// The next line's value, if it starts with `keyword`.
  std::optional<std::string> optional(const char *keyword) {
    std::streampos here = lines.tellg();
    std::string line;
    if (!std::getline(lines, line) || line.empty())
      return std::nullopt;
    std::string prefix = std::string(keyword) + " ";
    if (line.compare(0, prefix.size(), prefix) != 0) {
      lines.seekg(here);
      return std::nullopt;
    }
    return line.substr(prefix.size());
  }

  int64_t integer(const char *keyword) {
    std::string value = expect(keyword);
    char *end = nullptr;
    long long parsed = std::strtoll(value.c_str(), &end, 10);
    if (value.empty() || *end || parsed < 1)
      fail(fmt::format("'{}' must be a positive integer, got '{}'", keyword,
                       value));
    return parsed;
  }

  [[noreturn]] void fail(const std::string &problem) const {
    throw ModuleError(fmt::format("{}: {}", source, problem));
  }

  bool atEnd() {
    std::string rest;
    while (std::getline(lines, rest))
      if (!rest.empty())
        return false;
    return true;
  }

private:
  std::istringstream lines;
  const std::string &source;
};

ModuleInfo::File parseFile(const std::string &value,
                           const ManifestReader &reader) {
  std::istringstream fields(value);
  ModuleInfo::File file;
  std::string checksum, extra;
  if (!(fields >> file.name >> file.size >> checksum) || (fields >> extra) ||
      file.name.find('/') != std::string::npos || checksum.size() != 16)
    reader.fail(fmt::format("malformed file line 'file {}'", value));
  char *end = nullptr;
  file.checksum = std::strtoull(checksum.c_str(), &end, 16);
  if (*end)
    reader.fail(fmt::format("malformed checksum in 'file {}'", value));
  return file;
}

} // namespace

ModuleInfo ModuleInfo::parse(const std::string &text,
                             const std::string &source) {
  ManifestReader reader(text, source);
  if (reader.expect("fwp-module") != std::to_string(kVersion))
    reader.fail(fmt::format("not a version {} module manifest", kVersion));
  ModuleInfo info;
  info.key = reader.expect("key");
  std::string backend = reader.expect("backend");
  std::optional<Backend> parsedBackend = parseBackend(backend);
  if (!parsedBackend)
    reader.fail(fmt::format("unknown backend '{}'", backend));
  info.backend = *parsedBackend;
  std::string entry = reader.expect("entry");
  std::optional<EntryPoint> parsedEntry = parseEntryPoint(entry);
  if (!parsedEntry)
    reader.fail(fmt::format("unknown entry point '{}'", entry));
  info.entry = *parsedEntry;
  std::string dtype = reader.expect("dtype");
  std::optional<DType> parsed = parseDType(dtype);
  if (!parsed)
    reader.fail(fmt::format("unknown dtype '{}'", dtype));
  info.dtype = *parsed;
  info.heads = reader.integer("heads");
  info.dModel = reader.integer("d-model");
  while (std::optional<std::string> file = reader.optional("file"))
    info.files.push_back(parseFile(*file, reader));
  if (!reader.atEnd())
    reader.fail("unexpected line after the file list");
  return info;
}

ModuleInfo readModuleInfo(const std::string &dir) {
  std::string path = fmt::format("{}/{}", dir, ModuleInfo::kFileName);
  std::string text;
  try {
    text = readTextFile(path);
  } catch (const Error &error) {
    throw ModuleError(error.what());
  }
  ModuleInfo info = ModuleInfo::parse(text, path);
  for (const ModuleInfo::File &file : info.files) {
    std::string filePath = fmt::format("{}/{}", dir, file.name);
    std::string bytes;
    try {
      bytes = readTextFile(filePath);
    } catch (const Error &error) {
      throw ModuleError(error.what());
    }
    if (bytes.size() != file.size)
      throw ModuleError(fmt::format("{}: {} bytes, the manifest says {}",
                                    filePath, bytes.size(), file.size));
    if (checksum64(bytes) != file.checksum)
      throw ModuleError(
          fmt::format("{}: checksum {:016x}, the manifest says {:016x}",
                      filePath, checksum64(bytes), file.checksum));
  }
  return info;
}

void writeModuleInfo(const std::string &dir, ModuleInfo info,
                     const std::vector<std::string> &fileNames) {
  info.files.clear();
  for (const std::string &name : fileNames) {
    std::string bytes = readTextFile(fmt::format("{}/{}", dir, name));
    info.files.push_back({name, bytes.size(), checksum64(bytes)});
  }
  writeFile(fmt::format("{}/{}", dir, ModuleInfo::kFileName), info.str());
}

} // namespace fwp::rt
