//===- CallChecks.cpp - The argument checks of CompiledAttention's calls -===//

#include "CallChecks.h"

#include "fwp/Runtime/ElementType.h"

#include <climits>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

namespace fwp::jit {

void checkBuffers(
    const char *call,
    std::initializer_list<std::pair<const char *, const void *>> buffers) {
  for (const auto &[name, pointer] : buffers)
    if (!pointer)
      throw std::invalid_argument(std::string(call) + ": buffer " + name +
                                  " is null");
}

namespace {

/// Checks the sizes of a call named `call` ("forward" or "backward").
void checkSizes(const char *call, const KernelDesc &desc, int64_t seqLen,
                int64_t batch) {
  if (seqLen < 0 || batch < 0)
    throw std::invalid_argument(
        std::string(call) + ": seqLen and batch must be >= 0, got seqLen = " +
        std::to_string(seqLen) + ", batch = " + std::to_string(batch));
  // The byte size must fit too: at most 8 bytes per element.
  std::optional<int64_t> elements =
      rt::elementCount({seqLen, batch, desc.dModel()});
  if (!elements || *elements > INT64_MAX / 8)
    throw std::invalid_argument(
        std::string(call) + ": seqLen * batch * dModel = " +
        std::to_string(seqLen) + " * " + std::to_string(batch) + " * " +
        std::to_string(desc.dModel()) + " overflows");
}

/// "float (f32)", "double (f64)", or how to pass 16-bit buffers.
std::string describe(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "float (f32)";
  case DType::F64:
    return "double (f64)";
  case DType::BF16:
  case DType::F16:
    break;
  }
  return std::string(rt::dtypeName(dtype)) +
         " (pass buffers of its 16-bit patterns through the untyped form)";
}

/// The buffers both calls read: the input and the module's weights.
void checkInputs(const char *call, const void *x, const void *wQ,
                 const void *wK, const void *wV, const void *wBeta,
                 const void *wO, const void *bO) {
  checkBuffers(call, {{"x", x},
                      {"wQ", wQ},
                      {"wK", wK},
                      {"wV", wV},
                      {"wBeta", wBeta},
                      {"wO", wO},
                      {"bO", bO}});
}

} // namespace

bool checkForward(const char *call, const KernelDesc &desc, int64_t seqLen,
                  int64_t batch, const void *x, const void *wQ, const void *wK,
                  const void *wV, const void *wBeta, const void *wO,
                  const void *bO, const void *y) {
  checkSizes(call, desc, seqLen, batch);
  if (seqLen == 0 || batch == 0)
    return false;
  checkInputs(call, x, wQ, wK, wV, wBeta, wO, bO);
  checkBuffers(call, {{"y", y}});
  return true;
}

bool checkBackward(const char *call, const KernelDesc &desc, int64_t seqLen,
                   int64_t batch, const void *x, const void *wQ, const void *wK,
                   const void *wV, const void *wBeta, const void *wO,
                   const void *bO, const void *dy, const void *dx, void *dwQ,
                   void *dwK, void *dwV, void *dwBeta, void *dwO, void *dbO,
                   const std::function<void(void *, size_t)> &zero) {
  checkSizes(call, desc, seqLen, batch);
  // The weight gradients are written whatever the sizes.
  checkBuffers(call, {{"dwQ", dwQ},
                      {"dwK", dwK},
                      {"dwV", dwV},
                      {"dwBeta", dwBeta},
                      {"dwO", dwO},
                      {"dbO", dbO}});
  if (seqLen == 0 || batch == 0) {
    size_t element = rt::dtypeBytes(desc.dtype);
    size_t dm = desc.dModel(), square = dm * dm * element;
    for (void *weight : {dwQ, dwK, dwV, dwO})
      zero(weight, square);
    zero(dwBeta, desc.heads * dm * element);
    zero(dbO, dm * element);
    return false;
  }
  checkInputs(call, x, wQ, wK, wV, wBeta, wO, bO);
  checkBuffers(call, {{"dy", dy}, {"dx", dx}});
  return true;
}

void checkDType(const char *call, const KernelDesc &desc, DType given) {
  if (desc.dtype != given)
    throw std::invalid_argument(std::string(call) + ": called with " +
                                (given == DType::F32 ? "float" : "double") +
                                " buffers, but the kernel was compiled for " +
                                describe(desc.dtype));
}

} // namespace fwp::jit
