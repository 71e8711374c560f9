//===- CApi.cpp - fwp's C ABI over the JIT --------------------------------===//
//
// Every entry point catches what the JIT throws and turns it into a status
// and a thread-local message: no C++ exception may cross the C boundary.
//
//===----------------------------------------------------------------------===//

#include "fwp/CApi.h"

#include "fwp/JIT/JIT.h"
#include "fwp/JIT/Scan.h"
#include "fwp/Runtime/Cuda.h"
// The JIT library's own rule for the cache directory, not a copy of it.
#include "../JIT/DiskCache.h"

#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

struct fwp_attention {
  std::shared_ptr<const fwp::jit::CompiledAttention> kernel;
  std::string description;
};

struct fwp_scan {
  std::shared_ptr<const fwp::jit::CompiledScan> scan;
  std::string description;
};

namespace {

thread_local std::string lastError;

void fail(const std::string &message) { lastError = message; }

/// Runs `body`, returning 0, or 1 with the message of what it threw.
template <typename F> int guarded(const char *what, F &&body) {
  try {
    body();
    return 0;
  } catch (const std::exception &e) {
    fail(std::string(what) + ": " + e.what());
  } catch (...) {
    fail(std::string(what) + ": unknown error");
  }
  return 1;
}

std::string quoted(const char *name) {
  return name ? "'" + std::string(name) + "'" : std::string("NULL");
}

fwp::Backend parseBackend(const char *name) {
  if (name)
    if (std::optional<fwp::Backend> backend = fwp::parseBackend(name))
      return *backend;
  throw std::invalid_argument("backend " + quoted(name) +
                              ", expected 'cpu' or 'cuda'");
}

fwp::DType parseDType(const char *name) {
  if (name)
    if (std::optional<fwp::DType> dtype = fwp::parseDType(name))
      return *dtype;
  throw std::invalid_argument("dtype " + quoted(name) +
                              ", expected 'f32', 'f64', 'bf16' or 'f16'");
}

fwp::UpdateRule parseRule(const char *name) {
  if (name)
    if (std::optional<fwp::UpdateRule> rule = fwp::parseRule(name))
      return *rule;
  throw std::invalid_argument("rule " + quoted(name) +
                              ", expected 'delta' or 'sum'");
}

/// Whether per-step tensors are batch first, from "steps_first" or
/// "batch_first".
bool parseBatchFirst(const char *layout) {
  if (layout && !std::strcmp(layout, "steps_first"))
    return false;
  if (layout && !std::strcmp(layout, "batch_first"))
    return true;
  throw std::invalid_argument("layout " + quoted(layout) +
                              ", expected 'steps_first' or 'batch_first'");
}

/// The runtime's form of a C call description; `call` may be NULL (the
/// default stream, cuMemAlloc).
fwp::rt::DeviceCall deviceCall(const fwp_cuda_call *call) {
  fwp::rt::DeviceCall device;
  if (!call)
    return device;
  if (call->device < 0 || call->device > INT32_MAX)
    throw std::invalid_argument("fwp_cuda_call's device is " +
                                std::to_string(call->device) +
                                ", expected a CUDA device ordinal (>= 0)");
  device.device = static_cast<int>(call->device);
  device.stream = static_cast<fwp::rt::CUstream>(call->stream);
  if (call->alloc) {
    if (!call->release)
      throw std::invalid_argument("fwp_cuda_call has alloc but no release");
    auto alloc = call->alloc;
    auto release = call->release;
    void *user = call->user;
    device.allocate = [alloc, user](size_t bytes) {
      return alloc(user, bytes);
    };
    device.release = [release, user](uint64_t ptr) { release(user, ptr); };
  }
  return device;
}

/// `state`, or a zero state of the scan's size where it is null.
const void *stateOrZero(const fwp::jit::ScanDesc &desc, int64_t batch,
                        int64_t heads, const void *state,
                        std::vector<char> &zeros) {
  if (state || batch <= 0 || heads <= 0)
    return state;
  int64_t elements = 0;
  if (__builtin_mul_overflow(batch, heads, &elements) ||
      __builtin_mul_overflow(elements, desc.dValue * desc.dFeature(),
                             &elements) ||
      elements > (int64_t(1) << 40))
    throw std::invalid_argument("B = " + std::to_string(batch) +
                                ", H = " + std::to_string(heads) +
                                ": the state would be too large");
  zeros.assign(static_cast<size_t>(elements) * fwp::rt::dtypeBytes(desc.dtype),
               0);
  return zeros.data();
}

} // namespace

