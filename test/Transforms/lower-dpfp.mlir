// RUN: fwp-opt %s -fwp-lower-dpfp -split-input-file -verify-diagnostics | FileCheck %s
// A GPU configuration's kernels map by the gathering form: one pass of the
// block's threads over the features, not one per column range.
// RUN: fwp-opt %s -fwp-configure-kernels=target=gpu -fwp-lower-dpfp -split-input-file -verify-diagnostics | FileCheck %s --check-prefix=GPU

// A DPFP map outside a scan: the products (each gathering x[j] and
// x[(j - i) mod 2d] of relu([k, -k])), their sum per vector, and
// phi / (sum + eps).
// CHECK-LABEL: func @dpfp
// CHECK: %[[PHI:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<?x12xf32>)
// CHECK:   tensor.extract %{{.*}} : tensor<?x3xf32>
// CHECK:   arith.mulf
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[PHI]] : tensor<?x12xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[PHI]], %[[SUM]] : tensor<?x12xf32>, tensor<?xf32>)
// CHECK:   arith.divf
// CHECK-NOT: fwp.dpfp
func.func @dpfp(%k: tensor<?x3xf32>) -> tensor<?x12xf32> {
  %f = fwp.dpfp %k nu = 2 : tensor<?x3xf32> -> tensor<?x12xf32>
  return %f : tensor<?x12xf32>
}

// -----

// A map of 16-bit vectors to f32 features outside the chunk operations'
// kernels: on the vectors extended to f32.
// CHECK-LABEL: func @dpfp_of_bf16
// CHECK: %[[X:.*]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<?x3xbf16>) outs(%{{.*}} : tensor<?x3xf32>)
// CHECK:   arith.extf
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<?x12xf32>)
// CHECK-NOT: fwp.dpfp
func.func @dpfp_of_bf16(%k: tensor<?x3xbf16>) -> tensor<?x12xf32> {
  %f = fwp.dpfp %k nu = 2 : tensor<?x3xbf16> -> tensor<?x12xf32>
  return %f : tensor<?x12xf32>
}

// -----

// Inside a kernel (a chunk's rows, where fwp-lower-chunks fused the map),
// the products are elementwise products of column ranges of
// x = relu([k, -k]), which the kernels' vectorizer takes: for shift i,
// x[:, i:] * x[:, :2d-i] into columns i.. and x[:, :i] * x[:, 2d-i:] into
// columns 0.. of the shift's 2d.
// CHECK-LABEL: func @dpfp_in_kernel
// GPU-LABEL: func @dpfp_in_kernel
// GPU: linalg.generic {{.*}} outs(%{{.*}} : tensor<16x12xf32>)
// GPU:   tensor.extract %{{.*}} : tensor<16x3xf32>
// GPU:   arith.mulf
// GPU-NOT: tensor.insert_slice
// GPU: arith.divf
// GPU: {fwp.kernel = "chunk_forward"}
// CHECK-NOT: tensor.extract %
// CHECK: %[[X:.*]] = tensor.insert_slice %{{.*}} into %{{.*}}[0, 3] [16, 3] [1, 1] : tensor<16x3xf32> into tensor<16x6xf32>
// CHECK: %[[RIGHT:.*]] = tensor.extract_slice %[[X]][0, 1] [16, 5] [1, 1]
// CHECK: %[[LEFT:.*]] = tensor.extract_slice %[[X]][0, 0] [16, 5] [1, 1]
// CHECK: %[[SHIFTED:.*]] = linalg.generic {{.*}} ins(%[[RIGHT]], %[[LEFT]] : tensor<16x5xf32>, tensor<16x5xf32>)
// CHECK:   arith.mulf
// CHECK: tensor.insert_slice %[[SHIFTED]] into %{{.*}}[0, 1] [16, 5] [1, 1] : tensor<16x5xf32> into tensor<16x12xf32>
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[0, 0] [16, 1] [1, 1] : tensor<16x1xf32> into tensor<16x12xf32>
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[0, 8] [16, 4] [1, 1] : tensor<16x4xf32> into tensor<16x12xf32>
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[0, 6] [16, 2] [1, 1] : tensor<16x2xf32> into tensor<16x12xf32>
// CHECK: arith.divf
// CHECK: {fwp.kernel = "chunk_forward"}
func.func @dpfp_in_kernel(%k: tensor<4x16x3xf32>, %out: tensor<4x16x12xf32>)
    -> tensor<4x16x12xf32> {
  %r = scf.forall (%i) in (4) shared_outs(%o = %out) -> tensor<4x16x12xf32> {
    %rows = tensor.extract_slice %k[%i, 0, 0] [1, 16, 3] [1, 1, 1]
        : tensor<4x16x3xf32> to tensor<16x3xf32>
    %f = fwp.dpfp %rows nu = 2 : tensor<16x3xf32> -> tensor<16x12xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %f into %o[%i, 0, 0] [1, 16, 12] [1, 1, 1]
          : tensor<16x12xf32> into tensor<4x16x12xf32>
    }
  } {fwp.kernel = "chunk_forward"}
  return %r : tensor<4x16x12xf32>
}

