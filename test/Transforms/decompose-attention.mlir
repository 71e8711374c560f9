// RUN: fwp-opt %s -fwp-decompose-attention -split-input-file -verify-diagnostics | FileCheck %s

// Static shapes, delta rule: three projections split into heads, DPFP on q
// and k, the gate, the scan, heads merged and the output layer accumulated
// onto the broadcast bias. Each projection accumulates from zeros of its
// own (one shared init would be copied by bufferization).

// CHECK-DAG: #[[X:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-DAG: #[[W:.*]] = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
// CHECK-DAG: #[[Y:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-DAG: #[[BIAS:.*]] = affine_map<(d0, d1, d2) -> (d2)>
// CHECK-LABEL: func @delta_static
// CHECK-SAME: (%[[XV:.*]]: tensor<16x2x32xf32>, %[[WQ:.*]]: tensor<32x32xf32>, %[[WK:.*]]: tensor<32x32xf32>, %[[WV:.*]]: tensor<32x32xf32>, %[[WB:.*]]: tensor<4x32xf32>, %[[WO:.*]]: tensor<32x32xf32>, %[[BO:.*]]: tensor<32xf32>)
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[EMPTY:.*]] = tensor.empty() : tensor<16x2x32xf32>
// CHECK: %[[ACC:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[EMPTY]] : tensor<16x2x32xf32>)
// CHECK: %[[Q:.*]] = linalg.generic {indexing_maps = [#[[X]], #[[W]], #[[Y]]], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[XV]], %[[WQ]] : {{.*}}) outs(%[[ACC]] : tensor<16x2x32xf32>)
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: %[[QH:.*]] = tensor.expand_shape %[[Q]] {{\[}}[0], [1], [2, 3]] output_shape [16, 2, 4, 8] : tensor<16x2x32xf32> into tensor<16x2x4x8xf32>
// CHECK: %[[ACCK:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%{{.*}} : tensor<16x2x32xf32>)
// CHECK: %[[K:.*]] = linalg.generic {{.*}} ins(%[[XV]], %[[WK]] : {{.*}}) outs(%[[ACCK]] :
// CHECK: %[[KH:.*]] = tensor.expand_shape %[[K]]
// CHECK: %[[ACCV:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%{{.*}} : tensor<16x2x32xf32>)
// CHECK: %[[V:.*]] = linalg.generic {{.*}} ins(%[[XV]], %[[WV]] : {{.*}}) outs(%[[ACCV]] :
// CHECK: %[[VH:.*]] = tensor.expand_shape %[[V]]
// CHECK: %[[FQ:.*]] = fwp.dpfp %[[QH]] nu = 2 : tensor<16x2x4x8xf32> -> tensor<16x2x4x32xf32>
// CHECK: %[[FK:.*]] = fwp.dpfp %[[KH]] nu = 2 : tensor<16x2x4x8xf32> -> tensor<16x2x4x32xf32>
// CHECK: %[[BETA:.*]] = fwp.gate %[[XV]], %[[WB]] : tensor<16x2x32xf32>, tensor<4x32xf32> -> tensor<16x2x4xf32>
// CHECK: %[[O:.*]] = fwp.scan delta %[[FQ]], %[[FK]], %[[VH]] beta(%[[BETA]] : tensor<16x2x4xf32>) : {{.*}} -> tensor<16x2x4x8xf32>
// CHECK: %[[OM:.*]] = tensor.collapse_shape %[[O]] {{\[}}[0], [1], [2, 3]] : tensor<16x2x4x8xf32> into tensor<16x2x32xf32>
// CHECK: %[[BEMPTY:.*]] = tensor.empty() : tensor<16x2x32xf32>
// CHECK: %[[B:.*]] = linalg.generic {indexing_maps = [#[[BIAS]], #{{.*}}], iterator_types = ["parallel", "parallel", "parallel"]} ins(%[[BO]] : tensor<32xf32>) outs(%[[BEMPTY]] : tensor<16x2x32xf32>)
// CHECK: %[[OUT:.*]] = linalg.generic {indexing_maps = [#[[X]], #[[W]], #[[Y]]], {{.*}} ins(%[[OM]], %[[WO]] : {{.*}}) outs(%[[B]] : tensor<16x2x32xf32>)
// CHECK: return %[[OUT]] : tensor<16x2x32xf32>
// CHECK-NOT: fwp.attention
func.func @delta_static(%x: tensor<16x2x32xf32>, %wq: tensor<32x32xf32>,
                        %wk: tensor<32x32xf32>, %wv: tensor<32x32xf32>,
                        %wb: tensor<4x32xf32>, %wo: tensor<32x32xf32>,
                        %bo: tensor<32xf32>) -> tensor<16x2x32xf32> {
  %y = fwp.attention %x, %wq, %wk, %wv, %wb, %wo, %bo heads = 4 nu = 2
      : (tensor<16x2x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>,
         tensor<32x32xf32>, tensor<4x32xf32>, tensor<32x32xf32>,
         tensor<32xf32>) -> tensor<16x2x32xf32>
  return %y : tensor<16x2x32xf32>
}

