//===- Error.h - Errors of fwp-run ------------------------------*- C++ -*-===//
//
// fwp-run reports every problem as ONE line on stderr, prefixed "fwp-run: ".
// A UsageError is the user's fault (bad options, missing or ill-shaped
// inputs) and exits with status 2; any other failure (an output that cannot
// be written, a backend failure) exits with status 1.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_RUN_ERROR_H
#define FWP_RUN_ERROR_H

#include <stdexcept>
#include <string>

namespace fwp::run {

struct UsageError : std::runtime_error {
  explicit UsageError(const std::string &message)
      : std::runtime_error(message) {}
};

} // namespace fwp::run

#endif // FWP_RUN_ERROR_H
