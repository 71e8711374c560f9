#!/bin/bash
# Builds every variant with the Debian MLIR/LLVM 22 tools. Run from /work/research/cpu.
set -euo pipefail
B=/usr/lib/llvm-22/bin
OMP_SO=/usr/lib/x86_64-linux-gnu/libomp.so.5        # libomp5-14 (already installed); libomp5-22 works the same
XFORM="--transform-preload-library=transform-library-paths=sched.mlir --transform-interpreter"
LOWER="--convert-vector-to-scf --convert-linalg-to-loops --lower-affine --arith-expand --expand-strided-metadata --finalize-memref-to-llvm --convert-scf-to-cf --convert-vector-to-llvm --convert-to-llvm --reconcile-unrealized-casts"
OMP="--scf-forall-to-parallel --convert-scf-to-openmp"
# min-task-size=1 matters: the default (1000 iterations per task) puts all 128 forall iterations in one task -> no parallelism
ASYNC=(--scf-forall-to-parallel "--async-parallel-for=async-dispatch=true min-task-size=1" --async-to-async-runtime --async-runtime-ref-counting --async-runtime-ref-counting-opt --convert-async-to-llvm)
SERIAL="--scf-forall-to-for"
EXP="--test-math-polynomial-approximation"   # math.exp -> polynomial (C++: populateMathPolynomialApproximationPatterns)
obj() { # $1 = .ll  $2 = .o
  $B/llc -O2 -mcpu=native -relocation-model=pic -filetype=obj "$1" -o "$2"; }

# 1. benchmark matmul 64x128 * 128x64 (no parallel loop)
$B/mlir-opt mm.mlir $XFORM $LOWER -o mm.llvm.mlir
$B/mlir-translate --mlir-to-llvmir mm.llvm.mlir -o mm.ll
obj mm.ll mm.o && cc -shared mm.o -o libmm.so

# 2. chunk kernels (memref formulation), three ways to run the scf.forall
$B/mlir-opt chunk.mlir $XFORM -o chunk.vec.mlir                     # tiled + vectorized, still scf.forall
$B/mlir-opt chunk.vec.mlir $EXP $OMP $LOWER -o chunk.omp.llvm.mlir
$B/mlir-translate --mlir-to-llvmir chunk.omp.llvm.mlir -o chunk.omp.ll
obj chunk.omp.ll chunk.omp.o && cc -shared chunk.omp.o -o libchunk_omp.so $OMP_SO

$B/mlir-opt chunk.vec.mlir $EXP $SERIAL $LOWER -o chunk.ser.llvm.mlir
$B/mlir-translate --mlir-to-llvmir chunk.ser.llvm.mlir -o chunk.ser.ll
obj chunk.ser.ll chunk.ser.o && cc -shared chunk.ser.o -o libchunk_ser.so

$B/mlir-opt chunk.vec.mlir $EXP "${ASYNC[@]}" $LOWER -o chunk.async.llvm.mlir
$B/mlir-translate --mlir-to-llvmir chunk.async.llvm.mlir -o chunk.async.ll
$B/opt -O2 chunk.async.ll -o chunk.async.bc       # REQUIRED: runs the LLVM coroutine passes (llc alone crashes)
obj chunk.async.bc chunk.async.o
cc -shared chunk.async.o -o libchunk_async.so -L/usr/lib/llvm-22/lib -lmlir_async_runtime -Wl,-rpath,/usr/lib/llvm-22/lib

# 3. tensor formulation -> bufferize -> same schedule
$B/mlir-opt chunk_t.mlir --eliminate-empty-tensors --one-shot-bufferize --cse --canonicalize \
    --promote-buffers-to-stack=max-alloc-size-in-bytes=65536 $XFORM $EXP $OMP $LOWER -o chunk_t.llvm.mlir
$B/mlir-translate --mlir-to-llvmir chunk_t.llvm.mlir -o chunk_t.ll
obj chunk_t.ll chunk_t.o && cc -shared chunk_t.o -o libchunk_t.so $OMP_SO

# 4. drivers (no MLIR/LLVM linked)
cc -O2 bench_mm.c -o bench_mm -ldl -lm
cc -O2 bench_chunk.c -o bench_chunk -ldl -lm
cc -O2 peak.c -o peak
echo build ok
