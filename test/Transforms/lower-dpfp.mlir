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
