// The kernels' configuration written out whole (fwp-configure-kernels'
// config): the GPU's kernels run on the host, their state in the workspace
// unless a RUN line says otherwise.
// RUN: fwp-opt %s -split-input-file -verify-diagnostics -fwp-configure-kernels='config=#fwp.kernel_config<target="gpu-on-host",chunk_size=16,value_block=32,state_memory=workspace>' -fwp-tile-scan | FileCheck %s
// RUN: fwp-opt %s -split-input-file -verify-diagnostics -fwp-configure-kernels='config=#fwp.kernel_config<target="gpu-on-host",chunk_size=32,value_block=32,state_memory=workspace>' -fwp-tile-scan | FileCheck %s --check-prefix=BLOCKS
// RUN: fwp-opt %s -split-input-file -verify-diagnostics -fwp-configure-kernels='config=#fwp.kernel_config<target="gpu-on-host",chunk_size=16,value_block=32,state_memory=workgroup,local_bytes=34816>' -fwp-tile-scan | FileCheck %s --check-prefix=LOCAL
// RUN: fwp-opt %s -split-input-file -verify-diagnostics -fwp-configure-kernels='config=#fwp.kernel_config<target="gpu-on-host",chunk_size=16,value_block=4,state_memory=workspace>' -fwp-tile-scan | FileCheck %s --check-prefix=SPLIT
// RUN: fwp-opt %s -split-input-file -verify-diagnostics -fwp-configure-kernels='config=#fwp.kernel_config<target="gpu-on-host",chunk_size=16,value_block=32,state_memory=workspace,scratch_slots=2>' -fwp-tile-scan | FileCheck %s --check-prefix=SLOTS
// The CPU's configuration is not the GPU's kernels'.
// RUN: not fwp-opt %s -split-input-file -fwp-configure-kernels -fwp-tile-scan 2>&1 | FileCheck %s --check-prefix=CPU
// CPU: error: fwp-tile-scan lowers the GPU's kernels, but the function's kernels are configured for the CPU: #fwp.kernel_config<target = cpu, chunk_size = 64>

