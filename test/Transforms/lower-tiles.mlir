// RUN: fwp-opt %s -fwp-lower-tiles -split-input-file -verify-diagnostics | FileCheck %s

// A product with a transposed right operand: a parallel loop over the
// 4 x 2 output whose points sum over k = 0..8 in a register, then one
// read-modify-write of the output.
// CHECK-LABEL: func @product
// CHECK-SAME: (%[[A:.*]]: memref<4x8xf32>, %[[B:.*]]: memref<2x8xf32>, %[[C:.*]]: memref<4x2xf32>)
// CHECK: scf.forall
// CHECK: scf.parallel (%[[M:.*]], %[[N:.*]]) = (%c0, %c0) to (%c4, %c2) step (%c1, %c1)
// CHECK: %[[SUM:.*]] = scf.for %[[K:.*]] = %c0 to %c8 step %c1 iter_args(%[[ACC:.*]] = %{{.*}}) -> (f32)
// CHECK: %[[X:.*]] = memref.load %[[A]][%[[M]], %[[K]]]
// CHECK: %[[Y:.*]] = memref.load %[[B]][%[[N]], %[[K]]]
// CHECK: %[[XY:.*]] = arith.mulf %[[X]], %[[Y]] fastmath<reassoc,contract>
// CHECK: arith.addf %[[ACC]], %[[XY]] fastmath<reassoc,contract>
// CHECK: %[[OLD:.*]] = memref.load %[[C]][%[[M]], %[[N]]]
// CHECK: %[[NEW:.*]] = arith.addf %[[OLD]], %[[SUM]]
// CHECK: memref.store %[[NEW]], %[[C]][%[[M]], %[[N]]]
// CHECK-NOT: linalg.matmul
// CHECK: fwp.kernel = "k"
func.func @product(%a: memref<4x8xf32>, %b: memref<2x8xf32>,
                   %c: memref<4x2xf32>) {
  %n = arith.constant 3 : index
  scf.forall (%i) in (%n) {
    linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>,
                                   affine_map<(m, n, k) -> (n, k)>,
                                   affine_map<(m, n, k) -> (m, n)>]
        ins(%a, %b : memref<4x8xf32>, memref<2x8xf32>)
        outs(%c : memref<4x2xf32>)
  } {fwp.kernel = "k"}
  return
}

// -----

// Fills and maps become shared parallel loops; linalg outside a kernel is
// left to the backend's own lowering.
// CHECK-LABEL: func @maps
// CHECK: scf.forall
// CHECK: scf.parallel (%{{.*}}, %{{.*}}) = (%c0{{.*}}, %c0{{.*}}) to (%c4{{.*}}, %c4{{.*}})
// CHECK: memref.store
// CHECK: scf.parallel (%[[I:.*]], %[[J:.*]]) = (%c0{{.*}}, %c0{{.*}}) to (%c4{{.*}}, %c4{{.*}})
// CHECK: arith.cmpi ule, %[[J]], %[[I]]
// CHECK: fwp.kernel = "k"
// CHECK: linalg.fill
func.func @maps(%t: memref<4x4xf32>) {
  %n = arith.constant 3 : index
  %zero = arith.constant 0.0 : f32
  scf.forall (%i) in (%n) {
    linalg.fill ins(%zero : f32) outs(%t : memref<4x4xf32>)
    linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>],
                    iterator_types = ["parallel", "parallel"]}
        outs(%t : memref<4x4xf32>) {
    ^bb0(%x: f32):
      %r = linalg.index 0 : index
      %c = linalg.index 1 : index
      %keep = arith.cmpi ule, %c, %r : index
      %v = arith.select %keep, %x, %zero : f32
      linalg.yield %v : f32
    }
  } {fwp.kernel = "k"}
  linalg.fill ins(%zero : f32) outs(%t : memref<4x4xf32>)
  return
}

// -----

func.func @tensor_tile(%t: tensor<4x4xf32>) {
  %n = arith.constant 3 : index
  %zero = arith.constant 0.0 : f32
  scf.forall (%i) in (%n) {
    // expected-error @+1 {{fwp-lower-tiles expects tiles of buffers}}
    %f = linalg.fill ins(%zero : f32) outs(%t : tensor<4x4xf32>) -> tensor<4x4xf32>
  } {fwp.kernel = "k"}
  return
}
