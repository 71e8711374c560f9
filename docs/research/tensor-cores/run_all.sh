#!/bin/bash
# Regenerates every .mlir, lowers it with MLIR 22 (Debian llvm-22), assembles with ptxas for sm_90 and sm_80,
# reruns the transform-dialect experiments and the failure reproducers.  Results: out/SUMMARY.txt
set -uo pipefail
cd "$(dirname "$0")"
B=/usr/lib/llvm-22/bin
PTXAS=/usr/local/cuda/bin/ptxas
mkdir -p out fail transform
S=$PWD/out/SUMMARY.txt; : > $S
log() { echo "$@" | tee -a $S; }

# ---------------------------------------------------------------- 1. hand-built kernels (nvgpu/nvvm ops)
python3 gen.py --dtype f16  --warps 4                          > mma_f16_w4.mlir
python3 gen.py --dtype f16  --warps 1                          > mma_f16_w1.mlir
python3 gen.py --dtype f16  --warps 4 --kloop unroll --smem global > mma_f16_w4_unroll_global.mlir
python3 gen.py --dtype tf32 --warps 4                          > mma_tf32_w4.mlir
python3 gen.py --dtype bf16 --warps 4                          > mma_bf16_w4.mlir
python3 gen_kloop.py --pipeline manual --ktiles 4              > mma_f16_kloop_pipelined.mlir
python3 gen_kloop.py --pipeline none   --ktiles 4              > mma_f16_kloop_simple.mlir
# swizzled (XOR) shared memory instead of padding: nvgpu-optimize-shared-memory only rewrites memref.alloc'ed
# workgroup buffers, so generate with allocs, run the pass, then turn the allocs back into memref.get_global.
python3 gen.py --dtype f16 --warps 4 --pad 0 --smem global \
  | sed -E 's/%As = memref.get_global @smemA : (.*)$/%As = memref.alloc() : \1/; s/%Bs = memref.get_global @smemB : (.*)$/%Bs = memref.alloc() : \1/' \
  > mma_f16_w4_swizzle_pre.mlir
$B/mlir-opt mma_f16_w4_swizzle_pre.mlir --pass-pipeline="builtin.module(gpu.module(gpu.func(nvgpu-optimize-shared-memory)))" \
  | sed -E '0,/%alloc = memref.alloc\(\)/s//%alloc = memref.get_global @smemA/; 0,/%alloc_0 = memref.alloc\(\)/s//%alloc_0 = memref.get_global @smemB/' \
  > mma_f16_w4_swizzled.mlir
# transform.nvgpu.pipeline_shared_memory_copies on the simple k-loop (wait without numGroups so the pipeliner sets it)
sed 's/nvgpu.device_async_wait \(%grp[0-9]*\) {numGroups = 0 : i32}/nvgpu.device_async_wait \1/' mma_f16_kloop_simple.mlir \
  > transform/kloop_simple_nowaitcount.mlir
$B/mlir-opt transform/kloop_simple_nowaitcount.mlir \
  -transform-preload-library="transform-library-paths=transform/pipeline_kloop.transform.mlir" -transform-interpreter \
  -o mma_f16_kloop_transform_pipelined.mlir

for f in mma_f16_w4 mma_f16_w1 mma_f16_w4_unroll_global mma_f16_w4_swizzled mma_tf32_w4 mma_bf16_w4 \
         mma_f16_kloop_simple mma_f16_kloop_pipelined mma_f16_kloop_transform_pipelined; do
  ./build.sh $f.mlir sm_90 +ptx80 2>&1 | tee -a $S
  ./build.sh $f.mlir sm_80 +ptx70 2>&1 | tee -a $S
done

# explicit pass list + mlir-translate + llc (alternative to gpu-lower-to-nvvm-pipeline / gpu-module-to-binary)
log "== explicit pipeline + mlir-translate + llc (mma_f16_w4, sm_90)"
$B/mlir-opt mma_f16_w4.mlir --pass-pipeline="builtin.module(gpu.module(convert-nvgpu-to-nvvm,convert-scf-to-cf,convert-gpu-to-nvvm,canonicalize,cse,reconcile-unrealized-casts))" \
  -o out/mma_f16_w4.llvmdialect.mlir
python3 unwrap_gpu_module.py out/mma_f16_w4.llvmdialect.mlir > out/mma_f16_w4.flat.mlir
$B/mlir-translate --mlir-to-llvmir out/mma_f16_w4.flat.mlir -o out/mma_f16_w4.ll
$B/llc -O3 -march=nvptx64 -mcpu=sm_90 -mattr=+ptx80 out/mma_f16_w4.ll -o out/mma_f16_w4.llc.sm_90.ptx
$PTXAS -arch=sm_90 -v out/mma_f16_w4.llc.sm_90.ptx -o /dev/null 2>&1 | grep -E "registers|spill" | tee -a $S
log "   mma.sync=$(grep -c mma.sync out/mma_f16_w4.llc.sm_90.ptx) ldmatrix=$(grep -c ldmatrix out/mma_f16_w4.llc.sm_90.ptx)"

