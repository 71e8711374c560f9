/*===- CApi.h - fwp's C ABI, for bindings -------------------------*- C -*-===*
 *
 * The compiled FastWeightsAttention module (fwp/JIT/JIT.h) behind a plain C
 * interface, so that other languages bind it without a C++ compiler: the
 * Python package (python/fwp) loads libfwp.so with ctypes.
 *
 *   fwp_attention *a = fwp_attention_create("cpu", "f32", "delta",
 *                                           4, 16, 1, 1e-6, 0);
 *   if (!a || fwp_attention_forward(a, T, B, x, wq, wk, wv, wbeta, wo, bo, y))
 *     fprintf(stderr, "%s\n", fwp_last_error());
 *   fwp_attention_destroy(a);
 *
 * Buffers are host memory (device memory for the *_cuda functions),
 * row-major, in the description's element type
 * (bf16 and f16 as their 16-bit patterns), in the layouts of JIT.h:
 * x, y, dy, dx [T, B, d_model]; w_q, w_k, w_v, w_o [d_model, d_model];
 * w_beta [heads, d_model]; b_o [d_model]. Outputs may not alias an input or
 * each other. The kernels of one description are compiled on first use, or
 * loaded from the disk cache.
 *
 * No function throws or aborts on bad input: each reports failure (NULL or
 * a non-zero status) and leaves a message for fwp_last_error().
 *
 *===----------------------------------------------------------------------===*/

#ifndef FWP_CAPI_H
#define FWP_CAPI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Exported from libfwp.so, which hides every other symbol. */
#if defined(__GNUC__)
#define FWP_CAPI __attribute__((visibility("default")))
#else
#define FWP_CAPI
#endif

/* The version of this interface; bindings check it before anything else. */
#define FWP_CAPI_VERSION 5
FWP_CAPI int fwp_capi_version(void);

/* The message of the last failure on this thread ("" if none). Valid until
 * the next call on this thread. */
FWP_CAPI const char *fwp_last_error(void);

/* 1 if this library compiles kernels that are not in the disk cache
 * (libfwp.so); 0 if it only loads them from there (libfwp_runtime.so, which
 * needs neither MLIR nor LLVM: for machines that run kernels compiled
 * elsewhere, e.g. a GPU machine without the compiler). */
FWP_CAPI int fwp_compiler_available(void);

/* The disk cache's directory as the environment sets it ($FWP_CACHE_DIR,
 * else $XDG_CACHE_HOME/fwp, else ~/.cache/fwp); "" when FWP_CACHE=off.
 * Valid until the next call on this thread. */
FWP_CAPI const char *fwp_cache_directory(void);

/* How a call on device buffers runs (the *_cuda functions): buffers are
 * addresses in the primary CUDA context of device `device` (an ordinal, as
 * PyTorch's cuda:N, whose tensors live there); the modules are loaded
 * there, once per device, and the work is issued on `stream` (a CUstream or
 * cudaStream_t; NULL: the legacy default stream). Scratch memory comes from
 * `alloc` and goes back through `release`, both with `user`, in the
 * stream's order (PyTorch's caching allocator is such an allocator); the
 * call then returns once the work is issued, without waiting for it. With
 * `alloc` NULL, scratch comes from cuMemAlloc and the call waits for its
 * work to finish. `alloc` returns 0 if it has no memory, else an address
 * aligned to 16 bytes at least (cuMemAlloc and PyTorch's allocator give
 * 256 and 512). */
typedef struct fwp_cuda_call {
  void *stream;
  uint64_t (*alloc)(void *user, uint64_t bytes);
  void (*release)(void *user, uint64_t ptr);
  void *user;
  int64_t device;
} fwp_cuda_call;

typedef struct fwp_attention fwp_attention;

/* The module for one kernel description: backend "cpu" or "cuda", dtype
 * "f32", "f64", "bf16" or "f16", rule "delta" or "sum", DPFP order nu and
 * epsilon, chunk_size 0 for the default. Compiles nothing yet. NULL if the
 * description is invalid. */
FWP_CAPI fwp_attention *fwp_attention_create(const char *backend,
                                             const char *dtype,
                                             const char *rule, int64_t heads,
                                             int64_t d_head, int64_t nu,
                                             double eps, int64_t chunk_size);
FWP_CAPI void fwp_attention_destroy(fwp_attention *attention);

/* The description as one line (JIT.h's KernelDesc::str()). */
FWP_CAPI const char *fwp_attention_describe(const fwp_attention *attention);

/* Compiles (or loads from the disk cache) the forward and the backward now
 * instead of on their first calls, the two at once on two threads; needs
 * no GPU. 0 on success. */
FWP_CAPI int fwp_attention_prepare(const fwp_attention *attention);