extern "C" {

int fwp_capi_version(void) { return FWP_CAPI_VERSION; }

int fwp_compiler_available(void) { return fwp::jit::compilerAvailable(); }

const char *fwp_cache_directory(void) {
  static thread_local std::string directory;
  directory = fwp::jit::cacheDirectoryFromEnvironment();
  return directory.c_str();
}

const char *fwp_last_error(void) { return lastError.c_str(); }

fwp_attention *fwp_attention_create(const char *backend, const char *dtype,
                                    const char *rule, int64_t heads,
                                    int64_t d_head, int64_t nu, double eps,
                                    int64_t chunk_size) {
  std::unique_ptr<fwp_attention> attention;
  int status = guarded("fwp_attention_create", [&] {
    fwp::jit::KernelDesc desc;
    desc.backend = parseBackend(backend);
    desc.dtype = parseDType(dtype);
    desc.rule = parseRule(rule);
    desc.heads = heads;
    desc.dHead = d_head;
    desc.nu = nu;
    desc.eps = eps;
    if (chunk_size != 0)
      desc.chunkSize = chunk_size;
    auto kernel = fwp::jit::compile(desc); // validates; compiles nothing yet
    attention.reset(new fwp_attention{kernel, desc.str()});
  });
  return status ? nullptr : attention.release();
}

void fwp_attention_destroy(fwp_attention *attention) { delete attention; }

const char *fwp_attention_describe(const fwp_attention *attention) {
  return attention ? attention->description.c_str() : "";
}

int fwp_attention_prepare(const fwp_attention *attention) {
  return guarded("fwp_attention_prepare", [&] {
    if (!attention)
      throw std::invalid_argument("the module is NULL");
    attention->kernel->prepareAll();
  });
}

int fwp_attention_forward(const fwp_attention *attention, int64_t seq_len,
                          int64_t batch, const void *x, const void *w_q,
                          const void *w_k, const void *w_v, const void *w_beta,
                          const void *w_o, const void *b_o, void *y) {
  return guarded("fwp_attention_forward", [&] {
    if (!attention)
      throw std::invalid_argument("the module is NULL");
    attention->kernel->forward(seq_len, batch, x, w_q, w_k, w_v, w_beta, w_o,
                               b_o, y);
  });
}

int fwp_attention_backward(const fwp_attention *attention, int64_t seq_len,
                           int64_t batch, const void *x, const void *w_q,
                           const void *w_k, const void *w_v, const void *w_beta,
                           const void *w_o, const void *b_o, const void *dy,
                           void *dx, void *dw_q, void *dw_k, void *dw_v,
                           void *dw_beta, void *dw_o, void *db_o) {
  return guarded("fwp_attention_backward", [&] {
    if (!attention)
      throw std::invalid_argument("the module is NULL");
    attention->kernel->backward(seq_len, batch, x, w_q, w_k, w_v, w_beta, w_o,
                                b_o, dy, dx, dw_q, dw_k, dw_v, dw_beta, dw_o,
                                db_o);
  });
}

int fwp_attention_forward_cuda(const fwp_attention *attention,
                               const fwp_cuda_call *call, int64_t seq_len,
                               int64_t batch, const void *x, const void *w_q,
                               const void *w_k, const void *w_v,
                               const void *w_beta, const void *w_o,
                               const void *b_o, void *y) {
  return guarded("fwp_attention_forward_cuda", [&] {
    fwp::rt::DeviceCall device = deviceCall(call);
    fwp::rt::DeviceScope scope(device.device);
    if (!attention)
      throw std::invalid_argument("the module is NULL");
    attention->kernel->forwardOnDevice(seq_len, batch, x, w_q, w_k, w_v, w_beta,
                                       w_o, b_o, y, device);
  });
}

int fwp_attention_backward_cuda(const fwp_attention *attention,
                                const fwp_cuda_call *call, int64_t seq_len,
                                int64_t batch, const void *x, const void *w_q,
                                const void *w_k, const void *w_v,
                                const void *w_beta, const void *w_o,
                                const void *b_o, const void *dy, void *dx,
                                void *dw_q, void *dw_k, void *dw_v,
                                void *dw_beta, void *dw_o, void *db_o) {
  return guarded("fwp_attention_backward_cuda", [&] {
    fwp::rt::DeviceCall device = deviceCall(call);
    fwp::rt::DeviceScope scope(device.device);
    if (!attention)
      throw std::invalid_argument("the module is NULL");
    attention->kernel->backwardOnDevice(seq_len, batch, x, w_q, w_k, w_v,
                                        w_beta, w_o, b_o, dy, dx, dw_q, dw_k,
                                        dw_v, dw_beta, dw_o, db_o, device);
  });
}

fwp_scan *fwp_scan_create(const char *backend, const char *dtype,
                          const char *rule, const char *layout, int64_t d_input,
                          int64_t d_value, int64_t nu, double eps,
                          int64_t chunk_size) {
  std::unique_ptr<fwp_scan> scan;
  int status = guarded("fwp_scan_create", [&] {
    fwp::jit::ScanDesc desc;
    desc.backend = parseBackend(backend);
    desc.dtype = parseDType(dtype);
    desc.rule = parseRule(rule);
    desc.batchFirst = parseBatchFirst(layout);
    desc.dInput = d_input;
    desc.dValue = d_value;
    desc.nu = nu;
    desc.eps = eps;
    if (chunk_size != 0)
      desc.chunkSize = chunk_size;
    // One compiled form for every call: a null state is passed as zeros.
    desc.initial = true;
    desc.dFinalState = true;
    auto compiled = fwp::jit::compileScan(desc);
    scan.reset(new fwp_scan{compiled, desc.str()});
  });
  return status ? nullptr : scan.release();
}

void fwp_scan_destroy(fwp_scan *scan) { delete scan; }

const char *fwp_scan_describe(const fwp_scan *scan) {
  return scan ? scan->description.c_str() : "";
}

int fwp_scan_prepare(const fwp_scan *scan) {
  return guarded("fwp_scan_prepare", [&] {
    if (!scan)
      throw std::invalid_argument("the scan is NULL");
    scan->scan->prepare();
  });
}

int fwp_scan_forward_cuda(const fwp_scan *scan, const fwp_cuda_call *call,
                          int64_t seq_len, int64_t batch, int64_t heads,
                          const void *q, const void *k, const void *v,
                          const void *beta, const void *initial_state, void *y,
                          void *final_state) {
  return guarded("fwp_scan_forward_cuda", [&] {
    fwp::rt::DeviceCall device = deviceCall(call);
    fwp::rt::DeviceScope scope(device.device);
    if (!scan)
      throw std::invalid_argument("the scan is NULL");
    scan->scan->forwardOnDevice(seq_len, batch, heads, q, k, v, beta,
                                initial_state, y, final_state, device);
  });
}

int fwp_scan_backward_cuda(const fwp_scan *scan, const fwp_cuda_call *call,
                           int64_t seq_len, int64_t batch, int64_t heads,
                           const void *q, const void *k, const void *v,
                           const void *beta, const void *initial_state,
                           const void *dy, const void *d_final_state, void *dq,
                           void *dk, void *dv, void *dbeta,
                           void *d_initial_state) {
  return guarded("fwp_scan_backward_cuda", [&] {
    fwp::rt::DeviceCall device = deviceCall(call);
    fwp::rt::DeviceScope scope(device.device);
    if (!scan)
      throw std::invalid_argument("the scan is NULL");
    scan->scan->backwardOnDevice(seq_len, batch, heads, q, k, v, beta,
                                 initial_state, dy, d_final_state, dq, dk, dv,
                                 dbeta, d_initial_state, device);
  });
}

int fwp_scan_forward(const fwp_scan *scan, int64_t seq_len, int64_t batch,
                     int64_t heads, const void *q, const void *k, const void *v,
                     const void *beta, const void *initial_state, void *y,
                     void *final_state) {
  return guarded("fwp_scan_forward", [&] {
    if (!scan)
      throw std::invalid_argument("the scan is NULL");
    std::vector<char> zeros;
    const auto &s = *scan->scan;
    s.forward(seq_len, batch, heads, q, k, v, beta,
              stateOrZero(s.desc(), batch, heads, initial_state, zeros), y,
              final_state);
  });
}

int fwp_scan_backward(const fwp_scan *scan, int64_t seq_len, int64_t batch,
                      int64_t heads, const void *q, const void *k,
                      const void *v, const void *beta,
                      const void *initial_state, const void *dy,
                      const void *d_final_state, void *dq, void *dk, void *dv,
                      void *dbeta, void *d_initial_state) {
  return guarded("fwp_scan_backward", [&] {
    if (!scan)
      throw std::invalid_argument("the scan is NULL");
    std::vector<char> zeroInitial, zeroFinal;
    const auto &s = *scan->scan;
    s.backward(seq_len, batch, heads, q, k, v, beta,
               stateOrZero(s.desc(), batch, heads, initial_state, zeroInitial),
               dy,
               stateOrZero(s.desc(), batch, heads, d_final_state, zeroFinal),
               dq, dk, dv, dbeta, d_initial_state);
  });
}

} // extern "C"
