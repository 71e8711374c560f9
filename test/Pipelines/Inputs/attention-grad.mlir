// The gradient of a small module (d_model 8, 2 heads, nu 2), for the
// pipeline tests.
func.func @g(%x: tensor<?x?x8xf32>, %w: tensor<8x8xf32>, %wb: tensor<2x8xf32>, %bo: tensor<8xf32>, %dy: tensor<?x?x8xf32>)
    -> (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<2x8xf32>, tensor<8x8xf32>, tensor<8xf32>) {
  %dx, %dwq, %dwk, %dwv, %dwb, %dwo, %dbo = fwp.attention_grad %x, %w, %w, %w, %wb, %w, %bo dy(%dy) heads = 2 nu = 2
      : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<2x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<?x?x8xf32>)
      -> (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<2x8xf32>, tensor<8x8xf32>, tensor<8xf32>)
  return %dx, %dwq, %dwk, %dwv, %dwb, %dwo, %dbo : tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<2x8xf32>, tensor<8x8xf32>, tensor<8xf32>
}
