// RUN: fwp-opt %s -fwp-tiles-to-vectors -split-input-file -verify-diagnostics | FileCheck %s
// RUN: fwp-opt %s -fwp-tiles-to-vectors="register-rows=4 register-cols=16" -split-input-file -verify-diagnostics | FileCheck %s --check-prefix=AVX2

// A 16 x 32 product over k = 8: two 8 x 32 blocks of accumulators, each
// loaded once, carried through the k loop in registers (iter_args) and
// stored once; every k step is FMAs of broadcast left elements with loads
// of the right row.
// CHECK-LABEL: func @product
// CHECK: scf.forall
// CHECK: scf.for %{{.*}} = %c0 to %c16 step %c8
// CHECK: %[[ACC:.*]] = vector.load %{{.*}} : memref<16x32xf32>, vector<32xf32>
// CHECK: scf.for %{{.*}} = %c0 to %c8 step %c1 iter_args(%{{.*}} = %{{.*}}) -> (vector<8x32xf32>)
// CHECK: vector.broadcast %{{.*}} : f32 to vector<32xf32>
// CHECK: vector.fma %{{.*}}, %{{.*}}, %{{.*}} : vector<32xf32>
// CHECK: vector.store %{{.*}}, %{{.*}} : memref<16x32xf32>, vector<32xf32>
// CHECK-NOT: linalg.
// CHECK: fwp.kernel = "k"
// AVX2's register tile: blocks of 4 x 16 accumulators, four of them a row
// of blocks, each k step FMAs on 16 floats.
// AVX2-LABEL: func @product
// AVX2: scf.for %{{.*}} = %c0 to %c16 step %c4
// AVX2: scf.for %{{.*}} = %c0 to %c32 step %c16
// AVX2: scf.for %{{.*}} = %c0 to %c8 step %c1 iter_args(%{{.*}} = %{{.*}}) -> (vector<4x16xf32>)
// AVX2: vector.fma %{{.*}}, %{{.*}}, %{{.*}} : vector<16xf32>
func.func @product(%a: memref<16x8xf32>, %b: memref<8x32xf32>,
                   %c: memref<16x32xf32>) {
  %n = arith.constant 3 : index
  scf.forall (%i) in (%n) {
    linalg.matmul ins(%a, %b : memref<16x8xf32>, memref<8x32xf32>)
        outs(%c : memref<16x32xf32>)
  } {fwp.kernel = "k"}
  return
}

// -----

// A causal mask: one vector per row, the column index a vector.step
// (hoisted out of the kernel: it is invariant).
// CHECK-LABEL: func @mask
// CHECK: vector.step : vector<16xindex>
// CHECK: scf.forall
// CHECK: scf.for %{{.*}} = %c0 to %c16 step %c1
// CHECK: arith.cmpi ule, %{{.*}}, %{{.*}} : vector<1x16xindex>
// CHECK: arith.select %{{.*}}, %{{.*}}, %{{.*}} : vector<1x16xi1>, vector<1x16xf32>
// CHECK: linalg.fill
func.func @mask(%t: memref<16x16xf32>) {
  %n = arith.constant 3 : index
  %zero = arith.constant 0.0 : f32
  scf.forall (%i) in (%n) {
    linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>],
                    iterator_types = ["parallel", "parallel"]}
        outs(%t : memref<16x16xf32>) {
    ^bb0(%x: f32):
      %r = linalg.index 0 : index
      %c = linalg.index 1 : index
      %keep = arith.cmpi ule, %c, %r : index
      %v = arith.select %keep, %x, %zero : f32
      linalg.yield %v : f32
    }
  } {fwp.kernel = "k"}
  // Outside kernels: left alone.
  linalg.fill ins(%zero : f32) outs(%t : memref<16x16xf32>)
  return
}

// -----

// A chunk's rows cut at the sequence's end: left to fwp-lower-tiles.
// CHECK-LABEL: func.func @dynamic_rows
func.func @dynamic_rows(%t: memref<?x16xf32>) {
  %n = arith.constant 3 : index
  %zero = arith.constant 0.0 : f32
  // CHECK: linalg.fill
  scf.forall (%i) in (%n) {
    linalg.fill ins(%zero : f32) outs(%t : memref<?x16xf32>)
  } {fwp.kernel = "k"}
  return
}

// -----

