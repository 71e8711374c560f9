// fwp-compile writes the host side of a compiled module as a launch plan:
// arguments, buffers, views, launches with their grids, and the results.
// RUN: fwp-compile %s --function scan -o - --options "chunk-size=16 block-size=64" | FileCheck %s
// RUN: rm -rf %t && fwp-compile %s --function scan -o %t
// RUN: FileCheck %s --input-file %t/plan.fwp
// RUN: ls %t | FileCheck %s --check-prefix=FILES

// CHECK: fwp-plan 1
// CHECK-NEXT: index-bits 32
// CHECK-NEXT: module chunk_states
// CHECK-NEXT: module chunk_output
// CHECK-NEXT: arg arg0 f32 ? 2 4 8
// CHECK: value [[T:v[0-9]+]] dim(arg{{[01]}}, 0)
// CHECK: value [[N:v[0-9]+]] (ceildivu [[T]] {{16|64}})
// CHECK: alloc [[H:b[0-9]+]] f32 2 4 [[N]] 8 16
// CHECK: launch chunk_states chunk_states 2 4 1 {{64|128}} 1 1 0 memref arg0 memref [[H]]
// CHECK: alloc [[Y:b[0-9]+]] f32 {{v[0-9]+}} 2 4 8
// CHECK: launch chunk_output chunk_output 2 4 [[N]] {{64|128}} 1 1 0 {{.*}} memref [[Y]]
// CHECK: result [[Y]]

// FILES: chunk_output.ptx
// FILES: chunk_states.ptx
// FILES: plan.fwp

func.func @scan(%q: tensor<?x2x4x8xf32>, %v: tensor<?x2x4x8xf32>)
    -> tensor<?x2x4x8xf32> {
  %y = fwp.scan sum %q, %q, %v dpfp(nu = 1, eps = 1.0e-6)
      : tensor<?x2x4x8xf32>, tensor<?x2x4x8xf32>, tensor<?x2x4x8xf32>
      -> tensor<?x2x4x8xf32>
  return %y : tensor<?x2x4x8xf32>
}
