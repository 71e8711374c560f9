// The whole FastWeightsAttention module: d_model = 32, 4 heads of d_k = 8,
// DPFP with nu = 2, the delta rule. The sequence length is dynamic.
//
//   fwp-opt examples/attention.mlir

func.func @fast_weights_attention(
    %x: tensor<?x2x32xf32>, %w_q: tensor<32x32xf32>, %w_k: tensor<32x32xf32>,
    %w_v: tensor<32x32xf32>, %w_beta: tensor<4x32xf32>,
    %w_o: tensor<32x32xf32>, %b_o: tensor<32xf32>) -> tensor<?x2x32xf32> {
  %y = fwp.attention %x, %w_q, %w_k, %w_v, %w_beta, %w_o, %b_o
      heads = 4 nu = 2 rule = delta
      : (tensor<?x2x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>,
         tensor<32x32xf32>, tensor<4x32xf32>, tensor<32x32xf32>,
         tensor<32xf32>) -> tensor<?x2x32xf32>
  return %y : tensor<?x2x32xf32>
}
