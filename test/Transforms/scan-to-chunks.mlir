// RUN: fwp-opt %s -fwp-configure-kernels=chunk-size=16 -fwp-scan-to-chunks -split-input-file | FileCheck %s
// Without a configuration, the CPU's default: 64 steps per chunk.
// RUN: fwp-opt %s -fwp-scan-to-chunks -split-input-file | FileCheck %s --check-prefix=DEFAULT
// DEFAULT-LABEL: func @delta
// DEFAULT: fwp.chunk_wy {{.*}} chunk_size = 64

// The delta rule as fla's three calls: the WY form, the pass over the
// chunks (40 steps: 3 chunks of 16), the outputs.
// CHECK-LABEL: func @delta
// CHECK-SAME: (%[[Q:.*]]: tensor<40x2x4x32xf32>, %[[K:.*]]: tensor<40x2x4x32xf32>, %[[V:.*]]: tensor<40x2x4x8xf32>, %[[B:.*]]: tensor<40x2x4xf32>)
// CHECK: %[[WT:.*]], %[[UT:.*]] = fwp.chunk_wy %[[K]], %[[V]], %[[B]] chunk_size = 16
// CHECK: %[[H:.*]], %[[U:.*]], %[[FINAL:.*]] = fwp.chunk_states %[[K]], %[[UT]] wt(%[[WT]] : tensor<40x2x4x32xf32>) chunk_size = 16
// CHECK-SAME: -> tensor<2x4x3x8x32xf32>, tensor<40x2x4x8xf32>, tensor<2x4x8x32xf32>
// CHECK: %[[Y:.*]] = fwp.chunk_output %[[Q]], %[[K]], %[[U]], %[[H]] chunk_size = 16
// CHECK: return %[[Y]], %[[FINAL]]
func.func @delta(%q: tensor<40x2x4x32xf32>, %k: tensor<40x2x4x32xf32>,
                 %v: tensor<40x2x4x8xf32>, %b: tensor<40x2x4xf32>)
    -> (tensor<40x2x4x8xf32>, tensor<2x4x8x32xf32>) {
  %y, %s = fwp.scan delta %q, %k, %v beta(%b : tensor<40x2x4xf32>)
      : tensor<40x2x4x32xf32>, tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>
      -> tensor<40x2x4x8xf32>, tensor<2x4x8x32xf32>
  return %y, %s : tensor<40x2x4x8xf32>, tensor<2x4x8x32xf32>
}

// -----

// The sum rule writes v as it is; the initial state and the layout go to
// the stages; the number of chunks is dynamic with the sequence.
// CHECK-LABEL: func @sum_batch_first
// CHECK-SAME: (%[[Q:.*]]: tensor<2x?x4x32xf64>, %[[K:.*]]: tensor<2x?x4x32xf64>, %[[V:.*]]: tensor<2x?x4x8xf64>, %[[S0:.*]]: tensor<2x4x8x32xf64>)
// CHECK-NOT: fwp.chunk_wy
// CHECK: %[[H:.*]], %[[U:.*]], %{{.*}} = fwp.chunk_states %[[K]], %[[V]] initial(%[[S0]] : tensor<2x4x8x32xf64>) chunk_size = 16 batch_first
// CHECK-SAME: -> tensor<2x4x?x8x32xf64>
// CHECK: fwp.chunk_output %[[Q]], %[[K]], %[[U]], %[[H]] chunk_size = 16 batch_first
func.func @sum_batch_first(%q: tensor<2x?x4x32xf64>, %k: tensor<2x?x4x32xf64>,
                           %v: tensor<2x?x4x8xf64>, %s0: tensor<2x4x8x32xf64>)
    -> tensor<2x?x4x8xf64> {
  %y = fwp.scan sum %q, %k, %v initial(%s0 : tensor<2x4x8x32xf64>) batch_first
      : tensor<2x?x4x32xf64>, tensor<2x?x4x32xf64>, tensor<2x?x4x8xf64>
      -> tensor<2x?x4x8xf64>
  return %y : tensor<2x?x4x8xf64>
}

// -----

// A scan that applies DPFP itself gets its features first.
// CHECK-LABEL: func @fused_dpfp
// CHECK: %[[FQ:.*]] = fwp.dpfp %{{.*}} nu = 2 eps = 1.000000e-03 : tensor<16x1x2x4xf32> -> tensor<16x1x2x16xf32>
// CHECK: %[[FK:.*]] = fwp.dpfp %{{.*}} nu = 2 eps = 1.000000e-03 : tensor<16x1x2x4xf32> -> tensor<16x1x2x16xf32>
// CHECK: fwp.chunk_wy %[[FK]]
// CHECK: fwp.chunk_output %[[FQ]], %[[FK]]
func.func @fused_dpfp(%q: tensor<16x1x2x4xf32>, %k: tensor<16x1x2x4xf32>,
                      %v: tensor<16x1x2x8xf32>, %b: tensor<16x1x2xf32>)
    -> tensor<16x1x2x8xf32> {
  %y = fwp.scan delta %q, %k, %v beta(%b : tensor<16x1x2xf32>)
      dpfp(nu = 2, eps = 1.0e-3)
      : tensor<16x1x2x4xf32>, tensor<16x1x2x4xf32>, tensor<16x1x2x8xf32>
      -> tensor<16x1x2x8xf32>
  return %y : tensor<16x1x2x8xf32>
}

