// RUN: fwp-opt %s -fwp-stack-tiles -split-input-file | FileCheck %s
// RUN: fwp-opt %s -fwp-stack-tiles="max-kernel-bytes=20000" -split-input-file | FileCheck %s --check-prefix=BUDGET

// A tile of the kernel's body goes on the stack as it is (the OpenMP loop's
// scope pops it); one made in a loop of the kernel also, in a scope of the
// loop's body that returns what the loop yields.
// CHECK-LABEL: func @tiles
// CHECK: scf.forall
// CHECK: %[[ACC:.*]] = memref.alloca() {alignment = 64 : i64} : memref<64x64xf32>
// CHECK: scf.for {{.*}} iter_args(%[[CARRIED:.*]] = %[[ACC]])
// CHECK: %[[SCOPE:.*]] = memref.alloca_scope -> (memref<64x64xf32>) {
// CHECK: %[[TILE:.*]] = memref.alloca() {alignment = 64 : i64} : memref<64x64xf32>
// CHECK: linalg.add ins(%[[CARRIED]], %[[TILE]] : {{.*}})
// CHECK: memref.alloca_scope.return %[[CARRIED]]
// CHECK: scf.yield %[[SCOPE]]
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
// one over 64 KiB, one in a loop other than scf.for (whose body has no
// scope), and one outside any kernel.
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
// BUDGET: memref.alloc() : memref<64x64xf32>
// BUDGET: memref.alloca() : memref<32x64xf32>
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
