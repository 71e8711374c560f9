// RUN: fwp-opt %s -fwp-lower-chunks -split-input-file -verify-diagnostics | FileCheck %s
// RUN: fwp-opt %s -fwp-lower-chunks=fuse-forward -split-input-file -verify-diagnostics | FileCheck %s --check-prefix=FUSED
// RUN: fwp-opt %s -fwp-lower-chunks=fuse-backward -split-input-file -verify-diagnostics | FileCheck %s --check-prefix=FUSED-BACK
// RUN: fwp-opt %s -fwp-lower-chunks=fuse-gradients -split-input-file -verify-diagnostics | FileCheck %s --check-prefix=FUSED-GRADS
// RUN: fwp-opt %s -fwp-lower-chunks=fuse-output -split-input-file -verify-diagnostics | FileCheck %s --check-prefix=FUSED-OUT
// RUN: fwp-opt %s -fwp-lower-chunks=map-kernels -split-input-file -verify-diagnostics | FileCheck %s --check-prefix=MAPS
// On a GPU target, the kernels mapped onto the grid, one instance a block.
// RUN: fwp-opt %s -fwp-configure-kernels=target=gpu -fwp-lower-chunks -split-input-file -verify-diagnostics | FileCheck %s --check-prefix=GPU
// RUN: fwp-opt %s -fwp-configure-kernels=target=gpu -fwp-lower-chunks=map-kernels -split-input-file -verify-diagnostics | FileCheck %s --check-prefix=GPU-MAPS

// The WY form: kernel chunk_wy, a forall over (batch, head, chunk); in it
// K K^T (a matmul reading its right operand transposed), the gates' rows,
// and Wt and Ut each solved a row at a time (16 rows), both stored back
// with the padding rows dropped.
// CHECK-DAG: #[[ROWS:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[COLS:.*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// GPU-LABEL: func @wy
// GPU: {fwp.kernel = "chunk_wy", mapping = [#gpu.block<x>, #gpu.block<y>, #gpu.block<z>]}
// CHECK-LABEL: func @wy
// CHECK: %[[CHUNKS:.*]] = arith.ceildivui
// CHECK: scf.forall (%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}}, %{{.*}}, %[[CHUNKS]]) shared_outs
// CHECK-COUNT-3: linalg.copy
// CHECK: linalg.matmul indexing_maps = [#[[ROWS]], #[[COLS]], #{{.*}}] ins(%{{.*}} : tensor<16x32xf32>, tensor<16x32xf32>) outs(%{{.*}} : tensor<16x16xf32>)
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c16
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c16
// CHECK: scf.forall.in_parallel
// CHECK-COUNT-2: tensor.parallel_insert_slice
// CHECK: {fwp.kernel = "chunk_wy"}
func.func @wy(%k: tensor<40x2x4x32xf32>, %v: tensor<40x2x4x8xf32>,
              %b: tensor<40x2x4xf32>)
    -> (tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>) {
  %wt, %ut = fwp.chunk_wy %k, %v, %b chunk_size = 16
      : tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>, tensor<40x2x4xf32>
      -> tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>
  return %wt, %ut : tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>
}

// -----

// On the GPU, with two blocks of 16 in a chunk: A formed by one loop over
// its block rows (each diagonal block solved a row at a time, the rows left
// of it by two products over the whole chunk), then Wt and Ut as whole
// products of A.
// GPU-LABEL: func @wy_by_blocks
// GPU: %[[A:.*]] = scf.for %{{.*}} = %c0{{.*}} to %c32{{.*}} step %c16{{.*}} iter_args(%[[ROWS:.*]] = %{{.*}}) -> (tensor<32x32xf32>)
// GPU: %[[DIAG:.*]] = scf.for %{{.*}} = %c0{{.*}} to %c16
// GPU: %[[SUM:.*]] = linalg.matmul ins(%{{.*}}, %[[ROWS]] : tensor<16x32xf32>, tensor<32x32xf32>)
// GPU: linalg.matmul ins(%[[DIAG]], %[[SUM]] : tensor<16x16xf32>, tensor<16x32xf32>)
// GPU: linalg.matmul ins(%[[A]], %{{.*}} : tensor<32x32xf32>, tensor<32x32xf32>)
// GPU: linalg.matmul ins(%[[A]], %{{.*}} : tensor<32x32xf32>, tensor<32x8xf32>)
// GPU: {fwp.kernel = "chunk_wy"
func.func @wy_by_blocks(%k: tensor<40x2x4x32xf32>, %v: tensor<40x2x4x8xf32>,
                        %b: tensor<40x2x4xf32>)
    -> (tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>) {
  %wt, %ut = fwp.chunk_wy %k, %v, %b chunk_size = 32
      : tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>, tensor<40x2x4xf32>
      -> tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>
  return %wt, %ut : tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>
}

// -----

// The pass over the chunks: a forall over (batch, head), in it a loop over
// the chunks carrying the 8 x 32 state, the start states and the rows of U.
// GPU-LABEL: func @states
// GPU: {fwp.kernel = "chunk_states", mapping = [#gpu.block<x>, #gpu.block<y>]}
// CHECK-LABEL: func @states
// CHECK: scf.forall (%{{.*}}, %{{.*}}) in
// CHECK: %[[LOOP:.*]]:3 = scf.for {{.*}} iter_args({{.*}}) -> (tensor<8x32xf32>, tensor<?x8x32xf32>, tensor<?x8xf32>)
// CHECK: scf.forall.in_parallel
// CHECK-COUNT-3: tensor.parallel_insert_slice
func.func @states(%k: tensor<40x2x4x32xf32>, %ut: tensor<40x2x4x8xf32>,
                  %wt: tensor<40x2x4x32xf32>, %s0: tensor<2x4x8x32xf32>)
    -> (tensor<2x4x3x8x32xf32>, tensor<40x2x4x8xf32>, tensor<2x4x8x32xf32>) {
  %h, %u, %final = fwp.chunk_states %k, %ut wt(%wt : tensor<40x2x4x32xf32>)
      initial(%s0 : tensor<2x4x8x32xf32>) chunk_size = 16
      : tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>
      -> tensor<2x4x3x8x32xf32>, tensor<40x2x4x8xf32>, tensor<2x4x8x32xf32>
  return %h, %u, %final
      : tensor<2x4x3x8x32xf32>, tensor<40x2x4x8xf32>, tensor<2x4x8x32xf32>
}

// -----

