//===- Options.h - Command line of fwp-run ----------------------*- C++ -*-===//

#ifndef FWP_RUN_OPTIONS_H
#define FWP_RUN_OPTIONS_H

#include "fwp/Reference/Reference.h"

#include <cstdint>
#include <string>

namespace fwp::run {

struct Options {
  bool help = false;
  std::string inputs, outputs;
  int64_t heads = 0;
  int64_t nu = 1;
  double eps = 1e-6;
  ref::Rule rule = ref::Rule::Delta;
  /// Empty without --backend: fwp-run then picks one (chooseBackend).
  std::string backend;
  int64_t chunkSize = 64;
  /// --dump-ir DIR: the IR after every stage, and the PTX.
  std::string dumpIr;
};

/// Parses argv (both "--opt value" and "--opt=value"). Throws UsageError on
/// an unknown option, a missing value, a repeated or missing required
/// option, or a value that is not of the option's type. Range checks that
/// need the inputs' sizes (heads divides d_model, nu <= 2*d_k-1) are left to
/// the loader. Stops at --help / -h and returns with `help` set.
Options parseOptions(int argc, const char *const *argv);

/// The text --help prints.
const char *usage();

} // namespace fwp::run

#endif // FWP_RUN_OPTIONS_H