// -----

// The gradient: the chunked forward again, the state's gradient backwards
// over the chunks, each chunk's gradients, the WY form's, and DPFP's last;
// y comes from the same forward.
// CHECK-LABEL: func @delta_gradient
// CHECK-SAME: (%[[Q:.*]]: tensor<40x2x4x4xf32>, %[[K:.*]]: tensor<40x2x4x4xf32>, %[[V:.*]]: tensor<40x2x4x8xf32>, %[[B:.*]]: tensor<40x2x4xf32>, %[[DY:.*]]: tensor<40x2x4x8xf32>)
// CHECK: %[[FQ:.*]] = fwp.dpfp %[[Q]] nu = 2
// CHECK: %[[FK:.*]] = fwp.dpfp %[[K]] nu = 2
// CHECK: %[[WT:.*]], %[[UT:.*]] = fwp.chunk_wy %[[FK]], %[[V]], %[[B]]
// CHECK: %[[H:.*]], %[[U:.*]], %{{.*}} = fwp.chunk_states %[[FK]], %[[UT]] wt(%[[WT]]
// CHECK: %[[DU:.*]], %[[DH:.*]], %{{.*}} = fwp.chunk_states_grad %[[FQ]], %[[FK]], %[[DY]] wt(%[[WT]]
// CHECK: %[[DQ:.*]], %[[DK:.*]], %[[DWT:.*]] = fwp.chunk_qk_grad %[[FQ]], %[[FK]], %[[U]], %[[H]], %[[DH]], %[[DY]], %[[DU]]
// CHECK: %[[DK2:.*]], %[[DV:.*]], %[[DB:.*]] = fwp.chunk_wy_grad %[[FK]], %[[V]], %[[B]], %[[DU]], %[[DWT]]
// CHECK: %[[SUM:.*]] = linalg.add ins(%[[DK]], %[[DK2]]
// CHECK: %[[DQRAW:.*]] = fwp.dpfp_grad %[[Q]], %[[DQ]] nu = 2
// CHECK: %[[DKRAW:.*]] = fwp.dpfp_grad %[[K]], %[[SUM]] nu = 2
// CHECK: %[[Y:.*]] = fwp.chunk_output %[[FQ]], %[[FK]], %[[U]], %[[H]]
// CHECK: return %[[DQRAW]], %[[DKRAW]], %[[DV]], %[[DB]], %[[Y]]
func.func @delta_gradient(%q: tensor<40x2x4x4xf32>, %k: tensor<40x2x4x4xf32>,
    %v: tensor<40x2x4x8xf32>, %b: tensor<40x2x4xf32>,
    %dy: tensor<40x2x4x8xf32>)
    -> (tensor<40x2x4x4xf32>, tensor<40x2x4x4xf32>, tensor<40x2x4x8xf32>,
        tensor<40x2x4xf32>, tensor<40x2x4x8xf32>) {
  %dq, %dk, %dv, %db, %y = fwp.scan_grad delta %q, %k, %v
      beta(%b : tensor<40x2x4xf32>) dy(%dy : tensor<40x2x4x8xf32>)
      dpfp(nu = 2, eps = 1.0e-6)
      : tensor<40x2x4x4xf32>, tensor<40x2x4x4xf32>, tensor<40x2x4x8xf32>
      -> tensor<40x2x4x4xf32>, tensor<40x2x4x4xf32>, tensor<40x2x4x8xf32>
         dbeta(tensor<40x2x4xf32>) y(tensor<40x2x4x8xf32>)
  return %dq, %dk, %dv, %db, %y
      : tensor<40x2x4x4xf32>, tensor<40x2x4x4xf32>, tensor<40x2x4x8xf32>,
        tensor<40x2x4xf32>, tensor<40x2x4x8xf32>
}

// -----