func.func @dynamic_product(%a: memref<?x16xf32>, %b: memref<16x16xf32>,
                           %c: memref<?x16xf32>) {
  %n = arith.constant 3 : index
  scf.forall (%i) in (%n) {
    // expected-error @+1 {{fwp-tiles-to-vectors expects static products}}
    linalg.matmul ins(%a, %b : memref<?x16xf32>, memref<16x16xf32>)
                  outs(%c : memref<?x16xf32>)
  } {fwp.kernel = "k"}
  return
}

// -----

// A row sum (the DPFP normaliser): each row one vector.reduction, not a
// transposed column of scalars added one by one.
// CHECK-LABEL: func @row_sum
// CHECK: scf.for
// CHECK: %[[ROW:.*]] = vector.load %{{.*}} : memref<16x64xf32>, vector<64xf32>
// CHECK: vector.reduction <add>, %[[ROW]], %{{.*}} : vector<64xf32> into f32
// CHECK-NOT: vector<64x1xf32>
#row = affine_map<(d0, d1) -> (d0, d1)>
#sum = affine_map<(d0, d1) -> (d0)>
func.func @row_sum(%x: memref<16x64xf32>, %s: memref<16xf32>) {
  %n = arith.constant 3 : index
  scf.forall (%i) in (%n) {
    linalg.generic {indexing_maps = [#row, #sum], iterator_types = ["parallel", "reduction"]}
        ins(%x : memref<16x64xf32>) outs(%s : memref<16xf32>) {
    ^bb0(%in: f32, %out: f32):
      %y = arith.addf %out, %in fastmath<reassoc,contract> : f32
      linalg.yield %y : f32
    }
  } {fwp.kernel = "k"}
  return
}

// -----

// C = A B^T with more rows than a register block: B is transposed once into
// a stack tile in 8 x 8 blocks (rows loaded, shuffled in registers, stored
// as rows), and the product reads rows of that tile, never columns of B.
// AVX2-LABEL: func @transposed_right_operand
// AVX2: %[[BT:.*]] = memref.alloca() {alignment = 64 : i64} : memref<32x32xf32>
// AVX2: vector.load %{{.*}} : memref<32x32xf32>, vector<8xf32>
// AVX2: vector.shuffle {{.*}} : vector<64xf32>, vector<64xf32>
// AVX2: vector.store %{{.*}}, %[[BT]][%{{.*}}, %{{.*}}] : memref<32x32xf32>, vector<8xf32>
// AVX2: scf.for %{{.*}} = %c0 to %c32 step %c1 iter_args(%{{.*}} = %{{.*}}) -> (vector<4x16xf32>)
// AVX2: vector.load %[[BT]][%{{.*}}, %{{.*}}] : memref<32x32xf32>, vector<16xf32>
// AVX2-NOT: memref<32x32xf32>, vector<1xf32>
#lhs = affine_map<(i, j, k) -> (i, k)>
#rhs_t = affine_map<(i, j, k) -> (j, k)>
#out = affine_map<(i, j, k) -> (i, j)>
func.func @transposed_right_operand(%a: memref<64x32xf32>,
                                    %b: memref<32x32xf32>,
                                    %c: memref<64x32xf32>) {
  %n = arith.constant 3 : index
  scf.forall (%i) in (%n) {
    linalg.matmul indexing_maps = [#lhs, #rhs_t, #out]
        ins(%a, %b : memref<64x32xf32>, memref<32x32xf32>)
        outs(%c : memref<64x32xf32>)
  } {fwp.kernel = "k"}
  return
}

// -----

// One row block (as many rows as the register tile): B's columns are read
// once anyway, so no transposed copy.
// AVX2-LABEL: func @transposed_right_operand_one_block
// AVX2-NOT: memref.alloca
// AVX2: return
#lhs = affine_map<(i, j, k) -> (i, k)>
#rhs_t = affine_map<(i, j, k) -> (j, k)>
#out = affine_map<(i, j, k) -> (i, j)>
func.func @transposed_right_operand_one_block(%a: memref<4x32xf32>,
                                              %b: memref<64x32xf32>,
                                              %c: memref<4x64xf32>) {
  %n = arith.constant 3 : index
  scf.forall (%i) in (%n) {
    linalg.matmul indexing_maps = [#lhs, #rhs_t, #out]
        ins(%a, %b : memref<4x32xf32>, memref<64x32xf32>)
        outs(%c : memref<4x64xf32>)
  } {fwp.kernel = "k"}
  return
}