// On the GPU, 64 values split into the configuration's value blocks of 32:
// an instance per (batch, head, block) carries its block's 32 rows of the
// state, and reads and writes its block's columns of the values.
// GPU-LABEL: func @states_in_value_blocks
// GPU: %[[BATCH:.*]] = tensor.dim %{{.*}}, %c1
// GPU: %[[HEADS:.*]] = tensor.dim %{{.*}}, %c2
// GPU: %[[BLOCKS:.*]] = arith.constant 2 : index
// GPU: scf.forall (%[[B:.*]], %[[H:.*]], %[[BLOCK:.*]]) in (%[[BATCH]], %[[HEADS]], %[[BLOCKS]])
// GPU: %[[V0:.*]] = arith.muli %[[BLOCK]], %c32
// GPU: tensor.extract_slice %{{.*}}[%[[B]], %[[H]], 0, %[[V0]], 0] [1, 1, %{{.*}}, 32, 32]
// GPU: tensor.extract_slice %{{.*}}[%{{.*}}, %[[B]], %[[H]], %[[V0]]] [%{{.*}}, 1, 1, 32]
// GPU: scf.for {{.*}} -> (tensor<32x32xf32>, tensor<?x32x32xf32>, tensor<?x32xf32>)
// GPU: {fwp.kernel = "chunk_states", mapping = [#gpu.block<x>, #gpu.block<y>, #gpu.block<z>]}
// GPU-LABEL: func @states_grad_in_value_blocks
// GPU: scf.forall (%{{.*}}, %{{.*}}, %{{.*}}) in
// GPU: scf.for {{.*}} -> (tensor<32x32xf32>, tensor<?x32x32xf32>, tensor<?x32xf32>)
// GPU: {fwp.kernel = "chunk_states_grad", mapping = [#gpu.block<x>, #gpu.block<y>, #gpu.block<z>]}
func.func @states_in_value_blocks(%k: tensor<40x2x4x32xf32>,
                                  %ut: tensor<40x2x4x64xf32>,
                                  %wt: tensor<40x2x4x32xf32>)
    -> (tensor<2x4x3x64x32xf32>, tensor<40x2x4x64xf32>, tensor<2x4x64x32xf32>) {
  %h, %u, %final = fwp.chunk_states %k, %ut wt(%wt : tensor<40x2x4x32xf32>)
      chunk_size = 16
      : tensor<40x2x4x32xf32>, tensor<40x2x4x64xf32>
      -> tensor<2x4x3x64x32xf32>, tensor<40x2x4x64xf32>, tensor<2x4x64x32xf32>
  return %h, %u, %final
      : tensor<2x4x3x64x32xf32>, tensor<40x2x4x64xf32>, tensor<2x4x64x32xf32>
}
func.func @states_grad_in_value_blocks(%q: tensor<40x2x4x32xf32>,
                                       %k: tensor<40x2x4x32xf32>,
                                       %dy: tensor<40x2x4x64xf32>)
    -> (tensor<40x2x4x64xf32>, tensor<2x4x3x64x32xf32>, tensor<2x4x64x32xf32>) {
  %du, %dh, %d0 = fwp.chunk_states_grad %q, %k, %dy chunk_size = 16
      : tensor<40x2x4x32xf32>, tensor<40x2x4x32xf32>, tensor<40x2x4x64xf32>
      -> tensor<40x2x4x64xf32>, tensor<2x4x3x64x32xf32>, tensor<2x4x64x32xf32>
  return %du, %dh, %d0
      : tensor<40x2x4x64xf32>, tensor<2x4x3x64x32xf32>, tensor<2x4x64x32xf32>
}

// -----

// Features that fwp.dpfp makes for chunk operations alone: each kernel
// maps its chunk's rows of the map's input, the sizes come from that input,
// and the features are never made whole.
// CHECK-LABEL: func @features_mapped_in_kernels
// CHECK-NOT: fwp.dpfp
// CHECK: scf.forall
// CHECK: fwp.dpfp %{{.*}} nu = 2 : tensor<16x8xf32> -> tensor<16x32xf32>
// CHECK: {fwp.kernel = "chunk_wy"}
// CHECK: scf.forall
// CHECK: fwp.dpfp %{{.*}} nu = 2 : tensor<16x8xf32> -> tensor<16x32xf32>
// CHECK: {fwp.kernel = "chunk_states"}
// CHECK-NOT: fwp.dpfp
// A GPU configuration maps the rows once, in a kernel of its own, and the
// chunk operations read the features.
// GPU-MAPS-LABEL: func @features_mapped_in_kernels
// GPU-MAPS: fwp.dpfp %{{.*}} nu = 2 : tensor<32x8xf32> -> tensor<32x32xf32>
// GPU-MAPS: {fwp.kernel = "dpfp", mapping = [#gpu.block<x>, #gpu.block<y>, #gpu.block<z>]}
// GPU-MAPS-NOT: fwp.dpfp
// GPU-MAPS: {fwp.kernel = "chunk_wy"
// GPU-MAPS-NOT: fwp.dpfp
// GPU-MAPS: {fwp.kernel = "chunk_states"
func.func @features_mapped_in_kernels(%k: tensor<?x2x4x8xf32>,
                                      %v: tensor<?x2x4x8xf32>,
                                      %b: tensor<?x2x4xf32>)
    -> (tensor<2x4x?x8x32xf32>, tensor<?x2x4x8xf32>) {
  %kf = fwp.dpfp %k nu = 2 : tensor<?x2x4x8xf32> -> tensor<?x2x4x32xf32>
  %wt, %ut = fwp.chunk_wy %kf, %v, %b chunk_size = 16
      : tensor<?x2x4x32xf32>, tensor<?x2x4x8xf32>, tensor<?x2x4xf32>
      -> tensor<?x2x4x32xf32>, tensor<?x2x4x8xf32>
  %h, %u, %final = fwp.chunk_states %kf, %ut wt(%wt : tensor<?x2x4x32xf32>)
      chunk_size = 16 : tensor<?x2x4x32xf32>, tensor<?x2x4x8xf32>
      -> tensor<2x4x?x8x32xf32>, tensor<?x2x4x8xf32>, tensor<2x4x8x32xf32>
  return %h, %u : tensor<2x4x?x8x32xf32>, tensor<?x2x4x8xf32>
}

// -----

// The outputs: Q K^T masked to its lower triangle, then Q h^T + P U.
// CHECK-LABEL: func @output
// CHECK: scf.forall
// CHECK: arith.cmpi ule
// CHECK: arith.select
// CHECK: scf.forall.in_parallel
func.func @output(%q: tensor<40x2x4x32xf32>, %k: tensor<40x2x4x32xf32>,
                  %u: tensor<40x2x4x8xf32>, %h: tensor<2x4x3x8x32xf32>)
    -> tensor<40x2x4x8xf32> {
  %y = fwp.chunk_output %q, %k, %u, %h chunk_size = 16
      : tensor<40x2x4x32xf32>, tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>,
        tensor<2x4x3x8x32xf32> -> tensor<40x2x4x8xf32>
  return %y : tensor<40x2x4x8xf32>
}

// -----

