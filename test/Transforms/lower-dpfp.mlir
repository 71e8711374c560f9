// RUN: fwp-opt %s -fwp-lower-dpfp -split-input-file -verify-diagnostics | FileCheck %s

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