# ---------------------------------------------------------------- 2. transform dialect / linalg experiments
cd transform
log "== transform.nvgpu.rewrite_matmul_as_mma_sync on exact-shape linalg.matmul"
for cfg in "16x16xf16 16x8xf16 16x8xf16 f16f16" "16x4xf32 4x8xf32 16x8xf32 f32k4" "16x16xf16 16x8xf16 16x8xf32 f16f32" \
           "16x8xf32 8x8xf32 16x8xf32 f32k8" "16x16xbf16 16x8xbf16 16x8xf32 bf16f32"; do
  set -- $cfg
  cat > rw_$4.mlir <<EOF
gpu.module @kernels {
  gpu.func @mm(%A: memref<$1>, %B: memref<$2>, %C: memref<$3>) kernel
      attributes {known_block_size = array<i32: 32, 1, 1>} {
    linalg.matmul ins(%A, %B : memref<$1>, memref<$2>) outs(%C : memref<$3>)
    gpu.return
  }
}
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %mm = transform.structured.match ops{["linalg.matmul"]} in %root : (!transform.any_op) -> !transform.any_op
    transform.nvgpu.rewrite_matmul_as_mma_sync %mm : (!transform.any_op) -> ()
    transform.yield
  }
}
EOF
  if $B/mlir-opt rw_$4.mlir -transform-interpreter -test-transform-dialect-erase-schedule --mlir-print-op-on-diagnostic=false -o rw_$4.after.mlir 2> rw_$4.err; then
    log "   $4 ($1 x $2 -> $3): OK: $(grep -o 'nvgpu.mma.sync.*' rw_$4.after.mlir | head -1 | cut -c1-150)"
  else
    log "   $4 ($1 x $2 -> $3): FAIL: $(head -1 rw_$4.err | cut -c1-160)"
  fi
done

log "== tiled 64x64x64 linalg.matmul -> tile_using_for [16,8,k] -> rewrite_matmul_as_mma_sync -> PTX"
for dt in f32 f16; do
  $B/mlir-opt tiled_matmul_$dt.mlir -transform-interpreter -test-transform-dialect-erase-schedule -o tiled_matmul_$dt.after.mlir
  $B/mlir-opt tiled_matmul_$dt.after.mlir -gpu-lower-to-nvvm-pipeline="cubin-chip=sm_90 cubin-features=+ptx80 cubin-format=isa opt-level=3" -o tiled_matmul_$dt.bin.mlir
  python3 ../extract_ptx.py tiled_matmul_$dt.bin.mlir > tiled_matmul_$dt.sm_90.ptx
  log "   $dt: $(grep -E 'mma.sync' tiled_matmul_$dt.sm_90.ptx | sort | uniq -c | tr -s ' \t' ' ') ldmatrix=$(grep -c ldmatrix tiled_matmul_$dt.sm_90.ptx)"
  $PTXAS -arch=sm_90 -v tiled_matmul_$dt.sm_90.ptx -o /dev/null 2>&1 | grep -E "registers|spill" | tee -a $S
done

log "== linalg.matmul on smem -> vectorize -> fold_arith_extension -> unroll_vectors_subgroup_mma -> convert-vector-to-gpu{use-nvgpu}"
for cfg in "f16 16" "f32 8" "bf16 16"; do
  set -- $cfg
  sed "s/xf16, #gpu/x$1, #gpu/; s/\[16, 8, 16\]/[16, 8, $2]/" linalg_vector_mma.mlir > lvm_$1.mlir
  $B/mlir-opt lvm_$1.mlir -transform-interpreter -test-transform-dialect-erase-schedule -o lvm_$1.vec.mlir
  if ! $B/mlir-opt lvm_$1.vec.mlir --pass-pipeline="builtin.module(gpu.module(gpu.func(convert-vector-to-gpu{use-nvgpu=true},canonicalize,cse)))" \
       --mlir-print-op-on-diagnostic=false -o lvm_$1.nvgpu.mlir 2> lvm_$1.err; then
    log "   $1: convert-vector-to-gpu FAILED: $(head -1 lvm_$1.err | cut -c1-200)"; continue
  fi
  if [ $1 = f32 ]; then  # convert-vector-to-gpu does not set tf32Enabled; without it convert-nvgpu-to-nvvm leaves the op
    sed -i 's/{mmaShape = \[16, 8, 8\]}/{mmaShape = [16, 8, 8], tf32Enabled}/' lvm_$1.nvgpu.mlir
  fi
  $B/mlir-opt lvm_$1.nvgpu.mlir -gpu-lower-to-nvvm-pipeline="cubin-chip=sm_90 cubin-features=+ptx80 cubin-format=isa opt-level=3" -o lvm_$1.bin.mlir
  python3 ../extract_ptx.py lvm_$1.bin.mlir > lvm_$1.sm_90.ptx
  log "   $1: $(grep -E 'mma.sync|ldmatrix' lvm_$1.sm_90.ptx | awk '{print $1}' | sort | uniq -c | tr -s ' \n' ' ')"
  $PTXAS -arch=sm_90 -v lvm_$1.sm_90.ptx -o /dev/null 2>&1 | grep -E "registers|spill" | tee -a $S