// 16-bit storage: a chunk's bf16 rows extended to the f32 tile as they are
// loaded, the outputs rounded as they are stored.
// CHECK-LABEL: func @output_bf16
// CHECK: scf.forall
// CHECK: %[[Q:.*]] = tensor.extract_slice %{{.*}} : tensor<40x2x4x32xbf16> to tensor<?x32xbf16>
// CHECK: linalg.generic {{.*}} ins(%[[Q]] : tensor<?x32xbf16>) outs(%{{.*}} : tensor<?x32xf32>)
// CHECK:   arith.extf
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : tensor<?x8xf32>) outs(%{{.*}} : tensor<?x8xbf16>)
// CHECK:   arith.truncf
// CHECK: scf.forall.in_parallel
func.func @output_bf16(%q: tensor<40x2x4x32xbf16>, %k: tensor<40x2x4x32xbf16>,
                       %u: tensor<40x2x4x8xf32>, %h: tensor<2x4x3x8x32xf32>)
    -> tensor<40x2x4x8xbf16> {
  %y = fwp.chunk_output %q, %k, %u, %h chunk_size = 16
      : tensor<40x2x4x32xbf16>, tensor<40x2x4x32xbf16>, tensor<40x2x4x8xf32>,
        tensor<2x4x3x8x32xf32> -> tensor<40x2x4x8xbf16>
  return %y : tensor<40x2x4x8xbf16>
}

// -----

// The fusions take 16-bit storage too: the outputs' bf16 rows carried and
// stored by the fused kernels, the states f32.
// FUSED-LABEL: func @forward_bf16
// FUSED: scf.forall {{.*}} -> (tensor<40x2x4x8xbf16>, tensor<2x4x8x32xbf16>)
// FUSED: {fwp.kernel = "chunk_forward"}
// FUSED-OUT-LABEL: func @forward_bf16
// FUSED-OUT: {fwp.kernel = "chunk_wy"}
// FUSED-OUT: scf.forall {{.*}} -> (tensor<2x4x8x32xbf16>, tensor<40x2x4x8xbf16>)
// FUSED-OUT: {fwp.kernel = "chunk_states_output"}
func.func @forward_bf16(%q: tensor<40x2x4x32xbf16>, %k: tensor<40x2x4x32xbf16>,
                        %v: tensor<40x2x4x8xbf16>, %b: tensor<40x2x4xbf16>)
    -> (tensor<40x2x4x8xbf16>, tensor<2x4x8x32xbf16>) {
  %wt, %ut = fwp.chunk_wy %k, %v, %b chunk_size = 16
      : tensor<40x2x4x32xbf16>, tensor<40x2x4x8xbf16>, tensor<40x2x4xbf16>
      -> tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>
  %h, %u, %final = fwp.chunk_states %k, %ut wt(%wt : tensor<40x2x4x32xf32>)
      chunk_size = 16 : tensor<40x2x4x32xbf16>, tensor<40x2x4x8xf32>
      -> tensor<2x4x3x8x32xf32>, tensor<40x2x4x8xf32>, tensor<2x4x8x32xbf16>
  %y = fwp.chunk_output %q, %k, %u, %h chunk_size = 16
      : tensor<40x2x4x32xbf16>, tensor<40x2x4x32xbf16>, tensor<40x2x4x8xf32>,
        tensor<2x4x3x8x32xf32> -> tensor<40x2x4x8xbf16>
  return %y, %final : tensor<40x2x4x8xbf16>, tensor<2x4x8x32xbf16>
}

// -----

// The forward's three stages: a kernel each, or with fuse-forward one
// kernel over (batch, head) whose loop over the chunks carries the state
// (transposed: [D, d_v]) and the outputs' rows; the final state is its
// second result.
// CHECK-LABEL: func @forward
// CHECK: {fwp.kernel = "chunk_wy"}
// CHECK: {fwp.kernel = "chunk_states"}
// CHECK: {fwp.kernel = "chunk_output"}
// FUSED-LABEL: func @forward
// FUSED-NOT: fwp.chunk_
// FUSED: %[[KERNEL:.*]]:2 = scf.forall (%{{.*}}, %{{.*}}) in
// FUSED: linalg.transpose ins(%{{.*}} : tensor<8x32xf32>) outs(%{{.*}} : tensor<32x8xf32>)
// FUSED: scf.for {{.*}} iter_args({{.*}}) -> (tensor<32x8xf32>, tensor<?x8xf32>)
// FUSED: {fwp.kernel = "chunk_forward"}
// FUSED-NOT: fwp.kernel
// FUSED: return %[[KERNEL]]#0, %[[KERNEL]]#1
// With fuse-output the WY form stays a kernel over the chunks; the outputs
// are made in the states' loop, which stores neither the start states nor
// the writes (only the outputs read them): the final state, then y.
// FUSED-OUT-LABEL: func @forward
// FUSED-OUT: {fwp.kernel = "chunk_wy"}
// FUSED-OUT: %[[KERNEL:.*]]:2 = scf.forall (%{{.*}}, %{{.*}}) in
// FUSED-OUT-SAME: -> (tensor<2x4x8x32xf32>, tensor<40x2x4x8xf32>)
// FUSED-OUT: scf.for {{.*}} -> (tensor<8x32xf32>, tensor<?x8xf32>)
// FUSED-OUT: {fwp.kernel = "chunk_states_output"}
// FUSED-OUT-NOT: fwp.kernel
// FUSED-OUT: return %[[KERNEL]]#1, %[[KERNEL]]#0
func.func @forward(%q: tensor<40x2x4x32xf32>, %k: tensor<40x2x4x32xf32>,
                   %v: tensor<40x2x4x8xf32>, %b: tensor<40x2x4xf32>)
    -> (tensor<40x2x4x8xf32>, tensor<2x4x8x32xf32>) {
  %wt, %ut = fwp.chunk_wy %k, %v, %b chunk_size = 16
      : tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>, tensor<40x2x4xf32>
      -> tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>
  %h, %u, %final = fwp.chunk_states %k, %ut wt(%wt : tensor<40x2x4x32xf32>)
      chunk_size = 16 : tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>
      -> tensor<2x4x3x8x32xf32>, tensor<40x2x4x8xf32>, tensor<2x4x8x32xf32>
  %y = fwp.chunk_output %q, %k, %u, %h chunk_size = 16
      : tensor<40x2x4x32xf32>, tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>,
        tensor<2x4x3x8x32xf32> -> tensor<40x2x4x8xf32>
  return %y, %final : tensor<40x2x4x8xf32>, tensor<2x4x8x32xf32>
}

// -----

