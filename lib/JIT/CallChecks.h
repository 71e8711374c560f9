//===- CallChecks.h - The argument checks of CompiledAttention's calls ---===//
//
// What forward() and backward() check before a kernel runs, on the host and
// on the device alike (and the scans' calls, their buffers): sizes that
// fit, buffers that are there, the element type the kernel was compiled for.
// Each failure is an std::invalid_argument naming the call and what was wrong.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_LIB_JIT_CALLCHECKS_H
#define FWP_LIB_JIT_CALLCHECKS_H

#include "fwp/JIT/JIT.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <utility>

namespace fwp::jit {

/// That none of `buffers` (name, pointer) is null.
void checkBuffers(
    const char *call,
    std::initializer_list<std::pair<const char *, const void *>> buffers);

/// The checks of a forward call (host or device buffers); false when there
/// is no step, and so nothing to read or write (the buffers may be null).
bool checkForward(const char *call, const KernelDesc &desc, int64_t seqLen,
                  int64_t batch, const void *x, const void *wQ, const void *wK,
                  const void *wV, const void *wBeta, const void *wO,
                  const void *bO, const void *y);

/// The checks of a backward call; false when there is no step, after the
/// weight gradients (sums over no step) are set to zero by `zero(buffer,
/// bytes)` without anything being read.
bool checkBackward(const char *call, const KernelDesc &desc, int64_t seqLen,
                   int64_t batch, const void *x, const void *wQ, const void *wK,
                   const void *wV, const void *wBeta, const void *wO,
                   const void *bO, const void *dy, const void *dx, void *dwQ,
                   void *dwK, void *dwV, void *dwBeta, void *dwO, void *dbO,
                   const std::function<void(void *, size_t)> &zero);

/// That a typed call's buffers (`given`) are of the kernel's element type.
void checkDType(const char *call, const KernelDesc &desc, DType given);

} // namespace fwp::jit

#endif // FWP_LIB_JIT_CALLCHECKS_H
