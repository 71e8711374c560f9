//===- EntryInputs.h - An entry point's inputs from .npy files -*- C++ -*-===//
//
// What fwp-exec and fwp-gpu-check share: the inputs of a compiled entry
// point (fwp/Runtime/AttentionEntry.h) read from a folder of .npy files
// named after its buffers (x.npy, w_q.npy, ..., dy.npy for a backward),
// the sizes taken from x.npy and checked for every other file, the values
// converted to the entry's element type. Runtime only: no MLIR, no LLVM.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_SUPPORT_ENTRYINPUTS_H
#define FWP_SUPPORT_ENTRYINPUTS_H

#include "fwp/Runtime/AttentionEntry.h"

#include <stdexcept>
#include <string>
#include <vector>

namespace fwp::npy {

/// A file whose shape is not the one the entry point needs.
struct ShapeError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct EntryInputs {
  int64_t seqLen = 0, batch = 0;
  rt::AttentionSignature signature;
  /// One dense buffer per input, in the signature's order.
  std::vector<std::vector<char>> buffers;
};

/// Reads the inputs of an entry point described by `info` from `dir`.
/// Throws ShapeError naming the file, its shape and the expected one (x.npy
/// must be [seq_len >= 1, batch >= 1, d_model]), and npy's errors for a
/// file that cannot be read.
EntryInputs readEntryInputs(const std::string &dir, const rt::ModuleInfo &info);

} // namespace fwp::npy

#endif // FWP_SUPPORT_ENTRYINPUTS_H
