// Tile-level "chunk" kernel in the style of chunked (gated) delta-rule attention.
// For every (bh, vb) in parallel:  (bh = batch*head*chunk index, vb = 64-wide value block)
//   Kt  = transpose(K[bh])                      128x64   (linalg.transpose)
//   S   = Q[bh] (64x128) * Kt (128x64)          64x64    (linalg.matmul)
//   S'  = S * exp(g[r] - g[c]) if c <= r else 0 (linalg.generic: decay + causal mask)
//   O[bh][:, vb*64:+64] = S' (64x64) * V[bh][:, vb*64:+64] (64x64)   (linalg.matmul)
// plus a second, equivalent formulation of Q*K^T directly via linalg.matmul with
// transposed-B indexing maps in @chunk_tb.
#id2 = affine_map<(r, c) -> (r, c)>
#row = affine_map<(r, c) -> (r)>
#col = affine_map<(r, c) -> (c)>
func.func @chunk(%Q: memref<?x64x128xf32>, %K: memref<?x64x128xf32>,
                 %V: memref<?x64x128xf32>, %G: memref<?x64xf32>,
                 %O: memref<?x64x128xf32>) attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %n = memref.dim %Q, %c0 : memref<?x64x128xf32>
  scf.forall (%bh, %vb) in (%n, 2) {
    %voff = affine.apply affine_map<(d) -> (d * 64)>(%vb)
    %q = memref.subview %Q[%bh, 0, 0] [1, 64, 128] [1, 1, 1]
        : memref<?x64x128xf32> to memref<64x128xf32, strided<[128, 1], offset: ?>>
    %k = memref.subview %K[%bh, 0, 0] [1, 64, 128] [1, 1, 1]
        : memref<?x64x128xf32> to memref<64x128xf32, strided<[128, 1], offset: ?>>
    %v = memref.subview %V[%bh, 0, %voff] [1, 64, 64] [1, 1, 1]
        : memref<?x64x128xf32> to memref<64x64xf32, strided<[128, 1], offset: ?>>
    %o = memref.subview %O[%bh, 0, %voff] [1, 64, 64] [1, 1, 1]
        : memref<?x64x128xf32> to memref<64x64xf32, strided<[128, 1], offset: ?>>
    %g = memref.subview %G[%bh, 0] [1, 64] [1, 1]
        : memref<?x64xf32> to memref<64xf32, strided<[1], offset: ?>>
    %kt = memref.alloca() {alignment = 64 : i64} : memref<128x64xf32>
    %s = memref.alloca() {alignment = 64 : i64} : memref<64x64xf32>
    linalg.transpose ins(%k : memref<64x128xf32, strided<[128, 1], offset: ?>>)
                     outs(%kt : memref<128x64xf32>) permutation = [1, 0]
    linalg.fill ins(%zero : f32) outs(%s : memref<64x64xf32>)
    linalg.matmul ins(%q, %kt : memref<64x128xf32, strided<[128, 1], offset: ?>>, memref<128x64xf32>)
                  outs(%s : memref<64x64xf32>)
    linalg.generic {indexing_maps = [#row, #col, #id2], iterator_types = ["parallel", "parallel"]}
        ins(%g, %g : memref<64xf32, strided<[1], offset: ?>>, memref<64xf32, strided<[1], offset: ?>>)
        outs(%s : memref<64x64xf32>) {
    ^bb0(%gr: f32, %gc: f32, %x: f32):
      %r = linalg.index 0 : index
      %c = linalg.index 1 : index
      %keep = arith.cmpi ule, %c, %r : index
      %d = arith.subf %gr, %gc : f32
      %e = math.exp %d : f32
      %y = arith.mulf %x, %e : f32
      %z = arith.select %keep, %y, %zero : f32
      linalg.yield %z : f32
    }
    linalg.fill ins(%zero : f32) outs(%o : memref<64x64xf32, strided<[128, 1], offset: ?>>)
    linalg.matmul ins(%s, %v : memref<64x64xf32>, memref<64x64xf32, strided<[128, 1], offset: ?>>)
                  outs(%o : memref<64x64xf32, strided<[128, 1], offset: ?>>)
  }
  return
}

// Same computation, Q*K^T expressed directly as a transposed-B matmul.
func.func @chunk_tb(%Q: memref<?x64x128xf32>, %K: memref<?x64x128xf32>,
                    %V: memref<?x64x128xf32>, %G: memref<?x64xf32>,
                    %O: memref<?x64x128xf32>) attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %n = memref.dim %Q, %c0 : memref<?x64x128xf32>
  scf.forall (%bh, %vb) in (%n, 2) {
    %voff = affine.apply affine_map<(d) -> (d * 64)>(%vb)
    %q = memref.subview %Q[%bh, 0, 0] [1, 64, 128] [1, 1, 1]
        : memref<?x64x128xf32> to memref<64x128xf32, strided<[128, 1], offset: ?>>
    %k = memref.subview %K[%bh, 0, 0] [1, 64, 128] [1, 1, 1]
        : memref<?x64x128xf32> to memref<64x128xf32, strided<[128, 1], offset: ?>>
    %v = memref.subview %V[%bh, 0, %voff] [1, 64, 64] [1, 1, 1]
        : memref<?x64x128xf32> to memref<64x64xf32, strided<[128, 1], offset: ?>>
    %o = memref.subview %O[%bh, 0, %voff] [1, 64, 64] [1, 1, 1]
        : memref<?x64x128xf32> to memref<64x64xf32, strided<[128, 1], offset: ?>>
    %g = memref.subview %G[%bh, 0] [1, 64] [1, 1]
        : memref<?x64xf32> to memref<64xf32, strided<[1], offset: ?>>
    %s = memref.alloca() {alignment = 64 : i64} : memref<64x64xf32>
    linalg.fill ins(%zero : f32) outs(%s : memref<64x64xf32>)
    linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>,
                                   affine_map<(m, n, k) -> (n, k)>,
                                   affine_map<(m, n, k) -> (m, n)>]
                  ins(%q, %k : memref<64x128xf32, strided<[128, 1], offset: ?>>, memref<64x128xf32, strided<[128, 1], offset: ?>>)
                  outs(%s : memref<64x64xf32>)
    linalg.generic {indexing_maps = [#row, #col, #id2], iterator_types = ["parallel", "parallel"]}
        ins(%g, %g : memref<64xf32, strided<[1], offset: ?>>, memref<64xf32, strided<[1], offset: ?>>)
        outs(%s : memref<64x64xf32>) {
    ^bb0(%gr: f32, %gc: f32, %x: f32):
      %r = linalg.index 0 : index
      %c = linalg.index 1 : index
      %keep = arith.cmpi ule, %c, %r : index
      %d = arith.subf %gr, %gc : f32
      %e = math.exp %d : f32
      %y = arith.mulf %x, %e : f32
      %z = arith.select %keep, %y, %zero : f32
      linalg.yield %z : f32
    }
    linalg.fill ins(%zero : f32) outs(%o : memref<64x64xf32, strided<[128, 1], offset: ?>>)
    linalg.matmul ins(%s, %v : memref<64x64xf32>, memref<64x64xf32, strided<[128, 1], offset: ?>>)
                  outs(%o : memref<64x64xf32, strided<[128, 1], offset: ?>>)
  }
  return
}
