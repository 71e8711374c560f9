//===- Scan.cpp - The bare fast-weight scan, compiled ---------------------===//
//
// The scan's two functions (ScanModule.cpp) as the disk cache keeps them
// (docs/compiled-modules.md) and as they are called: for the CPU one
// kernel.so with both, called through the runtime's HostLibrary; for CUDA a
// launch plan per function, each compiled on its first use and carried out
// by the runtime (fwp/Runtime/PlanCuda.h). No MLIR here: the compiler is
// reached through ScanKernel.h only.
//
//===----------------------------------------------------------------------===//

#include "fwp/JIT/Scan.h"

#include "DiskCache.h"
#include "Kernel.h"
#include "ScanKernel.h"

#include "fwp/Runtime/HostLibrary.h"

#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>

namespace fwp::jit {

namespace {

/// The scan's buffers, in the order of the entry functions' arguments.
class ScanBuffers {
public:
  ScanBuffers(const ScanDesc &desc, int64_t seqLen, int64_t batch,
              int64_t heads)
      : desc(desc), seqLen(seqLen), batch(batch), heads(heads) {}

  /// q, k, v, [beta], [initial]: what both functions read first.
  void common(const void *q, const void *k, const void *v, const void *beta,
              const void *initial) {
    steps(q, desc.dInput);
    steps(k, desc.dInput);
    steps(v, desc.dValue);
    if (desc.rule == Rule::Delta)
      gates(beta);
    if (desc.initial)
      state(initial);
  }
  void steps(const void *data, int64_t width) {
    std::vector<int64_t> sizes = stepSizes();
    sizes.push_back(width);
    list.push_back({data, sizes});
  }
  void gates(const void *data) { list.push_back({data, stepSizes()}); }
  void state(const void *data) {
    list.push_back({data, {batch, heads, desc.dValue, desc.dFeature()}});
  }

  const std::vector<rt::HostBuffer> &buffers() const { return list; }

  /// The buffers as a plan's arguments (device addresses).
  std::vector<rt::BufferRef> deviceRefs() const {
    std::vector<rt::BufferRef> refs;
    for (const rt::HostBuffer &buffer : list)
      refs.push_back(
          {reinterpret_cast<uint64_t>(buffer.data), buffer.sizes, desc.dtype});
    return refs;
  }

  /// The buffers as host arguments of a device plan: the last `outputs`
  /// are written, the others read.
  std::vector<rt::DevicePlan::HostArg> hostArgs(size_t outputs) const {
    std::vector<rt::DevicePlan::HostArg> args;
    for (size_t i = 0; i < list.size(); ++i) {
      bool output = i + outputs >= list.size();
      const void *data = list[i].data;
      args.push_back({output ? nullptr : data,
                      output ? const_cast<void *>(data) : nullptr,
                      rt::BufferRef{0, list[i].sizes, desc.dtype}});
    }
    return args;
  }

private:
  /// [T, B, H], or [B, T, H] batch first.
  std::vector<int64_t> stepSizes() const {
    if (desc.batchFirst)
      return {batch, seqLen, heads};
    return {seqLen, batch, heads};
  }

  const ScanDesc &desc;
  int64_t seqLen, batch, heads;
  std::vector<rt::HostBuffer> list;
};

/// The arguments of one forward call, in the function's order.
ScanBuffers forwardArgs(const ScanDesc &d, int64_t seqLen, int64_t batch,
                        int64_t heads, const void *q, const void *k,
                        const void *v, const void *beta, const void *initial,
                        void *y, void *finalState) {
  ScanBuffers args(d, seqLen, batch, heads);
  args.common(q, k, v, beta, initial);
  args.steps(y, d.dValue);
  args.state(finalState);
  return args;
}

/// The arguments of one backward call, in the function's order.
ScanBuffers backwardArgs(const ScanDesc &d, int64_t seqLen, int64_t batch,
                         int64_t heads, const void *q, const void *k,
                         const void *v, const void *beta, const void *initial,
                         const void *dy, const void *dFinalState, void *dq,
                         void *dk, void *dv, void *dbeta, void *dInitial) {
  ScanBuffers args(d, seqLen, batch, heads);
  args.common(q, k, v, beta, initial);
  args.steps(dy, d.dValue);
  if (d.dFinalState)
    args.state(dFinalState);
  args.steps(dq, d.dInput);
  args.steps(dk, d.dInput);
  args.steps(dv, d.dValue);
  if (d.rule == Rule::Delta)
    args.gates(dbeta);
  args.state(dInitial);
  return args;
}

/// A scan whose kernels are a host library (a compiled module directory's
/// kernel.so) with both functions.
class LibraryScan final : public CompiledScan {
public:
  LibraryScan(const ScanDesc &desc, std::unique_ptr<rt::HostLibrary> library)
      : CompiledScan(desc), library(std::move(library)) {}

private:
  void runForward(int64_t seqLen, int64_t batch, int64_t heads, const void *q,
                  const void *k, const void *v, const void *beta,
                  const void *initial, void *y,
                  void *finalState) const override {
    library->call(0, forwardArgs(desc(), seqLen, batch, heads, q, k, v, beta,
                                 initial, y, finalState)
                         .buffers());
  }

