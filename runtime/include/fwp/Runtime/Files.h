//===- Files.h - Whole-file writes for compiled modules ---------*- C++ -*-===//

#ifndef FWP_RUNTIME_FILES_H
#define FWP_RUNTIME_FILES_H

#include <string>

namespace fwp::rt {

/// Writes `bytes` to `path`, replacing it; throws Error naming the file if it
/// cannot be written in full.
void writeFile(const std::string &path, const std::string &bytes);

} // namespace fwp::rt

#endif // FWP_RUNTIME_FILES_H
