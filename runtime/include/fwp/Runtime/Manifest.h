//===- Manifest.h - Kernel manifests of ahead-of-time PTX -------*- C++ -*-===//
//
// Ahead-of-time kernels ship as PTX plus a manifest: a small line-based text
// file, written by our tools, naming each kernel of the PTX, its launch shape
// and its parameters, so that the runtime can launch them without the
// compiler. A plain text format keeps the runtime free of any parser library
// and makes the files easy to read and diff.
//
// Format (one directive per line; tokens separated by spaces or tabs; `#`
// starts a comment running to the end of the line; blank lines are ignored):
//
//   fwp-kernels 1
//   kernel <name> grid <gx> <gy> <gz> block <bx> <by> <bz> shared <bytes>
//   arg <kind> <name>
//   ...
//
// - The first directive is the header `fwp-kernels <version>`; version 1 is
//   the only one.
// - `kernel` starts a kernel; <name> is the PTX entry name. Grid dimensions
//   are size expressions: one or more factors joined by `*` without spaces,
//   each a positive integer literal or a size name ([A-Za-z_][A-Za-z0-9_]*),
//   e.g. `batch*heads`, `chunks`, `4`. Names are bound to values at launch.
//   Block dimensions and the dynamic shared memory size in bytes are integer
//   literals (block dimensions positive).
// - Each `arg` line declares the next kernel parameter, in PTX order, of the
//   most recent kernel. Kinds: ptr (device pointer), i64, i32, f32, f64.
//   Argument names are unique within a kernel; kernel names are unique.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_RUNTIME_MANIFEST_H
#define FWP_RUNTIME_MANIFEST_H

#include "fwp/Runtime/Cuda.h"
#include "fwp/Runtime/Error.h"

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace fwp::rt {

/// Named sizes (e.g. "batch" -> 4) that grid expressions are resolved with.
using Sizes = std::map<std::string, int64_t>;

enum class ArgKind { Ptr, I64, I32, F32, F64 };

/// "ptr", "i64", ...
const char *argKindName(ArgKind kind);
/// The kind called `name`, if any.
std::optional<ArgKind> parseArgKind(const std::string &name);

/// A product of integer literals and size names, e.g. `batch*heads*2`.
struct SizeExpr {
  std::vector<std::string> factors; // each a decimal literal or a size name

  /// Parses `text`; returns nullopt unless it is a valid expression.
  static std::optional<SizeExpr> parse(const std::string &text);
  /// The product with every name looked up in `sizes`; throws LaunchError
  /// naming the expression if a name is missing or the product overflows.
  int64_t evaluate(const Sizes &sizes) const;
  std::string str() const;
  bool operator==(const SizeExpr &other) const {
    return factors == other.factors;
  }
};

struct ArgSpec {
  ArgKind kind = ArgKind::Ptr;
  std::string name;
  bool operator==(const ArgSpec &other) const {
    return kind == other.kind && name == other.name;
  }
};

/// The resolved launch configuration of one kernel.
struct LaunchShape {
  Dim3 grid, block;
  unsigned sharedBytes = 0;
};

struct KernelSpec {
  std::string name;
  std::array<SizeExpr, 3> grid;
  std::array<unsigned, 3> block = {1, 1, 1};
  unsigned sharedBytes = 0;
  std::vector<ArgSpec> args;

  /// Grid and block with the grid's size names resolved from `sizes`; throws
  /// LaunchError naming the kernel if a size is missing or a grid dimension
  /// is not in [1, 2^31 - 1].
  LaunchShape resolveShape(const Sizes &sizes) const;
  bool operator==(const KernelSpec &other) const;
};

struct Manifest {
  static constexpr int kVersion = 1;
  std::vector<KernelSpec> kernels;

  /// Parses manifest `text`; errors throw ManifestError with the message
  /// "<sourceName>:<line>: <problem>".
  static Manifest parse(const std::string &text, const std::string &sourceName);
  /// The manifest as text that parse() reads back to an equal manifest.
  std::string serialize() const;
  /// The kernel `name`, or nullptr.
  const KernelSpec *find(const std::string &name) const;
  bool operator==(const Manifest &other) const {
    return kernels == other.kernels;
  }
};

} // namespace fwp::rt

#endif // FWP_RUNTIME_MANIFEST_H
