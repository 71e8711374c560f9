// RUN: fwp-opt %s -fwp-outline-tiles -split-input-file | FileCheck %s

// Two products of the same types share one function, named after the
// kernel, private, internal and never inlined; each becomes a call on its
// own buffers.
// CHECK-LABEL: func @same_tiles
// CHECK-SAME: (%[[A:.*]]: memref<16x8xf32>, %[[B:.*]]: memref<8x32xf32>, %[[C:.*]]: memref<16x32xf32>, %[[D:.*]]: memref<16x32xf32>)
// CHECK: scf.forall
// CHECK-NEXT: call @scan_tile0(%[[A]], %[[B]], %[[C]])
// CHECK-NEXT: call @scan_tile0(%[[A]], %[[B]], %[[D]])
// CHECK-NOT: linalg.
// CHECK: fwp.kernel = "scan"
// CHECK: func.func private @scan_tile0(%[[X:.*]]: memref<16x8xf32>, %[[Y:.*]]: memref<8x32xf32>, %[[Z:.*]]: memref<16x32xf32>)
// CHECK-SAME: fwp.kernel = "scan"
// CHECK-SAME: llvm.linkage = #llvm.linkage<internal>
// CHECK-SAME: passthrough = ["noinline"]
// CHECK-NEXT: linalg.matmul ins(%[[X]], %[[Y]] : {{.*}}) outs(%[[Z]] : {{.*}})
// CHECK-NEXT: return
// CHECK-NOT: func.func private
func.func @same_tiles(%a: memref<16x8xf32>, %b: memref<8x32xf32>,
                      %c: memref<16x32xf32>, %d: memref<16x32xf32>) {
  %n = arith.constant 3 : index
  scf.forall (%i) in (%n) {
    linalg.matmul ins(%a, %b : memref<16x8xf32>, memref<8x32xf32>)
        outs(%c : memref<16x32xf32>)
    linalg.matmul ins(%a, %b : memref<16x8xf32>, memref<8x32xf32>)
        outs(%d : memref<16x32xf32>)
  } {fwp.kernel = "scan"}
  return
}

// -----

// Tiles that differ in their body get a function each. A value the body
// uses from above is an argument; a constant is cloned into the function.
// CHECK-LABEL: func @captured
// CHECK: scf.forall (%[[I:.*]]) in
// CHECK: %[[INT:.*]] = arith.index_cast %[[I]]
// CHECK: %[[S:.*]] = arith.sitofp %[[INT]]
// CHECK: call @k_tile0(%{{.*}}, %[[S]]) :
// CHECK: call @k_tile1(%{{.*}})
// CHECK: func.func private @k_tile0(%{{.*}}: memref<4x16xf32>, %[[SCALE:.*]]: f32)
// CHECK: arith.mulf %{{.*}}, %[[SCALE]]
// CHECK: func.func private @k_tile1(%{{.*}}: memref<4x16xf32>)
// CHECK: %[[TWO:.*]] = arith.constant 2.0
// CHECK: linalg.generic
// CHECK: arith.mulf %{{.*}}, %[[TWO]]
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @captured(%x: memref<4x16xf32>) {
  %n = arith.constant 3 : index
  %two = arith.constant 2.0 : f32
  scf.forall (%i) in (%n) {
    %int = arith.index_cast %i : index to i32
    %scale = arith.sitofp %int : i32 to f32
    linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]}
        outs(%x : memref<4x16xf32>) {
    ^bb0(%out: f32):
      %y = arith.mulf %out, %scale : f32
      linalg.yield %y : f32
    }
    linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]}
        outs(%x : memref<4x16xf32>) {
    ^bb0(%out: f32):
      %y = arith.mulf %out, %two : f32
      linalg.yield %y : f32
    }
  } {fwp.kernel = "k"}
  return
}

// -----

// A tile of dynamic shape (a chunk cut at the sequence's end) stays in
// the kernel, as does everything outside kernels.
// CHECK-LABEL: func @stays
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : memref<?x16xf32>)
// CHECK: scf.forall
// CHECK-NEXT: linalg.copy
// CHECK-NOT: func.func private
func.func @stays(%x: memref<?x16xf32>, %y: memref<?x16xf32>) {
  %n = arith.constant 3 : index
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%x : memref<?x16xf32>)
  scf.forall (%i) in (%n) {
    linalg.copy ins(%x : memref<?x16xf32>) outs(%y : memref<?x16xf32>)
  } {fwp.kernel = "k"}
  return
}
