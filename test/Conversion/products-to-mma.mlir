// Without a configuration, the GPU's default (tf32x3, 128 threads).
// RUN: fwp-opt %s -split-input-file -fwp-products-to-mma | FileCheck %s
// RUN: fwp-opt %s -split-input-file -fwp-configure-kernels="target=gpu products=tf32" -fwp-products-to-mma | FileCheck %s --check-prefix=ONE
// RUN: fwp-opt %s -split-input-file -fwp-configure-kernels="target=gpu products=cuda-cores" -fwp-products-to-mma | FileCheck %s --check-prefix=CORES
// The CPU's configuration has no tensor cores.
// RUN: not fwp-opt %s -split-input-file -fwp-configure-kernels -fwp-products-to-mma 2>&1 | FileCheck %s --check-prefix=CPU
// CPU: error: 'scf.forall' op fwp-products-to-mma needs a GPU kernel configuration, got #fwp.kernel_config<target = cpu, chunk_size = 64>

// A 64 x 64 x 128 product: 8 warp tiles of 16 x 32, two per warp (4 warps)
// if whole, so it goes in two column pieces of 64 x 32, one tile per warp.
// Each piece stages its operands in shared memory, 32 steps of k at a time:
// q's 64 x 32 window (row stride 36 words: 8 fragment rows land on distinct
// banks) then its piece of kt, 32 x 32 (stride 40), each copied by cp.async
// (16 and 8 4-byte copies per thread), one group, a wait and a barrier;
// then each k step of 8 loads the A fragment with ldmatrix and issues 4
// MMAs, 3 each with tf32x3 (low-high, high-low, high-high); a barrier after.
// CHECK: memref.global "private" @fwp_stage_k : memref<3584xf32, #gpu.address_space<workgroup>> {alignment = 16 : i64}
// CHECK-LABEL: func @product
// CHECK: scf.forall
// CHECK: %[[STAGE:.*]] = memref.get_global @fwp_stage_k
// CHECK: memref.subview %{{.*}}[0, 0] [128, 32]
// CHECK: %[[QS:.*]] = memref.reinterpret_cast %[[STAGE]] to offset: [0], sizes: [64, 32], strides: [36, 1]
// CHECK: %[[KS:.*]] = memref.reinterpret_cast %[[STAGE]] to offset: [2304], sizes: [32, 32], strides: [40, 1]
// CHECK: scf.for %[[K0:.*]] = %c0{{.*}} to %c128{{.*}} step %c32{{.*}} iter_args
// CHECK: gpu.barrier
// CHECK-COUNT-16: nvgpu.device_async_copy %{{.*}}, %[[QS]][{{.*}}], 1
// CHECK-COUNT-8: nvgpu.device_async_copy %{{.*}}, %[[KS]][{{.*}}], 1
// CHECK: %[[GROUP:.*]] = nvgpu.device_async_create_group
// CHECK: nvgpu.device_async_wait %[[GROUP]] {numGroups = 0 : i32}
// CHECK: gpu.barrier
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c32{{.*}} step %c8{{.*}} iter_args
// CHECK: nvgpu.ldmatrix %[[QS]]
// CHECK-COUNT-12: nvgpu.mma.sync({{.*}}) {mmaShape = [16, 8, 8], tf32Enabled}
// CHECK-NOT: nvgpu.mma.sync
// CHECK: scf.yield
// CHECK: vector.store
// CHECK: gpu.barrier
// CHECK: memref.subview %{{.*}}[0, 32] [128, 32]
// CHECK-COUNT-12: nvgpu.mma.sync({{.*}}) {mmaShape = [16, 8, 8], tf32Enabled}
// CHECK-NOT: nvgpu.mma.sync
// CHECK: gpu.barrier
// CHECK-NOT: linalg.matmul
// CHECK-NOT: vector.contract
// ONE-LABEL: func @product
// Operands rounded to tf32 by cvt.rna.tf32.f32, which keeps NaN and inf.
// ONE: %[[ELEMENT:.*]] = vector.extract %{{.*}}[0, 0] : f32 from vector<4x1xf32>
// ONE: %[[TF32:.*]] = nvvm.convert.float.to.tf32 %[[ELEMENT]] {rnd = #nvvm.fp_rnd_mode<rna>}
// ONE: arith.bitcast %[[TF32]] : i32 to f32
// ONE-NOT: arith.andi
// ONE-COUNT-8: nvgpu.mma.sync({{.*}}) {mmaShape = [16, 8, 8], tf32Enabled}
// ONE-NOT: nvgpu.mma.sync
// CORES-LABEL: func @product
// CORES-NOT: nvgpu.mma.sync
// CORES: linalg.matmul
!q = memref<64x128xf32, strided<[128, 1], offset: ?>>
!kt = memref<128x64xf32, strided<[64, 1], offset: ?>>
!p = memref<64x64xf32, strided<[64, 1], offset: ?>>
func.func @product(%q: !q, %kt: !kt, %p: !p) {
  %n = arith.constant 3 : index
  scf.forall (%i) in (%n) {
    linalg.matmul ins(%q, %kt : !q, !kt) outs(%p : !p)
  } {fwp.kernel = "k"}
  return
}