  void runBackward(int64_t seqLen, int64_t batch, int64_t heads, const void *q,
                   const void *k, const void *v, const void *beta,
                   const void *initial, const void *dy, const void *dFinalState,
                   void *dq, void *dk, void *dv, void *dbeta,
                   void *dInitial) const override {
    library->call(1, backwardArgs(desc(), seqLen, batch, heads, q, k, v, beta,
                                  initial, dy, dFinalState, dq, dk, dv, dbeta,
                                  dInitial)
                         .buffers());
  }

  std::unique_ptr<rt::HostLibrary> library;
};

/// A CUDA scan: a launch plan per function, compiled (or loaded from the
/// disk cache) on its first use.
class DeviceScan final : public CompiledScan {
public:
  DeviceScan(const ScanDesc &desc, std::string cacheDir)
      : CompiledScan(desc), cacheDir(std::move(cacheDir)) {}

  void prepare() const override {
    plan(EntryPoint::Forward);
    plan(EntryPoint::Backward);
  }

private:
  size_t backwardOutputs() const { return desc().rule == Rule::Delta ? 5 : 4; }

  void runForward(int64_t seqLen, int64_t batch, int64_t heads, const void *q,
                  const void *k, const void *v, const void *beta,
                  const void *initial, void *y,
                  void *finalState) const override {
    plan(EntryPoint::Forward)
        .runOnHost(forwardArgs(desc(), seqLen, batch, heads, q, k, v, beta,
                               initial, y, finalState)
                       .hostArgs(2));
  }

  void runBackward(int64_t seqLen, int64_t batch, int64_t heads, const void *q,
                   const void *k, const void *v, const void *beta,
                   const void *initial, const void *dy, const void *dFinalState,
                   void *dq, void *dk, void *dv, void *dbeta,
                   void *dInitial) const override {
    plan(EntryPoint::Backward)
        .runOnHost(backwardArgs(desc(), seqLen, batch, heads, q, k, v, beta,
                                initial, dy, dFinalState, dq, dk, dv, dbeta,
                                dInitial)
                       .hostArgs(backwardOutputs()));
  }

  void runForwardOnDevice(int64_t seqLen, int64_t batch, int64_t heads,
                          const void *q, const void *k, const void *v,
                          const void *beta, const void *initial, void *y,
                          void *finalState,
                          const rt::DeviceCall &call) const override {
    const rt::DevicePlan &forward = plan(EntryPoint::Forward);
    std::optional<rt::DeviceScratch> zeros;
    initial = stateOrZero(batch, heads, initial, call, zeros);
    forward.run(forwardArgs(desc(), seqLen, batch, heads, q, k, v, beta,
                            initial, y, finalState)
                    .deviceRefs(),
                call);
  }