// -----

func.func @dynamic_vector(%k: tensor<4x?xf32>) -> tensor<4x?xf32> {
  // expected-error @+1 {{cannot be lowered: the vector size must be static}}
  %f = fwp.dpfp %k : tensor<4x?xf32> -> tensor<4x?xf32>
  return %f : tensor<4x?xf32>
}

// -----

// DPFP's gradient: phi again, its sum and its dot product with g, dL/dphi,
// dL/dx summed over the nu = 2 shifts (dphi read as [rows, nu, 2d]), and
// dL/dk from the two halves of dL/dx.
// CHECK-LABEL: func @dpfp_grad
// CHECK: %[[PHI:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<?x12xf32>)
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}}["parallel", "reduction"]} ins(%[[PHI]] : tensor<?x12xf32>)
// CHECK: %[[DOT:.*]] = linalg.generic {{.*}}["parallel", "reduction"]} ins(%{{.*}}, %[[PHI]] : tensor<?x12xf32>, tensor<?x12xf32>)
// CHECK: %[[DPHI:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %[[PHI]], %[[SUM]], %[[DOT]] :
// CHECK: %[[SHIFTS:.*]] = tensor.expand_shape %[[DPHI]] {{\[\[}}0], [1, 2]] {{.*}} : tensor<?x12xf32> into tensor<?x2x6xf32>
// CHECK: %[[DX:.*]] = linalg.generic {{.*}}["parallel", "parallel", "reduction"]} ins(%[[SHIFTS]] : tensor<?x2x6xf32>) outs(%{{.*}} : tensor<?x6xf32>)
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<?x3xf32>)
// CHECK:   tensor.extract %[[DX]]
// CHECK-NOT: fwp.dpfp_grad
func.func @dpfp_grad(%k: tensor<?x3xf32>, %g: tensor<?x12xf32>)
    -> tensor<?x3xf32> {
  %dk = fwp.dpfp_grad %k, %g nu = 2 : tensor<?x3xf32>, tensor<?x12xf32> -> tensor<?x3xf32>
  return %dk : tensor<?x3xf32>
}

// -----

func.func @dpfp_grad_dynamic(%k: tensor<4x?xf32>, %g: tensor<4x?xf32>) {
  // expected-error @+1 {{cannot be lowered: the vector size must be static}}
  %dk = fwp.dpfp_grad %k, %g : tensor<4x?xf32>, tensor<4x?xf32> -> tensor<4x?xf32>
  return
}

// -----

// The gradient inside a kernel: phi by column ranges, and dL/dx as sums of
// products of column ranges of dL/dphi and x, accumulated into dx's own
// columns (for shift 1 of d = 3: columns 1.. and 0 of dx, then 0.. and 5),
// then through the relus: no gathers.
// CHECK-LABEL: func @dpfp_grad_in_kernel
// CHECK-NOT: tensor.extract %
// CHECK: %[[DX:.*]] = linalg.fill {{.*}} -> tensor<16x6xf32>
// CHECK: %[[COLS:.*]] = tensor.extract_slice %[[DX]][0, 1] [16, 5] [1, 1]
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} outs(%[[COLS]] : tensor<16x5xf32>)
// CHECK:   arith.mulf
// CHECK:   arith.addf
// CHECK: tensor.insert_slice %[[SUM]] into %[[DX]][0, 1] [16, 5] [1, 1]
// CHECK: arith.cmpf olt
// CHECK-NOT: tensor.extract %
// CHECK: {fwp.kernel = "dpfp_grad"}
func.func @dpfp_grad_in_kernel(%k: tensor<4x16x3xf32>,
                               %g: tensor<4x16x12xf32>,
                               %out: tensor<4x16x3xf32>)
    -> tensor<4x16x3xf32> {
  %r = scf.forall (%i) in (4) shared_outs(%o = %out) -> tensor<4x16x3xf32> {
    %rows = tensor.extract_slice %k[%i, 0, 0] [1, 16, 3] [1, 1, 1]
        : tensor<4x16x3xf32> to tensor<16x3xf32>
    %grads = tensor.extract_slice %g[%i, 0, 0] [1, 16, 12] [1, 1, 1]
        : tensor<4x16x12xf32> to tensor<16x12xf32>
    %dk = fwp.dpfp_grad %rows, %grads nu = 2
        : tensor<16x3xf32>, tensor<16x12xf32> -> tensor<16x3xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %dk into %o[%i, 0, 0] [1, 16, 3] [1, 1, 1]
          : tensor<16x3xf32> into tensor<4x16x3xf32>
    }
  } {fwp.kernel = "dpfp_grad"}
  return %r : tensor<4x16x3xf32>
}