// Features that fwp.dpfp makes for the fused forward alone are made in its
// kernel, a chunk's rows at a time; features read elsewhere too are read
// from memory.
// FUSED-LABEL: func @forward_dpfp
// FUSED-NOT: fwp.dpfp
// FUSED: scf.forall
// FUSED: fwp.dpfp %{{.*}} nu = 2 : tensor<16x8xf32> -> tensor<16x32xf32>
// FUSED: {fwp.kernel = "chunk_forward"}
// FUSED-NOT: fwp.dpfp
// FUSED: return
// FUSED-LABEL: func @forward_dpfp_read
// FUSED: %[[KEYS:.*]] = fwp.dpfp %arg1
// FUSED: scf.forall
// FUSED: fwp.dpfp %{{.*}} nu = 2 : tensor<16x8xf32>
// FUSED-NOT: fwp.dpfp
// FUSED: {fwp.kernel = "chunk_forward"}
// FUSED: return %{{.*}}, %[[KEYS]]
func.func @forward_dpfp(%q: tensor<40x2x4x8xf32>, %k: tensor<40x2x4x8xf32>,
                        %v: tensor<40x2x4x8xf32>, %b: tensor<40x2x4xf32>)
    -> tensor<40x2x4x8xf32> {
  %qf = fwp.dpfp %q nu = 2 : tensor<40x2x4x8xf32> -> tensor<40x2x4x32xf32>
  %kf = fwp.dpfp %k nu = 2 : tensor<40x2x4x8xf32> -> tensor<40x2x4x32xf32>
  %wt, %ut = fwp.chunk_wy %kf, %v, %b chunk_size = 16
      : tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>, tensor<40x2x4xf32>
      -> tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>
  %h, %u, %final = fwp.chunk_states %kf, %ut wt(%wt : tensor<40x2x4x32xf32>)
      chunk_size = 16 : tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>
      -> tensor<2x4x3x8x32xf32>, tensor<40x2x4x8xf32>, tensor<2x4x8x32xf32>
  %y = fwp.chunk_output %qf, %kf, %u, %h chunk_size = 16
      : tensor<40x2x4x32xf32>, tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>,
        tensor<2x4x3x8x32xf32> -> tensor<40x2x4x8xf32>
  return %y : tensor<40x2x4x8xf32>
}
func.func @forward_dpfp_read(%q: tensor<40x2x4x8xf32>,
                             %k: tensor<40x2x4x8xf32>,
                             %v: tensor<40x2x4x8xf32>, %b: tensor<40x2x4xf32>)
    -> (tensor<40x2x4x8xf32>, tensor<40x2x4x32xf32>) {
  %qf = fwp.dpfp %q nu = 2 : tensor<40x2x4x8xf32> -> tensor<40x2x4x32xf32>
  %kf = fwp.dpfp %k nu = 2 : tensor<40x2x4x8xf32> -> tensor<40x2x4x32xf32>
  %wt, %ut = fwp.chunk_wy %kf, %v, %b chunk_size = 16
      : tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>, tensor<40x2x4xf32>
      -> tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>
  %h, %u, %final = fwp.chunk_states %kf, %ut wt(%wt : tensor<40x2x4x32xf32>)
      chunk_size = 16 : tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>
      -> tensor<2x4x3x8x32xf32>, tensor<40x2x4x8xf32>, tensor<2x4x8x32xf32>
  %y = fwp.chunk_output %qf, %kf, %u, %h chunk_size = 16
      : tensor<40x2x4x32xf32>, tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>,
        tensor<2x4x3x8x32xf32> -> tensor<40x2x4x8xf32>
  return %y, %kf : tensor<40x2x4x8xf32>, tensor<40x2x4x32xf32>
}

// -----

// What other operations read as well (a training step's gradients read
// Wt, the writes and the start states) the fused kernel stores too: its
// results after Y and before the final state, each chunk's start state
// transposed back into its slot.
// FUSED-LABEL: func @stored_for_gradients
// FUSED-NOT: fwp.chunk_
// FUSED: %[[KERNEL:.*]]:5 = scf.forall
// FUSED: scf.for {{.*}} -> (tensor<32x8xf32>, tensor<?x8xf32>, tensor<?x32xf32>, tensor<?x8xf32>, tensor<?x8x32xf32>)
// FUSED: %[[START:.*]] = linalg.transpose ins(%{{.*}} : tensor<32x8xf32>) outs(%{{.*}} : tensor<8x32xf32>)
// FUSED: tensor.insert_slice %[[START]] into %{{.*}}[%{{.*}}, 0, 0] [1, 8, 32]
// FUSED: {fwp.kernel = "chunk_forward"}
// FUSED-NOT: fwp.kernel
// FUSED: return %[[KERNEL]]#0, %[[KERNEL]]#1, %[[KERNEL]]#2, %[[KERNEL]]#3
// FUSED-OUT-LABEL: func @stored_for_gradients
// FUSED-OUT: %[[WY:.*]]:2 = scf.forall
// FUSED-OUT: {fwp.kernel = "chunk_wy"}
// FUSED-OUT: %[[KERNEL:.*]]:4 = scf.forall
// FUSED-OUT: {fwp.kernel = "chunk_states_output"}
// FUSED-OUT: return %[[KERNEL]]#3, %[[WY]]#0, %[[KERNEL]]#2, %[[KERNEL]]#1
func.func @stored_for_gradients(%q: tensor<40x2x4x32xf32>,
                                %k: tensor<40x2x4x32xf32>,
                                %v: tensor<40x2x4x8xf32>,
                                %b: tensor<40x2x4xf32>)
    -> (tensor<40x2x4x8xf32>, tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>,
        tensor<2x4x3x8x32xf32>) {
  %wt, %ut = fwp.chunk_wy %k, %v, %b chunk_size = 16
      : tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>, tensor<40x2x4xf32>
      -> tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>
  %h, %u, %final = fwp.chunk_states %k, %ut wt(%wt : tensor<40x2x4x32xf32>)
      chunk_size = 16 : tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>
      -> tensor<2x4x3x8x32xf32>, tensor<40x2x4x8xf32>, tensor<2x4x8x32xf32>
  %y = fwp.chunk_output %q, %k, %u, %h chunk_size = 16
      : tensor<40x2x4x32xf32>, tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>,
        tensor<2x4x3x8x32xf32> -> tensor<40x2x4x8xf32>
  return %y, %wt, %u, %h : tensor<40x2x4x8xf32>, tensor<40x2x4x32xf32>,
      tensor<40x2x4x8xf32>, tensor<2x4x3x8x32xf32>
}

// -----

// Ut read elsewhere keeps the stages apart: the kernel never forms it
// whole.
// FUSED-LABEL: func @ut_read
// FUSED: {fwp.kernel = "chunk_wy"}
// FUSED: {fwp.kernel = "chunk_states"}
// FUSED: {fwp.kernel = "chunk_output"}
func.func @ut_read(%q: tensor<40x2x4x32xf32>, %k: tensor<40x2x4x32xf32>,
                   %v: tensor<40x2x4x8xf32>, %b: tensor<40x2x4xf32>)
    -> (tensor<40x2x4x8xf32>, tensor<40x2x4x8xf32>) {
  %wt, %ut = fwp.chunk_wy %k, %v, %b chunk_size = 16
      : tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>, tensor<40x2x4xf32>
      -> tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>
  %h, %u, %final = fwp.chunk_states %k, %ut wt(%wt : tensor<40x2x4x32xf32>)
      chunk_size = 16 : tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>
      -> tensor<2x4x3x8x32xf32>, tensor<40x2x4x8xf32>, tensor<2x4x8x32xf32>
  %y = fwp.chunk_output %q, %k, %u, %h chunk_size = 16
      : tensor<40x2x4x32xf32>, tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>,
        tensor<2x4x3x8x32xf32> -> tensor<40x2x4x8xf32>
  return %y, %ut : tensor<40x2x4x8xf32>, tensor<40x2x4x8xf32>
}

