// A bare delta-rule scan: DPFP maps raw queries and keys (d_k = 16) to
// D = 2 * 16 * nu = 32 features, then the fast weights (d_v x D = 16 x 32
// per batch element and head) are written and read step by step.
//
//   fwp-opt examples/scan.mlir
//
// Stage by stage, one flag per pass:
//   fwp-opt examples/scan.mlir -fwp-configure-kernels=chunk-size=16 \
//     -fwp-scan-to-chunks                                      # the stages
//   ... -fwp-lower-chunks                                      # linalg
//   fwp-opt examples/scan.mlir \
//     -fwp-configure-kernels="target=gpu chunk-size=16" \
//     -fwp-fuse-dpfp -fwp-tile-scan              # the GPU's tile-level kernels

func.func @delta_scan(%q: tensor<64x1x4x16xf32>, %k: tensor<64x1x4x16xf32>,
                      %v: tensor<64x1x4x16xf32>, %beta: tensor<64x1x4xf32>)
    -> (tensor<64x1x4x16xf32>, tensor<1x4x16x32xf32>) {
  %fq = fwp.dpfp %q nu = 1 : tensor<64x1x4x16xf32> -> tensor<64x1x4x32xf32>
  %fk = fwp.dpfp %k nu = 1 : tensor<64x1x4x16xf32> -> tensor<64x1x4x32xf32>
  %y, %state = fwp.scan delta %fq, %fk, %v beta(%beta : tensor<64x1x4xf32>)
      : tensor<64x1x4x32xf32>, tensor<64x1x4x32xf32>, tensor<64x1x4x16xf32>
      -> tensor<64x1x4x16xf32>, tensor<1x4x16x32xf32>
  return %y, %state : tensor<64x1x4x16xf32>, tensor<1x4x16x32xf32>
}