done

log "== transform.nvgpu.create_async_groups"
$B/mlir-opt create_async_groups.mlir -transform-interpreter -test-transform-dialect-erase-schedule -canonicalize -o create_async_groups.after.mlir
log "   $(grep -cE 'nvgpu.device_async_copy' create_async_groups.after.mlir) device_async_copy, $(grep -c device_async_create_group create_async_groups.after.mlir) group, $(grep -c device_async_wait create_async_groups.after.mlir) wait"
cd ..

# ---------------------------------------------------------------- 3. failure reproducers
log "== failures"
python3 gen.py --dtype bf16-nvgpu --warps 4 > fail/bf16_nvgpu_mma.mlir
log "-- nvgpu.mma.sync on bf16:"
$B/mlir-opt fail/bf16_nvgpu_mma.mlir -gpu-lower-to-nvvm-pipeline="cubin-chip=sm_90 cubin-features=+ptx80 cubin-format=isa" \
  --mlir-print-op-on-diagnostic=false -o /dev/null 2>&1 | head -1 | tee -a $S
python3 gen.py --dtype f16 --warps 4 --bsplit strided > fail/f16_extract_strided_slice.mlir
log "-- vector.extract_strided_slice on 2-D vector straight into gpu-lower-to-nvvm-pipeline:"
$B/mlir-opt fail/f16_extract_strided_slice.mlir -gpu-lower-to-nvvm-pipeline="cubin-chip=sm_90 cubin-features=+ptx80 cubin-format=isa" \
  --mlir-print-op-on-diagnostic=false -o /dev/null 2>&1 | head -1 | tee -a $S
log "   (fix: run builtin.module(gpu.module(convert-vector-to-llvm)) first:)"
$B/mlir-opt fail/f16_extract_strided_slice.mlir --pass-pipeline="builtin.module(gpu.module(convert-vector-to-llvm))" \
  | $B/mlir-opt -gpu-lower-to-nvvm-pipeline="cubin-chip=sm_90 cubin-features=+ptx80 cubin-format=isa" -o /dev/null && log "   ... OK"
log "-- default cubin-features (+ptx60) with sm_90 / sm_80:"
$B/mlir-opt mma_f16_w4.mlir -gpu-lower-to-nvvm-pipeline="cubin-chip=sm_90 cubin-format=isa" -o /dev/null 2>&1 | head -1 | tee -a $S
$B/mlir-opt mma_f16_w4.mlir -gpu-lower-to-nvvm-pipeline="cubin-chip=sm_80 cubin-format=isa" -o /dev/null 2>&1 | head -1 | tee -a $S
log "-- empty cubin-features= picks the minimum PTX ISA for the chip:"
$B/mlir-opt mma_f16_w4.mlir -gpu-lower-to-nvvm-pipeline="cubin-chip=sm_90 cubin-features= cubin-format=isa" -o out/empty_features.bin.mlir \
  && python3 extract_ptx.py out/empty_features.bin.mlir | grep -m1 '^.version' | tee -a $S
log "-- nvgpu.mma.sync f32 without tf32Enabled (left unconverted, surfaces as an unrealized_conversion_cast):"
sed 's/, tf32Enabled}/}/' mma_tf32_w4.mlir > fail/tf32_without_tf32Enabled.mlir
$B/mlir-opt fail/tf32_without_tf32Enabled.mlir -gpu-lower-to-nvvm-pipeline="cubin-chip=sm_90 cubin-features=+ptx80 cubin-format=isa" \
  --mlir-print-op-on-diagnostic=false -o /dev/null 2>&1 | head -1 | tee -a $S
log "-- memref.alloc in workgroup space inside gpu.func (silently becomes malloc + cvta.to.shared):"
$B/mlir-opt mma_f16_w4_swizzle_pre.mlir -gpu-lower-to-nvvm-pipeline="cubin-chip=sm_90 cubin-features=+ptx80 cubin-format=isa" -o fail/alloc_in_gpu_func.bin.mlir
python3 extract_ptx.py fail/alloc_in_gpu_func.bin.mlir > fail/alloc_in_gpu_func.ptx
log "   malloc calls in PTX: $(grep -c 'call.uni (retval0), malloc' fail/alloc_in_gpu_func.ptx)"
log "-- 2-D vector.store (vector<2x2xf32>) to global:"
cat > fail/store_2d_vector.mlir <<'EOF'
gpu.module @kernels {
  gpu.func @k(%C: memref<16x8xf32>) kernel {
    %c0 = arith.constant 0 : index
    %z = arith.constant dense<1.0> : vector<2x2xf32>
    vector.store %z, %C[%c0, %c0] : memref<16x8xf32>, vector<2x2xf32>
    gpu.return
  }
}
EOF
$B/mlir-opt fail/store_2d_vector.mlir -gpu-lower-to-nvvm-pipeline="cubin-chip=sm_90 cubin-features=+ptx80 cubin-format=isa" \
  --mlir-print-op-on-diagnostic=false -o /dev/null 2>&1 | head -1 | tee -a $S
log "== layout model check"
python3 check_layouts.py | tee -a $S