// -----

// Stages of different chunk sizes are not one chain.
// FUSED-LABEL: func @chunk_sizes_differ
// FUSED: {fwp.kernel = "chunk_wy"}
// FUSED: {fwp.kernel = "chunk_states"}
// FUSED: {fwp.kernel = "chunk_output"}
func.func @chunk_sizes_differ(%q: tensor<40x2x4x32xf32>,
                              %k: tensor<40x2x4x32xf32>,
                              %v: tensor<40x2x4x8xf32>, %b: tensor<40x2x4xf32>)
    -> tensor<40x2x4x8xf32> {
  %wt, %ut = fwp.chunk_wy %k, %v, %b chunk_size = 8
      : tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>, tensor<40x2x4xf32>
      -> tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>
  %h, %u, %final = fwp.chunk_states %k, %ut wt(%wt : tensor<40x2x4x32xf32>)
      chunk_size = 16 : tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>
      -> tensor<2x4x3x8x32xf32>, tensor<40x2x4x8xf32>, tensor<2x4x8x32xf32>
  %y = fwp.chunk_output %q, %k, %u, %h chunk_size = 16
      : tensor<40x2x4x32xf32>, tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>,
        tensor<2x4x3x8x32xf32> -> tensor<40x2x4x8xf32>
  return %y : tensor<40x2x4x8xf32>
}

// -----

func.func @dynamic_width(%q: tensor<40x2x4x?xf32>, %k: tensor<40x2x4x?xf32>,
                         %u: tensor<40x2x4x8xf32>, %h: tensor<2x4x3x8x?xf32>)
    -> tensor<40x2x4x8xf32> {
  // expected-error @+1 {{fwp-lower-chunks needs static feature and value widths}}
  %y = fwp.chunk_output %q, %k, %u, %h chunk_size = 16
      : tensor<40x2x4x?xf32>, tensor<40x2x4x?xf32>, tensor<40x2x4x8xf32>,
        tensor<2x4x3x8x?xf32> -> tensor<40x2x4x8xf32>
  return %y : tensor<40x2x4x8xf32>
}

// -----

// The state's gradient: a forall over (batch, head), in it the chunks last
// to first (chunk N - 1 - i at step i), the 8 x 32 gradient carried.
// CHECK-LABEL: func @states_grad
// CHECK: %[[CHUNKS:.*]] = arith.ceildivui
// CHECK: scf.forall (%{{.*}}, %{{.*}}) in
// CHECK: scf.for %[[I:.*]] = %{{.*}} to %[[CHUNKS]] {{.*}} -> (tensor<8x32xf32>, tensor<?x8x32xf32>, tensor<?x8xf32>)
// CHECK: %[[LAST:.*]] = arith.subi %[[CHUNKS]], %{{.*}}
// CHECK: arith.subi %[[LAST]], %[[I]]
// CHECK: scf.forall.in_parallel
// CHECK-COUNT-3: tensor.parallel_insert_slice
func.func @states_grad(%q: tensor<40x2x4x32xf32>, %k: tensor<40x2x4x32xf32>,
                       %dy: tensor<40x2x4x8xf32>, %wt: tensor<40x2x4x32xf32>)
    -> (tensor<40x2x4x8xf32>, tensor<2x4x3x8x32xf32>, tensor<2x4x8x32xf32>) {
  %du, %dh, %d0 = fwp.chunk_states_grad %q, %k, %dy
      wt(%wt : tensor<40x2x4x32xf32>) chunk_size = 16
      : tensor<40x2x4x32xf32>, tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>
      -> tensor<40x2x4x8xf32>, tensor<2x4x3x8x32xf32>, tensor<2x4x8x32xf32>
  return %du, %dh, %d0
      : tensor<40x2x4x8xf32>, tensor<2x4x3x8x32xf32>, tensor<2x4x8x32xf32>
}

// -----

// Each chunk's dQ, dK and dWt, three results of one forall.
// CHECK-LABEL: func @qk_grad
// CHECK: scf.forall (%{{.*}}, %{{.*}}, %{{.*}}) in {{.*}} -> (tensor<40x2x4x32xf32>, tensor<40x2x4x32xf32>, tensor<40x2x4x32xf32>)
// CHECK: arith.cmpi ule
// CHECK: scf.forall.in_parallel
// CHECK-COUNT-3: tensor.parallel_insert_slice
func.func @qk_grad(%q: tensor<40x2x4x32xf32>, %k: tensor<40x2x4x32xf32>,
                   %u: tensor<40x2x4x8xf32>, %h: tensor<2x4x3x8x32xf32>,
                   %dh: tensor<2x4x3x8x32xf32>, %dy: tensor<40x2x4x8xf32>,
                   %du: tensor<40x2x4x8xf32>) -> tensor<40x2x4x32xf32> {
  %dq, %dk, %dwt = fwp.chunk_qk_grad %q, %k, %u, %h, %dh, %dy, %du
      chunk_size = 16 : tensor<40x2x4x32xf32>, tensor<40x2x4x32xf32>,
      tensor<40x2x4x8xf32>, tensor<2x4x3x8x32xf32>, tensor<2x4x3x8x32xf32>,
      tensor<40x2x4x8xf32>, tensor<40x2x4x8xf32>
      -> tensor<40x2x4x32xf32>, tensor<40x2x4x32xf32>
      dwt(tensor<40x2x4x32xf32>)
  return %dwt : tensor<40x2x4x32xf32>
}

// -----

// Through the WY form: A again by substitution on the identity (16 rows),
// stril(A^T dA A^T), and the gates' gradient as row sums.
// CHECK-LABEL: func @wy_grad
// CHECK: scf.forall
// CHECK: arith.cmpi eq
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c16
// CHECK: arith.cmpi ult
// CHECK: linalg.generic {{.*}}["parallel", "reduction"]{{.*}} outs(%{{.*}} : tensor<16xf32>)
// CHECK: scf.forall.in_parallel
// CHECK-COUNT-3: tensor.parallel_insert_slice
func.func @wy_grad(%k: tensor<40x2x4x32xf32>, %v: tensor<40x2x4x8xf32>,
                   %b: tensor<40x2x4xf32>, %du: tensor<40x2x4x8xf32>,
                   %dwt: tensor<40x2x4x32xf32>) -> tensor<40x2x4xf32> {
  %dk, %dv, %db = fwp.chunk_wy_grad %k, %v, %b, %du, %dwt chunk_size = 16
      : tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>, tensor<40x2x4xf32>,
        tensor<40x2x4x8xf32>, tensor<40x2x4x32xf32>
      -> tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>, tensor<40x2x4xf32>
  return %db : tensor<40x2x4xf32>
}

