#!/bin/bash
# Usage: build.sh NAME.mlir [sm_90|sm_80] [ptx feature, e.g. +ptx80]
# Lowers a gpu.module with nvgpu/nvvm ops to PTX with MLIR 22, then assembles with ptxas.
set -euo pipefail
B=/usr/lib/llvm-22/bin
SRC=$1; SM=${2:-sm_90}; PTXF=${3:-+ptx80}
NAME=$(basename "$SRC" .mlir)
O=out/${NAME}.${SM}
mkdir -p out
# (1) one-shot upstream pipeline; format=isa makes gpu-module-to-binary embed PTX text in a gpu.binary
$B/mlir-opt "$SRC" \
  -gpu-lower-to-nvvm-pipeline="cubin-chip=$SM cubin-features=$PTXF cubin-format=isa opt-level=3" \
  -o $O.binary.mlir
python3 extract_ptx.py $O.binary.mlir > $O.ptx
/usr/local/cuda/bin/ptxas -arch=$SM -v $O.ptx -o $O.cubin 2> $O.ptxas.txt || { cat $O.ptxas.txt; exit 1; }
echo "== $NAME $SM: mma.sync=$(grep -c 'mma.sync' $O.ptx) ldmatrix=$(grep -c 'ldmatrix' $O.ptx) cp.async(copy)=$(grep -c 'cp.async.c[ag].shared' $O.ptx) cp.async.commit=$(grep -c 'cp.async.commit_group' $O.ptx) cp.async.wait=$(grep -c 'cp.async.wait_group' $O.ptx)"
grep -E "registers|spill" $O.ptxas.txt
