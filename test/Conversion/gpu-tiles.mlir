// RUN: fwp-opt %s -fwp-gpu-tiles -split-input-file -verify-diagnostics | FileCheck %s

// Smallest first while the configuration's local bytes last (here 1 KiB), a
// tile goes to the block's shared memory; past them, to a global scratch
// buffer, and then the kernel runs at most scratch_slots instances (a 1-d
// grid), each taking the 4 x n points in turn with its slice of the
// scratch (found again each turn, as item mod slots, so that LLVM does not
// keep its addresses from before the loop). A tile made in a loop of the
// kernel is made once, at the start of its body.
// CHECK-LABEL: func @shared_then_scratch
// CHECK-SAME: (%[[N:.*]]: index,
// CHECK: %[[POINTS:.*]] = arith.muli %{{.*}}, %[[N]]
// CHECK: %[[SLOTS:.*]] = arith.minsi %[[POINTS]], %{{.*}} : index
// CHECK: %[[SCRATCH:.*]] = memref.alloc(%[[SLOTS]]) {alignment = 64 : i64} : memref<?x32x32xf32>
// CHECK: scf.forall (%[[S:.*]]) in (%[[SLOTS]])
// CHECK-DAG: %[[ROWS:.*]] = memref.alloca() : memref<32xf32, #gpu.address_space<workgroup>>
// CHECK-DAG: %[[ROW:.*]] = memref.alloca() : memref<8xf32, #gpu.address_space<workgroup>>
// CHECK: scf.for %[[ITEM:.*]] = %[[S]] to %[[POINTS]] step %[[SLOTS]]
// CHECK: %[[SLOT:.*]] = arith.remui %[[ITEM]], %[[SLOTS]]
// CHECK: affine.delinearize_index %[[ITEM]] into (4, %[[N]])
// CHECK: %[[GRAM:.*]] = memref.subview %[[SCRATCH]][%[[SLOT]], 0, 0] [1, 32, 32] [1, 1, 1] : memref<?x32x32xf32> to memref<32x32xf32, strided<[32, 1], offset: ?>>
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%[[ROWS]] : memref<32xf32, #gpu.address_space<workgroup>>)
// CHECK: %[[VIEW:.*]] = memref.subview %[[GRAM]][0, 0] [32, 8] [1, 1] : memref<32x32xf32, strided<[32, 1], offset: ?>> to memref<32x8xf32, strided<[32, 1], offset: ?>>
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%[[VIEW]] : {{.*}})
// CHECK: scf.for
// CHECK-NOT: memref.alloc
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%[[ROW]] : {{.*}})
// CHECK: {fwp.kernel = "k", mapping = [#gpu.block<x>]}
func.func @shared_then_scratch(%n: index, %out: memref<4x32xf32>)
    attributes {fwp.kernel_config = #fwp.kernel_config<target = gpu,
      chunk_size = 32, value_block = 32, state_memory = workgroup,
      scratch_slots = 512, local_bytes = 1024, stage_floats = 8192,
      products = tf32x3, block_size = 128>} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  scf.forall (%b, %c) in (4, %n) {
    %rows = memref.alloc() : memref<32xf32>
    linalg.fill ins(%zero : f32) outs(%rows : memref<32xf32>)
    %gram = memref.alloc() {alignment = 64 : i64} : memref<32x32xf32>
    %left = memref.subview %gram[0, 0] [32, 8] [1, 1]
        : memref<32x32xf32> to memref<32x8xf32, strided<[32, 1]>>
    linalg.fill ins(%zero : f32) outs(%left : memref<32x8xf32, strided<[32, 1]>>)
    scf.for %i = %c0 to %c4 step %c1 {
      %row = memref.alloc() : memref<8xf32>
      linalg.fill ins(%zero : f32) outs(%row : memref<8xf32>)
    }
  } {fwp.kernel = "k", mapping = [#gpu.block<x>, #gpu.block<y>]}
  return
}

// -----

// In shared memory a tile's rows of 16 elements are padded by 4 (fragments'
// rows in distinct banks), and the padding counts against the local bytes:
// two 8 x 16 tiles take 1280 bytes, so of 1200 the second goes to scratch.
// CHECK-LABEL: func @padding_counts
// CHECK: memref.alloc(%{{.*}}) : memref<?x8x16xf32>
// CHECK: scf.forall
// CHECK: memref.alloca() : memref<8x20xf32, #gpu.address_space<workgroup>>
// CHECK-NOT: memref.alloca()
// CHECK: {fwp.kernel = "k"
func.func @padding_counts(%out: memref<4x8x16xf32>)
    attributes {fwp.kernel_config = #fwp.kernel_config<target = gpu,
      chunk_size = 32, value_block = 32, state_memory = workgroup,
      scratch_slots = 512, local_bytes = 1200, stage_floats = 8192,
      products = tf32x3, block_size = 128>} {
  %zero = arith.constant 0.0 : f32
  scf.forall (%b) in (4) {
    %first = memref.alloc() : memref<8x16xf32>
    linalg.fill ins(%zero : f32) outs(%first : memref<8x16xf32>)
    %second = memref.alloc() : memref<8x16xf32>
    linalg.fill ins(%zero : f32) outs(%second : memref<8x16xf32>)
  } {fwp.kernel = "k", mapping = [#gpu.block<x>]}
  return
}

// -----

// A loop that only carries a tile back uses the tile itself, and a copy of
// a region onto itself (what bufferization leaves where a tile is written in
// place) is erased: then the tile can be placed.
// CHECK-LABEL: func @carried_and_copied
// CHECK: scf.forall
// CHECK-NEXT: %[[ROWS:.*]] = memref.alloca() : memref<16x20xf32, #gpu.address_space<workgroup>>
// CHECK-NEXT: %[[TILE:.*]] = memref.subview %[[ROWS]][0, 0] [16, 16] [1, 1] : memref<16x20xf32, #gpu.address_space<workgroup>> to memref<16x16xf32, strided<[20, 1]>, #gpu.address_space<workgroup>>
// CHECK: scf.for
// CHECK-NOT: iter_args
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%[[TILE]] : {{.*}})
// CHECK-NOT: memref.copy
// CHECK: linalg.copy
// CHECK-NOT: memref.copy
func.func @carried_and_copied(%n: index, %out: memref<4x16x16xf32>)
    attributes {fwp.kernel_config = #fwp.kernel_config<target = gpu,
      chunk_size = 16, value_block = 32, state_memory = workgroup,
      scratch_slots = 512, local_bytes = 34816, stage_floats = 8192,
      products = tf32x3, block_size = 128>} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  scf.forall (%b) in (4) {
    %tile = memref.alloc() : memref<16x16xf32>
    %r = scf.for %i = %c0 to %n step %c1 iter_args(%t = %tile)
        -> (memref<16x16xf32>) {
      linalg.fill ins(%zero : f32) outs(%t : memref<16x16xf32>)
      scf.yield %t : memref<16x16xf32>
    }
    %dest = memref.subview %out[%b, 0, 0] [1, 16, 16] [1, 1, 1]
        : memref<4x16x16xf32> to memref<16x16xf32, strided<[16, 1], offset: ?>>
    linalg.copy ins(%r : memref<16x16xf32>)
        outs(%dest : memref<16x16xf32, strided<[16, 1], offset: ?>>)
    %again = memref.subview %out[%b, 0, 0] [1, 16, 16] [1, 1, 1]
        : memref<4x16x16xf32> to memref<16x16xf32, strided<[16, 1], offset: ?>>
    memref.copy %dest, %again : memref<16x16xf32, strided<[16, 1], offset: ?>>
        to memref<16x16xf32, strided<[16, 1], offset: ?>>
  } {fwp.kernel = "k", mapping = [#gpu.block<x>]}
  return
}

// -----

func.func @dynamic_tile(%n: index)
    attributes {fwp.kernel_config = #fwp.kernel_config<target = gpu,
      chunk_size = 16, value_block = 32, state_memory = workgroup,
      scratch_slots = 512, local_bytes = 34816, stage_floats = 8192,
      products = tf32x3, block_size = 128>} {
  %zero = arith.constant 0.0 : f32
  scf.forall (%b) in (4) {
    // expected-error @+1 {{fwp-gpu-tiles: a GPU kernel cannot allocate this tile}}
    %tile = memref.alloc(%n) : memref<?xf32>
    linalg.fill ins(%zero : f32) outs(%tile : memref<?xf32>)
  } {fwp.kernel = "k", mapping = [#gpu.block<x>]}
  return
}

// -----

func.func @cpu_config()
    attributes {fwp.kernel_config = #fwp.kernel_config<target = cpu,
      chunk_size = 64, value_block = 0, scratch_slots = 0, local_bytes = 0,
      stage_floats = 0>} {
  %zero = arith.constant 0.0 : f32
  // expected-error @+1 {{fwp-gpu-tiles needs a GPU kernel configuration}}
  scf.forall (%b) in (4) {
    %tile = memref.alloc() : memref<16xf32>
    linalg.fill ins(%zero : f32) outs(%tile : memref<16xf32>)
  } {fwp.kernel = "k"}
  return
}
