// RUN: fwp-opt %s -fwp-lower-gate -split-input-file | FileCheck %s

// z = x W_beta^T accumulated from zero, then sigmoid(z) = 1 / (1 + exp(-z))
// in place.

// CHECK-DAG: #[[X:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-DAG: #[[W:.*]] = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
// CHECK-DAG: #[[Z:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-LABEL: func @gate_dynamic_seq
// CHECK-SAME: (%[[XV:.*]]: tensor<?x2x32xf32>, %[[WV:.*]]: tensor<4x32xf32>)
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK: %[[T:.*]] = tensor.dim %[[XV]], %[[C0]] : tensor<?x2x32xf32>
// CHECK: %[[EMPTY:.*]] = tensor.empty(%[[T]]) : tensor<?x2x4xf32>
// CHECK: %[[ACC:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[EMPTY]] : tensor<?x2x4xf32>)
// CHECK: %[[LOGITS:.*]] = linalg.generic {indexing_maps = [#[[X]], #[[W]], #[[Z]]], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[XV]], %[[WV]] : tensor<?x2x32xf32>, tensor<4x32xf32>) outs(%[[ACC]] : tensor<?x2x4xf32>)
// CHECK: ^bb0(%[[A:.*]]: f32, %[[B:.*]]: f32, %[[OUT:.*]]: f32):
// CHECK: %[[P:.*]] = arith.mulf %[[A]], %[[B]] fastmath<reassoc,contract> : f32
// CHECK: %[[S:.*]] = arith.addf %[[OUT]], %[[P]] fastmath<reassoc,contract> : f32
// CHECK: linalg.yield %[[S]] : f32
// CHECK: %[[BETA:.*]] = linalg.generic {indexing_maps = [#[[ID]]], iterator_types = ["parallel", "parallel", "parallel"]} outs(%[[LOGITS]] : tensor<?x2x4xf32>)
// CHECK: ^bb0(%[[L:.*]]: f32):
// CHECK: %[[NEG:.*]] = arith.negf %[[L]] : f32
// CHECK: %[[E:.*]] = math.exp %[[NEG]] : f32
// CHECK: %[[DEN:.*]] = arith.addf %[[ONE]], %[[E]] : f32
// CHECK: %[[SIG:.*]] = arith.divf %[[ONE]], %[[DEN]] : f32
// CHECK: linalg.yield %[[SIG]] : f32
// CHECK: return %[[BETA]] : tensor<?x2x4xf32>
// CHECK-NOT: fwp.gate
func.func @gate_dynamic_seq(%x: tensor<?x2x32xf32>, %w: tensor<4x32xf32>)
    -> tensor<?x2x4xf32> {
  %b = fwp.gate %x, %w : tensor<?x2x32xf32>, tensor<4x32xf32> -> tensor<?x2x4xf32>
  return %b : tensor<?x2x4xf32>
}

// -----

// Static f64: no tensor.dim, and the element type is kept throughout.

// CHECK-LABEL: func @gate_static_f64
// CHECK-NOT: tensor.dim
// CHECK: tensor.empty() : tensor<5x1x3xf64>
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<5x1x3xf64>)
// CHECK: math.exp %{{.*}} : f64
// CHECK: return %{{.*}} : tensor<5x1x3xf64>
func.func @gate_static_f64(%x: tensor<5x1x8xf64>, %w: tensor<3x8xf64>)
    -> tensor<5x1x3xf64> {
  %b = fwp.gate %x, %w : tensor<5x1x8xf64>, tensor<3x8xf64> -> tensor<5x1x3xf64>
  return %b : tensor<5x1x3xf64>
}

// -----

// The result type knows sizes the operands leave open: sizes come from x
// and w_beta, and a cast gives the op's result type.

// CHECK-LABEL: func @gate_cast
// CHECK-SAME: (%[[XV:.*]]: tensor<?x2x32xf32>, %[[WV:.*]]: tensor<?x32xf32>)
// CHECK-DAG: %[[T:.*]] = tensor.dim %[[XV]], %{{.*}} : tensor<?x2x32xf32>
// CHECK-DAG: %[[H:.*]] = tensor.dim %[[WV]], %{{.*}} : tensor<?x32xf32>
// CHECK: tensor.empty(%[[T]], %[[H]]) : tensor<?x2x?xf32>
// CHECK: %[[LOGITS:.*]] = linalg.generic {{.*}} ins(%[[XV]], %[[WV]] :
// CHECK: %[[BETA:.*]] = linalg.generic {{.*}} outs(%[[LOGITS]] : tensor<?x2x?xf32>)
// CHECK: math.exp
// CHECK: %[[CAST:.*]] = tensor.cast %[[BETA]] : tensor<?x2x?xf32> to tensor<16x2x4xf32>
// CHECK: return %[[CAST]]
func.func @gate_cast(%x: tensor<?x2x32xf32>, %w: tensor<?x32xf32>)
    -> tensor<16x2x4xf32> {
  %b = fwp.gate %x, %w : tensor<?x2x32xf32>, tensor<?x32xf32> -> tensor<16x2x4xf32>
  return %b : tensor<16x2x4xf32>
}