// -----

// Dynamic sequence and batch, sum rule, f64: sizes come from tensor.dim of
// x, and there is no gate and no beta.

// CHECK-LABEL: func @sum_dynamic
// CHECK-SAME: (%[[XV:.*]]: tensor<?x?x32xf64>
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG: %[[T:.*]] = tensor.dim %[[XV]], %[[C0]] : tensor<?x?x32xf64>
// CHECK-DAG: %[[B:.*]] = tensor.dim %[[XV]], %[[C1]] : tensor<?x?x32xf64>
// CHECK: tensor.empty(%[[T]], %[[B]]) : tensor<?x?x32xf64>
// CHECK: tensor.expand_shape {{.*}} output_shape [%[[T]], %[[B]], 2, 16] : tensor<?x?x32xf64> into tensor<?x?x2x16xf64>
// CHECK: %[[FQ:.*]] = fwp.dpfp {{.*}} eps = 1.000000e-05 : tensor<?x?x2x16xf64> -> tensor<?x?x2x32xf64>
// CHECK: %[[FK:.*]] = fwp.dpfp {{.*}} eps = 1.000000e-05 : tensor<?x?x2x16xf64> -> tensor<?x?x2x32xf64>
// CHECK-NOT: fwp.gate
// CHECK: %[[O:.*]] = fwp.scan sum %[[FQ]], %[[FK]], %{{[^ ]*}} : tensor<?x?x2x32xf64>, tensor<?x?x2x32xf64>, tensor<?x?x2x16xf64> -> tensor<?x?x2x16xf64>
// CHECK: %[[OM:.*]] = tensor.collapse_shape %[[O]] {{\[}}[0], [1], [2, 3]] : tensor<?x?x2x16xf64> into tensor<?x?x32xf64>
// CHECK: tensor.empty(%[[T]], %[[B]]) : tensor<?x?x32xf64>
// CHECK: %[[OUT:.*]] = linalg.generic {{.*}} ins(%[[OM]], %{{.*}}) outs(%{{.*}} : tensor<?x?x32xf64>)
// CHECK-NOT: tensor.cast
// CHECK: return %[[OUT]] : tensor<?x?x32xf64>
func.func @sum_dynamic(%x: tensor<?x?x32xf64>, %w: tensor<32x32xf64>,
                       %wb: tensor<2x32xf64>, %bo: tensor<32xf64>)
    -> tensor<?x?x32xf64> {
  %y = fwp.attention %x, %w, %w, %w, %wb, %w, %bo heads = 2 eps = 1.0e-5
      rule = sum
      : (tensor<?x?x32xf64>, tensor<32x32xf64>, tensor<32x32xf64>,
         tensor<32x32xf64>, tensor<2x32xf64>, tensor<32x32xf64>,
         tensor<32xf64>) -> tensor<?x?x32xf64>
  return %y : tensor<?x?x32xf64>
}

