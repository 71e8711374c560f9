// RUN: fwp-opt %s -fwp-tile-scan=chunk-size=16 -split-input-file -verify-diagnostics | FileCheck %s

// The delta rule: a prepare kernel over (batch, head, chunk) with the
// features, the two C x C products and two forward substitutions, then a
// state kernel over (batch, head) with a sequential loop over chunks.
// CHECK-LABEL: func @delta_fused
// CHECK: %[[T:.*]] = memref.dim %{{.*}}, %c0
// CHECK: %[[Y:.*]] = memref.alloc({{.*}}) : memref<?x2x4x8xf32>
// CHECK: %[[S:.*]] = memref.alloc() : memref<2x4x8x32xf32>
// CHECK: %[[N:.*]] = arith.ceildivsi %[[T]], %c16
// CHECK: scf.forall (%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}}, %{{.*}}, %[[N]])
// CHECK-COUNT-4: scf.parallel
// CHECK: } {fwp.kernel = "scan_prepare"}
// CHECK: scf.forall (%{{.*}}, %{{.*}}) in
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[N]]
// CHECK-COUNT-3: scf.parallel
// CHECK: } {fwp.kernel = "scan_state"}
// CHECK: bufferization.to_tensor %[[Y]] restrict writable
// CHECK: bufferization.to_tensor %[[S]] restrict writable
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

// The sum rule needs no forward substitution: the prepare kernel only maps
// features and forms tril(Q K^T).
// CHECK-LABEL: func @sum_unfused
// CHECK: scf.forall
// CHECK-COUNT-2: scf.parallel
// CHECK-NOT: scf.parallel
// CHECK: } {fwp.kernel = "scan_prepare"}
func.func @sum_unfused(%q: tensor<?x?x?x4xf64>, %v: tensor<?x?x?x2xf64>)
    -> tensor<?x?x?x2xf64> {
  %y = fwp.scan sum %q, %q, %v
      : tensor<?x?x?x4xf64>, tensor<?x?x?x4xf64>, tensor<?x?x?x2xf64>
      -> tensor<?x?x?x2xf64>
  return %y : tensor<?x?x?x2xf64>
}

// -----

// The gradient: prepare (now also forming A, a fifth shared loop) and state
// (keeping every chunk's start state), then the state gradient backwards
// over chunks and the per-chunk gradients in parallel.
// CHECK-LABEL: func @delta_grad
// CHECK: %[[STATES:.*]] = memref.alloc({{.*}}) : memref<?x?x?x8x16xf32>
// CHECK: scf.forall
// CHECK-COUNT-5: scf.parallel
// CHECK: } {fwp.kernel = "scan_prepare"}
// CHECK: scf.forall
// CHECK: memref.store %{{.*}}, %[[STATES]]
// CHECK: } {fwp.kernel = "scan_state"}
// CHECK: scf.forall
// CHECK: scf.for %[[I:.*]] = %{{.*}} to %[[N:.*]] step
// CHECK: arith.subi %[[N]], %c1
// CHECK: arith.subi %{{.*}}, %[[I]]
// CHECK: } {fwp.kernel = "scan_state_grad"}
// CHECK: scf.forall (%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}}, %{{.*}}, %[[N]])
// CHECK: } {fwp.kernel = "scan_chunk_grad"}
// CHECK: scf.forall (%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}}, %{{.*}}, %[[N]])
// CHECK: } {fwp.kernel = "scan_input_grad"}
// CHECK-COUNT-4: bufferization.to_tensor
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
  // expected-error @+1 {{fwp-tile-scan supports f32 and f64, got 'f16'}}
  %y = fwp.scan sum %q, %q, %v
      : tensor<8x1x1x4xf16>, tensor<8x1x1x4xf16>, tensor<8x1x1x2xf16>
      -> tensor<8x1x1x2xf16>
  return %y : tensor<8x1x1x2xf16>
}
