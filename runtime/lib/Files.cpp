//===- Files.cpp - Whole-file writes for compiled modules -----------------===//

#include "fwp/Runtime/Files.h"
#include "fwp/Runtime/Error.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace fwp::rt {

void writeFile(const std::string &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out)
    throw Error(
        fmt::format("cannot write file '{}': {}", path, std::strerror(errno)));
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out)
    throw Error(fmt::format("error writing file '{}'", path));
}

} // namespace fwp::rt
