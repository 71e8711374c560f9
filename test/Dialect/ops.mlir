// Every op's custom form round-trips, and so does the generic form.
// RUN: fwp-opt %s -split-input-file | fwp-opt -split-input-file | FileCheck %s
// RUN: fwp-opt %s -split-input-file -mlir-print-op-generic \
// RUN:   | fwp-opt -split-input-file | FileCheck %s

// CHECK-LABEL: func @dpfp_defaults
func.func @dpfp_defaults(%k: tensor<8x2x4x16xf32>) -> tensor<8x2x4x32xf32> {
  // CHECK: fwp.dpfp %{{.*}} : tensor<8x2x4x16xf32> -> tensor<8x2x4x32xf32>
  %f = fwp.dpfp %k : tensor<8x2x4x16xf32> -> tensor<8x2x4x32xf32>
  return %f : tensor<8x2x4x32xf32>
}

// -----

// CHECK-LABEL: func @dpfp_grad
func.func @dpfp_grad(%k: tensor<?x2x4x8xf32>, %g: tensor<?x2x4x32xf32>)
    -> tensor<?x2x4x8xf32> {
  // CHECK: fwp.dpfp_grad %{{.*}}, %{{.*}} nu = 2 eps = 1.000000e-03 : tensor<?x2x4x8xf32>, tensor<?x2x4x32xf32> -> tensor<?x2x4x8xf32>
  %dk = fwp.dpfp_grad %k, %g nu = 2 eps = 1.0e-3
      : tensor<?x2x4x8xf32>, tensor<?x2x4x32xf32> -> tensor<?x2x4x8xf32>
  return %dk : tensor<?x2x4x8xf32>
}

// -----

// CHECK-LABEL: func @dpfp_nu_eps_dynamic
func.func @dpfp_nu_eps_dynamic(%k: tensor<?x3xf64>) -> tensor<?x18xf64> {
  // CHECK: fwp.dpfp %{{.*}} nu = 3 eps = 1.000000e-03 : tensor<?x3xf64> -> tensor<?x18xf64>
  %f = fwp.dpfp %k nu = 3 eps = 1.0e-3 : tensor<?x3xf64> -> tensor<?x18xf64>
  return %f : tensor<?x18xf64>
}

// -----

// CHECK-LABEL: func @gate
func.func @gate(%x: tensor<?x2x32xf32>, %w: tensor<4x32xf32>) -> tensor<?x2x4xf32> {
  // CHECK: fwp.gate %{{.*}}, %{{.*}} : tensor<?x2x32xf32>, tensor<4x32xf32> -> tensor<?x2x4xf32>
  %b = fwp.gate %x, %w : tensor<?x2x32xf32>, tensor<4x32xf32> -> tensor<?x2x4xf32>
  return %b : tensor<?x2x4xf32>
}

// -----

// CHECK-LABEL: func @scan_delta_full
func.func @scan_delta_full(%q: tensor<?x2x4x32xf32>, %k: tensor<?x2x4x32xf32>,
                           %v: tensor<?x2x4x8xf32>, %b: tensor<?x2x4xf32>,
                           %s: tensor<2x4x8x32xf32>)
    -> (tensor<?x2x4x8xf32>, tensor<2x4x8x32xf32>) {
  // CHECK: %[[Y:.*]], %[[S:.*]] = fwp.scan delta %{{.*}}, %{{.*}}, %{{.*}} beta(%{{.*}} : tensor<?x2x4xf32>) initial(%{{.*}} : tensor<2x4x8x32xf32>)
  // CHECK-SAME: -> tensor<?x2x4x8xf32>, tensor<2x4x8x32xf32>
  // CHECK: return %[[Y]], %[[S]]
  %y, %f = fwp.scan delta %q, %k, %v beta(%b : tensor<?x2x4xf32>)
      initial(%s : tensor<2x4x8x32xf32>)
      : tensor<?x2x4x32xf32>, tensor<?x2x4x32xf32>, tensor<?x2x4x8xf32>
      -> tensor<?x2x4x8xf32>, tensor<2x4x8x32xf32>
  return %y, %f : tensor<?x2x4x8xf32>, tensor<2x4x8x32xf32>
}

