// Benchmark kernel: C(64x64) = A(64x128) * B(128x64), f32, row-major.
func.func @mm(%A: memref<64x128xf32>, %B: memref<128x64xf32>, %C: memref<64x64xf32>)
    attributes {llvm.emit_c_interface} {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%C : memref<64x64xf32>)
  linalg.matmul ins(%A, %B : memref<64x128xf32>, memref<128x64xf32>)
                outs(%C : memref<64x64xf32>)
  return
}
