//===- AttentionEntry.h - A compiled entry point, loaded and run -*- C++
//-*-===//
//
// Loads one compiled entry point of the FastWeightsAttention module (a
// directory described by ModuleInfo.h) and runs it on host buffers:
//
//   auto forward = fwp::rt::AttentionEntry::load("cache/ab12.../");
//   forward->run(seqLen, batch, {x, wQ, wK, wV, wBeta, wO, bO}, {y});
//
// This is all an application needs to run fwp's kernels: no MLIR, no LLVM.
// The CPU backend's code is a shared object loaded with dlopen; the CUDA
// backend's is a launch plan and PTX, run through the CUDA driver (loaded
// on the first call, so that loading needs no GPU).
//
// Buffers are row-major, in the entry's dtype, in the order of
// attentionBuffers(); the caller checks sizes and pointers (the JIT's
// CompiledAttention does, and so does fwp-check).
//
//===----------------------------------------------------------------------===//

#ifndef FWP_RUNTIME_ATTENTIONENTRY_H
#define FWP_RUNTIME_ATTENTIONENTRY_H

#include "fwp/Runtime/ModuleInfo.h"
#include "fwp/Runtime/PlanCuda.h"

#include <memory>
#include <string>
#include <vector>

namespace fwp::rt {

/// One buffer of an entry point: its name (as in fwp-run's .npy files) and
/// its sizes.
struct AttentionBuffer {
  std::string name;
  std::vector<int64_t> sizes;
};

/// The inputs and outputs of `entry`, in the order of the compiled
/// function's arguments:
///   forward:  x wQ wK wV wBeta wO bO            -> y
///   backward: x wQ wK wV wBeta wO bO dy         -> dx dwQ dwK dwV dwBeta dwO
///   dbO
/// x, y, dy, dx are [seqLen, batch, dModel]; wQ, wK, wV, wO [dModel, dModel];
/// wBeta [heads, dModel]; bO [dModel].
struct AttentionSignature {
  std::vector<AttentionBuffer> inputs, outputs;
};
AttentionSignature attentionSignature(EntryPoint entry, int64_t seqLen,
                                      int64_t batch, int64_t heads,
                                      int64_t dModel);

class AttentionEntry {
public:
  /// Loads the compiled entry point in `dir`: reads and checks its manifest
  /// (ModuleError if the directory is incomplete or corrupt), then loads its
  /// code (dlopen for the CPU; the plan and PTX text for CUDA). The
  /// directory may be removed once this returns.
  static std::unique_ptr<AttentionEntry> load(const std::string &dir);
  virtual ~AttentionEntry() = default;

  const ModuleInfo &info() const { return info_; }

  /// Runs the entry point: `inputs` and `outputs` hold one host pointer per
  /// buffer of attentionSignature(info().entry, seqLen, batch, ...), in
  /// that order. seqLen and batch are > 0. May be called from several
  /// threads at once.
  virtual void run(int64_t seqLen, int64_t batch,
                   const std::vector<const void *> &inputs,
                   const std::vector<void *> &outputs) const = 0;

  /// Whether the entry runs on a GPU (runOnDevice) rather than on the host.
  virtual bool runsOnDevice() const { return false; }

  /// A GPU entry on buffers already on the device (CUdeviceptr values of
  /// the primary context, Cuda.h), in the order of run(): no copies, only
  /// the plan's own scratch is allocated, on the stream and from the
  /// allocator `call` gives (PlanCuda.h; by default the legacy default
  /// stream and cuMemAlloc, returning once the work is done). Throws Error
  /// for a host entry.
  virtual void runOnDevice(int64_t seqLen, int64_t batch,
                           const std::vector<uint64_t> &inputs,
                           const std::vector<uint64_t> &outputs,
                           const DeviceCall &call = {}) const;

protected:
  explicit AttentionEntry(ModuleInfo info) : info_(std::move(info)) {}

private:
  ModuleInfo info_;
};

/// The CPU backend: `<dir>/kernel.so`, loaded with dlopen. It exports the
/// entry as MLIR's C interface, `_mlir_ciface_fwp_attention` (forward) or
/// `_mlir_ciface_fwp_attention_grad` (backward): one pointer per buffer to a
/// memref descriptor {T *allocated, T *aligned, int64_t offset, int64_t
/// sizes[rank], int64_t strides[rank]}.
std::unique_ptr<AttentionEntry> loadHostEntry(const std::string &dir,
                                              ModuleInfo info);

/// The symbol a CPU kernel.so exports for `entry`.
const char *hostEntrySymbol(EntryPoint entry);

/// The CUDA backend: `<dir>/plan.fwp` and the PTX of the modules it names.
std::unique_ptr<AttentionEntry> loadCudaEntry(const std::string &dir,
                                              ModuleInfo info);

} // namespace fwp::rt

#endif // FWP_RUNTIME_ATTENTIONENTRY_H
