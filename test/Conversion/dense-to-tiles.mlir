// RUN: fwp-opt %s -fwp-dense-to-tiles -split-input-file | FileCheck %s
// RUN: fwp-opt %s -fwp-dense-to-tiles=row-block=16 -split-input-file | FileCheck %s --check-prefix=SMALL

// A projection y[t, b, o] += x[t, b, i] W[o, i] (nn.Linear's layout): the
// T x B rows in tiles of 64 rows by 32 columns of y, one block each, W read
// transposed; then the rows past the last whole tile one at a time.
// CHECK-LABEL: func @projection
// CHECK-SAME: (%[[X:.*]]: memref<?x2x256xf32>, %[[W:.*]]: memref<96x256xf32>, %[[Y:.*]]: memref<?x2x96xf32>)
// CHECK-DAG: %[[XR:.*]] = memref.collapse_shape %[[X]] {{\[\[}}0, 1], [2]]
// CHECK-DAG: %[[YR:.*]] = memref.collapse_shape %[[Y]] {{\[\[}}0, 1], [2]]
// CHECK: scf.forall (%[[I:.*]], %[[J:.*]]) in (%{{.*}}, 3)
// CHECK: %[[YB:.*]] = memref.subview %[[YR]][%{{.*}}, %{{.*}}] [64, 32] [1, 1]
// CHECK: %[[WB:.*]] = memref.subview %[[W]][%{{.*}}, %{{.*}}] [32, 256] [1, 1]
// CHECK: %[[XB:.*]] = memref.subview %[[XR]][%{{.*}}, %{{.*}}] [64, 256] [1, 1]
// CHECK: linalg.matmul indexing_maps = [#{{.*}}, #{{.*}}, #{{.*}}] ins(%[[XB]], %[[WB]] : {{.*}}) outs(%[[YB]] : {{.*}})
// CHECK: } {fwp.kernel = "dense_rows", mapping = [#gpu.block<x>, #gpu.block<y>]}
// CHECK: scf.forall
// CHECK: linalg.matmul {{.*}} outs(%{{.*}} : memref<1x32xf32
// CHECK: } {fwp.kernel = "dense_rows_tail", mapping = [#gpu.block<x>, #gpu.block<y>]}
// CHECK-NOT: linalg.generic
func.func @projection(%x: memref<?x2x256xf32>, %w: memref<96x256xf32>,
                      %y: memref<?x2x96xf32>) {
  linalg.generic {
      indexing_maps = [affine_map<(t, b, o, i) -> (t, b, i)>,
                       affine_map<(t, b, o, i) -> (o, i)>,
                       affine_map<(t, b, o, i) -> (t, b, o)>],
      iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x2x256xf32>, memref<96x256xf32>)
      outs(%y : memref<?x2x96xf32>) {
  ^bb0(%a: f32, %c: f32, %acc: f32):
    %p = arith.mulf %a, %c : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// The input gradient dx[r, i] += dy[r, o] W[o, i] reads W as it is stored;
// 48 columns are not a multiple of 32, so the tiles are 16 wide.
// CHECK-LABEL: func @input_gradient
// CHECK: scf.forall (%{{.*}}, %{{.*}}) in (%{{.*}}, 3)
// CHECK: memref.subview %{{.*}}[%{{.*}}, %{{.*}}] [16, 16] [1, 1] : memref<16x48xf32>
// CHECK: linalg.matmul ins({{.*}}) outs({{.*}} : memref<64x16xf32
// CHECK: fwp.kernel = "dense_rows"
// CHECK-NOT: linalg.generic
func.func @input_gradient(%dy: memref<?x16xf32>, %w: memref<16x48xf32>,
                          %dx: memref<?x48xf32>) {
  linalg.generic {
      indexing_maps = [affine_map<(r, i, o) -> (r, o)>,
                       affine_map<(r, i, o) -> (o, i)>,
                       affine_map<(r, i, o) -> (r, i)>],
      iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%dy, %w : memref<?x16xf32>, memref<16x48xf32>)
      outs(%dx : memref<?x48xf32>) {
  ^bb0(%a: f32, %c: f32, %acc: f32):
    %p = arith.mulf %a, %c : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A weight gradient dW = dy^T x: one 64 x 32 tile of dW a block (a 2 x 1
// grid), each summing the rows 64 at a time with dy read transposed, then
// the rest one at a time. The gate's gradient (4 outputs) gets tiles 4 high.
// CHECK-LABEL: func @weight_gradient
// CHECK: scf.forall (%{{.*}}, %{{.*}}) in (2, 1)
// CHECK: %[[OUT:.*]] = memref.subview %{{.*}}[%{{.*}}, %{{.*}}] [64, 32] [1, 1]
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %{{.*}} step %c64
// CHECK: linalg.matmul {{.*}} ins(%{{.*}}, %{{.*}} : memref<64x64xf32, {{.*}}>, memref<64x32xf32, {{.*}}>) outs(%[[OUT]]
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c1
// CHECK: linalg.matmul {{.*}} ins(%{{.*}}, %{{.*}} : memref<1x64xf32, {{.*}}>, memref<1x32xf32, {{.*}}>) outs(%[[OUT]]
// CHECK: fwp.kernel = "dense_weight_grad"
// SMALL-LABEL: func @weight_gradient
// SMALL: scf.forall (%{{.*}}, %{{.*}}) in (8, 1)
// SMALL: step %c16{{.*}} {
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

// Contractions inside a kernel are the kernel's own: left alone.
// CHECK-LABEL: func @inside_kernel
// CHECK: linalg.generic
func.func @inside_kernel(%x: memref<?x32xf32>, %w: memref<16x32xf32>,
                         %y: memref<?x16xf32>) {
  scf.forall (%i) in (1) {
    linalg.generic {
        indexing_maps = [affine_map<(r, o, i) -> (r, i)>,
                         affine_map<(r, o, i) -> (o, i)>,
                         affine_map<(r, o, i) -> (r, o)>],
        iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%x, %w : memref<?x32xf32>, memref<16x32xf32>)
        outs(%y : memref<?x16xf32>) {
    ^bb0(%a: f32, %c: f32, %acc: f32):
      %p = arith.mulf %a, %c : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
    }
  } {fwp.kernel = "mine"}
  return
}

// -----

// The gate: the zeros its logits start from and the sigmoid after them move
// into each tile (fill, product, map, all on the product's view of the
// output), so neither is a pass of its own. The 4 outputs make tiles 4
// wide.
// CHECK-LABEL: func @gate
// CHECK-SAME: (%[[X:.*]]: memref<?x32xf32>, %[[W:.*]]: memref<4x32xf32>, %[[Z:.*]]: memref<?x4xf32>)
// CHECK-NOT: linalg
// CHECK: %[[ZR:.*]] = memref.collapse_shape %[[Z]]
// CHECK: scf.forall
// CHECK: %[[T:.*]] = memref.subview %[[ZR]][%{{.*}}, %{{.*}}] [64, 4] [1, 1]
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%[[T]] :
// CHECK: linalg.matmul {{.*}} outs(%[[T]] :
// CHECK: linalg.generic {{.*}} outs(%[[T]] :
// CHECK: math.exp
// CHECK: fwp.kernel = "dense_rows"
// CHECK: linalg.fill
// CHECK: linalg.matmul
// CHECK: math.exp
// CHECK: fwp.kernel = "dense_rows_tail"
// CHECK-NOT: linalg
// CHECK: return
func.func @gate(%x: memref<?x32xf32>, %w: memref<4x32xf32>,
                %z: memref<?x4xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%z : memref<?x4xf32>)
  linalg.generic {
      indexing_maps = [affine_map<(r, o, i) -> (r, i)>,
                       affine_map<(r, o, i) -> (o, i)>,
                       affine_map<(r, o, i) -> (r, o)>],
      iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x32xf32>, memref<4x32xf32>)
      outs(%z : memref<?x4xf32>) {
  ^bb0(%a: f32, %c: f32, %acc: f32):
    %p = arith.mulf %a, %c : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  linalg.generic {
      indexing_maps = [affine_map<(r, o) -> (r, o)>],
      iterator_types = ["parallel", "parallel"]}
      outs(%z : memref<?x4xf32>) {
  ^bb0(%v: f32):
    %one = arith.constant 1.0 : f32
    %n = arith.negf %v : f32
    %e = math.exp %n : f32
    %d = arith.addf %one, %e : f32
    %s = arith.divf %one, %d : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// The output layer starts from its bias broadcast along the rows: each tile
// takes its columns of the bias.
// CHECK-LABEL: func @bias_init
// CHECK-SAME: (%[[X:.*]]: memref<?x32xf32>, %[[W:.*]]: memref<32x32xf32>, %[[B:.*]]: memref<32xf32>, %[[Y:.*]]: memref<?x32xf32>)
// CHECK-NOT: linalg
// CHECK: scf.forall
// CHECK: %[[BB:.*]] = memref.subview %[[B]][%{{.*}}] [32] [1]
// CHECK: linalg.generic {{.*}} ins(%[[BB]] : {{.*}}) outs(%{{.*}} : memref<64x32xf32
// CHECK: linalg.matmul
// CHECK: fwp.kernel = "dense_rows"
func.func @bias_init(%x: memref<?x32xf32>, %w: memref<32x32xf32>,
                     %bias: memref<32xf32>, %y: memref<?x32xf32>) {
  linalg.generic {
      indexing_maps = [affine_map<(r, o) -> (o)>,
                       affine_map<(r, o) -> (r, o)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%bias : memref<32xf32>) outs(%y : memref<?x32xf32>) {
  ^bb0(%v: f32, %out: f32):
    linalg.yield %v : f32
  }
  linalg.generic {
      indexing_maps = [affine_map<(r, o, i) -> (r, i)>,
                       affine_map<(r, o, i) -> (o, i)>,
                       affine_map<(r, o, i) -> (r, o)>],
      iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x32xf32>, memref<32x32xf32>)
      outs(%y : memref<?x32xf32>) {
  ^bb0(%a: f32, %c: f32, %acc: f32):
    %p = arith.mulf %a, %c : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Something between the init and the product reads the output: the init
// stays where it is.
// CHECK-LABEL: func @init_read_before
// CHECK: linalg.fill
// CHECK: memref.copy
// CHECK: fwp.kernel = "dense_rows"
func.func @init_read_before(%x: memref<?x32xf32>, %w: memref<32x32xf32>,
                            %y: memref<?x32xf32>, %keep: memref<?x32xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%y : memref<?x32xf32>)
  memref.copy %y, %keep : memref<?x32xf32> to memref<?x32xf32>
  linalg.generic {
      indexing_maps = [affine_map<(r, o, i) -> (r, i)>,
                       affine_map<(r, o, i) -> (o, i)>,
                       affine_map<(r, o, i) -> (r, o)>],
      iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x32xf32>, memref<32x32xf32>)
      outs(%y : memref<?x32xf32>) {
  ^bb0(%a: f32, %c: f32, %acc: f32):
    %p = arith.mulf %a, %c : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// The bias is overwritten between its broadcast and the product: the
// broadcast must read it where it stands, so it stays.
// CHECK-LABEL: func @init_input_written_before
// CHECK: linalg.generic
// CHECK: linalg.fill
// CHECK: fwp.kernel = "dense_rows"
func.func @init_input_written_before(%x: memref<?x32xf32>,
                                     %w: memref<32x32xf32>,
                                     %bias: memref<32xf32>,
                                     %y: memref<?x32xf32>) {
  linalg.generic {
      indexing_maps = [affine_map<(r, o) -> (o)>,
                       affine_map<(r, o) -> (r, o)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%bias : memref<32xf32>) outs(%y : memref<?x32xf32>) {
  ^bb0(%v: f32, %out: f32):
    linalg.yield %v : f32
  }
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%bias : memref<32xf32>)
  linalg.generic {
      indexing_maps = [affine_map<(r, o, i) -> (r, i)>,
                       affine_map<(r, o, i) -> (o, i)>,
                       affine_map<(r, o, i) -> (r, o)>],
      iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x32xf32>, memref<32x32xf32>)
      outs(%y : memref<?x32xf32>) {
  ^bb0(%a: f32, %c: f32, %acc: f32):
    %p = arith.mulf %a, %c : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A bias gradient db[o] = sum over rows of dy[t, b, o]: 64-row tiles of dy
// summed down their 128 columns into rows of partial sums, then one kernel
// adds up the partial rows and the last rows, starting from the fill.
// CHECK-LABEL: func @bias_gradient
// CHECK-SAME: (%[[DY:.*]]: memref<?x2x256xf32>, %[[DB:.*]]: memref<256xf32>)
// CHECK: %[[P:.*]] = memref.alloc(%{{.*}}) : memref<?x256xf32>
// CHECK: scf.forall (%{{.*}}, %{{.*}}) in (%{{.*}}, 2)
// CHECK: linalg.fill {{.*}} outs(%{{.*}} : memref<128xf32
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%{{.*}} : memref<64x128xf32
// CHECK: fwp.kernel = "dense_column_partials"
// CHECK: scf.forall (%{{.*}}) in (2)
// CHECK: %[[S:.*]] = memref.subview %[[DB]][%{{.*}}] [128] [1]
// CHECK: linalg.fill {{.*}} outs(%[[S]] :
// CHECK: scf.for
// CHECK: ins(%{{.*}} : memref<64x128xf32{{.*}}) outs(%[[S]] :
// CHECK: scf.for
// CHECK: ins(%{{.*}} : memref<1x128xf32{{.*}}) outs(%[[S]] :
// CHECK: scf.for
// CHECK: ins(%{{.*}} : memref<1x128xf32{{.*}}) outs(%[[S]] :
// CHECK: fwp.kernel = "dense_column_sums"
// CHECK: memref.dealloc %[[P]]
func.func @bias_gradient(%dy: memref<?x2x256xf32>, %db: memref<256xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%db : memref<256xf32>)
  linalg.generic {
      indexing_maps = [affine_map<(o, t, b) -> (t, b, o)>,
                       affine_map<(o, t, b) -> (o)>],
      iterator_types = ["parallel", "reduction", "reduction"]}
      ins(%dy : memref<?x2x256xf32>) outs(%db : memref<256xf32>) {
  ^bb0(%g: f32, %acc: f32):
    %s = arith.addf %acc, %g : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Products of the same x one after another (here a projection to 64
// outputs and the gate's 4 logits) share one launch: x against both weights
// side by side, 2 column tiles for the first and 1 for the second, each
// block taking the layer its column tile falls in. The launch goes where
// the last product was.
// CHECK-LABEL: func @stacked
// CHECK-SAME: (%[[X:.*]]: memref<?x32xf32>, %[[WQ:.*]]: memref<64x32xf32>, %[[WB:.*]]: memref<4x32xf32>, %[[Q:.*]]: memref<?x64xf32>, %[[Z:.*]]: memref<?x4xf32>)
// CHECK-NOT: linalg.fill
// CHECK: scf.forall (%{{.*}}, %[[J:.*]]) in (%{{.*}}, 3)
// CHECK: %[[IN0:.*]] = arith.andi
// CHECK: scf.if %[[IN0]]
// CHECK: memref.subview %[[WQ]]
// CHECK: linalg.matmul {{.*}} outs(%{{.*}} : memref<64x32xf32
// CHECK: %[[IN1:.*]] = arith.andi
// CHECK: scf.if %[[IN1]]
// CHECK: memref.subview %[[WB]]
// CHECK: linalg.matmul {{.*}} outs(%{{.*}} : memref<64x4xf32
// CHECK: math.exp
// CHECK: fwp.kernel = "dense_rows"
// CHECK: scf.forall (%{{.*}}, %{{.*}}) in (%{{.*}}, 3)
// CHECK: fwp.kernel = "dense_rows_tail"
// CHECK-NOT: fwp.kernel
func.func @stacked(%x: memref<?x32xf32>, %wq: memref<64x32xf32>,
                   %wb: memref<4x32xf32>, %q: memref<?x64xf32>,
                   %z: memref<?x4xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%q : memref<?x64xf32>)
  linalg.generic {
      indexing_maps = [affine_map<(r, o, i) -> (r, i)>,
                       affine_map<(r, o, i) -> (o, i)>,
                       affine_map<(r, o, i) -> (r, o)>],
      iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %wq : memref<?x32xf32>, memref<64x32xf32>)
      outs(%q : memref<?x64xf32>) {
  ^bb0(%a: f32, %c: f32, %acc: f32):
    %p = arith.mulf %a, %c : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  linalg.fill ins(%zero : f32) outs(%z : memref<?x4xf32>)
  linalg.generic {
      indexing_maps = [affine_map<(r, o, i) -> (r, i)>,
                       affine_map<(r, o, i) -> (o, i)>,
                       affine_map<(r, o, i) -> (r, o)>],
      iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %wb : memref<?x32xf32>, memref<4x32xf32>)
      outs(%z : memref<?x4xf32>) {
  ^bb0(%a: f32, %c: f32, %acc: f32):
    %p = arith.mulf %a, %c : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  linalg.generic {
      indexing_maps = [affine_map<(r, o) -> (r, o)>],
      iterator_types = ["parallel", "parallel"]}
      outs(%z : memref<?x4xf32>) {
  ^bb0(%v: f32):
    %one = arith.constant 1.0 : f32
    %n = arith.negf %v : f32
    %e = math.exp %n : f32
    %d = arith.addf %one, %e : f32
    %s = arith.divf %one, %d : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// The first output is read before the second product: each keeps its own
// launch, in place.
// CHECK-LABEL: func @not_stacked
// CHECK: fwp.kernel = "dense_rows"
// CHECK: fwp.kernel = "dense_rows_tail"
// CHECK: memref.copy
// CHECK: fwp.kernel = "dense_rows"
// CHECK: fwp.kernel = "dense_rows_tail"
func.func @not_stacked(%x: memref<?x32xf32>, %wq: memref<64x32xf32>,
                       %wk: memref<64x32xf32>, %q: memref<?x64xf32>,
                       %k: memref<?x64xf32>, %keep: memref<?x64xf32>) {
  linalg.generic {
      indexing_maps = [affine_map<(r, o, i) -> (r, i)>,
                       affine_map<(r, o, i) -> (o, i)>,
                       affine_map<(r, o, i) -> (r, o)>],
      iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %wq : memref<?x32xf32>, memref<64x32xf32>)
      outs(%q : memref<?x64xf32>) {
  ^bb0(%a: f32, %c: f32, %acc: f32):
    %p = arith.mulf %a, %c : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  memref.copy %q, %keep : memref<?x64xf32> to memref<?x64xf32>
  linalg.generic {
      indexing_maps = [affine_map<(r, o, i) -> (r, i)>,
                       affine_map<(r, o, i) -> (o, i)>,
                       affine_map<(r, o, i) -> (r, o)>],
      iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %wk : memref<?x32xf32>, memref<64x32xf32>)
      outs(%k : memref<?x64xf32>) {
  ^bb0(%a: f32, %c: f32, %acc: f32):
    %p = arith.mulf %a, %c : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}
