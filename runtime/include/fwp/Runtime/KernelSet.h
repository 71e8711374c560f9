//===- KernelSet.h - Launching ahead-of-time kernels by name ----*- C++ -*-===//
//
// A KernelSet is PTX plus its manifest (Manifest.h), loaded into a Module, so
// kernels compiled ahead of time run without the compiler: a kernel is
// launched by name with named sizes (for its grid) and named argument values.
//
// Launch requests are checked against the manifest before anything reaches
// the driver: every declared argument must be supplied, with the declared
// kind, and nothing else. That checking (prepareLaunch) needs only a parsed
// manifest, so it works, and is tested, without a GPU.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_RUNTIME_KERNELSET_H
#define FWP_RUNTIME_KERNELSET_H

#include "fwp/Runtime/Cuda.h"
#include "fwp/Runtime/Manifest.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace fwp::rt {

/// One kernel argument value, tagged with its kind.
class ArgValue {
public:
  static ArgValue ptr(CUdeviceptr value);
  static ArgValue ptr(const DeviceBuffer &buffer) { return ptr(buffer.ptr()); }
  static ArgValue i64(int64_t value);
  static ArgValue i32(int32_t value);
  static ArgValue f32(float value);
  static ArgValue f64(double value);

  ArgKind kind() const { return kind_; }
  /// Address of the stored value, as cuLaunchKernel takes a parameter.
  void *address() const { return const_cast<Storage *>(&value_); }

private:
  union Storage {
    CUdeviceptr ptr;
    int64_t i64;
    int32_t i32;
    float f32;
    double f64;
  };
  ArgValue(ArgKind kind, Storage value) : kind_(kind), value_(value) {}
  ArgKind kind_;
  Storage value_;
};

/// Argument values by the names the manifest declares.
using ArgValues = std::map<std::string, ArgValue>;

/// A launch checked against its manifest entry, ready for the driver.
struct PreparedLaunch {
  const KernelSpec *kernel = nullptr;
  LaunchShape shape;
  std::vector<void *> args; // into the ArgValues given; one per parameter
};

/// Pointers to the values of `kernel`'s declared arguments, in parameter
/// order. Throws LaunchError naming the kernel and argument if one is
/// missing, has another kind, or is not declared.
std::vector<void *> packArgs(const KernelSpec &kernel, const ArgValues &values);

/// Finds `kernel` in `manifest`, resolves its shape with `sizes` and packs
/// `values`. Throws LaunchError for an unknown kernel or any mismatch.
/// The result points into `values`, which must outlive it.
PreparedLaunch prepareLaunch(const Manifest &manifest,
                             const std::string &kernel, const Sizes &sizes,
                             const ArgValues &values);

/// PTX and its manifest, loaded and ready to launch.
class KernelSet {
public:
  /// Loads `ptx` and looks up every kernel of `manifest` in it; throws
  /// CudaError if the PTX does not load or lacks a kernel. `sourceName`
  /// names the PTX in messages.
  KernelSet(Manifest manifest, const std::string &ptx,
            const std::string &sourceName = "<ptx>");

  /// Loads `<basePath>.manifest` and `<basePath>.ptx` (e.g. basePath
  /// "out/scan" reads out/scan.manifest and out/scan.ptx). Errors name the
  /// file.
  static KernelSet load(const std::string &basePath);

  /// Launches `kernel` on `stream` (nullptr: the default stream), after
  /// checking `sizes` and `values` against the manifest (see prepareLaunch).
  void launch(const std::string &kernel, const Sizes &sizes,
              const ArgValues &values, CUstream stream = nullptr) const;

  const Manifest &manifest() const { return manifest_; }
  const Module &module() const { return module_; }
  /// The loaded function of `kernel`; throws LaunchError if unknown.
  CUfunction function(const std::string &kernel) const;

private:
  Manifest manifest_;
  Module module_;
  std::map<std::string, CUfunction> functions_;
};

/// The contents of the file at `path`; throws Error naming the file.
std::string readTextFile(const std::string &path);

/// Parses the manifest file at `path`; errors name the file.
Manifest loadManifestFile(const std::string &path);

} // namespace fwp::rt

#endif // FWP_RUNTIME_KERNELSET_H