// The delta rule at the tile level. The workspace is padded to whole
// chunks (N * 16 rows). A prepare kernel over (batch, head, chunk) loads
// the chunk: a whole chunk as tiles (x = relu([q, -q]) from a 16 x 8 view
// of q's rows), a partial one with masking (a shared loop over its 16 rows),
// then works on static tiles: DPFP as products of column ranges of x (the
// roll by 1 of 16 columns: 15 and 1), row sums and a division; K^T laid out
// once; P = tril(Q K^T) and G = stril(K K^T) as products and causal masks,
// A row by row (a 1 x 16 product per row), W~ and U~ as products. A state
// kernel over (batch, head, value block) runs the chunks in order on its
// 8 x 32 block of the state (S^T laid out once per chunk).
// With two or more 16 x 16 blocks a chunk (C = 32), A goes by blocks:
// M = diag(b) G, the two diagonal blocks by substitution over their 16
// rows (1 x 16 by 16 x 16 products), then the off-diagonal block as
// T = M_10 A_00, negated, A_10 = A_11 (-T): 16 x 16 products.
// BLOCKS-LABEL: func @delta_fused
// BLOCKS: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : memref<32x32xf32{{.*}}, memref<32xf32{{.*}}) outs(%{{.*}} : memref<32x32xf32
// BLOCKS: scf.for %{{.*}} = %c1{{.*}} to %c16
// BLOCKS-COUNT-2: linalg.matmul ins(%{{.*}}, %{{.*}} : memref<1x16xf32{{.*}}, memref<16x16xf32
// BLOCKS: }
// BLOCKS: linalg.matmul ins(%{{.*}}, %{{.*}} : memref<16x16xf32{{.*}}, memref<16x16xf32{{.*}}) outs(%[[T:.*]] : memref<16x16xf32
// BLOCKS: linalg.generic {{.*}} outs(%[[T]]
// BLOCKS: arith.negf
// BLOCKS: linalg.matmul ins(%{{.*}}, %[[T]] : memref<16x16xf32{{.*}}, memref<16x16xf32
// BLOCKS: } {fwp.kernel = "scan_prepare", mapping = [#gpu.block<x>, #gpu.block<y>, #gpu.block<z>]}
// CHECK-LABEL: func @delta_fused
// CHECK: %[[T:.*]] = memref.dim %{{.*}}, %c0
// CHECK: %[[Y:.*]] = memref.alloc({{.*}}) : memref<?x2x4x8xf32>
// CHECK: %[[S:.*]] = memref.alloc() : memref<2x4x8x32xf32>
// CHECK: %[[CHUNKS:.*]] = arith.ceildivsi %[[T]], %c16
// CHECK: %[[PADDED:.*]] = arith.muli %[[CHUNKS]], %c16
// CHECK: memref.alloc(%{{.*}}, %{{.*}}, %[[PADDED]]) : memref<?x?x?x32xf32>
// CHECK: scf.forall (%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}}, %{{.*}}, %[[N:.*]]) {
// CHECK: %[[WHOLE:.*]] = arith.cmpi eq, %{{.*}}, %c16
// CHECK: scf.if %[[WHOLE]] {
// CHECK: %[[STEPS:.*]] = memref.collapse_shape %{{.*}} {{\[}}[0], [1, 2, 3]] : memref<?x2x4x8xf32> into memref<?x64xf32>
// CHECK: %[[Q:.*]] = memref.subview %[[STEPS]][%{{.*}}, %{{.*}}] [16, 8] [1, 1] : memref<?x64xf32> to memref<16x8xf32, strided<[64, 1], offset: ?>>
// CHECK: linalg.generic {{.*}} ins(%[[Q]] :
// CHECK: linalg.generic {{.*}} ins(%[[Q]] :
// CHECK: arith.negf
// CHECK: } else {
// CHECK: scf.parallel (%{{.*}}, %{{.*}}) = (%{{.*}}, %{{.*}}) to (%c16{{.*}}, %c16
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : memref<16x15xf32{{.*}}, memref<16x15xf32{{.*}}) outs(%{{.*}} : memref<16x15xf32
// CHECK: iterator_types = ["parallel", "reduction"]
// CHECK: arith.divf
// CHECK: linalg.transpose ins(%[[K:.*]] : memref<16x32xf32{{.*}}) outs(%[[KT:.*]] : memref<32x16xf32{{.*}}) permutation = [1, 0]
// CHECK: linalg.matmul ins(%{{.*}}, %[[KT]] : memref<16x32xf32{{.*}}, memref<32x16xf32{{.*}}) outs(%{{.*}} : memref<16x16xf32
// CHECK: linalg.generic
// CHECK: arith.cmpi ule
// CHECK: linalg.matmul
// CHECK: arith.cmpi ult
// CHECK: scf.for %{{.*}} = %c1{{.*}} to %c16
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : memref<1x16xf32{{.*}}, memref<16x16xf32
// CHECK: } {fwp.kernel = "scan_prepare", mapping = [#gpu.block<x>, #gpu.block<y>, #gpu.block<z>]}
// CHECK: scf.forall (%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}}, %{{.*}}, %c1
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[N]]
// CHECK: linalg.transpose ins(%{{.*}} : memref<8x32xf32{{.*}}) outs(%[[ST:.*]] : memref<32x8xf32
// CHECK: linalg.matmul ins(%{{.*}}, %[[ST]] : memref<16x32xf32{{.*}}, memref<32x8xf32
// CHECK: linalg.matmul indexing_maps = [#[[LHS_T:.*]], #{{.*}}, #{{.*}}] ins(%{{.*}}, %{{.*}} : memref<16x8xf32{{.*}}, memref<16x32xf32{{.*}} outs(%{{.*}} : memref<8x32xf32
// CHECK: } {fwp.kernel = "scan_state", mapping = [#gpu.block<x>, #gpu.block<y>, #gpu.block<z>]}
// CHECK: bufferization.to_tensor %[[Y]] restrict writable
// CHECK: bufferization.to_tensor %[[S]] restrict writable
// With the state in workgroup memory (the GPU's choice), scan_state keeps
// its 8 x 32 block of the state in a kernel-local tile (rows padded to 36
// words) across the chunks: no S^T is laid out; the products read the tile
// transposed (U = U~ - W~ S^T, Y = Q S^T) and accumulate into it
// (S += U^T K); the final state gets it at the end.
// LOCAL-LABEL: func @delta_fused
// LOCAL: } {fwp.kernel = "scan_prepare"
// LOCAL: scf.forall
// LOCAL: %[[TILE:.*]] = memref.alloca() : memref<8x36xf32, #gpu.address_space<workgroup>>
// LOCAL: %[[S:.*]] = memref.subview %[[TILE]][%{{.*}}, %{{.*}}] [8, 32] [1, 1]
// LOCAL: linalg.fill ins(%{{.*}} : f32) outs(%[[S]] :
// LOCAL: scf.for
// LOCAL-NOT: linalg.transpose
// LOCAL: linalg.matmul indexing_maps = [#[[MK:.*]], #[[NK:.*]], #{{.*}}] ins(%{{.*}}, %[[S]] : memref<16x32xf32{{.*}}, memref<8x32xf32, strided<[36, 1], offset: ?>, #gpu.address_space<workgroup>>)
// LOCAL: linalg.matmul indexing_maps = [#[[MK]], #[[NK]], #{{.*}}] ins(%{{.*}}, %[[S]] :
// LOCAL: linalg.matmul indexing_maps = [#{{.*}}, #{{.*}}, #{{.*}}] ins(%{{.*}}, %{{.*}} : memref<16x8xf32{{.*}}, memref<16x32xf32{{.*}}) outs(%[[S]] :
// LOCAL: }
// LOCAL: linalg.generic {{.*}} ins(%[[S]] : {{.*}}) outs(%{{.*}} : memref<8x32xf32, strided<[32, 1], offset: ?>>)
// LOCAL: } {fwp.kernel = "scan_state"
func.func @delta_fused(%q: tensor<?x2x4x8xf32>, %k: tensor<?x2x4x8xf32>,
                       %v: tensor<?x2x4x8xf32>, %b: tensor<?x2x4xf32>)
    -> (tensor<?x2x4x8xf32>, tensor<2x4x8x32xf32>) {
  %y, %s = fwp.scan delta %q, %k, %v beta(%b : tensor<?x2x4xf32>)
      dpfp(nu = 2, eps = 1.0e-6)
      : tensor<?x2x4x8xf32>, tensor<?x2x4x8xf32>, tensor<?x2x4x8xf32>
      -> tensor<?x2x4x8xf32>, tensor<2x4x8x32xf32>
  return %y, %s : tensor<?x2x4x8xf32>, tensor<2x4x8x32xf32>
}

