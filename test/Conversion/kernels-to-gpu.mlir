// RUN: fwp-opt %s -fwp-configure-kernels="target=gpu block-size=64" -fwp-kernels-to-gpu -split-input-file -verify-diagnostics | FileCheck %s

// A kernel's points become blocks, on the grid dimensions its mapping
// names; its shared loop is strided over the block's threads in row-major
// order (affine.delinearize_index), put on gpu.thread_id by upstream's
// thread mapping, and followed by a barrier.
// CHECK-LABEL: func @kernel
// CHECK: gpu.launch blocks(%{{.*}}, %[[BY:[a-z0-9]+]], %{{.*}}) in ({{.*}} = %arg2, {{.*}} = %arg1, {{.*}} = %c1{{.*}}) threads({{.*}}) in ({{.*}} = %c64
// CHECK:   %[[TOTAL:.*]] = arith.muli %{{.*}}, %c5
// CHECK:   %[[TID:.*]] = gpu.thread_id x
// CHECK:   scf.for %[[LIN:.*]] = %[[TID]] to %[[TOTAL]] step %c64
// CHECK:     %[[P:.*]]:2 = affine.delinearize_index %[[LIN]] into (3, 5)
// CHECK:     memref.store %{{.*}}, %{{.*}}[%[[BY]], %[[P]]#0, %[[P]]#1]
// CHECK:   gpu.barrier
// CHECK:   gpu.terminator
// CHECK: } {fwp.kernel = "test"}
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
  } {fwp.kernel = "test", mapping = [#gpu.block<y>, #gpu.block<x>]}
  return
}

// -----

// A shared loop from %lo with step 2 strides over its trip count,
// max(ceildiv(%hi - %lo, 2), 0); each point is %lo + 2 p.
// CHECK-LABEL: func @offset_and_step
// CHECK:   %[[SPAN:.*]] = arith.subi %arg2, %arg1
// CHECK:   %[[TRIPS:.*]] = arith.ceildivsi %[[SPAN]], %c2
// CHECK:   %[[N:.*]] = arith.maxsi %[[TRIPS]], %c0
// CHECK:   %[[TOTAL:.*]] = arith.muli %{{.*}}, %[[N]]
// CHECK:   scf.for %[[LIN:.*]] = %{{.*}} to %[[TOTAL]] step %c64
// CHECK:     %[[P:.*]] = affine.delinearize_index %[[LIN]] into (%[[N]])
// CHECK:     %[[SCALED:.*]] = arith.muli %[[P]], %c2
// CHECK:     %[[I:.*]] = arith.addi %arg1, %[[SCALED]]
// CHECK:     memref.store %{{.*}}, %{{.*}}[%[[I]]]
func.func @offset_and_step(%m: memref<?xf32>, %lo: index, %hi: index,
                           %n: index) {
  %c2 = arith.constant 2 : index
  %one = arith.constant 1.0 : f32
  scf.forall (%b) in (%n) {
    scf.parallel (%i) = (%lo) to (%hi) step (%c2) {
      memref.store %one, %m[%i] : memref<?xf32>
    }
  } {fwp.kernel = "strided", mapping = [#gpu.block<x>]}
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

// -----

func.func @unmapped(%m: memref<?xf32>, %n: index) {
  %one = arith.constant 1.0 : f32
  // expected-error @+1 {{fwp-kernels-to-gpu expects one #gpu.block mapping per kernel dimension}}
  scf.forall (%i) in (%n) {
    memref.store %one, %m[%i] : memref<?xf32>
  } {fwp.kernel = "test"}
  return
}

// -----

func.func @mapped_to_threads(%m: memref<?xf32>, %n: index) {
  %one = arith.constant 1.0 : f32
  // expected-error @+1 {{fwp-kernels-to-gpu expects a kernel mapped to distinct #gpu.block<x>, <y> or <z>, got [#gpu.thread<x>]}}
  scf.forall (%i) in (%n) {
    memref.store %one, %m[%i] : memref<?xf32>
  } {fwp.kernel = "test", mapping = [#gpu.thread<x>]}
  return
}

// -----

// A kernel's local tile in workgroup memory (one per instance, which is a
// block) becomes a module-level workgroup buffer, 16-byte aligned, that the
// launch's body reads through memref.get_global: an alloca inside the
// launch would be each thread's own.
// CHECK: memref.global "private" @fwp_local_state : memref<8x36xf32, #gpu.address_space<workgroup>> {alignment = 16 : i64}
// CHECK-LABEL: func @local_tile
// CHECK: gpu.launch
// CHECK: %[[TILE:.*]] = memref.get_global @fwp_local_state
// CHECK-NOT: memref.alloca
// CHECK: memref.store %{{.*}}, %[[TILE]]
func.func @local_tile(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  scf.forall (%b) in (%n) {
    %tile = memref.alloca() : memref<8x36xf32, #gpu.address_space<workgroup>>
    scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
      memref.store %zero, %tile[%i, %c0] : memref<8x36xf32, #gpu.address_space<workgroup>>
    }
  } {fwp.kernel = "state", mapping = [#gpu.block<x>]}
  return
}

// -----

func.func @nested_local_tile(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  scf.forall (%b) in (%n) {
    scf.for %c = %c0 to %c4 step %c1 {
      // expected-error @+1 {{fwp-kernels-to-gpu expects a kernel's local tiles in workgroup memory at its top level}}
      %tile = memref.alloca() : memref<8xf32, #gpu.address_space<workgroup>>
      memref.store %zero, %tile[%c0] : memref<8xf32, #gpu.address_space<workgroup>>
    }
  } {fwp.kernel = "state", mapping = [#gpu.block<x>]}
  return
}

// -----

func.func @dynamic_local_tile(%n: index, %rows: index) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  scf.forall (%b) in (%n) {
    // expected-error @+1 {{fwp-kernels-to-gpu expects a kernel's local tiles in workgroup memory to have a static shape and the identity layout}}
    %tile = memref.alloca(%rows) : memref<?xf32, #gpu.address_space<workgroup>>
    memref.store %zero, %tile[%c0] : memref<?xf32, #gpu.address_space<workgroup>>
  } {fwp.kernel = "state", mapping = [#gpu.block<x>]}
  return
}
