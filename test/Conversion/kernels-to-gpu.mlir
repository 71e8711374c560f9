// RUN: fwp-opt %s -fwp-kernels-to-gpu=block-size=64 -split-input-file | FileCheck %s

// A kernel's points become blocks; its shared loop is strided over the
// block's threads in row-major order and followed by a barrier.
// CHECK-LABEL: func @kernel
// CHECK: gpu.launch blocks(%[[B:[a-z0-9]+]], {{.*}}) in ({{.*}} = %arg1, {{.*}} = %arg2, {{.*}} = %c1{{.*}}) threads(%[[TID:[a-z0-9]+]], {{.*}}) in (%[[NT:[a-z0-9]+]] = %c64
// CHECK:   %[[TOTAL:.*]] = arith.muli %{{.*}}, %c5
// CHECK:   scf.for %[[LIN:.*]] = %[[TID]] to %[[TOTAL]] step %[[NT]]
// CHECK:     %[[J:.*]] = arith.remui %[[LIN]], %{{.*}}
// CHECK:     %[[I:.*]] = arith.divui %[[LIN]], %{{.*}}
// CHECK:     memref.store %{{.*}}, %{{.*}}[%[[B]], %[[I]], %[[J]]]
// CHECK:   gpu.barrier
// CHECK:   gpu.terminator
// CHECK-NOT: scf.forall
func.func @kernel(%m: memref<?x?x?xf32>, %n: index, %h: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c5 = arith.constant 5 : index
  %one = arith.constant 1.0 : f32
  scf.forall (%b, %x) in (%n, %h) {
    scf.parallel (%i, %j) = (%c0, %c0) to (%c3, %c5) step (%c1, %c1) {
      memref.store %one, %m[%b, %i, %j] : memref<?x?x?xf32>
    }
  } {fwp.kernel = "test"}
  return
}

// -----

// Untagged loops are left alone.
// CHECK-LABEL: func @untagged
// CHECK-NOT: gpu.launch
// CHECK: scf.forall
func.func @untagged(%m: memref<?xf32>, %n: index) {
  %one = arith.constant 1.0 : f32
  scf.forall (%i) in (%n) {
    memref.store %one, %m[%i] : memref<?xf32>
  }
  return
}