// -----

// d_model is known only from the weights, the result only from the batch
// size: the pieces use x's shape, and a cast gives the op's result type.

// CHECK-LABEL: func @mixed_static_dynamic
// CHECK: fwp.gate {{.*}} : tensor<?x?x?xf32>, tensor<1x8xf32> -> tensor<?x?x1xf32>
// CHECK: fwp.scan delta {{.*}} : tensor<?x?x1x16xf32>, tensor<?x?x1x16xf32>, tensor<?x?x1x8xf32> -> tensor<?x?x1x8xf32>
// CHECK: %[[OM:.*]] = tensor.collapse_shape
// CHECK: %[[OUT:.*]] = linalg.generic {{.*}} ins(%[[OM]], %{{.*}}) outs(%{{.*}} : tensor<?x?x8xf32>)
// CHECK: %[[CAST:.*]] = tensor.cast %[[OUT]] : tensor<?x?x8xf32> to tensor<?x3x8xf32>
// CHECK: return %[[CAST]]
func.func @mixed_static_dynamic(%x: tensor<?x?x?xf32>, %w: tensor<8x8xf32>,
                                %wb: tensor<1x8xf32>, %bo: tensor<?xf32>)
    -> tensor<?x3x8xf32> {
  %y = fwp.attention %x, %w, %w, %w, %wb, %w, %bo heads = 1
      : (tensor<?x?x?xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>,
         tensor<1x8xf32>, tensor<8x8xf32>, tensor<?xf32>) -> tensor<?x3x8xf32>
  return %y : tensor<?x3x8xf32>
}

// -----

// The scan needs static feature sizes, so d_model must be known.

func.func @dynamic_model(%x: tensor<4x1x?xf32>, %w: tensor<?x?xf32>,
                         %wb: tensor<2x?xf32>, %bo: tensor<?xf32>)
    -> tensor<4x1x?xf32> {
  // expected-error @+1 {{cannot be decomposed: d_model must be static}}
  %y = fwp.attention %x, %w, %w, %w, %wb, %w, %bo heads = 2
      : (tensor<4x1x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>,
         tensor<2x?xf32>, tensor<?x?xf32>, tensor<?xf32>) -> tensor<4x1x?xf32>
  return %y : tensor<4x1x?xf32>
}

// -----

// The gradient recomputes the projections and the gate, then runs
// fwp.scan_grad (DPFP fused), which also returns the scan's outputs o for
// the output layer's weight gradient (the scan's forward runs once), and the
// dense gradients.
// CHECK-LABEL: func @attention_grad_delta
// CHECK: %[[BETA:.*]] = fwp.gate
// CHECK-NOT: fwp.scan delta
// CHECK: %{{.*}}, %{{.*}}, %{{.*}}, %[[DB:.*]], %[[O:.*]] = fwp.scan_grad delta {{.*}} dpfp(nu = 2{{.*}} y(tensor<?x?x2x4xf32>)
// CHECK: %[[OM:.*]] = tensor.collapse_shape %[[O]]
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[OM]] :
// CHECK: linalg.generic {{.*}} ins(%[[DB]], %[[BETA]] :
// CHECK-NOT: fwp.attention_grad
func.func @attention_grad_delta(%x: tensor<?x?x8xf32>, %w: tensor<8x8xf32>,
                                %wb: tensor<2x8xf32>, %bo: tensor<8xf32>,
                                %dy: tensor<?x?x8xf32>)
    -> (tensor<2x8xf32>, tensor<8x8xf32>) {
  %dx, %dwq, %dwk, %dwv, %dwb, %dwo, %dbo = fwp.attention_grad
      %x, %w, %w, %w, %wb, %w, %bo dy(%dy) heads = 2 nu = 2
      : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>,
         tensor<2x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<?x?x8xf32>)
      -> (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>,
          tensor<2x8xf32>, tensor<8x8xf32>, tensor<8xf32>)
  return %dwb, %dwo : tensor<2x8xf32>, tensor<8x8xf32>
}
