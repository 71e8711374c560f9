//===- IO.h - Reading fwp-run's inputs, writing its outputs -----*- C++ -*-===//

#ifndef FWP_RUN_IO_H
#define FWP_RUN_IO_H

#include "Options.h"

#include "fwp/Reference/Reference.h"
#include "fwp/Support/Npy.h"

#include <string>
#include <vector>

namespace fwp::run {

/// Everything a backend needs, read and checked from the inputs directory.
struct Problem {
  ref::AttentionConfig config;
  ref::AttentionShape shape;
  rt::DType dtype = rt::DType::F64; // of every input, and of the outputs
  std::vector<double> x;
  ref::AttentionParams params;
  bool hasDy = false;
  std::vector<double> dy;
};

/// Reads and checks the inputs named by `opts`. Throws UsageError, with a
/// message naming the file, on a missing or unreadable file, a shape that
/// does not fit, mixed dtypes, a non-finite value, or an option that does
/// not fit the sizes (heads not dividing d_model, nu out of range).
Problem loadInputs(const Options &opts);

/// Throws UsageError if `dir` exists and is not a directory.
void checkOutputPath(const std::string &dir);

struct OutputFile {
  std::string name; // "y.npy", ...
  npy::Array array;
};

/// Writes `files` into `dir` so that `dir` never holds a partial set:
///  - `dir` missing: its parents are created, the files are written into a
///    fresh sibling directory "<dir>.tmp-XXXXXX", which is renamed to `dir`.
///  - `dir` existing: the files are written into a fresh hidden directory
///    "<dir>/.fwp-run.tmp-XXXXXX" on the same file system, then each is
///    renamed over its final name (each file is replaced atomically; the set
///    is replaced only after every file was written in full). Then the files
///    of `staleNames` not among `files` are removed from `dir` and the
///    temporary directory is removed.
/// On failure the temporary directory is removed and std::runtime_error is
/// thrown.
void writeOutputs(const std::string &dir, const std::vector<OutputFile> &files,
                  const std::vector<std::string> &staleNames);

} // namespace fwp::run

#endif // FWP_RUN_IO_H