// -----

// The sum rule needs no inverse: the prepare kernel loads features and
// values and forms tril(Q K^T), one product; the state kernel copies V for
// U. d_v = 2 is below the value block: one block of 2 columns.
// CHECK-LABEL: func @sum_unfused
// CHECK: scf.forall
// CHECK-COUNT-1: linalg.matmul
// CHECK-NOT: linalg.matmul
// CHECK: } {fwp.kernel = "scan_prepare", mapping = [#gpu.block<x>, #gpu.block<y>, #gpu.block<z>]}
// CHECK: scf.forall (%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}}, %{{.*}}, %c1
// CHECK: memref<16x2xf64
func.func @sum_unfused(%q: tensor<?x?x?x4xf64>, %v: tensor<?x?x?x2xf64>)
    -> tensor<?x?x?x2xf64> {
  %y = fwp.scan sum %q, %q, %v
      : tensor<?x?x?x4xf64>, tensor<?x?x?x4xf64>, tensor<?x?x?x2xf64>
      -> tensor<?x?x?x2xf64>
  return %y : tensor<?x?x?x2xf64>
}

// -----

// The gradient: prepare and state (keeping every chunk's start state: a
// copy of the state tile), then the state gradient backwards over chunks
// and the per-chunk gradients in parallel.
// CHECK-LABEL: func @delta_grad
// CHECK: %[[STATES:.*]] = memref.alloc({{.*}}) : memref<?x?x?x8x16xf32>
// CHECK: scf.forall
// CHECK: } {fwp.kernel = "scan_prepare", mapping = [#gpu.block<x>, #gpu.block<y>, #gpu.block<z>]}
// CHECK: scf.forall
// CHECK: %[[KEPT:.*]] = memref.subview %[[STATES]]
// CHECK: linalg.generic {{.*}} outs(%[[KEPT]] : memref<8x16xf32
// CHECK: } {fwp.kernel = "scan_state", mapping = [#gpu.block<x>, #gpu.block<y>, #gpu.block<z>]}
// CHECK: scf.forall
// CHECK: scf.for %[[I:.*]] = %{{.*}} to %[[N:.*]] step
// CHECK: arith.subi %[[N]], %c1
// CHECK: arith.subi %{{.*}}, %[[I]]
// CHECK: } {fwp.kernel = "scan_state_grad", mapping = [#gpu.block<x>, #gpu.block<y>{{.*}}]}
// CHECK: scf.forall (%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}}, %{{.*}}, %[[N]])
// CHECK: } {fwp.kernel = "scan_chunk_grad", mapping = [#gpu.block<x>, #gpu.block<y>{{.*}}]}
// CHECK: scf.forall (%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}}, %{{.*}}, %[[N]])
// CHECK: } {fwp.kernel = "scan_input_grad", mapping = [#gpu.block<x>, #gpu.block<y>{{.*}}]}
// CHECK-COUNT-4: bufferization.to_tensor
// Split into value blocks (4 of d_v = 8), scan_state_grad's instances
// add their shares of dK's term U dS, the chunk's rows 4 at a time, through
// a scratch tile and atomic adds, to rows that scan_prepare zeroed.
// SPLIT-LABEL: func @delta_grad
// SPLIT: linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : memref<16x16xf32, {{.*}}>){{[[:space:]]+}}} {fwp.kernel = "scan_prepare"
// SPLIT: } {fwp.kernel = "scan_state"
// SPLIT: scf.forall (%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}}, %{{.*}}, %c2
// SPLIT: scf.for %{{.*}} = %{{.*}} to %c4
// SPLIT: linalg.matmul ins(%{{.*}}, %{{.*}} : memref<4x4xf32, {{.*}}>, memref<4x16xf32, {{.*}}>) outs(%[[SHARE:.*]] : memref<4x16xf32
// SPLIT: scf.parallel
// SPLIT: %[[X:.*]] = memref.load %[[SHARE]]
// SPLIT: memref.atomic_rmw addf %[[X]]
// SPLIT: } {fwp.kernel = "scan_state_grad"
// With scratch slots, what only one chunk's work reads and writes (here
// dP, dA, dM, ..., phi, dL/dx) is one chunk per slot, and scan_chunk_grad
// and scan_input_grad run an instance per slot, min(B H N, 2), each taking
// the chunks s, s + slots, ... in turn.
// SLOTS-LABEL: func @delta_grad
// SLOTS: %[[ALLOCATED:.*]] = arith.minsi %{{.*}}, %c2{{.*}} : index
// SLOTS: memref.alloc(%[[ALLOCATED]]) : memref<?x1x16x16xf32>
// SLOTS: } {fwp.kernel = "scan_state_grad"
// SLOTS: %[[ITEMS:.*]] = arith.muli
// SLOTS: %[[SLOTS:.*]] = arith.minsi %[[ITEMS]], %c2
// SLOTS: scf.forall (%[[S:.*]], %{{.*}}, %{{.*}}) in (%[[SLOTS]], %c1{{.*}}, %c1{{.*}}) {
// SLOTS-NEXT: scf.for %[[ITEM:.*]] = %[[S]] to %[[ITEMS]] step %[[SLOTS]] {
// SLOTS: %[[SLOT:.*]] = arith.remsi %[[ITEM]], %[[SLOTS]]
// SLOTS: memref.subview %{{.*}}[%[[SLOT]], %{{.*}}, %{{.*}}, %{{.*}}] [1, 1, 16, 16]
// SLOTS: } {fwp.kernel = "scan_chunk_grad"
// SLOTS: scf.forall (%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}}, %c1{{.*}}, %c1{{.*}}) {
// SLOTS: } {fwp.kernel = "scan_input_grad"
// With the state in workgroup memory, scan_state_grad keeps its block of
// dS and of dU^T W~ in two kernel-local tiles across the chunks: dU reads
// dS transposed in place (dU += K dS^T), dS -= dU^T W~ on the tiles, and
// the initial state's gradient gets dS at the end. DPFP's x = relu([k, -k])
// is a local tile too (16 x 8, rows padded to 12), q's then k's, in
// scan_prepare, and built again from the inputs in scan_input_grad.
// LOCAL-LABEL: func @delta_grad
// LOCAL: memref.alloca() : memref<16x12xf32, #gpu.address_space<workgroup>>
// LOCAL: } {fwp.kernel = "scan_prepare"
// LOCAL: } {fwp.kernel = "scan_state"
// LOCAL: scf.forall
// LOCAL: %[[DS_TILE:.*]] = memref.alloca() : memref<8x20xf32, #gpu.address_space<workgroup>>
// LOCAL: %[[DS:.*]] = memref.subview %[[DS_TILE]]
// LOCAL: %[[W_TILE:.*]] = memref.alloca() : memref<8x20xf32, #gpu.address_space<workgroup>>
// LOCAL: %[[W:.*]] = memref.subview %[[W_TILE]]
// LOCAL: scf.for
// LOCAL-NOT: linalg.transpose
// LOCAL: linalg.matmul indexing_maps = [#{{.*}}, #{{.*}}, #{{.*}}] ins(%{{.*}}, %[[DS]] : memref<16x16xf32{{.*}}, memref<8x16xf32, strided<[20, 1], offset: ?>, #gpu.address_space<workgroup>>)
// LOCAL: outs(%[[DS]] :
// LOCAL: outs(%[[W]] :
// LOCAL: linalg.generic {{.*}} ins(%[[DS]], %[[W]] : {{.*}}) outs(%[[DS]] :
// LOCAL: }
// LOCAL: linalg.generic {{.*}} ins(%[[DS]] : {{.*}}) outs(%{{.*}} : memref<8x16xf32, strided<[16, 1], offset: ?>>)
// LOCAL: } {fwp.kernel = "scan_state_grad"
// LOCAL: } {fwp.kernel = "scan_chunk_grad"
// LOCAL: memref.alloca() : memref<16x12xf32, #gpu.address_space<workgroup>>
// LOCAL: } {fwp.kernel = "scan_input_grad"
func.func @delta_grad(%q: tensor<?x1x2x4xf32>, %v: tensor<?x1x2x8xf32>,
                      %b: tensor<?x1x2xf32>, %dy: tensor<?x1x2x8xf32>)
    -> (tensor<?x1x2x4xf32>, tensor<?x1x2xf32>) {
  %dq, %dk, %dv, %db = fwp.scan_grad delta %q, %q, %v
      beta(%b : tensor<?x1x2xf32>) dy(%dy : tensor<?x1x2x8xf32>)
      dpfp(nu = 2, eps = 1.0e-6)
      : tensor<?x1x2x4xf32>, tensor<?x1x2x4xf32>, tensor<?x1x2x8xf32>
      -> tensor<?x1x2x4xf32>, tensor<?x1x2x4xf32>, tensor<?x1x2x8xf32>
         dbeta(tensor<?x1x2xf32>)
  return %dk, %db : tensor<?x1x2x4xf32>, tensor<?x1x2xf32>
}