// -----

// The delta rule's per-chunk gradients: a kernel each, or with
// fuse-backward one kernel over (batch, head, chunk) whose points go
// through Q and K, then the WY form, and write dQ, the summed dK, dV and
// dbeta; dWt never leaves it.
// CHECK-LABEL: func @backward_pair
// CHECK: {fwp.kernel = "chunk_qk_grad"}
// CHECK: {fwp.kernel = "chunk_wy_grad"}
// CHECK: linalg.add
// FUSED-BACK-LABEL: func @backward_pair
// FUSED-BACK-NOT: fwp.chunk_
// FUSED-BACK: %[[KERNEL:.*]]:4 = scf.forall (%{{.*}}, %{{.*}}, %{{.*}}) in {{.*}} -> (tensor<40x2x4x32xf32>, tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>, tensor<40x2x4xf32>)
// FUSED-BACK: linalg.add ins(%{{.*}}, %{{.*}} : tensor<16x32xf32>, tensor<16x32xf32>)
// FUSED-BACK: scf.forall.in_parallel
// FUSED-BACK-COUNT-4: tensor.parallel_insert_slice
// FUSED-BACK: {fwp.kernel = "chunk_qk_wy_grad"}
// FUSED-BACK-NOT: fwp.kernel
// FUSED-BACK: return %[[KERNEL]]#0, %[[KERNEL]]#1, %[[KERNEL]]#2, %[[KERNEL]]#3
func.func @backward_pair(%q: tensor<40x2x4x32xf32>, %k: tensor<40x2x4x32xf32>,
                         %v: tensor<40x2x4x8xf32>, %b: tensor<40x2x4xf32>,
                         %u: tensor<40x2x4x8xf32>, %h: tensor<2x4x3x8x32xf32>,
                         %dh: tensor<2x4x3x8x32xf32>, %dy: tensor<40x2x4x8xf32>,
                         %du: tensor<40x2x4x8xf32>)
    -> (tensor<40x2x4x32xf32>, tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>,
        tensor<40x2x4xf32>) {
  %dq, %dk1, %dwt = fwp.chunk_qk_grad %q, %k, %u, %h, %dh, %dy, %du
      chunk_size = 16 : tensor<40x2x4x32xf32>, tensor<40x2x4x32xf32>,
      tensor<40x2x4x8xf32>, tensor<2x4x3x8x32xf32>, tensor<2x4x3x8x32xf32>,
      tensor<40x2x4x8xf32>, tensor<40x2x4x8xf32>
      -> tensor<40x2x4x32xf32>, tensor<40x2x4x32xf32>
      dwt(tensor<40x2x4x32xf32>)
  %dk2, %dv, %db = fwp.chunk_wy_grad %k, %v, %b, %du, %dwt chunk_size = 16
      : tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>, tensor<40x2x4xf32>,
        tensor<40x2x4x8xf32>, tensor<40x2x4x32xf32>
      -> tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>, tensor<40x2x4xf32>
  %empty = tensor.empty() : tensor<40x2x4x32xf32>
  %dk = linalg.add ins(%dk1, %dk2 : tensor<40x2x4x32xf32>, tensor<40x2x4x32xf32>)
      outs(%empty : tensor<40x2x4x32xf32>) -> tensor<40x2x4x32xf32>
  return %dq, %dk, %dv, %db : tensor<40x2x4x32xf32>, tensor<40x2x4x32xf32>,
      tensor<40x2x4x8xf32>, tensor<40x2x4xf32>
}

// -----

// A dWt that something else reads keeps the two kernels apart.
// FUSED-BACK-LABEL: func @dwt_read
// FUSED-BACK: {fwp.kernel = "chunk_qk_grad"}
// FUSED-BACK: {fwp.kernel = "chunk_wy_grad"}
func.func @dwt_read(%q: tensor<40x2x4x32xf32>, %k: tensor<40x2x4x32xf32>,
                    %v: tensor<40x2x4x8xf32>, %b: tensor<40x2x4xf32>,
                    %u: tensor<40x2x4x8xf32>, %h: tensor<2x4x3x8x32xf32>,
                    %dh: tensor<2x4x3x8x32xf32>, %dy: tensor<40x2x4x8xf32>,
                    %du: tensor<40x2x4x8xf32>)
    -> (tensor<40x2x4x32xf32>, tensor<40x2x4x32xf32>) {
  %dq, %dk1, %dwt = fwp.chunk_qk_grad %q, %k, %u, %h, %dh, %dy, %du
      chunk_size = 16 : tensor<40x2x4x32xf32>, tensor<40x2x4x32xf32>,
      tensor<40x2x4x8xf32>, tensor<2x4x3x8x32xf32>, tensor<2x4x3x8x32xf32>,
      tensor<40x2x4x8xf32>, tensor<40x2x4x8xf32>
      -> tensor<40x2x4x32xf32>, tensor<40x2x4x32xf32>
      dwt(tensor<40x2x4x32xf32>)
  %dk2, %dv, %db = fwp.chunk_wy_grad %k, %v, %b, %du, %dwt chunk_size = 16
      : tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>, tensor<40x2x4xf32>,
        tensor<40x2x4x8xf32>, tensor<40x2x4x32xf32>
      -> tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>, tensor<40x2x4xf32>
  %empty = tensor.empty() : tensor<40x2x4x32xf32>
  %dk = linalg.add ins(%dk1, %dk2 : tensor<40x2x4x32xf32>, tensor<40x2x4x32xf32>)
      outs(%empty : tensor<40x2x4x32xf32>) -> tensor<40x2x4x32xf32>
  return %dk, %dwt : tensor<40x2x4x32xf32>, tensor<40x2x4x32xf32>
}

// -----

