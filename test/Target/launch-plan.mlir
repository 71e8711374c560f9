// fwp-compile writes the host side of a compiled module as a launch plan:
// arguments, buffers, views, launches with their grids, and the results.
// RUN: fwp-compile %s --function scan -o - --options "chunk-size=16 block-size=64" | FileCheck %s
// RUN: rm -rf %t && fwp-compile %s --function scan -o %t
// RUN: FileCheck %s --input-file %t/plan.fwp
// RUN: ls %t | FileCheck %s --check-prefix=FILES

// CHECK: fwp-plan 1
// CHECK-NEXT: index-bits 32
// CHECK-NEXT: module scan_prepare
// CHECK-NEXT: module scan_state
// CHECK-NEXT: arg arg0 f32 ? 2 4 8
// CHECK: value [[T:v[0-9]+]] dim(arg{{[01]}}, 0)
// CHECK: alloc [[Y:b[0-9]+]] f32 [[T]] 2 4 8
// CHECK: value [[N:v[0-9]+]] (ceildiv [[T]] {{16|64}})
// CHECK: launch scan_prepare scan_prepare 2 4 [[N]] {{64|128}} 1 1 0
// CHECK: launch scan_state scan_state 2 4 1 {{64|128}} 1 1 0
// CHECK: result [[Y]]

// FILES: plan.fwp
// FILES: scan_prepare.ptx
// FILES: scan_state.ptx

func.func @scan(%q: tensor<?x2x4x8xf32>, %v: tensor<?x2x4x8xf32>)
    -> tensor<?x2x4x8xf32> {
  %y = fwp.scan sum %q, %q, %v dpfp(nu = 1, eps = 1.0e-6)
      : tensor<?x2x4x8xf32>, tensor<?x2x4x8xf32>, tensor<?x2x4x8xf32>
      -> tensor<?x2x4x8xf32>
  return %y : tensor<?x2x4x8xf32>
}