// The sum rule's value gradient is dU itself; the initial state's gradient
// comes from the backward pass over the chunks.
// CHECK-LABEL: func @sum_gradient
// CHECK-NOT: fwp.chunk_wy
// CHECK: %[[DU:.*]], %[[DH:.*]], %[[D0:.*]] = fwp.chunk_states_grad {{.*}} d_final(%{{.*}} : tensor<1x2x8x16xf64>) chunk_size = 16
// CHECK: %[[DQ:.*]], %[[DK:.*]] = fwp.chunk_qk_grad
// CHECK-NOT: fwp.chunk_wy_grad
// CHECK: return %[[DQ]], %[[DK]], %[[DU]], %[[D0]]
func.func @sum_gradient(%q: tensor<?x1x2x16xf64>, %k: tensor<?x1x2x16xf64>,
    %v: tensor<?x1x2x8xf64>, %s0: tensor<1x2x8x16xf64>,
    %dy: tensor<?x1x2x8xf64>, %ds: tensor<1x2x8x16xf64>)
    -> (tensor<?x1x2x16xf64>, tensor<?x1x2x16xf64>, tensor<?x1x2x8xf64>,
        tensor<1x2x8x16xf64>) {
  %dq, %dk, %dv, %d0 = fwp.scan_grad sum %q, %k, %v
      initial(%s0 : tensor<1x2x8x16xf64>) dy(%dy : tensor<?x1x2x8xf64>)
      d_final_state(%ds : tensor<1x2x8x16xf64>)
      : tensor<?x1x2x16xf64>, tensor<?x1x2x16xf64>, tensor<?x1x2x8xf64>
      -> tensor<?x1x2x16xf64>, tensor<?x1x2x16xf64>, tensor<?x1x2x8xf64>
         d_initial(tensor<1x2x8x16xf64>)
  return %dq, %dk, %dv, %d0
      : tensor<?x1x2x16xf64>, tensor<?x1x2x16xf64>, tensor<?x1x2x8xf64>,
        tensor<1x2x8x16xf64>
}

// -----

// With a dynamic sequence the key gradients' sum is sized from the values'
// steps (and the features' width), so that the sum alone reads the two key
// gradients (what fwp-lower-chunks{fuse-backward} requires to fuse them)
// and chunk operations alone read the features (what lets their kernels
// apply a feature map themselves).
// CHECK-LABEL: func @dynamic_gradient
// CHECK-SAME: %[[Q:[a-z0-9]+]]: tensor<?x2x4x4xf32>, %[[K:[a-z0-9]+]]: tensor<?x2x4x4xf32>,
// CHECK-SAME: %[[V:[a-z0-9]+]]: tensor<?x2x4x8xf32>
// CHECK: %[[DQ:.*]], %[[DK:.*]], %[[DWT:.*]] = fwp.chunk_qk_grad
// CHECK-NOT: tensor.dim %[[DK]]
// CHECK-NOT: tensor.dim %[[K]]
// CHECK: tensor.dim %[[V]]
// CHECK-NOT: tensor.dim %[[K]]
// CHECK: linalg.add ins(%[[DK]]
func.func @dynamic_gradient(%q: tensor<?x2x4x4xf32>, %k: tensor<?x2x4x4xf32>,
    %v: tensor<?x2x4x8xf32>, %b: tensor<?x2x4xf32>,
    %dy: tensor<?x2x4x8xf32>)
    -> (tensor<?x2x4x4xf32>, tensor<?x2x4x4xf32>, tensor<?x2x4x8xf32>,
        tensor<?x2x4xf32>) {
  %dq, %dk, %dv, %db = fwp.scan_grad delta %q, %k, %v
      beta(%b : tensor<?x2x4xf32>) dy(%dy : tensor<?x2x4x8xf32>)
      : tensor<?x2x4x4xf32>, tensor<?x2x4x4xf32>, tensor<?x2x4x8xf32>
      -> tensor<?x2x4x4xf32>, tensor<?x2x4x4xf32>, tensor<?x2x4x8xf32>
         dbeta(tensor<?x2x4xf32>)
  return %dq, %dk, %dv, %db
      : tensor<?x2x4x4xf32>, tensor<?x2x4x4xf32>, tensor<?x2x4x8xf32>,
        tensor<?x2x4xf32>
}

// -----