// -----

func.func @dynamic_features(%q: tensor<8x1x1x?xf32>, %v: tensor<8x1x1x2xf32>)
    -> tensor<8x1x1x2xf32> {
  // expected-error @+1 {{fwp-tile-scan needs static feature and value sizes}}
  %y = fwp.scan sum %q, %q, %v
      : tensor<8x1x1x?xf32>, tensor<8x1x1x?xf32>, tensor<8x1x1x2xf32>
      -> tensor<8x1x1x2xf32>
  return %y : tensor<8x1x1x2xf32>
}

// -----

func.func @half_precision(%q: tensor<8x1x1x4xf16>, %v: tensor<8x1x1x2xf16>)
    -> tensor<8x1x1x2xf16> {
  // expected-error @+1 {{fwp-tile-scan supports f32 and f64 (16-bit storage: run fwp-widen-storage first), got 'f16'}}
  %y = fwp.scan sum %q, %q, %v
      : tensor<8x1x1x4xf16>, tensor<8x1x1x4xf16>, tensor<8x1x1x2xf16>
      -> tensor<8x1x1x2xf16>
  return %y : tensor<8x1x1x2xf16>
}

// -----

// A gradient that also returns the scan's outputs (a `y` result) computes
// them in its forward: scan_state stores Y in the output it returns.
// CHECK-LABEL: func @sum_grad_with_outputs
// CHECK: %[[Y:.*]] = memref.alloc(%{{.*}}) : memref<?x1x2x8xf32>
// CHECK: } {fwp.kernel = "scan_state"
// CHECK: %[[YT:.*]] = bufferization.to_tensor %[[Y]]
// CHECK: return %{{.*}}, %[[YT]]
func.func @sum_grad_with_outputs(%q: tensor<?x1x2x4xf32>,
                                 %v: tensor<?x1x2x8xf32>,
                                 %dy: tensor<?x1x2x8xf32>)
    -> (tensor<?x1x2x4xf32>, tensor<?x1x2x8xf32>) {
  %dq, %dk, %dv, %y = fwp.scan_grad sum %q, %q, %v
      dy(%dy : tensor<?x1x2x8xf32>)
      : tensor<?x1x2x4xf32>, tensor<?x1x2x4xf32>, tensor<?x1x2x8xf32>
      -> tensor<?x1x2x4xf32>, tensor<?x1x2x4xf32>, tensor<?x1x2x8xf32>
         y(tensor<?x1x2x8xf32>)
  return %dq, %y : tensor<?x1x2x4xf32>, tensor<?x1x2x8xf32>
}

