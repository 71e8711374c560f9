// RUN: fwp-opt %s -fwp-parallel-loops-to-gpu=block-size=64 -split-input-file | FileCheck %s

// One thread per point: blocks = ceil(points / 64), the point numbered
// row-major from the block and thread ids, guarded against the last block's
// spare threads.
// CHECK-LABEL: func @dense
// CHECK: %[[BLOCKS:.*]] = arith.ceildivsi %[[TOTAL:.*]], %c64
// CHECK: gpu.launch blocks(%[[BX:[a-z0-9]+]], {{.*}}) in ({{.*}} = %[[BLOCKS]], {{.*}}) threads(%[[TX:[a-z0-9]+]], {{.*}}) in ({{.*}} = %c64
// CHECK:   %[[SCALED:.*]] = arith.muli %[[BX]], %c64
// CHECK:   %[[POINT:.*]] = arith.addi %[[SCALED]], %[[TX]]
// CHECK:   %[[IN:.*]] = arith.cmpi slt, %[[POINT]], %[[TOTAL]]
// CHECK:   scf.if %[[IN]]
// CHECK:     %[[IJ:.*]]:2 = affine.delinearize_index %[[POINT]] into
// CHECK:     memref.store %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}]
// CHECK:   gpu.terminator
// CHECK-NOT: scf.parallel
func.func @dense(%m: memref<?x?xf32>, %n: index, %k: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1.0 : f32
  scf.parallel (%i, %j) = (%c0, %c0) to (%n, %k) step (%c1, %c1) {
    memref.store %one, %m[%i, %j] : memref<?x?xf32>
  }
  return
}

// -----

// Loops already inside a kernel are left alone.
// CHECK-LABEL: func @inside_kernel
// CHECK-COUNT-1: gpu.launch
// CHECK: scf.parallel
func.func @inside_kernel(%m: memref<?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    scf.parallel (%i) = (%c0) to (%n) step (%c1) {
      memref.store %one, %m[%i] : memref<?xf32>
    }
    gpu.terminator
  }
  return
}
