// Driver for the scf.forall chunk kernels (chunk.mlir): dlopen the .so, call
// _mlir_ciface_<fn> through MLIR's C interface, check against a naive C
// reference, time it. Links neither MLIR nor LLVM (only -ldl -lm).
#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef struct { float *allocated, *aligned; int64_t offset, sizes[3], strides[3]; } M3;
typedef struct { float *allocated, *aligned; int64_t offset, sizes[2], strides[2]; } M2;
typedef void (*chunk_fn)(M3 *, M3 *, M3 *, M2 *, M3 *);
enum { L = 64, D = 128 };

static M3 m3(float *p, int64_t n) { M3 m = {p, p, 0, {n, L, D}, {L * D, D, 1}}; return m; }
static M2 m2(float *p, int64_t n) { M2 m = {p, p, 0, {n, L}, {L, 1}}; return m; }
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }

static void reference(int n, const float *Q, const float *K, const float *V, const float *G, float *O) {
  static double S[L][L];
  for (int b = 0; b < n; b++) {
    const float *q = Q + (size_t)b * L * D, *k = K + (size_t)b * L * D, *v = V + (size_t)b * L * D, *g = G + (size_t)b * L;
    for (int r = 0; r < L; r++)
      for (int c = 0; c < L; c++) {
        double s = 0;
        for (int d = 0; d < D; d++) s += (double)q[r * D + d] * k[c * D + d];
        S[r][c] = c <= r ? s * exp((double)g[r] - g[c]) : 0.0;
      }
    for (int r = 0; r < L; r++)
      for (int d = 0; d < D; d++) {
        double s = 0;
        for (int c = 0; c < L; c++) s += S[r][c] * v[c * D + d];
        O[(size_t)b * L * D + r * D + d] = (float)s;
      }
  }
}

int main(int argc, char **argv) {
  const char *lib = argc > 1 ? argv[1] : "./libchunk_omp.so";
  const char *fn = argc > 2 ? argv[2] : "chunk";
  int n = argc > 3 ? atoi(argv[3]) : 64;
  int iters = argc > 4 ? atoi(argv[4]) : 200;
  void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (!h) { fprintf(stderr, "dlopen: %s\n", dlerror()); return 1; }
  char sym[256]; snprintf(sym, sizeof sym, "_mlir_ciface_%s", fn);
  chunk_fn f = (chunk_fn)dlsym(h, sym);
  if (!f) { fprintf(stderr, "dlsym: %s\n", dlerror()); return 1; }
  size_t nt = (size_t)n * L * D;
  float *Q = aligned_alloc(64, nt * 4), *K = aligned_alloc(64, nt * 4), *V = aligned_alloc(64, nt * 4);
  float *O = aligned_alloc(64, nt * 4), *R = malloc(nt * 4), *G = aligned_alloc(64, (size_t)n * L * 4);
  srand(1);
  for (size_t i = 0; i < nt; i++) { Q[i] = (float)rand() / RAND_MAX - 0.5f; K[i] = (float)rand() / RAND_MAX - 0.5f; V[i] = (float)rand() / RAND_MAX - 0.5f; }
  for (int b = 0; b < n; b++) { float acc = 0; for (int r = 0; r < L; r++) { acc -= 0.05f * rand() / RAND_MAX; G[b * L + r] = acc; } } // cumulative log-decay
  M3 dQ = m3(Q, n), dK = m3(K, n), dV = m3(V, n), dO = m3(O, n); M2 dG = m2(G, n);
  reference(n, Q, K, V, G, R);
  f(&dQ, &dK, &dV, &dG, &dO);
  double maxerr = 0, maxref = 0;
  for (size_t i = 0; i < nt; i++) { maxerr = fmax(maxerr, fabs(O[i] - R[i])); maxref = fmax(maxref, fabs(R[i])); }
  for (int i = 0; i < iters / 10 + 1; i++) f(&dQ, &dK, &dV, &dG, &dO);
  double best = 1e30, cpu_ratio = 0;
  for (int rep = 0; rep < 5; rep++) {
    double t0 = now(); clock_t c0 = clock();
    for (int i = 0; i < iters; i++) f(&dQ, &dK, &dV, &dG, &dO);
    double w = now() - t0, c = (double)(clock() - c0) / CLOCKS_PER_SEC;
    double t = w / iters;
    if (t < best) { best = t; cpu_ratio = c / w; }
  }
  // flops: per chunk Q*K^T 2*L*L*D, S*V 2*L*L*D (2 value blocks x 2*L*L*(D/2)), the
  // implementation recomputes Q*K^T per value block (x2).
  double useful = (double)n * (2.0 * L * L * D + 2.0 * L * L * D);
  double done = (double)n * (2 * 2.0 * L * L * D + 2.0 * L * L * D);
  printf("%s/%s n=%d: max|err|=%.3g (max|ref|=%.3g)  %.1f us/call  useful %.1f GFLOP/s  executed %.1f GFLOP/s  cpu/wall %.2f\n",
         lib, fn, n, maxerr, maxref, best * 1e6, useful / best / 1e9, done / best / 1e9, cpu_ratio);
  return maxerr <= 1e-3 * (1 + maxref) ? 0 : 2;
}