// -----

// 16-bit storage: the casts fwp-widen-storage puts around a scan (its
// operands extended, its result rounded) go into the kernels, which read
// the bf16 operands (loads extend) and write y in bf16 (stores round): no
// float32 copy of an operand or of y is made, and the casts are gone.
// CHECK-LABEL: func @bf16_storage
// CHECK-SAME: (%[[Q:.*]]: tensor<?x1x2x4xbf16>, %[[V:.*]]: tensor<?x1x2x4xbf16>)
// CHECK: %[[QB:.*]] = bufferization.to_buffer %[[Q]] read_only : tensor<?x1x2x4xbf16> to memref<?x1x2x4xbf16>
// CHECK: %[[Y:.*]] = memref.alloc(%{{.*}}) : memref<?x1x2x4xbf16>
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : memref<16x4xbf16{{.*}}) outs(%{{.*}} : memref<16x4xf32
// CHECK: arith.extf
// CHECK: } {fwp.kernel = "scan_prepare"
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : memref<16x4xf32{{.*}}) outs(%{{.*}} : memref<16x4xbf16
// CHECK: arith.truncf
// CHECK: } {fwp.kernel = "scan_state"
// CHECK: %[[YT:.*]] = bufferization.to_tensor %[[Y]] restrict writable : memref<?x1x2x4xbf16> to tensor<?x1x2x4xbf16>
// CHECK-NOT: linalg.generic
// CHECK: return %[[YT]]
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @bf16_storage(%q: tensor<?x1x2x4xbf16>, %v: tensor<?x1x2x4xbf16>)
    -> tensor<?x1x2x4xbf16> {
  %c0 = arith.constant 0 : index
  %t = tensor.dim %q, %c0 : tensor<?x1x2x4xbf16>
  %qe = tensor.empty(%t) : tensor<?x1x2x4xf32>
  %qw = linalg.generic {indexing_maps = [#id4, #id4],
                        iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%q : tensor<?x1x2x4xbf16>) outs(%qe : tensor<?x1x2x4xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %x = arith.extf %in : bf16 to f32
    linalg.yield %x : f32
  } -> tensor<?x1x2x4xf32>
  %ve = tensor.empty(%t) : tensor<?x1x2x4xf32>
  %vw = linalg.generic {indexing_maps = [#id4, #id4],
                        iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%v : tensor<?x1x2x4xbf16>) outs(%ve : tensor<?x1x2x4xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %x = arith.extf %in : bf16 to f32
    linalg.yield %x : f32
  } -> tensor<?x1x2x4xf32>
  %y = fwp.scan sum %qw, %qw, %vw
      : tensor<?x1x2x4xf32>, tensor<?x1x2x4xf32>, tensor<?x1x2x4xf32>
      -> tensor<?x1x2x4xf32>
  %n = tensor.dim %y, %c0 : tensor<?x1x2x4xf32>
  %ye = tensor.empty(%n) : tensor<?x1x2x4xbf16>
  %yn = linalg.generic {indexing_maps = [#id4, #id4],
                        iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%y : tensor<?x1x2x4xf32>) outs(%ye : tensor<?x1x2x4xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %x = arith.truncf %in : f32 to bf16
    linalg.yield %x : bf16
  } -> tensor<?x1x2x4xbf16>
  return %yn : tensor<?x1x2x4xbf16>
}

// -----

// Batch first (fla's [B, T, H, W]): the sequence length is v's dimension
// 1; a whole chunk of one head is a 16 x W view of [B T, H W] (rows H W
// apart), a partial one goes element by element at [b, t, h, j]; y is
// allocated batch first.
// CHECK-LABEL: func @sum_batch_first
// CHECK-SAME: (%[[Q:.*]]: tensor<2x?x3x4xf32>, %[[V:.*]]: tensor<2x?x3x2xf32>)
// CHECK: %[[VB:.*]] = bufferization.to_buffer %[[V]]
// CHECK: %[[T:.*]] = memref.dim %[[VB]], %c1
// CHECK: memref.alloc(%[[T]]) : memref<2x?x3x2xf32>
// CHECK: memref.collapse_shape %{{.*}} {{\[}}[0, 1], [2, 3]] : memref<2x?x3x4xf32> into memref<?x12xf32>
// CHECK: memref.subview %{{.*}} [16, 4] [1, 1] : memref<?x12xf32> to memref<16x4xf32, strided<[12, 1], offset: ?>>
// CHECK: memref.load %{{.*}}[%[[B:.*]], %{{.*}}, %{{.*}}, %{{.*}}] : memref<2x?x3x4xf32>
func.func @sum_batch_first(%q: tensor<2x?x3x4xf32>, %v: tensor<2x?x3x2xf32>)
    -> tensor<2x?x3x2xf32> {
  %y = fwp.scan sum %q, %q, %v batch_first
      : tensor<2x?x3x4xf32>, tensor<2x?x3x4xf32>, tensor<2x?x3x2xf32>
      -> tensor<2x?x3x2xf32>
  return %y : tensor<2x?x3x2xf32>
}
