// Tiny driver: dlopen an MLIR-generated .so and call _mlir_ciface_mm via the
// C interface (pointers to memref descriptors). Links neither MLIR nor LLVM.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <time.h>

typedef struct { float *allocated, *aligned; int64_t offset, sizes[2], strides[2]; } Memref2D;
typedef void (*mm_fn)(Memref2D *, Memref2D *, Memref2D *);

static Memref2D mk(float *p, int64_t r, int64_t c) {
  Memref2D m = {p, p, 0, {r, c}, {c, 1}};
  return m;
}
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }

int main(int argc, char **argv) {
  const char *lib = argc > 1 ? argv[1] : "./libmm.so";
  long iters = argc > 2 ? atol(argv[2]) : 200000;
  void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (!h) { fprintf(stderr, "dlopen: %s\n", dlerror()); return 1; }
  mm_fn mm = (mm_fn)dlsym(h, "_mlir_ciface_mm");
  if (!mm) { fprintf(stderr, "dlsym: %s\n", dlerror()); return 1; }
  enum { M = 64, K = 128, N = 64 };
  float *A = aligned_alloc(64, M * K * 4), *B = aligned_alloc(64, K * N * 4);
  float *C = aligned_alloc(64, M * N * 4), *R = malloc(M * N * 4);
  srand(1);
  for (int i = 0; i < M * K; i++) A[i] = (float)rand() / RAND_MAX - 0.5f;
  for (int i = 0; i < K * N; i++) B[i] = (float)rand() / RAND_MAX - 0.5f;
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      double s = 0;
      for (int k = 0; k < K; k++) s += (double)A[i * K + k] * B[k * N + j];
      R[i * N + j] = (float)s;
    }
  Memref2D dA = mk(A, M, K), dB = mk(B, K, N), dC = mk(C, M, N);
  mm(&dA, &dB, &dC);
  double maxerr = 0;
  for (int i = 0; i < M * N; i++) maxerr = fmax(maxerr, fabs(C[i] - R[i]));
  for (long i = 0; i < iters / 10; i++) mm(&dA, &dB, &dC); // warm-up
  double best = 1e30;
  for (int rep = 0; rep < 5; rep++) {
    double t0 = now();
    for (long i = 0; i < iters; i++) mm(&dA, &dB, &dC);
    double t = now() - t0;
    if (t < best) best = t;
  }
  double gflops = 2.0 * M * N * K * iters / best / 1e9;
  printf("%s: max|err| vs naive = %.3g, %ld calls, best %.3f s, %.1f ns/call, %.2f GFLOP/s\n",
         lib, maxerr, iters, best, best / iters * 1e9, gflops);
  return maxerr < 1e-3 ? 0 : 2;
}