/* y = FastWeightsAttention(x). 0 on success. */
FWP_CAPI int fwp_attention_forward(const fwp_attention *attention,
                                   int64_t seq_len, int64_t batch,
                                   const void *x, const void *w_q,
                                   const void *w_k, const void *w_v,
                                   const void *w_beta, const void *w_o,
                                   const void *b_o, void *y);

/* The gradients of a loss given dy = dL/dy: dx and every weight's. 0 on
 * success. */
FWP_CAPI int fwp_attention_backward(const fwp_attention *attention,
                                    int64_t seq_len, int64_t batch,
                                    const void *x, const void *w_q,
                                    const void *w_k, const void *w_v,
                                    const void *w_beta, const void *w_o,
                                    const void *b_o, const void *dy, void *dx,
                                    void *dw_q, void *dw_k, void *dw_v,
                                    void *dw_beta, void *dw_o, void *db_o);

/* The same on device buffers of a "cuda" module (fwp_cuda_call). */
FWP_CAPI int fwp_attention_forward_cuda(const fwp_attention *attention,
                                        const fwp_cuda_call *call,
                                        int64_t seq_len, int64_t batch,
                                        const void *x, const void *w_q,
                                        const void *w_k, const void *w_v,
                                        const void *w_beta, const void *w_o,
                                        const void *b_o, void *y);
FWP_CAPI int fwp_attention_backward_cuda(
    const fwp_attention *attention, const fwp_cuda_call *call, int64_t seq_len,
    int64_t batch, const void *x, const void *w_q, const void *w_k,
    const void *w_v, const void *w_beta, const void *w_o, const void *b_o,
    const void *dy, void *dx, void *dw_q, void *dw_k, void *dw_v, void *dw_beta,
    void *dw_o, void *db_o);

/* The bare fast-weight scan (fwp/JIT/Scan.h), backend "cpu" or "cuda": q, k,
 * dq, dk [T, B, H, d_input]; v, y, dy, dv [T, B, H, d_value]; beta, dbeta [T,
 * B, H] (delta rule only, NULL for the sum rule), with layout "steps_first",
 * or [B, T, H, *] and [B, T, H] (fla's) with "batch_first"; states [B, H,
 * d_value, D] with D = 2 d_input nu if nu > 0 (DPFP fused: q and k are the
 * raw vectors), else D = d_input. A NULL initial state (or gradient of the
 * final state) is zero. Compiled on first use, once per process. */
typedef struct fwp_scan fwp_scan;

FWP_CAPI fwp_scan *fwp_scan_create(const char *backend, const char *dtype,
                                   const char *rule, const char *layout,
                                   int64_t d_input, int64_t d_value, int64_t nu,
                                   double eps, int64_t chunk_size);
FWP_CAPI void fwp_scan_destroy(fwp_scan *scan);
FWP_CAPI const char *fwp_scan_describe(const fwp_scan *scan);

/* Compiles (or loads from the disk cache) both directions now; needs no
 * GPU. 0 on success. */
FWP_CAPI int fwp_scan_prepare(const fwp_scan *scan);

/* y and the final state. 0 on success. */
FWP_CAPI int fwp_scan_forward(const fwp_scan *scan, int64_t seq_len,
                              int64_t batch, int64_t heads, const void *q,
                              const void *k, const void *v, const void *beta,
                              const void *initial_state, void *y,
                              void *final_state);

/* The gradients of q, k, v, beta and the initial state, given dy and the
 * final state's gradient. 0 on success. */
FWP_CAPI int fwp_scan_backward(const fwp_scan *scan, int64_t seq_len,
                               int64_t batch, int64_t heads, const void *q,
                               const void *k, const void *v, const void *beta,
                               const void *initial_state, const void *dy,
                               const void *d_final_state, void *dq, void *dk,
                               void *dv, void *dbeta, void *d_initial_state);

/* The same on device buffers of a "cuda" scan (fwp_cuda_call); a NULL
 * initial state or final-state gradient is zero. */
FWP_CAPI int fwp_scan_forward_cuda(const fwp_scan *scan,
                                   const fwp_cuda_call *call, int64_t seq_len,
                                   int64_t batch, int64_t heads, const void *q,
                                   const void *k, const void *v,
                                   const void *beta, const void *initial_state,
                                   void *y, void *final_state);
FWP_CAPI int fwp_scan_backward_cuda(const fwp_scan *scan,
                                    const fwp_cuda_call *call, int64_t seq_len,
                                    int64_t batch, int64_t heads, const void *q,
                                    const void *k, const void *v,
                                    const void *beta, const void *initial_state,
                                    const void *dy, const void *d_final_state,
                                    void *dq, void *dk, void *dv, void *dbeta,
                                    void *d_initial_state);

#ifdef __cplusplus
}
#endif

#endif /* FWP_CAPI_H */
