// RUN: fwp-opt %s -fwp-stack-tiles -split-input-file | FileCheck %s
// RUN: fwp-opt %s -fwp-stack-tiles="max-kernel-bytes=20000" -split-input-file | FileCheck %s --check-prefix=BUDGET

// A kernel's tiles go on the stack at the start of its body (the OpenMP
// loop's scope pops them), one made in a loop of the kernel too: once, for
// all the loop's iterations, so that the stack does not grow with them.
// CHECK-LABEL: func @tiles
// CHECK: scf.forall
// CHECK-NEXT: %[[TILE:.*]] = memref.alloca() {alignment = 64 : i64} : memref<64x64xf32>
// CHECK-NEXT: %[[ACC:.*]] = memref.alloca() {alignment = 64 : i64} : memref<64x64xf32>
// CHECK: scf.for {{.*}} iter_args(%[[CARRIED:.*]] = %[[ACC]])
// CHECK-NOT: memref.alloc
// CHECK: linalg.add ins(%[[CARRIED]], %[[TILE]] : {{.*}})
// CHECK-NEXT: scf.yield %[[CARRIED]]
// CHECK-NOT: memref.alloc(
func.func @tiles(%n: index, %out: memref<64x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  scf.forall (%b) in (4) {
    %acc = memref.alloc() {alignment = 64 : i64} : memref<64x64xf32>
    linalg.fill ins(%zero : f32) outs(%acc : memref<64x64xf32>)
    %r = scf.for %c = %c0 to %n step %c1 iter_args(%carried = %acc)
        -> (memref<64x64xf32>) {
      %tile = memref.alloc() {alignment = 64 : i64} : memref<64x64xf32>
      linalg.fill ins(%zero : f32) outs(%tile : memref<64x64xf32>)
      linalg.add ins(%carried, %tile : memref<64x64xf32>, memref<64x64xf32>)
          outs(%carried : memref<64x64xf32>)
      scf.yield %carried : memref<64x64xf32>
    }
    memref.copy %r, %out : memref<64x64xf32> to memref<64x64xf32>
  } {fwp.kernel = "k"}
  return
}

// -----

// Left on the heap: a tile a loop yields (through a view), a dynamic one,
// one over 64 KiB, one in a loop other than scf.for (whose iterations may
// run at once), and one outside any kernel.
// CHECK-LABEL: func @heap
// CHECK-NOT: memref.alloca
// CHECK: return
func.func @heap(%n: index, %rows: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %outside = memref.alloc() : memref<16x16xf32>
  linalg.fill ins(%zero : f32) outs(%outside : memref<16x16xf32>)
  scf.forall (%b) in (4) {
    %init = memref.alloc(%rows) : memref<?x16xf32>
    %r = scf.for %c = %c0 to %n step %c1 iter_args(%carried = %init)
        -> (memref<?x16xf32>) {
      %next = memref.alloc() : memref<64x16xf32>
      %view = memref.cast %next : memref<64x16xf32> to memref<?x16xf32>
      scf.yield %view : memref<?x16xf32>
    }
    %large = memref.alloc() : memref<128x256xf32>
    linalg.fill ins(%zero : f32) outs(%large : memref<128x256xf32>)
    scf.parallel (%i) = (%c0) to (%n) step (%c1) {
      %row = memref.alloc() : memref<16xf32>
      linalg.fill ins(%zero : f32) outs(%row : memref<16xf32>)
    }
  } {fwp.kernel = "k"}
  return
}

// -----

// Within a budget of 20000 bytes a kernel, the smaller tile goes first.
// BUDGET-LABEL: func @budget
// BUDGET: scf.forall
// BUDGET-NEXT: memref.alloca() : memref<32x64xf32>
// BUDGET-NEXT: memref.alloc() : memref<64x64xf32>
func.func @budget() {
  %zero = arith.constant 0.0 : f32
  scf.forall (%b) in (4) {
    %large = memref.alloc() : memref<64x64xf32>
    %small = memref.alloc() : memref<32x64xf32>
    linalg.fill ins(%zero : f32) outs(%large : memref<64x64xf32>)
    linalg.fill ins(%zero : f32) outs(%small : memref<32x64xf32>)
  } {fwp.kernel = "k"}
  return
}