  void runBackwardOnDevice(int64_t seqLen, int64_t batch, int64_t heads,
                           const void *q, const void *k, const void *v,
                           const void *beta, const void *initial,
                           const void *dy, const void *dFinalState, void *dq,
                           void *dk, void *dv, void *dbeta, void *dInitial,
                           const rt::DeviceCall &call) const override {
    const rt::DevicePlan &backward = plan(EntryPoint::Backward);
    std::optional<rt::DeviceScratch> zeroInitial, zeroFinal;
    initial = stateOrZero(batch, heads, initial, call, zeroInitial);
    if (desc().dFinalState)
      dFinalState = stateOrZero(batch, heads, dFinalState, call, zeroFinal);
    backward.run(backwardArgs(desc(), seqLen, batch, heads, q, k, v, beta,
                              initial, dy, dFinalState, dq, dk, dv, dbeta,
                              dInitial)
                     .deviceRefs(),
                 call);
  }

  /// `state`, or (where the description takes one and none is given) a
  /// zero state in `zeros`, scratch of the call.
  const void *stateOrZero(int64_t batch, int64_t heads, const void *state,
                          const rt::DeviceCall &call,
                          std::optional<rt::DeviceScratch> &zeros) const {
    if (state || !desc().initial)
      return state;
    zeros.emplace(call, scanStateBytes(desc(), batch, heads));
    return reinterpret_cast<const void *>(zeros->ptr());
  }

  const rt::DevicePlan &plan(EntryPoint entry) const;

  struct Slot {
    std::mutex mutex;
    std::unique_ptr<rt::DevicePlan> plan;
  };
  std::string cacheDir;
  mutable Slot slots[2];
};

/// Everything that changes the scan's code: the description, the target
/// (the host CPU and optimisation level, or the CUDA chip and entry point)
/// and the compiler's build id.
std::string scanCacheKey(const ScanDesc &desc, EntryPoint entry) {
  if (desc.backend == Backend::Cpu)
    return desc.str() + " target=" + hostTargetDescription() + " O" +
           std::to_string(kDefaultCpuOptLevel) +
           " compiler=" + compilerBuildId();
  return desc.str() + " entry=" + rt::entryPointName(entry) +
         " target=" + desc.targetChip() + " compiler=" + compilerBuildId();
}

const rt::DevicePlan &DeviceScan::plan(EntryPoint entry) const {
  Slot &slot = slots[entry == EntryPoint::Forward ? 0 : 1];
  std::lock_guard<std::mutex> lock(slot.mutex);
  if (slot.plan)
    return *slot.plan;
  std::string key = scanCacheKey(desc(), entry);
  CachedEntry where = findOrCompile(
      cacheDir, key,
      [&](const std::string &dir) { compileCudaScan(desc(), entry, key, dir); },
      [&](const std::string &dir) { slot.plan = rt::DevicePlan::load(dir); });
  if (where.temporary)
    removeTree(where.dir);
  return *slot.plan;
}

std::unique_ptr<CompiledScan> compileScanIn(const ScanDesc &desc,
                                            const std::string &cacheDir) {
  desc.validate();
  if (desc.backend == Backend::Cuda)
    return std::make_unique<DeviceScan>(desc, cacheDir);
  auto start = std::chrono::steady_clock::now();
  std::string key = scanCacheKey(desc, EntryPoint::Forward);
  std::unique_ptr<rt::HostLibrary> library;
  CachedEntry where = findOrCompile(
      cacheDir, key,
      [&](const std::string &dir) { compileCpuScan(desc, key, dir); },
      [&](const std::string &dir) {
        library = rt::HostLibrary::load(
            dir, {std::string("_mlir_ciface_") + kScanForwardName,
                  std::string("_mlir_ciface_") + kScanBackwardName});
      });
  if (where.temporary)
    removeTree(where.dir);
  auto scan = std::make_unique<LibraryScan>(desc, std::move(library));
  scan->fromDiskCache = where.hit;
  scan->compileSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return scan;
}

} // namespace

std::unique_ptr<CompiledScan>
compileScanUncached(const ScanDesc &desc, const std::string &cacheDirectory) {
  return compileScanIn(desc, cacheDirectory);
}

std::shared_ptr<const CompiledScan> compileScan(const ScanDesc &desc) {
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<const CompiledScan>> scans;
  std::lock_guard<std::mutex> lock(mutex);
  auto &scan = scans[desc.str()];
  if (!scan) // a compilation that throws keeps nothing
    scan = compileScanIn(desc, cacheDirectoryFromEnvironment());
  return scan;
}

} // namespace fwp::jit