// -----

// The same product on views of allocations (a kernel's scratch), each row
// a multiple of 4 floats from the allocation's start: every copy takes 16
// bytes (cp.async.cg), 4 of q's window and 2 of kt's a thread per piece.
// The product above reads function arguments, which may be anywhere: 4
// bytes a copy.
// CHECK-LABEL: func @aligned_operands
// CHECK-COUNT-4: nvgpu.device_async_copy %{{.*}}, %{{.*}}[{{.*}}], 4 {bypassL1}
// CHECK-COUNT-2: nvgpu.device_async_copy %{{.*}}, %{{.*}}[{{.*}}], 4 {bypassL1}
// CHECK: nvgpu.device_async_create_group
// CHECK-COUNT-4: nvgpu.device_async_copy %{{.*}}, %{{.*}}[{{.*}}], 4 {bypassL1}
// CHECK-COUNT-2: nvgpu.device_async_copy %{{.*}}, %{{.*}}[{{.*}}], 4 {bypassL1}
// CHECK: nvgpu.device_async_create_group
// CHECK-NOT: nvgpu.device_async_copy
// ONE-LABEL: func @aligned_operands
// CORES-LABEL: func @aligned_operands
!q = memref<64x128xf32, strided<[128, 1], offset: ?>>
!kt = memref<128x64xf32, strided<[64, 1], offset: ?>>
!p = memref<64x64xf32, strided<[64, 1], offset: ?>>
func.func @aligned_operands(%n: index) {
  %q = memref.alloc(%n) : memref<?x64x128xf32>
  %kt = memref.alloc(%n) : memref<?x128x64xf32>
  %p = memref.alloc(%n) : memref<?x64x64xf32>
  scf.forall (%i) in (%n) {
    %qi = memref.subview %q[%i, 0, 0] [1, 64, 128] [1, 1, 1]
        : memref<?x64x128xf32> to !q
    %kti = memref.subview %kt[%i, 0, 0] [1, 128, 64] [1, 1, 1]
        : memref<?x128x64xf32> to !kt
    %pi = memref.subview %p[%i, 0, 0] [1, 64, 64] [1, 1, 1]
        : memref<?x64x64xf32> to !p
    linalg.matmul ins(%qi, %kti : !q, !kt) outs(%pi : !p)
  } {fwp.kernel = "k"}
  return
}

// -----

// The state update's product reads its left operand transposed
// (S += U^T K, 32 x 128 from 64 x 32 and 64 x 128): 8 warp tiles, so two
// column pieces of 32 x 64, each staged as stored: U's 32 x 32 window with
// rows of k (stride 40: fragment columns on distinct banks), the piece's
// 32 x 64 window of K (stride 72); no copy transposes.
// CHECK: memref.global "private" @fwp_stage_k : memref<3584xf32, #gpu.address_space<workgroup>>
// CHECK-LABEL: func @transposed_lhs
// ONE-LABEL: func @transposed_lhs
// CHECK: memref.reinterpret_cast %{{.*}} to offset: [0], sizes: [32, 32], strides: [40, 1]
// CHECK: memref.reinterpret_cast %{{.*}} to offset: [1280], sizes: [32, 64], strides: [72, 1]
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c64{{.*}} step %c32{{.*}} iter_args
// CHECK-COUNT-24: nvgpu.device_async_copy
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c32{{.*}} step %c8{{.*}} iter_args
// CHECK-COUNT-12: nvgpu.mma.sync
// CHECK: gpu.barrier
// CHECK-NOT: linalg.matmul
!u = memref<64x32xf32, strided<[64, 1], offset: ?>>
!k = memref<64x128xf32, strided<[128, 1], offset: ?>>
!s = memref<32x128xf32, strided<[128, 1], offset: ?>>
func.func @transposed_lhs(%u: !u, %k: !k, %s: !s) {
  %n = arith.constant 3 : index
  scf.forall (%i) in (%n) {
    linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k, m)>,
                                   affine_map<(m, n, k) -> (k, n)>,
                                   affine_map<(m, n, k) -> (m, n)>]
        ins(%u, %k : !u, !k) outs(%s : !s)
  } {fwp.kernel = "k"}
  return
}

// -----