// 16-bit storage: the stages read and write the scan's bf16 tensors, and
// what they hand each other (the features, Wt, Ut, U, h, dU, dh, dWt) is
// f32. The delta rule's two key gradients are summed in f32 and rounded to
// bf16 once.
// CHECK-LABEL: func @bf16_storage
// CHECK: fwp.dpfp %{{.*}} : tensor<40x2x4x4xbf16> -> tensor<40x2x4x8xf32>
// CHECK: %[[KF:.*]] = fwp.dpfp %{{.*}} : tensor<40x2x4x4xbf16> -> tensor<40x2x4x8xf32>
// CHECK: fwp.chunk_wy %[[KF]], %{{.*}}, %{{.*}} chunk_size = 16 : tensor<40x2x4x8xf32>, tensor<40x2x4x8xbf16>, tensor<40x2x4xbf16> -> tensor<40x2x4x8xf32>, tensor<40x2x4x8xf32>
// CHECK: fwp.chunk_states {{.*}} -> tensor<2x4x3x8x8xf32>, tensor<40x2x4x8xf32>, tensor<2x4x8x8xf32>
// CHECK: fwp.chunk_states_grad {{.*}} -> tensor<40x2x4x8xf32>, tensor<2x4x3x8x8xf32>, tensor<2x4x8x8xf32>
// CHECK: %[[DQ:[^ ,]*]], %[[DK1:[^ ,]*]], %{{.*}} = fwp.chunk_qk_grad {{.*}} -> tensor<40x2x4x8xf32>, tensor<40x2x4x8xf32> dwt(tensor<40x2x4x8xf32>)
// CHECK: %[[DK2:[^ ,]*]], %{{.*}}, %{{.*}} = fwp.chunk_wy_grad {{.*}} -> tensor<40x2x4x8xf32>, tensor<40x2x4x8xbf16>, tensor<40x2x4xbf16>
// CHECK: %[[DK:.*]] = linalg.add ins(%[[DK1]], %[[DK2]] : tensor<40x2x4x8xf32>, tensor<40x2x4x8xf32>)
// CHECK: fwp.dpfp_grad %{{.*}}, %[[DQ]] : tensor<40x2x4x4xbf16>, tensor<40x2x4x8xf32> -> tensor<40x2x4x4xbf16>
// CHECK: fwp.dpfp_grad %{{.*}}, %[[DK]] : tensor<40x2x4x4xbf16>, tensor<40x2x4x8xf32> -> tensor<40x2x4x4xbf16>
func.func @bf16_storage(%q: tensor<40x2x4x4xbf16>, %k: tensor<40x2x4x4xbf16>,
    %v: tensor<40x2x4x8xbf16>, %b: tensor<40x2x4xbf16>,
    %dy: tensor<40x2x4x8xbf16>)
    -> (tensor<40x2x4x4xbf16>, tensor<40x2x4x4xbf16>, tensor<40x2x4x8xbf16>,
        tensor<40x2x4xbf16>) {
  %dq, %dk, %dv, %db = fwp.scan_grad delta %q, %k, %v
      beta(%b : tensor<40x2x4xbf16>) dy(%dy : tensor<40x2x4x8xbf16>)
      dpfp(nu = 1, eps = 1.0e-6)
      : tensor<40x2x4x4xbf16>, tensor<40x2x4x4xbf16>, tensor<40x2x4x8xbf16>
      -> tensor<40x2x4x4xbf16>, tensor<40x2x4x4xbf16>, tensor<40x2x4x8xbf16>
         dbeta(tensor<40x2x4xbf16>)
  return %dq, %dk, %dv, %db : tensor<40x2x4x4xbf16>, tensor<40x2x4x4xbf16>,
      tensor<40x2x4x8xbf16>, tensor<40x2x4xbf16>
}

// -----

// Without DPFP the key gradients are the scan's own: summed in f32, rounded
// once.
// CHECK-LABEL: func @bf16_key_gradients
// CHECK: %{{[^ ,]*}}, %[[DK1:[^ ,]*]], %{{.*}} = fwp.chunk_qk_grad {{.*}} -> tensor<40x2x4x8xbf16>, tensor<40x2x4x8xf32> dwt(tensor<40x2x4x8xf32>)
// CHECK: %[[DK2:[^ ,]*]], %{{.*}}, %{{.*}} = fwp.chunk_wy_grad
// CHECK: linalg.generic {{.*}} ins(%[[DK1]], %[[DK2]] : tensor<40x2x4x8xf32>, tensor<40x2x4x8xf32>) outs(%{{.*}} : tensor<40x2x4x8xbf16>)
// CHECK:   arith.addf
// CHECK:   arith.truncf
func.func @bf16_key_gradients(%q: tensor<40x2x4x8xbf16>,
    %k: tensor<40x2x4x8xbf16>, %v: tensor<40x2x4x8xbf16>,
    %b: tensor<40x2x4xbf16>, %dy: tensor<40x2x4x8xbf16>)
    -> tensor<40x2x4x8xbf16> {
  %dq, %dk, %dv, %db = fwp.scan_grad delta %q, %k, %v
      beta(%b : tensor<40x2x4xbf16>) dy(%dy : tensor<40x2x4x8xbf16>)
      : tensor<40x2x4x8xbf16>, tensor<40x2x4x8xbf16>, tensor<40x2x4x8xbf16>
      -> tensor<40x2x4x8xbf16>, tensor<40x2x4x8xbf16>, tensor<40x2x4x8xbf16>
         dbeta(tensor<40x2x4xbf16>)
  return %dk : tensor<40x2x4x8xbf16>
}
