// RUN: fwp-opt %s -fwp-dense-to-vectors -split-input-file | FileCheck %s

// A projection y[t, b, o] += x[t, b, i] W[o, i] (nn.Linear's layout): W is
// transposed once, the T x B rows are taken 8 at a time, the blocks in
// parallel (then the rest one at a time), each block accumulated in a stack
// buffer with the register-tiled outer-product kernel, in a function of its
// own.
// CHECK-LABEL: func @projection
// CHECK-SAME: (%[[X:.*]]: memref<?x2x32xf32>, %[[W:.*]]: memref<16x32xf32>, %[[Y:.*]]: memref<?x2x16xf32>)
// CHECK: %[[WT:.*]] = memref.alloc() : memref<32x16xf32>
// CHECK: linalg.transpose ins(%[[W]] : memref<16x32xf32>) outs(%[[WT]] : memref<32x16xf32>) permutation = [1, 0]
// CHECK: memref.collapse_shape %[[X]] {{\[\[}}0, 1], [2]]
// CHECK: scf.forall
// CHECK: %[[ACC:.*]] = memref.alloca() : memref<8x16xf32>
// CHECK: call @[[COPY_IN:dense_tile[0-9]+]](%{{.*}}, %[[ACC]])
// CHECK: call @[[PRODUCT:dense_tile[0-9]+]](%{{.*}}, %[[WT]], %[[ACC]])
// CHECK: call @{{dense_tile[0-9]+}}(%[[ACC]], %{{.*}})
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c1
// CHECK: memref.dealloc %[[WT]]
// CHECK-NOT: linalg.generic
// CHECK: func.func private @[[PRODUCT]]({{.*}}) attributes {fwp.kernel = "dense", {{.*}}passthrough = ["noinline"]}
// CHECK: scf.for %{{.*}} = %c0 to %c32 step %c1 iter_args(%{{.*}} = %{{.*}}) -> (vector<8x16xf32>)
// CHECK: vector.fma %{{.*}}, %{{.*}}, %{{.*}} : vector<16xf32>
func.func @projection(%x: memref<?x2x32xf32>, %w: memref<16x32xf32>,
                      %y: memref<?x2x16xf32>) {
  linalg.generic {
      indexing_maps = [affine_map<(t, b, o, i) -> (t, b, i)>,
                       affine_map<(t, b, o, i) -> (o, i)>,
                       affine_map<(t, b, o, i) -> (t, b, o)>],
      iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x2x32xf32>, memref<16x32xf32>)
      outs(%y : memref<?x2x16xf32>) {
  ^bb0(%a: f32, %c: f32, %acc: f32):
    %p = arith.mulf %a, %c : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A weight gradient dW = dy^T x sums over the rows: 64 rows of dW a block
// (an scf.forall over 128 / 64 blocks, on every core: a block reads all of
// x, so tall blocks read it fewer times), each summing 64 rows at a time,
// then the rest one at a time, with dy read transposed; each 8 x 32
// register tile of the block's accumulator stays in registers across its
// 64 rows.
// CHECK-LABEL: func @weight_gradient
// CHECK: scf.forall (%{{.*}}) in (2)
// CHECK: memref.alloca() : memref<64x32xf32>
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c64 {
// CHECK: call @[[BLOCK:dense_tile[0-9]+]]
// CHECK: call @[[ROW:dense_tile[0-9]+]]
// CHECK-NOT: linalg.generic
// CHECK: func.func private @[[BLOCK]]
// CHECK: scf.for %{{.*}} = %c0 to %c64 step %c8 {
// CHECK: scf.for %{{.*}} = %c0 to %c64 step %c1 iter_args(%{{.*}}) -> (vector<8x32xf32>)
// CHECK-COUNT-8: vector.fma {{.*}} : vector<32xf32>
// CHECK: func.func private @[[ROW]]
// CHECK: vector.fma
func.func @weight_gradient(%dy: memref<?x128xf32>, %x: memref<?x32xf32>,
                           %dw: memref<128x32xf32>) {
  linalg.generic {
      indexing_maps = [affine_map<(o, i, r) -> (r, o)>,
                       affine_map<(o, i, r) -> (r, i)>,
                       affine_map<(o, i, r) -> (o, i)>],
      iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%dy, %x : memref<?x128xf32>, memref<?x32xf32>)
      outs(%dw : memref<128x32xf32>) {
  ^bb0(%a: f32, %c: f32, %acc: f32):
    %p = arith.mulf %a, %c : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// The input gradient dx[r, i] += dy[r, o] W[o, i] is the projection's product
// with W already [in, out]: no transposed copy, rows 8 at a time.
// CHECK-LABEL: func @input_gradient
// CHECK-NOT: linalg.transpose
// CHECK: scf.forall
// CHECK: call @[[PRODUCT:dense_tile[0-9]+]](%{{.*}}, %{{.*}}, %{{.*}}) : (memref<8x16xf32, {{.*}}>, memref<16x32xf32>, memref<8x32xf32>)
// CHECK-NOT: linalg.generic
// CHECK: func.func private @[[PRODUCT]]
// CHECK: vector.fma
func.func @input_gradient(%dy: memref<?x16xf32>, %w: memref<16x32xf32>,
                          %dx: memref<?x32xf32>) {
  linalg.generic {
      indexing_maps = [affine_map<(r, i, o) -> (r, o)>,
                       affine_map<(r, i, o) -> (o, i)>,
                       affine_map<(r, i, o) -> (r, i)>],
      iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%dy, %w : memref<?x16xf32>, memref<16x32xf32>)
      outs(%dx : memref<?x32xf32>) {
  ^bb0(%a: f32, %c: f32, %acc: f32):
    %p = arith.mulf %a, %c : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// The bias gradient db[o] += sum over the rows of dy[t, b, o] is interchanged
// so that o is innermost: its loops sweep each row of dy contiguously.
// CHECK-DAG: #[[ROWS:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[COLUMN:.*]] = affine_map<(d0, d1, d2) -> (d2)>
// CHECK-LABEL: func @bias_gradient
// CHECK: linalg.generic {indexing_maps = [#[[ROWS]], #[[COLUMN]]], iterator_types = ["reduction", "reduction", "parallel"]}
func.func @bias_gradient(%dy: memref<?x2x16xf32>, %db: memref<16xf32>) {
  linalg.generic {
      indexing_maps = [affine_map<(o, t, b) -> (t, b, o)>,
                       affine_map<(o, t, b) -> (o)>],
      iterator_types = ["parallel", "reduction", "reduction"]}
      ins(%dy : memref<?x2x16xf32>) outs(%db : memref<16xf32>) {
  ^bb0(%g: f32, %acc: f32):
    %s = arith.addf %acc, %g : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// The gate: a block's accumulator starts from the zeros z was filled with
// (no fill of z, no copy of z's rows in), and the sigmoid is applied to it
// before it is stored (no pass over z of its own). The sigmoid's constant
// from above is cloned into its function.
// CHECK-LABEL: func @gate
// CHECK-NOT: linalg.fill
// CHECK: scf.forall
// CHECK: %[[ACC:.*]] = memref.alloca() : memref<8x16xf32>
// CHECK: call @[[ZERO:dense_tile[0-9]+]](%{{.*}}, %[[ACC]])
// CHECK: call @[[PRODUCT:dense_tile[0-9]+]](%{{.*}}, %{{.*}}, %[[ACC]])
// CHECK: call @[[SIGMOID:dense_tile[0-9]+]](%[[ACC]])
// CHECK-NOT: linalg.generic
// CHECK: func.func private @[[ZERO]](%[[VALUE:.*]]: f32, %[[TILE:.*]]: memref<8x16xf32>)
// CHECK: vector.broadcast %[[VALUE]] : f32 to vector<1x16xf32>
// CHECK: vector.store %{{.*}}, %[[TILE]]
// CHECK: func.func private @[[PRODUCT]]
// CHECK: vector.fma
// CHECK: func.func private @[[SIGMOID]](%[[TILE:.*]]: memref<8x16xf32>)
// CHECK: arith.constant dense<1.000000e+00> : vector<1x16xf32>
// CHECK: vector.load %[[TILE]]
// CHECK: math.exp {{.*}} : vector<1x16xf32>
// CHECK: vector.store %{{.*}}, %[[TILE]]
func.func @gate(%x: memref<?x32xf32>, %w: memref<16x32xf32>,
                %z: memref<?x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  linalg.fill ins(%zero : f32) outs(%z : memref<?x16xf32>)
  linalg.generic {
      indexing_maps = [affine_map<(r, o, i) -> (r, i)>,
                       affine_map<(r, o, i) -> (o, i)>,
                       affine_map<(r, o, i) -> (r, o)>],
      iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x32xf32>, memref<16x32xf32>)
      outs(%z : memref<?x16xf32>) {
  ^bb0(%a: f32, %c: f32, %acc: f32):
    %p = arith.mulf %a, %c : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  linalg.generic {
      indexing_maps = [affine_map<(r, o) -> (r, o)>],
      iterator_types = ["parallel", "parallel"]}
      outs(%z : memref<?x16xf32>) {
  ^bb0(%v: f32):
    %n = arith.negf %v : f32
    %e = math.exp %n : f32
    %d = arith.addf %one, %e : f32
    %s = arith.divf %one, %d : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Two projections of the same shapes (q and k) share their blocks'
// functions: the code is made once.
// CHECK-LABEL: func @two_projections
// CHECK: call @[[PRODUCT:dense_tile[0-9]+]](%{{.*}}, %{{.*}}, %{{.*}}) : (memref<8x32xf32, {{.*}}>, memref<32x16xf32>, memref<8x16xf32>)
// CHECK: call @[[PRODUCT]](%{{.*}}, %{{.*}}, %{{.*}}) : (memref<8x32xf32, {{.*}}>, memref<32x16xf32>, memref<8x16xf32>)
// CHECK-COUNT-1: func.func private @[[PRODUCT]]
// CHECK-NOT: func.func private @[[PRODUCT]]
func.func @two_projections(%x: memref<?x32xf32>, %wq: memref<16x32xf32>,
                           %wk: memref<16x32xf32>, %q: memref<?x16xf32>,
                           %k: memref<?x16xf32>) {
  linalg.generic {
      indexing_maps = [affine_map<(r, o, i) -> (r, i)>,
                       affine_map<(r, o, i) -> (o, i)>,
                       affine_map<(r, o, i) -> (r, o)>],
      iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %wq : memref<?x32xf32>, memref<16x32xf32>)
      outs(%q : memref<?x16xf32>) {
  ^bb0(%a: f32, %c: f32, %acc: f32):
    %p = arith.mulf %a, %c : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  linalg.generic {
      indexing_maps = [affine_map<(r, o, i) -> (r, i)>,
                       affine_map<(r, o, i) -> (o, i)>,
                       affine_map<(r, o, i) -> (r, o)>],
      iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %wk : memref<?x32xf32>, memref<16x32xf32>)
      outs(%k : memref<?x16xf32>) {
  ^bb0(%a: f32, %c: f32, %acc: f32):
    %p = arith.mulf %a, %c : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}
