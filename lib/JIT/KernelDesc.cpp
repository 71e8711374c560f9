//===- KernelDesc.cpp - Checking and naming kernel descriptions -----------===//

#include "Kernel.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace fwp::jit {

namespace {

[[noreturn]] void invalid(const std::string &what) {
  throw std::invalid_argument("invalid kernel description: " + what);
}

bool productFits(std::initializer_list<int64_t> factors) {
  int64_t product = 1;
  for (int64_t f : factors)
    if (__builtin_mul_overflow(product, f, &product))
      return false;
  return true;
}

} // namespace

/// "sm_NN" or "sm_NNa" (NN >= 50, as the PTX backend accepts).
static bool isCudaChip(const std::string &chip) {
  if (chip.size() < 5 || chip.compare(0, 3, "sm_") != 0)
    return false;
  size_t end = chip.back() == 'a' ? chip.size() - 1 : chip.size();
  for (size_t i = 3; i < end; ++i)
    if (chip[i] < '0' || chip[i] > '9')
      return false;
  return end > 3 && std::stoi(chip.substr(3, end - 3)) >= 50;
}

std::string roundTrip(double v) {
  char buf[32];
  for (int precision = 6; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v)
      break;
  }
  return buf;
}

void KernelDesc::validate() const {
  // Enums first: a value cast from an out-of-range integer has no name.
  if (!isKnown(rule) || !isKnown(dtype) || !isKnown(backend))
    invalid("rule, dtype or backend is not one of its enumerators");
  if (heads < 1)
    invalid("heads must be >= 1, got " + std::to_string(heads));
  if (dHead < 1)
    invalid("dHead must be >= 1, got " + std::to_string(dHead));
  // The compiled code indexes weights (dModel^2) and fast-weight states
  // (dHead x 2*dHead*nu per head) with 64-bit integers; checking dHead^2
  // first also keeps 2*dHead below from overflowing.
  auto overflow = [&] {
    invalid("heads = " + std::to_string(heads) + ", dHead = " +
            std::to_string(dHead) + ", nu = " + std::to_string(nu) +
            " give sizes that overflow 64-bit indices");
  };
  if (!productFits({heads, dHead, heads, dHead}) ||
      !productFits({2, dHead, dHead}))
    overflow();
  if (nu < 1 || nu > 2 * dHead - 1)
    invalid("nu must be in [1, 2*dHead-1] = [1, " +
            std::to_string(2 * dHead - 1) + "], got " + std::to_string(nu));
  if (!productFits({2, dHead, dHead, nu}))
    overflow();
  if (!std::isfinite(eps) || !(eps > 0))
    invalid("eps must be finite and > 0, got " + roundTrip(eps));
  if (chunkSize < 1 || chunkSize > kMaxChunkSize)
    invalid("chunkSize must be in [1, " + std::to_string(kMaxChunkSize) +
            "], got " + std::to_string(chunkSize));
  std::string problem = chipProblem(backend, chip);
  if (!problem.empty())
    invalid(problem);
}

std::string KernelDesc::targetChip() const {
  if (!chip.empty())
    return chip;
  return backend == Backend::Cuda ? "sm_90" : "host";
}

std::string chipProblem(Backend backend, const std::string &chip) {
  if (backend == Backend::Cpu && !chip.empty())
    return "chip must be empty for the cpu backend (it compiles for this "
           "host), got '" +
           chip + "'";
  if (backend == Backend::Cuda && !chip.empty() && !isCudaChip(chip))
    return "chip must be sm_NN (e.g. sm_80, sm_90a), got '" + chip + "'";
  return "";
}

rt::ModuleInfo entryInfo(Backend backend, EntryPoint entry, DType dtype,
                         const std::string &key) {
  rt::ModuleInfo info;
  info.key = key;
  info.backend = backend;
  info.entry = entry;
  info.dtype = dtype;
  return info;
}

rt::ModuleInfo moduleInfo(const KernelDesc &desc, EntryPoint entry,
                          const std::string &key) {
  rt::ModuleInfo info = entryInfo(desc.backend, entry, desc.dtype, key);
  info.heads = desc.heads;
  info.dModel = desc.dModel();
  return info;
}

std::string KernelDesc::str() const {
  return std::string(backendName(backend)) + " " + dtypeName(dtype) + " " +
         ruleName(rule) + " heads=" + std::to_string(heads) +
         " d_head=" + std::to_string(dHead) + " nu=" + std::to_string(nu) +
         " eps=" + roundTrip(eps) + " chunk=" + std::to_string(chunkSize) +
         (chip.empty() ? "" : " chip=" + chip);
}

} // namespace fwp::jit