// With the states' gradient feeding the pair alone, the three are one
// kernel over (batch, head) whose loop runs over the chunks last to first,
// carrying dQ, dK, dV and dbeta's rows and the 8 x 32 state gradient; dU
// and the per-chunk dS are never stored, and the initial state's gradient
// is its fifth result.
// FUSED-BACK-LABEL: func @backward_with_states
// With fuse-gradients (the GPU's choice) the states' gradient stays a
// kernel over (batch, head, value block) and the pair is one over (batch,
// head, chunk).
// FUSED-GRADS-LABEL: func @backward_with_states
// FUSED-GRADS-NOT: fwp.chunk_
// FUSED-GRADS-DAG: {fwp.kernel = "chunk_states_grad"}
// FUSED-GRADS-DAG: {fwp.kernel = "chunk_qk_wy_grad"}
// FUSED-GRADS: return
// FUSED-BACK-NOT: fwp.chunk_
// FUSED-BACK: %[[KERNEL:.*]]:5 = scf.forall (%{{.*}}, %{{.*}}) in
// FUSED-BACK: scf.for {{.*}} -> (tensor<?x32xf32>, tensor<?x32xf32>, tensor<?x8xf32>, tensor<?xf32>, tensor<8x32xf32>)
// FUSED-BACK: {fwp.kernel = "chunk_backward"}
// FUSED-BACK-NOT: fwp.kernel
// FUSED-BACK: return %[[KERNEL]]#0, %[[KERNEL]]#1, %[[KERNEL]]#2, %[[KERNEL]]#3, %[[KERNEL]]#4
func.func @backward_with_states(%q: tensor<40x2x4x32xf32>,
                                %k: tensor<40x2x4x32xf32>,
                                %v: tensor<40x2x4x8xf32>,
                                %b: tensor<40x2x4xf32>,
                                %wt: tensor<40x2x4x32xf32>,
                                %u: tensor<40x2x4x8xf32>,
                                %h: tensor<2x4x3x8x32xf32>,
                                %dy: tensor<40x2x4x8xf32>)
    -> (tensor<40x2x4x32xf32>, tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>,
        tensor<40x2x4xf32>, tensor<2x4x8x32xf32>) {
  %du, %dh, %d0 = fwp.chunk_states_grad %q, %k, %dy
      wt(%wt : tensor<40x2x4x32xf32>) chunk_size = 16
      : tensor<40x2x4x32xf32>, tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>
      -> tensor<40x2x4x8xf32>, tensor<2x4x3x8x32xf32>, tensor<2x4x8x32xf32>
  %dq, %dk1, %dwt = fwp.chunk_qk_grad %q, %k, %u, %h, %dh, %dy, %du
      chunk_size = 16 : tensor<40x2x4x32xf32>, tensor<40x2x4x32xf32>,
      tensor<40x2x4x8xf32>, tensor<2x4x3x8x32xf32>, tensor<2x4x3x8x32xf32>,
      tensor<40x2x4x8xf32>, tensor<40x2x4x8xf32>
      -> tensor<40x2x4x32xf32>, tensor<40x2x4x32xf32>
      dwt(tensor<40x2x4x32xf32>)
  %dk2, %dv, %db = fwp.chunk_wy_grad %k, %v, %b, %du, %dwt chunk_size = 16
      : tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>, tensor<40x2x4xf32>,
        tensor<40x2x4x8xf32>, tensor<40x2x4x32xf32>
      -> tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>, tensor<40x2x4xf32>
  %empty = tensor.empty() : tensor<40x2x4x32xf32>
  %dk = linalg.add ins(%dk1, %dk2 : tensor<40x2x4x32xf32>, tensor<40x2x4x32xf32>)
      outs(%empty : tensor<40x2x4x32xf32>) -> tensor<40x2x4x32xf32>
  return %dq, %dk, %dv, %db, %d0 : tensor<40x2x4x32xf32>,
      tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>, tensor<40x2x4xf32>,
      tensor<2x4x8x32xf32>
}

// -----

// Feature gradients that only a fwp.dpfp_grad reads go back through the map
// in the kernel, a chunk's rows at a time: it stores dQ and dK of the map's
// 8-wide inputs, not of the 32-wide features.
// FUSED-BACK-LABEL: func @backward_through_maps
// FUSED-BACK-NOT: fwp.dpfp_grad %arg
// FUSED-BACK: %[[KERNEL:.*]]:5 = scf.forall {{.*}} -> (tensor<40x2x4x8xf32>, tensor<40x2x4x8xf32>,
// FUSED-BACK: scf.for {{.*}} -> (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?xf32>, tensor<8x32xf32>)
// FUSED-BACK-COUNT-2: fwp.dpfp_grad %{{.*}}, %{{.*}} nu = 2 : tensor<16x8xf32>, tensor<16x32xf32> -> tensor<16x8xf32>
// FUSED-BACK: {fwp.kernel = "chunk_backward"}
// FUSED-BACK-NOT: fwp.dpfp_grad
// FUSED-BACK: return %[[KERNEL]]#0, %[[KERNEL]]#1
func.func @backward_through_maps(%x_q: tensor<40x2x4x8xf32>,
                                 %x_k: tensor<40x2x4x8xf32>,
                                 %q: tensor<40x2x4x32xf32>,
                                 %k: tensor<40x2x4x32xf32>,
                                 %v: tensor<40x2x4x8xf32>,
                                 %b: tensor<40x2x4xf32>,
                                 %wt: tensor<40x2x4x32xf32>,
                                 %u: tensor<40x2x4x8xf32>,
                                 %h: tensor<2x4x3x8x32xf32>,
                                 %dy: tensor<40x2x4x8xf32>)
    -> (tensor<40x2x4x8xf32>, tensor<40x2x4x8xf32>) {
  %du, %dh, %d0 = fwp.chunk_states_grad %q, %k, %dy
      wt(%wt : tensor<40x2x4x32xf32>) chunk_size = 16
      : tensor<40x2x4x32xf32>, tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>
      -> tensor<40x2x4x8xf32>, tensor<2x4x3x8x32xf32>, tensor<2x4x8x32xf32>
  %dq, %dk1, %dwt = fwp.chunk_qk_grad %q, %k, %u, %h, %dh, %dy, %du
      chunk_size = 16 : tensor<40x2x4x32xf32>, tensor<40x2x4x32xf32>,
      tensor<40x2x4x8xf32>, tensor<2x4x3x8x32xf32>, tensor<2x4x3x8x32xf32>,
      tensor<40x2x4x8xf32>, tensor<40x2x4x8xf32>
      -> tensor<40x2x4x32xf32>, tensor<40x2x4x32xf32>
      dwt(tensor<40x2x4x32xf32>)
  %dk2, %dv, %db = fwp.chunk_wy_grad %k, %v, %b, %du, %dwt chunk_size = 16
      : tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>, tensor<40x2x4xf32>,
        tensor<40x2x4x8xf32>, tensor<40x2x4x32xf32>
      -> tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>, tensor<40x2x4xf32>
  %empty = tensor.empty() : tensor<40x2x4x32xf32>
  %dk = linalg.add ins(%dk1, %dk2 : tensor<40x2x4x32xf32>, tensor<40x2x4x32xf32>)
      outs(%empty : tensor<40x2x4x32xf32>) -> tensor<40x2x4x32xf32>
  %dxq = fwp.dpfp_grad %x_q, %dq nu = 2
      : tensor<40x2x4x8xf32>, tensor<40x2x4x32xf32> -> tensor<40x2x4x8xf32>
  %dxk = fwp.dpfp_grad %x_k, %dk nu = 2
      : tensor<40x2x4x8xf32>, tensor<40x2x4x32xf32> -> tensor<40x2x4x8xf32>
  return %dxq, %dxk : tensor<40x2x4x8xf32>, tensor<40x2x4x8xf32>
}

// -----

