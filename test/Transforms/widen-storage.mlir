// RUN: fwp-opt %s -split-input-file -fwp-widen-storage | FileCheck %s
// RUN: fwp-opt %s -split-input-file -fwp-widen-storage=widen-scans=false | FileCheck %s --check-prefix=KEEP

// A scan on bf16 tensors runs in float32: each 16-bit operand is extended
// (exactly) in a linalg.generic, the scan is the same op on f32 tensors,
// and each result is rounded back to bf16 once.
// CHECK-LABEL: func @scan
// With widen-scans=false, the chunk pipelines' choice, the scan keeps its
// tensors, and no cast is made.
// KEEP-LABEL: func @scan
// KEEP-NOT: linalg.generic
// KEEP: fwp.scan delta {{.*}} : tensor<8x1x2x4xbf16>, tensor<8x1x2x4xbf16>, tensor<8x1x2x4xbf16> -> tensor<8x1x2x4xbf16>, tensor<1x2x4x4xbf16>
// KEEP-NOT: linalg.generic
// CHECK-SAME: (%[[Q:.*]]: tensor<8x1x2x4xbf16>, %[[K:.*]]: tensor<8x1x2x4xbf16>, %[[V:.*]]: tensor<8x1x2x4xbf16>, %[[B:.*]]: tensor<8x1x2xbf16>)
// CHECK: %[[QW:.*]] = linalg.generic {{.*}} ins(%[[Q]] : tensor<8x1x2x4xbf16>) outs(%{{.*}} : tensor<8x1x2x4xf32>)
// CHECK:   arith.extf %{{.*}} : bf16 to f32
// CHECK: %[[KW:.*]] = linalg.generic {{.*}} ins(%[[K]]
// CHECK: %[[VW:.*]] = linalg.generic {{.*}} ins(%[[V]]
// CHECK: %[[BW:.*]] = linalg.generic {{.*}} ins(%[[B]] : tensor<8x1x2xbf16>) outs(%{{.*}} : tensor<8x1x2xf32>)
// CHECK: %[[Y:.*]], %[[S:.*]] = fwp.scan delta %[[QW]], %[[KW]], %[[VW]] beta(%[[BW]] : tensor<8x1x2xf32>) : tensor<8x1x2x4xf32>, tensor<8x1x2x4xf32>, tensor<8x1x2x4xf32> -> tensor<8x1x2x4xf32>, tensor<1x2x4x4xf32>
// CHECK: %[[YN:.*]] = linalg.generic {{.*}} ins(%[[Y]] : tensor<8x1x2x4xf32>) outs(%{{.*}} : tensor<8x1x2x4xbf16>)
// CHECK:   arith.truncf %{{.*}} : f32 to bf16
// CHECK: %[[SN:.*]] = linalg.generic {{.*}} ins(%[[S]] : tensor<1x2x4x4xf32>) outs(%{{.*}} : tensor<1x2x4x4xbf16>)
// CHECK: return %[[YN]], %[[SN]]
func.func @scan(%q: tensor<8x1x2x4xbf16>, %k: tensor<8x1x2x4xbf16>,
                %v: tensor<8x1x2x4xbf16>, %beta: tensor<8x1x2xbf16>)
    -> (tensor<8x1x2x4xbf16>, tensor<1x2x4x4xbf16>) {
  %y, %state = fwp.scan delta %q, %k, %v beta(%beta : tensor<8x1x2xbf16>)
      : tensor<8x1x2x4xbf16>, tensor<8x1x2x4xbf16>, tensor<8x1x2x4xbf16>
      -> tensor<8x1x2x4xbf16>, tensor<1x2x4x4xbf16>
  return %y, %state : tensor<8x1x2x4xbf16>, tensor<1x2x4x4xbf16>
}

// -----

// f16 with dynamic sizes: the conversions take the sizes from their input.
// CHECK-LABEL: func @dpfp_dynamic
// KEEP-LABEL: func @dpfp_dynamic
// KEEP: arith.extf
// KEEP: fwp.dpfp %{{.*}} nu = 2 : tensor<?x?x2x4xf32> -> tensor<?x?x2x16xf32>
// CHECK: %[[D0:.*]] = tensor.dim %{{.*}}, %c0
// CHECK: %[[D1:.*]] = tensor.dim %{{.*}}, %c1
// CHECK: tensor.empty(%[[D0]], %[[D1]]) : tensor<?x?x2x4xf32>
// CHECK: arith.extf %{{.*}} : f16 to f32
// CHECK: fwp.dpfp %{{.*}} nu = 2 : tensor<?x?x2x4xf32> -> tensor<?x?x2x16xf32>
// CHECK: arith.truncf %{{.*}} : f32 to f16
func.func @dpfp_dynamic(%x: tensor<?x?x2x4xf16>) -> tensor<?x?x2x16xf16> {
  %f = fwp.dpfp %x nu = 2 : tensor<?x?x2x4xf16> -> tensor<?x?x2x16xf16>
  return %f : tensor<?x?x2x16xf16>
}

// -----

// float32 and float64 ops are left alone.
// CHECK-LABEL: func @wide
// CHECK-NOT: linalg.generic
// CHECK: fwp.dpfp %{{.*}} : tensor<3x4xf32> -> tensor<3x8xf32>
func.func @wide(%x: tensor<3x4xf32>) -> tensor<3x8xf32> {
  %f = fwp.dpfp %x : tensor<3x4xf32> -> tensor<3x8xf32>
  return %f : tensor<3x8xf32>
}