// -----

// CHECK-LABEL: func @scan_sum
func.func @scan_sum(%q: tensor<5x1x1x4xf64>, %k: tensor<5x1x1x4xf64>,
                    %v: tensor<5x1x1x2xf64>) -> tensor<5x1x1x2xf64> {
  // CHECK: fwp.scan sum %{{.*}}, %{{.*}}, %{{.*}} : tensor<5x1x1x4xf64>, tensor<5x1x1x4xf64>, tensor<5x1x1x2xf64> -> tensor<5x1x1x2xf64>
  %y = fwp.scan sum %q, %k, %v
      : tensor<5x1x1x4xf64>, tensor<5x1x1x4xf64>, tensor<5x1x1x2xf64>
      -> tensor<5x1x1x2xf64>
  return %y : tensor<5x1x1x2xf64>
}

// -----

// CHECK-LABEL: func @attention
func.func @attention(%x: tensor<?x?x32xf32>, %w: tensor<32x32xf32>,
                     %wb: tensor<4x32xf32>, %bo: tensor<32xf32>) -> tensor<?x?x32xf32> {
  // CHECK: fwp.attention %{{.*}} heads = 4 nu = 2 eps = 1.000000e-05 rule = sum :
  %y = fwp.attention %x, %w, %w, %w, %wb, %w, %bo heads = 4 nu = 2 eps = 1.0e-5 rule = sum
      : (tensor<?x?x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>,
         tensor<4x32xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  return %y : tensor<?x?x32xf32>
}

// -----

// CHECK-LABEL: func @scan_fused_dpfp
func.func @scan_fused_dpfp(%q: tensor<?x1x2x4xf32>, %v: tensor<?x1x2x4xf32>,
                           %b: tensor<?x1x2xf32>) -> tensor<1x2x4x16xf32> {
  // CHECK: fwp.scan delta {{.*}} dpfp(nu = 2, eps = {{.*}})
  // CHECK-SAME: -> tensor<?x1x2x4xf32>, tensor<1x2x4x16xf32>
  %y, %s = fwp.scan delta %q, %q, %v beta(%b : tensor<?x1x2xf32>)
      dpfp(nu = 2, eps = 1.0e-6)
      : tensor<?x1x2x4xf32>, tensor<?x1x2x4xf32>, tensor<?x1x2x4xf32>
      -> tensor<?x1x2x4xf32>, tensor<1x2x4x16xf32>
  return %s : tensor<1x2x4x16xf32>
}

// -----

// Batch first (fla's [B, T, H, *]): per-step tensors swap their first two
// dimensions; the states do not.
// CHECK-LABEL: func @scan_batch_first
func.func @scan_batch_first(%q: tensor<2x?x4x8xf32>, %v: tensor<2x?x4x6xf32>,
                            %b: tensor<2x?x4xf32>) -> tensor<2x4x6x8xf32> {
  // CHECK: fwp.scan delta {{.*}} batch_first : tensor<2x?x4x8xf32>
  %y, %s = fwp.scan delta %q, %q, %v beta(%b : tensor<2x?x4xf32>) batch_first
      : tensor<2x?x4x8xf32>, tensor<2x?x4x8xf32>, tensor<2x?x4x6xf32>
      -> tensor<2x?x4x6xf32>, tensor<2x4x6x8xf32>
  return %s : tensor<2x4x6x8xf32>
}

// -----

// CHECK-LABEL: func @scan_grad_delta
func.func @scan_grad_delta(%q: tensor<?x2x4x8xf32>, %v: tensor<?x2x4x8xf32>,
                           %b: tensor<?x2x4xf32>, %s: tensor<2x4x8x16xf32>)
    -> (tensor<?x2x4xf32>, tensor<2x4x8x16xf32>) {
  // CHECK: fwp.scan_grad delta %{{.*}}, %{{.*}}, %{{.*}} beta(%{{.*}} : tensor<?x2x4xf32>) initial(%{{.*}} : tensor<2x4x8x16xf32>) dy(%{{.*}} : tensor<?x2x4x8xf32>) d_final_state(%{{.*}} : tensor<2x4x8x16xf32>) dpfp(nu = 1, eps = {{[^)]*}})
  // CHECK-SAME: dbeta(tensor<?x2x4xf32>) d_initial(tensor<2x4x8x16xf32>)
  %dq, %dk, %dv, %db, %ds = fwp.scan_grad delta %q, %q, %v
      beta(%b : tensor<?x2x4xf32>) initial(%s : tensor<2x4x8x16xf32>)
      dy(%v : tensor<?x2x4x8xf32>) d_final_state(%s : tensor<2x4x8x16xf32>)
      dpfp(nu = 1, eps = 1.0e-6)
      : tensor<?x2x4x8xf32>, tensor<?x2x4x8xf32>, tensor<?x2x4x8xf32>
      -> tensor<?x2x4x8xf32>, tensor<?x2x4x8xf32>, tensor<?x2x4x8xf32>
         dbeta(tensor<?x2x4xf32>) d_initial(tensor<2x4x8x16xf32>)
  return %db, %ds : tensor<?x2x4xf32>, tensor<2x4x8x16xf32>
}

// -----

// CHECK-LABEL: func @scan_grad_sum
func.func @scan_grad_sum(%q: tensor<5x1x1x4xf64>, %v: tensor<5x1x1x2xf64>)
    -> tensor<5x1x1x4xf64> {
  // CHECK: fwp.scan_grad sum {{.*}} -> tensor<5x1x1x4xf64>, tensor<5x1x1x4xf64>, tensor<5x1x1x2xf64>{{$}}
  %dq, %dk, %dv = fwp.scan_grad sum %q, %q, %v dy(%v : tensor<5x1x1x2xf64>)
      : tensor<5x1x1x4xf64>, tensor<5x1x1x4xf64>, tensor<5x1x1x2xf64>
      -> tensor<5x1x1x4xf64>, tensor<5x1x1x4xf64>, tensor<5x1x1x2xf64>
  return %dk : tensor<5x1x1x4xf64>
}

// -----

// With a `y` result type the gradient also returns the scan's outputs.
// CHECK-LABEL: func @scan_grad_with_outputs
func.func @scan_grad_with_outputs(%q: tensor<5x1x1x4xf64>,
                                  %v: tensor<5x1x1x2xf64>)
    -> tensor<5x1x1x2xf64> {
  // CHECK: %{{.*}}, %{{.*}}, %{{.*}}, %[[Y:.*]] = fwp.scan_grad sum {{.*}} -> tensor<5x1x1x4xf64>, tensor<5x1x1x4xf64>, tensor<5x1x1x2xf64> y(tensor<5x1x1x2xf64>)
  %dq, %dk, %dv, %y = fwp.scan_grad sum %q, %q, %v dy(%v : tensor<5x1x1x2xf64>)
      : tensor<5x1x1x4xf64>, tensor<5x1x1x4xf64>, tensor<5x1x1x2xf64>
      -> tensor<5x1x1x4xf64>, tensor<5x1x1x4xf64>, tensor<5x1x1x2xf64>
         y(tensor<5x1x1x2xf64>)
  // CHECK: return %[[Y]]
  return %y : tensor<5x1x1x2xf64>
}

// -----

// CHECK-LABEL: func @attention_grad
func.func @attention_grad(%x: tensor<?x?x8xf32>, %w: tensor<8x8xf32>,
                          %wb: tensor<2x8xf32>, %bo: tensor<8xf32>)
    -> tensor<2x8xf32> {
  // CHECK: fwp.attention_grad %{{.*}} dy(%{{.*}}) heads = 2 nu = 3 :
  %dx, %dwq, %dwk, %dwv, %dwb, %dwo, %dbo = fwp.attention_grad
      %x, %w, %w, %w, %wb, %w, %bo dy(%x) heads = 2 nu = 3
      : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>,
         tensor<2x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<?x?x8xf32>)
      -> (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>,
          tensor<2x8xf32>, tensor<8x8xf32>, tensor<8xf32>)
  return %dwb : tensor<2x8xf32>
}