// dU read elsewhere keeps the states' gradient a kernel of its own.
// FUSED-BACK-LABEL: func @du_read
// FUSED-BACK: {fwp.kernel = "chunk_states_grad"}
// FUSED-BACK: {fwp.kernel = "chunk_qk_wy_grad"}
func.func @du_read(%q: tensor<40x2x4x32xf32>, %k: tensor<40x2x4x32xf32>,
                   %v: tensor<40x2x4x8xf32>, %b: tensor<40x2x4xf32>,
                   %wt: tensor<40x2x4x32xf32>, %u: tensor<40x2x4x8xf32>,
                   %h: tensor<2x4x3x8x32xf32>, %dy: tensor<40x2x4x8xf32>)
    -> (tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>) {
  %du, %dh, %d0 = fwp.chunk_states_grad %q, %k, %dy
      wt(%wt : tensor<40x2x4x32xf32>) chunk_size = 16
      : tensor<40x2x4x32xf32>, tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>
      -> tensor<40x2x4x8xf32>, tensor<2x4x3x8x32xf32>, tensor<2x4x8x32xf32>
  %dq, %dk1, %dwt = fwp.chunk_qk_grad %q, %k, %u, %h, %dh, %dy, %du
      chunk_size = 16 : tensor<40x2x4x32xf32>, tensor<40x2x4x32xf32>,
      tensor<40x2x4x8xf32>, tensor<2x4x3x8x32xf32>, tensor<2x4x3x8x32xf32>,
      tensor<40x2x4x8xf32>, tensor<40x2x4x8xf32>
      -> tensor<40x2x4x32xf32>, tensor<40x2x4x32xf32>
      dwt(tensor<40x2x4x32xf32>)
  %dk2, %dv, %db = fwp.chunk_wy_grad %k, %v, %b, %du, %dwt chunk_size = 16
      : tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>, tensor<40x2x4xf32>,
        tensor<40x2x4x8xf32>, tensor<40x2x4x32xf32>
      -> tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>, tensor<40x2x4xf32>
  %empty = tensor.empty() : tensor<40x2x4x32xf32>
  %dk = linalg.add ins(%dk1, %dk2 : tensor<40x2x4x32xf32>, tensor<40x2x4x32xf32>)
      outs(%empty : tensor<40x2x4x32xf32>) -> tensor<40x2x4x32xf32>
  return %dk, %du : tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>
}

// With map-kernels, a map's gradient and a map whose features something
// else reads become kernels over (batch, head, 64 rows), the op on a block's
// rows inside; without it they stay as they are.
// CHECK-LABEL: func @maps_outside_kernels
// CHECK: fwp.dpfp_grad %{{.*}} : tensor<?x2x4x8xf32>
// MAPS-LABEL: func @maps_outside_kernels
// MAPS: scf.forall
// MAPS: fwp.dpfp_grad %{{.*}}, %{{.*}} nu = 2 : tensor<64x8xf32>, tensor<64x32xf32> -> tensor<64x8xf32>
// MAPS: {fwp.kernel = "dpfp_grad"}
// MAPS: scf.forall
// MAPS: fwp.dpfp %{{.*}} nu = 2 : tensor<64x8xf32> -> tensor<64x32xf32>
// MAPS: {fwp.kernel = "dpfp"}
// On the GPU, as many rows (a power of two) as a block's tiles fit in the
// configuration's local_bytes (34 KiB): 32 rows of 8 inputs, 32 features.
// GPU-MAPS-LABEL: func @maps_outside_kernels
// GPU-MAPS: fwp.dpfp_grad %{{.*}}, %{{.*}} nu = 2 : tensor<32x8xf32>, tensor<32x32xf32> -> tensor<32x8xf32>
// GPU-MAPS: {fwp.kernel = "dpfp_grad", mapping = [#gpu.block<x>, #gpu.block<y>, #gpu.block<z>]}
// GPU-MAPS: fwp.dpfp %{{.*}} nu = 2 : tensor<32x8xf32> -> tensor<32x32xf32>
func.func @maps_outside_kernels(%k: tensor<?x2x4x8xf32>,
                                %g: tensor<?x2x4x32xf32>)
    -> (tensor<?x2x4x8xf32>, tensor<?x2x4x32xf32>) {
  %dk = fwp.dpfp_grad %k, %g nu = 2
      : tensor<?x2x4x8xf32>, tensor<?x2x4x32xf32> -> tensor<?x2x4x8xf32>
  %f = fwp.dpfp %k nu = 2 : tensor<?x2x4x8xf32> -> tensor<?x2x4x32xf32>
  return %dk, %f : tensor<?x2x4x8xf32>, tensor<?x2x4x32xf32>
}

// -----

// The sum rule's states' gradient and chunk_qk_grad are one kernel too,
// which stores dU: the value gradient (sized from dY, not from the dU it
// replaces).
// FUSED-BACK-LABEL: func @sum_rule_backward
// FUSED-BACK: %[[KERNEL:.*]]:4 = scf.forall (%{{.*}}, %{{.*}}) in
// FUSED-BACK: scf.for {{.*}} -> (tensor<?x32xf32>, tensor<?x32xf32>, tensor<?x8xf32>, tensor<8x32xf32>)
// FUSED-BACK: {fwp.kernel = "chunk_backward"}
// FUSED-BACK-NOT: fwp.kernel
// FUSED-BACK: return %[[KERNEL]]#0, %[[KERNEL]]#1, %[[KERNEL]]#2, %[[KERNEL]]#3
func.func @sum_rule_backward(%q: tensor<?x2x4x32xf32>,
                             %k: tensor<?x2x4x32xf32>,
                             %u: tensor<?x2x4x8xf32>,
                             %h: tensor<2x4x3x8x32xf32>,
                             %dy: tensor<?x2x4x8xf32>,
                             %ds: tensor<2x4x8x32xf32>)
    -> (tensor<?x2x4x32xf32>, tensor<?x2x4x32xf32>, tensor<?x2x4x8xf32>,
        tensor<2x4x8x32xf32>) {
  %du, %dh, %d0 = fwp.chunk_states_grad %q, %k, %dy
      d_final(%ds : tensor<2x4x8x32xf32>) chunk_size = 16
      : tensor<?x2x4x32xf32>, tensor<?x2x4x32xf32>, tensor<?x2x4x8xf32>
      -> tensor<?x2x4x8xf32>, tensor<2x4x3x8x32xf32>, tensor<2x4x8x32xf32>
  %dq, %dk = fwp.chunk_qk_grad %q, %k, %u, %h, %dh, %dy, %du chunk_size = 16
      : tensor<?x2x4x32xf32>, tensor<?x2x4x32xf32>, tensor<?x2x4x8xf32>,
        tensor<2x4x3x8x32xf32>, tensor<2x4x3x8x32xf32>, tensor<?x2x4x8xf32>,
        tensor<?x2x4x8xf32>
      -> tensor<?x2x4x32xf32>, tensor<?x2x4x32xf32>
  return %dq, %dk, %du, %d0 : tensor<?x2x4x32xf32>, tensor<?x2x4x32xf32>,
      tensor<?x2x4x8xf32>, tensor<2x4x8x32xf32>
}
