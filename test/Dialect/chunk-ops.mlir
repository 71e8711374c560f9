// The chunked scan's stages round-trip, in the custom and the generic form.
// RUN: fwp-opt %s -split-input-file | fwp-opt -split-input-file | FileCheck %s
// RUN: fwp-opt %s -split-input-file -mlir-print-op-generic \
// RUN:   | fwp-opt -split-input-file | FileCheck %s

// CHECK-LABEL: func @delta_stages
// CHECK: %[[WT:.*]], %[[UT:.*]] = fwp.chunk_wy %{{.*}}, %{{.*}}, %{{.*}} chunk_size = 16
// CHECK: %[[H:.*]], %[[U:.*]], %{{.*}} = fwp.chunk_states %{{.*}}, %[[UT]] wt(%[[WT]] : tensor<40x2x4x32xf32>) chunk_size = 16
// CHECK: fwp.chunk_output %{{.*}}, %{{.*}}, %[[U]], %[[H]] chunk_size = 16
func.func @delta_stages(%q: tensor<40x2x4x32xf32>, %k: tensor<40x2x4x32xf32>,
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

// The sum rule writes its values as they are: no WY form, no `wt`.
// CHECK-LABEL: func @sum_stages_batch_first
// CHECK: fwp.chunk_states %{{.*}}, %{{.*}} initial(%{{.*}} : tensor<2x4x8x32xf64>) chunk_size = 64 batch_first
// CHECK: fwp.chunk_output {{.*}} chunk_size = 64 batch_first
func.func @sum_stages_batch_first(%q: tensor<2x?x4x32xf64>,
    %k: tensor<2x?x4x32xf64>, %v: tensor<2x?x4x8xf64>,
    %s0: tensor<2x4x8x32xf64>) -> tensor<2x?x4x8xf64> {
  %h, %u, %final = fwp.chunk_states %k, %v initial(%s0 : tensor<2x4x8x32xf64>)
      chunk_size = 64 batch_first : tensor<2x?x4x32xf64>, tensor<2x?x4x8xf64>
      -> tensor<2x4x?x8x32xf64>, tensor<2x?x4x8xf64>, tensor<2x4x8x32xf64>
  %y = fwp.chunk_output %q, %k, %u, %h chunk_size = 64 batch_first
      : tensor<2x?x4x32xf64>, tensor<2x?x4x32xf64>, tensor<2x?x4x8xf64>,
        tensor<2x4x?x8x32xf64> -> tensor<2x?x4x8xf64>
  return %y : tensor<2x?x4x8xf64>
}

// -----

// The backward's stages.
// CHECK-LABEL: func @delta_gradient_stages
// CHECK: %[[DU:.*]], %[[DH:.*]], %{{.*}} = fwp.chunk_states_grad %{{.*}}, %{{.*}}, %{{.*}} wt(%{{.*}} : tensor<40x2x4x32xf32>) d_final(%{{.*}} : tensor<2x4x8x32xf32>) chunk_size = 16
// CHECK: %{{.*}}, %{{.*}}, %[[DWT:.*]] = fwp.chunk_qk_grad {{.*}}, %[[DH]], %{{.*}}, %[[DU]] chunk_size = 16 {{.*}} dwt(tensor<40x2x4x32xf32>)
// CHECK: fwp.chunk_wy_grad %{{.*}}, %{{.*}}, %{{.*}}, %[[DU]], %[[DWT]] chunk_size = 16
func.func @delta_gradient_stages(%q: tensor<40x2x4x32xf32>,
    %k: tensor<40x2x4x32xf32>, %v: tensor<40x2x4x8xf32>,
    %b: tensor<40x2x4xf32>, %wt: tensor<40x2x4x32xf32>,
    %u: tensor<40x2x4x8xf32>, %h: tensor<2x4x3x8x32xf32>,
    %dy: tensor<40x2x4x8xf32>, %dfinal: tensor<2x4x8x32xf32>)
    -> (tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>, tensor<40x2x4xf32>) {
  %du, %dh, %d0 = fwp.chunk_states_grad %q, %k, %dy
      wt(%wt : tensor<40x2x4x32xf32>) d_final(%dfinal : tensor<2x4x8x32xf32>)
      chunk_size = 16
      : tensor<40x2x4x32xf32>, tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>
      -> tensor<40x2x4x8xf32>, tensor<2x4x3x8x32xf32>, tensor<2x4x8x32xf32>
  %dq, %dk, %dwt = fwp.chunk_qk_grad %q, %k, %u, %h, %dh, %dy, %du
      chunk_size = 16 : tensor<40x2x4x32xf32>, tensor<40x2x4x32xf32>,
      tensor<40x2x4x8xf32>, tensor<2x4x3x8x32xf32>, tensor<2x4x3x8x32xf32>,
      tensor<40x2x4x8xf32>, tensor<40x2x4x8xf32>
      -> tensor<40x2x4x32xf32>, tensor<40x2x4x32xf32>
      dwt(tensor<40x2x4x32xf32>)
  %dk2, %dv, %db = fwp.chunk_wy_grad %k, %v, %b, %du, %dwt chunk_size = 16
      : tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>, tensor<40x2x4xf32>,
        tensor<40x2x4x8xf32>, tensor<40x2x4x32xf32>
      -> tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>, tensor<40x2x4xf32>
  return %dk2, %dv, %db
      : tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>, tensor<40x2x4xf32>
}

// -----

// The sum rule's keys take no W~ gradient.
// CHECK-LABEL: func @sum_qk_grad
// CHECK: fwp.chunk_qk_grad {{.*}} -> tensor<?x1x2x16xf64>, tensor<?x1x2x16xf64>{{$}}
func.func @sum_qk_grad(%q: tensor<?x1x2x16xf64>, %k: tensor<?x1x2x16xf64>,
    %u: tensor<?x1x2x4xf64>, %h: tensor<1x2x?x4x16xf64>,
    %dh: tensor<1x2x?x4x16xf64>, %dy: tensor<?x1x2x4xf64>,
    %du: tensor<?x1x2x4xf64>) -> tensor<?x1x2x16xf64> {
  %dq, %dk = fwp.chunk_qk_grad %q, %k, %u, %h, %dh, %dy, %du chunk_size = 64
      : tensor<?x1x2x16xf64>, tensor<?x1x2x16xf64>, tensor<?x1x2x4xf64>,
        tensor<1x2x?x4x16xf64>, tensor<1x2x?x4x16xf64>, tensor<?x1x2x4xf64>,
        tensor<?x1x2x4xf64> -> tensor<?x1x2x16xf64>, tensor<?x1x2x16xf64>
  return %dk : tensor<?x1x2x16xf64>
}

// -----

// 16-bit storage: the scan's tensors bf16, what the stages hand each other
// f32.
// CHECK-LABEL: func @bf16_storage
// CHECK: fwp.chunk_wy {{.*}} : tensor<40x2x4x32xbf16>, tensor<40x2x4x8xbf16>, tensor<40x2x4xbf16> -> tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>
// CHECK: fwp.chunk_states {{.*}} -> tensor<2x4x3x8x32xf32>, tensor<40x2x4x8xf32>, tensor<2x4x8x32xbf16>
// CHECK: fwp.chunk_output {{.*}} -> tensor<40x2x4x8xbf16>
func.func @bf16_storage(%q: tensor<40x2x4x32xbf16>, %k: tensor<40x2x4x32xbf16>,
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
