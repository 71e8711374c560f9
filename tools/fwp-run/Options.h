//===- Options.h - Command line of fwp-run ----------------------*- C++ -*-===//

#ifndef FWP_RUN_OPTIONS_H
#define FWP_RUN_OPTIONS_H

#include "Backend.h"

#include "fwp/Reference/Reference.h"

#include <cstdint>
#include <optional>
#include <string>

namespace fwp::run {

struct Options {
  std::string inputs, outputs;
  int64_t heads = 0;
  int64_t nu = 1;
  double eps = 1e-6;
  ref::Rule rule = ref::Rule::Delta;
  /// Unset without --backend: fwp-run then picks one (chooseBackend).
  std::optional<BackendKind> backend;
  int64_t chunkSize = kDefaultChunkSize;
  /// --dump-ir DIR: the IR after every stage, and the PTX.
  std::string dumpIr;
  /// --compute-type: see BackendSettings::computeType.
  std::optional<rt::DType> computeType;
  /// --gpu-stages: see BackendSettings::gpuStages.
  bool gpuStages = kDefaultGpuStages;
};

/// Parses argv with llvm::cl ("--opt value", "--opt=value"). --help (or -h)
/// prints the usage and exits with status 0. Throws UsageError, with one line
/// naming the problem, on an unknown option or argument, a missing or
/// unparsable value, a repeated or missing required option, or a value out
/// of range. Range checks that need the inputs' sizes (heads divides
/// d_model, nu <= 2*d_k-1) are left to the loader. The options are llvm::cl
/// globals: call it once.
Options parseOptions(int argc, const char *const *argv);

} // namespace fwp::run

#endif // FWP_RUN_OPTIONS_H