// An operand already in shared memory (scan_state's local state tile, read
// transposed: U = W~ S^T) is read in place, a view of it per block of k,
// with ldmatrix: only W~'s 64 x 32 window is staged (16 copies per thread),
// and the stage is that window alone.
// CHECK: memref.global "private" @fwp_stage_k : memref<2304xf32, #gpu.address_space<workgroup>>
// CHECK-LABEL: func @local_rhs
// CHECK: %[[TILE:.*]] = memref.alloca() : memref<32x132xf32, #gpu.address_space<workgroup>>
// CHECK: %[[S:.*]] = memref.subview %[[TILE]]
// CHECK: scf.for %[[K0:.*]] = %c0{{.*}} to %c128{{.*}} step %c32{{.*}} iter_args
// CHECK: %[[BLOCK:.*]] = memref.subview %[[S]][%{{.*}}, %[[K0]]] [32, 32] [1, 1]
// CHECK-COUNT-16: nvgpu.device_async_copy
// CHECK-NOT: nvgpu.device_async_copy
// CHECK: nvgpu.device_async_create_group
// CHECK: nvgpu.ldmatrix %[[BLOCK]]
// CHECK: nvgpu.mma.sync
// CHECK: gpu.barrier
// CHECK-NOT: linalg.matmul
!w = memref<64x128xf32, strided<[128, 1], offset: ?>>
!u = memref<64x32xf32, strided<[32, 1], offset: ?>>
!st = memref<32x128xf32, strided<[132, 1], offset: ?>, #gpu.address_space<workgroup>>
func.func @local_rhs(%w: !w, %u: !u) {
  %n = arith.constant 3 : index
  %c0 = arith.constant 0 : index
  scf.forall (%i) in (%n) {
    %tile = memref.alloca() : memref<32x132xf32, #gpu.address_space<workgroup>>
    %s = memref.subview %tile[%c0, %c0] [32, 128] [1, 1]
        : memref<32x132xf32, #gpu.address_space<workgroup>> to !st
    linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>,
                                   affine_map<(m, n, k) -> (n, k)>,
                                   affine_map<(m, n, k) -> (m, n)>]
        ins(%w, %s : !w, !st) outs(%u : !u)
  } {fwp.kernel = "k"}
  return
}

// -----

// A product right after a fill of its output with zeros (TileBuilder's
// product without accumulating) starts its accumulators as zeros in
// registers: the fill goes, and the output is only written.
// CHECK-LABEL: func @from_zero
// CHECK-NOT: linalg.fill
// CHECK: %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : vector<2x2xf32>
// CHECK: scf.forall
// CHECK-NOT: vector.load %arg2
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c128{{.*}} step %c32{{.*}} iter_args(%{{.*}} = %[[ZERO]], %{{.*}} = %[[ZERO]], %{{.*}} = %[[ZERO]], %{{.*}} = %[[ZERO]])
// CHECK: nvgpu.mma.sync
// CHECK: vector.store %{{.*}}, %arg2
!q = memref<64x128xf32, strided<[128, 1], offset: ?>>
!kt = memref<128x32xf32, strided<[32, 1], offset: ?>>
!p = memref<64x32xf32, strided<[32, 1], offset: ?>>
func.func @from_zero(%q: !q, %kt: !kt, %p: !p) {
  %n = arith.constant 3 : index
  %zero = arith.constant 0.0 : f32
  scf.forall (%i) in (%n) {
    linalg.fill ins(%zero : f32) outs(%p : !p)
    linalg.matmul ins(%q, %kt : !q, !kt) outs(%p : !p)
  } {fwp.kernel = "k"}
  return
}

// -----

// 48 x 8 output: 3 warp tiles for 4 warps, so the last warp is idle (the
// guard), and the operands are read where they are (no stage).
// CHECK-LABEL: func @guarded
// CHECK-NOT: nvgpu.device_async_copy
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c1{{.*}} step %c1{{.*}} {
// CHECK: %[[OWNED:.*]] = arith.cmpi ult
// CHECK: scf.if %[[OWNED]] {
// CHECK-COUNT-3: nvgpu.mma.sync
func.func @guarded(%a: memref<48x16xf32>, %b: memref<16x8xf32>,
                   %c: memref<48x8xf32>) {
  %n = arith.constant 3 : index
  scf.forall (%i) in (%n) {
    linalg.matmul ins(%a, %b : memref<48x16xf32>, memref<16x8xf32>)
        outs(%c : memref<48x8xf32>)
  } {fwp.kernel = "k"}
  return
}

// -----

// What does not divide into 16 x 8 x 8 stays for fwp-lower-tiles: a single
// row (the inverse's row products), features not a multiple of 8; and
// products outside kernels are not touched.
// CHECK-LABEL: func @left_alone
// CHECK-NOT: nvgpu.mma.sync
// CHECK-COUNT-3: linalg.matmul
func.func @left_alone(%row: memref<1x64xf32>, %a: memref<64x64xf32>,
                      %r: memref<1x64xf32>, %x: memref<16x12xf32>,
                      %y: memref<12x8xf32>, %z: memref<16x8xf32>) {
  %n = arith.constant 3 : index
  scf.forall (%i) in (%n) {
    linalg.matmul ins(%row, %a : memref<1x64xf32>, memref<64x64xf32>)
        outs(%r : memref<1x64xf32>)
    linalg.matmul ins(%x, %y : memref<16x12xf32>, memref<12x8xf32>)
        outs(%z : memref<16x8xf32>)
  } {fwp.kernel = "k"}
  linalg.matmul ins(%a, %a : memref<64x64xf32>, memref<64x64xf32>)
      outs(%a : memref<64x64xf32>)
  return
}
