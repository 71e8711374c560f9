//===- ScanCalls.cpp - The bare scan's description and calls, checked -----===//
//
// ScanDesc's checks and name, and CompiledScan's public calls: the checks of
// their arguments, then the backend's run (Scan.cpp).
//
//===----------------------------------------------------------------------===//

#include "CallChecks.h"
#include "Kernel.h"
#include "ScanKernel.h"

#include "fwp/JIT/Scan.h"

#include "fwp/Runtime/HostLibrary.h"

#include <cmath>
#include <cstring>
#include <functional>
#include <sstream>
#include <stdexcept>

namespace fwp::jit {

namespace {

[[noreturn]] void invalid(const std::string &what) {
  throw std::invalid_argument("invalid scan description: " + what);
}

} // namespace

void ScanDesc::validate() const {
  // Wide enough for any model; small enough that the workspaces' sizes
  // cannot overflow.
  constexpr int64_t kMaxWidth = 1 << 16;
  if (rule != Rule::Delta && rule != Rule::Sum)
    invalid("unknown rule");
  if (dtype != DType::F32 && dtype != DType::F64 && dtype != DType::BF16 &&
      dtype != DType::F16)
    invalid("unknown dtype");
  if (dInput < 1 || dInput > kMaxWidth)
    invalid("d_in = " + std::to_string(dInput) + ", expected 1.." +
            std::to_string(kMaxWidth));
  if (dValue < 1 || dValue > kMaxWidth)
    invalid("d_v = " + std::to_string(dValue) + ", expected 1.." +
            std::to_string(kMaxWidth));
  if (nu < 0 || nu > 2 * dInput - 1)
    invalid("nu = " + std::to_string(nu) + ", expected 0 (no DPFP) or 1.." +
            std::to_string(2 * dInput - 1) + " (2 d_in - 1)");
  if (nu > 0 && dFeature() > kMaxWidth)
    invalid("DPFP features 2 d_in nu = " + std::to_string(dFeature()) +
            ", expected at most " + std::to_string(kMaxWidth));
  if (nu > 0 && !(std::isfinite(eps) && eps > 0))
    invalid("eps must be finite and > 0");
  if (chunkSize < 1 || chunkSize > kMaxChunkSize)
    invalid("chunk = " + std::to_string(chunkSize) + ", expected 1.." +
            std::to_string(kMaxChunkSize));
  if (backend != Backend::Cpu && backend != Backend::Cuda)
    invalid("unknown backend");
  std::string problem = chipProblem(backend, chip);
  if (!problem.empty())
    invalid(problem);
}

std::string ScanDesc::str() const {
  std::ostringstream out;
  out << "scan " << (backend == Backend::Cuda ? "cuda " : "")
      << rt::dtypeName(dtype) << ' ' << ruleName(rule) << " d_in=" << dInput
      << " d_v=" << dValue << " nu=" << nu;
  if (nu > 0)
    out << " eps=" << roundTrip(eps);
  out << " chunk=" << chunkSize << (initial ? " initial" : "")
      << (dFinalState ? " d_final" : "") << (batchFirst ? " batch_first" : "")
      << (chip.empty() ? "" : " chip=" + chip)
      << (backend == Backend::Cuda && gpuStages ? " gpu-stages" : "");
  return out.str();
}

namespace {

void checkSizes(const char *what, int64_t seqLen, int64_t batch,
                int64_t heads) {
  if (seqLen < 0 || batch < 0 || heads < 0)
    throw std::invalid_argument(
        std::string(what) + ": sizes T = " + std::to_string(seqLen) +
        ", B = " + std::to_string(batch) + ", H = " + std::to_string(heads) +
        " must not be negative");
  // Every buffer's element count must fit in int64 (T B H 2^16 at most).
  constexpr int64_t kLimit = int64_t(1) << 46;
  if ((seqLen && batch > kLimit / seqLen) ||
      (seqLen && batch && heads > kLimit / (seqLen * batch)) ||
      (batch && heads > kLimit / batch))
    throw std::invalid_argument(std::string(what) +
                                ": sizes T, B, H too large");
}

/// Copies `bytes` of a state from `source` to `target`, zeros where
/// `source` is null: on the host, or on the device in a call's order.
using StateCopy =
    std::function<void(const void *source, void *target, size_t bytes)>;

void hostCopy(const void *source, void *target, size_t bytes) {
  if (source)
    std::memmove(target, source, bytes);
  else
    std::memset(target, 0, bytes); // +0.0 in every dtype
}

StateCopy deviceCopy(const rt::DeviceCall &call) {
  return [&call](const void *source, void *target, size_t bytes) {
    rt::copyOrZeroOnDevice(call, reinterpret_cast<uint64_t>(target),
                           reinterpret_cast<uint64_t>(source), bytes);
  };
}

/// The checks of a forward call; false when no step is left to run (the
/// final state is then the initial one, or zero). `nullIsZero`: a null
/// initial state is a zero one (device calls), else it must be given.
bool checkForward(const char *what, const ScanDesc &d, int64_t seqLen,
                  int64_t batch, int64_t heads, const void *q, const void *k,
                  const void *v, const void *beta, const void *initial, void *y,
                  void *finalState, bool nullIsZero, const StateCopy &copy) {
  checkSizes(what, seqLen, batch, heads);
  if (batch == 0 || heads == 0)
    return false;
  checkBuffers(what, {{"finalState", finalState}});
  if (d.initial && !nullIsZero)
    checkBuffers(what, {{"initial", initial}});
  if (seqLen == 0) {
    copy(d.initial ? initial : nullptr, finalState,
         scanStateBytes(d, batch, heads));
    return false;
  }
  checkBuffers(what, {{"q", q}, {"k", k}, {"v", v}, {"y", y}});
  if (d.rule == Rule::Delta)
    checkBuffers(what, {{"beta", beta}});
  return true;
}

/// The checks of a backward call, as checkForward's.
bool checkBackward(const char *what, const ScanDesc &d, int64_t seqLen,
                   int64_t batch, int64_t heads, const void *q, const void *k,
                   const void *v, const void *beta, const void *initial,
                   const void *dy, const void *dFinalState, void *dq, void *dk,
                   void *dv, void *dbeta, void *dInitial, bool nullIsZero,
                   const StateCopy &copy) {
  checkSizes(what, seqLen, batch, heads);
  if (batch == 0 || heads == 0)
    return false;
  checkBuffers(what, {{"dInitial", dInitial}});
  if (d.dFinalState && !nullIsZero)
    checkBuffers(what, {{"dFinalState", dFinalState}});
  // With no steps the initial state is the final one.
  if (seqLen == 0) {
    copy(d.dFinalState ? dFinalState : nullptr, dInitial,
         scanStateBytes(d, batch, heads));
    return false;
  }
  checkBuffers(what, {{"q", q},
                      {"k", k},
                      {"v", v},
                      {"dy", dy},
                      {"dq", dq},
                      {"dk", dk},
                      {"dv", dv}});
  if (d.rule == Rule::Delta)
    checkBuffers(what, {{"beta", beta}, {"dbeta", dbeta}});
  if (d.initial && !nullIsZero)
    checkBuffers(what, {{"initial", initial}});
  return true;
}

void requireCuda(const char *what, const ScanDesc &d) {
  if (d.backend != Backend::Cuda)
    throw std::invalid_argument(std::string(what) + ": " + d.str() +
                                " runs on host buffers, not device ones");
}

} // namespace

void CompiledScan::forward(int64_t seqLen, int64_t batch, int64_t heads,
                           const void *q, const void *k, const void *v,
                           const void *beta, const void *initial, void *y,
                           void *finalState) const {
  if (checkForward("scan forward", desc(), seqLen, batch, heads, q, k, v, beta,
                   initial, y, finalState, false, hostCopy))
    runForward(seqLen, batch, heads, q, k, v, beta, initial, y, finalState);
}

void CompiledScan::backward(int64_t seqLen, int64_t batch, int64_t heads,
                            const void *q, const void *k, const void *v,
                            const void *beta, const void *initial,
                            const void *dy, const void *dFinalState, void *dq,
                            void *dk, void *dv, void *dbeta,
                            void *dInitial) const {
  if (checkBackward("scan backward", desc(), seqLen, batch, heads, q, k, v,
                    beta, initial, dy, dFinalState, dq, dk, dv, dbeta, dInitial,
                    false, hostCopy))
    runBackward(seqLen, batch, heads, q, k, v, beta, initial, dy, dFinalState,
                dq, dk, dv, dbeta, dInitial);
}

void CompiledScan::forwardOnDevice(int64_t seqLen, int64_t batch, int64_t heads,
                                   const void *q, const void *k, const void *v,
                                   const void *beta, const void *initial,
                                   void *y, void *finalState,
                                   const rt::DeviceCall &call) const {
  const char *what = "scan forward on the device";
  requireCuda(what, desc());
  if (checkForward(what, desc(), seqLen, batch, heads, q, k, v, beta, initial,
                   y, finalState, true, deviceCopy(call)))
    runForwardOnDevice(seqLen, batch, heads, q, k, v, beta, initial, y,
                       finalState, call);
}

void CompiledScan::backwardOnDevice(int64_t seqLen, int64_t batch,
                                    int64_t heads, const void *q, const void *k,
                                    const void *v, const void *beta,
                                    const void *initial, const void *dy,
                                    const void *dFinalState, void *dq, void *dk,
                                    void *dv, void *dbeta, void *dInitial,
                                    const rt::DeviceCall &call) const {
  const char *what = "scan backward on the device";
  requireCuda(what, desc());
  if (checkBackward(what, desc(), seqLen, batch, heads, q, k, v, beta, initial,
                    dy, dFinalState, dq, dk, dv, dbeta, dInitial, true,
                    deviceCopy(call)))
    runBackwardOnDevice(seqLen, batch, heads, q, k, v, beta, initial, dy,
                        dFinalState, dq, dk, dv, dbeta, dInitial, call);
}

void CompiledScan::runForwardOnDevice(int64_t, int64_t, int64_t, const void *,
                                      const void *, const void *, const void *,
                                      const void *, void *, void *,
                                      const rt::DeviceCall &) const {
  requireCuda("scan forward on the device", desc());
}

void CompiledScan::runBackwardOnDevice(int64_t, int64_t, int64_t, const void *,
                                       const void *, const void *, const void *,
                                       const void *, const void *, const void *,
                                       void *, void *, void *, void *, void *,
                                       const rt::DeviceCall &) const {
  requireCuda("scan backward on the device", desc());
}

} // namespace fwp::jit
