// Every verifier message, once each.
// RUN: fwp-opt %s -split-input-file -verify-diagnostics

func.func @dpfp_scalar(%k: tensor<f32>) {
  // expected-error @+1 {{'input' must have at least one dimension}}
  %f = fwp.dpfp %k : tensor<f32> -> tensor<f32>
  return
}

// -----

func.func @dpfp_rank(%k: tensor<4x8xf32>) {
  // expected-error @+1 {{result must have the rank of 'input' (2)}}
  %f = fwp.dpfp %k : tensor<4x8xf32> -> tensor<64xf32>
  return
}

// -----

func.func @dpfp_element_type(%k: tensor<4x8xbf16>) {
  // expected-error @+1 {{result element type 'f16' is neither 'input' element type 'bf16' nor f32 for a 16-bit input}}
  %f = fwp.dpfp %k : tensor<4x8xbf16> -> tensor<4x16xf16>
  return
}

// -----

func.func @dpfp_leading_dim(%k: tensor<4x8xf32>) {
  // expected-error @+1 {{'result' dimension 0 (leading dim 0) is 5, but 'input' gives leading dim 0 = 4}}
  %f = fwp.dpfp %k : tensor<4x8xf32> -> tensor<5x16xf32>
  return
}

// -----

func.func @dpfp_feature_size(%k: tensor<4x8xf32>) {
  // expected-error @+1 {{result feature size is 32, expected 2 * d * nu = 16}}
  %f = fwp.dpfp %k : tensor<4x8xf32> -> tensor<4x32xf32>
  return
}

// -----

func.func @dpfp_grad_features(%k: tensor<4x8xf32>, %g: tensor<4x8xf32>) {
  // expected-error @+1 {{d_features feature size is 8, expected 2 * d * nu = 16}}
  %dk = fwp.dpfp_grad %k, %g : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @dpfp_grad_result(%k: tensor<4x8xf32>, %g: tensor<4x16xf32>) {
  // expected-error @+1 {{'d_input' must have the type of 'input' ('tensor<4x8xf32>'), got 'tensor<4x16xf32>'}}
  %dk = fwp.dpfp_grad %k, %g : tensor<4x8xf32>, tensor<4x16xf32> -> tensor<4x16xf32>
  return
}

// -----

func.func @dpfp_nu_zero(%k: tensor<4x8xf32>) {
  // expected-error @+1 {{nu must be at least 1, got 0}}
  %f = fwp.dpfp %k nu = 0 : tensor<4x8xf32> -> tensor<4x?xf32>
  return
}

// -----

func.func @dpfp_nu_too_large(%k: tensor<4x2xf32>) {
  // expected-error @+1 {{nu = 4 is out of range [1, 3] for d = 2}}
  %f = fwp.dpfp %k nu = 4 : tensor<4x2xf32> -> tensor<4x16xf32>
  return
}

// -----

func.func @dpfp_eps(%k: tensor<4x8xf32>) {
  // expected-error @+1 {{eps must be positive and finite, got 0}}
  %f = fwp.dpfp %k eps = 0.0 : tensor<4x8xf32> -> tensor<4x16xf32>
  return
}

// -----

func.func @dpfp_integer(%k: tensor<4x8xi32>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of floating-point values}}
  %f = fwp.dpfp %k : tensor<4x8xi32> -> tensor<4x16xi32>
  return
}

// -----

func.func @gate_rank(%x: tensor<2x32xf32>, %w: tensor<4x32xf32>) {
  // expected-error @+1 {{'x' must have rank 3 [seq_len, batch, d_model], got 'tensor<2x32xf32>'}}
  %b = fwp.gate %x, %w : tensor<2x32xf32>, tensor<4x32xf32> -> tensor<2x1x4xf32>
  return
}

// -----

func.func @gate_d_model(%x: tensor<8x2x32xf32>, %w: tensor<4x16xf32>) {
  // expected-error @+1 {{'w_beta' dimension 1 (d_model) is 16, but 'x' gives d_model = 32}}
  %b = fwp.gate %x, %w : tensor<8x2x32xf32>, tensor<4x16xf32> -> tensor<8x2x4xf32>
  return
}

// -----

func.func @gate_heads(%x: tensor<8x2x32xf32>, %w: tensor<4x32xf32>) {
  // expected-error @+1 {{'beta' dimension 2 (heads) is 3, but 'w_beta' gives heads = 4}}
  %b = fwp.gate %x, %w : tensor<8x2x32xf32>, tensor<4x32xf32> -> tensor<8x2x3xf32>
  return
}

// -----

func.func @gate_element_type(%x: tensor<8x2x32xf32>, %w: tensor<4x32xf64>) {
  // expected-error @+1 {{'w_beta' has element type 'f64', but 'x' has 'f32'; all tensors of the op share one element type}}
  %b = fwp.gate %x, %w : tensor<8x2x32xf32>, tensor<4x32xf64> -> tensor<8x2x4xf32>
  return
}

// -----

func.func @scan_delta_needs_beta(%q: tensor<8x1x2x4xf32>, %v: tensor<8x1x2x2xf32>) {
  // expected-error @+1 {{the delta rule requires 'beta'}}
  %y = fwp.scan delta %q, %q, %v
      : tensor<8x1x2x4xf32>, tensor<8x1x2x4xf32>, tensor<8x1x2x2xf32> -> tensor<8x1x2x2xf32>
  return
}

// -----

func.func @scan_sum_rejects_beta(%q: tensor<8x1x2x4xf32>, %v: tensor<8x1x2x2xf32>,
                                 %b: tensor<8x1x2xf32>) {
  // expected-error @+1 {{the sum rule takes no 'beta'}}
  %y = fwp.scan sum %q, %q, %v beta(%b : tensor<8x1x2xf32>)
      : tensor<8x1x2x4xf32>, tensor<8x1x2x4xf32>, tensor<8x1x2x2xf32> -> tensor<8x1x2x2xf32>
  return
}

// -----

func.func @scan_key_features(%q: tensor<8x1x2x4xf32>, %k: tensor<8x1x2x6xf32>,
                             %v: tensor<8x1x2x2xf32>) {
  // expected-error @+1 {{'k' dimension 3 (D) is 6, but 'q' gives D = 4}}
  %y = fwp.scan sum %q, %k, %v
      : tensor<8x1x2x4xf32>, tensor<8x1x2x6xf32>, tensor<8x1x2x2xf32> -> tensor<8x1x2x2xf32>
  return
}

// -----

func.func @scan_beta_steps(%q: tensor<8x1x2x4xf32>, %v: tensor<8x1x2x2xf32>,
                           %b: tensor<7x1x2xf32>) {
  // expected-error @+1 {{'beta' dimension 0 (seq_len) is 7, but 'q' gives seq_len = 8}}
  %y = fwp.scan delta %q, %q, %v beta(%b : tensor<7x1x2xf32>)
      : tensor<8x1x2x4xf32>, tensor<8x1x2x4xf32>, tensor<8x1x2x2xf32> -> tensor<8x1x2x2xf32>
  return
}

// -----

func.func @scan_initial_state(%q: tensor<8x1x2x4xf32>, %v: tensor<8x1x2x2xf32>,
                              %s: tensor<1x2x4x2xf32>) {
  // expected-error @+1 {{'initial' dimension 2 (d_v) is 4, but 'v' gives d_v = 2}}
  %y = fwp.scan sum %q, %q, %v initial(%s : tensor<1x2x4x2xf32>)
      : tensor<8x1x2x4xf32>, tensor<8x1x2x4xf32>, tensor<8x1x2x2xf32> -> tensor<8x1x2x2xf32>
  return
}

// -----

func.func @scan_output(%q: tensor<8x1x2x4xf32>, %v: tensor<8x1x2x2xf32>) {
  // expected-error @+1 {{'y' dimension 3 (d_v) is 4, but 'v' gives d_v = 2}}
  %y = fwp.scan sum %q, %q, %v
      : tensor<8x1x2x4xf32>, tensor<8x1x2x4xf32>, tensor<8x1x2x2xf32> -> tensor<8x1x2x4xf32>
  return
}

// -----

func.func @scan_final_state(%q: tensor<8x1x2x4xf32>, %v: tensor<8x1x2x2xf32>) {
  // expected-error @+1 {{'final_state' must have rank 4 [batch, heads, d_v, D], got 'tensor<2x2x4xf32>'}}
  %y, %s = fwp.scan sum %q, %q, %v
      : tensor<8x1x2x4xf32>, tensor<8x1x2x4xf32>, tensor<8x1x2x2xf32>
      -> tensor<8x1x2x2xf32>, tensor<2x2x4xf32>
  return
}

// -----

func.func @attention_heads(%x: tensor<8x1x32xf32>, %w: tensor<32x32xf32>,
                           %wb: tensor<1x32xf32>, %bo: tensor<32xf32>) {
  // expected-error @+1 {{heads must be at least 1, got 0}}
  %y = fwp.attention %x, %w, %w, %w, %wb, %w, %bo heads = 0
      : (tensor<8x1x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>,
         tensor<1x32xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<8x1x32xf32>
  return
}

// -----

func.func @attention_heads_divide(%x: tensor<8x1x32xf32>, %w: tensor<32x32xf32>,
                                  %wb: tensor<3x32xf32>, %bo: tensor<32xf32>) {
  // expected-error @+1 {{heads = 3 does not divide d_model = 32}}
  %y = fwp.attention %x, %w, %w, %w, %wb, %w, %bo heads = 3
      : (tensor<8x1x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>,
         tensor<3x32xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<8x1x32xf32>
  return
}

// -----

func.func @attention_gate_rows(%x: tensor<8x1x32xf32>, %w: tensor<32x32xf32>,
                               %wb: tensor<2x32xf32>, %bo: tensor<32xf32>) {
  // expected-error @+1 {{'w_beta' dimension 0 (heads) is 2, but 'heads attribute' gives heads = 4}}
  %y = fwp.attention %x, %w, %w, %w, %wb, %w, %bo heads = 4
      : (tensor<8x1x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>,
         tensor<2x32xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<8x1x32xf32>
  return
}

// -----

func.func @attention_nu(%x: tensor<8x1x8xf32>, %w: tensor<8x8xf32>,
                        %wb: tensor<4x8xf32>, %bo: tensor<8xf32>) {
  // expected-error @+1 {{nu = 4 is out of range [1, 3] for d_k = d_model / heads = 2}}
  %y = fwp.attention %x, %w, %w, %w, %wb, %w, %bo heads = 4 nu = 4
      : (tensor<8x1x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>,
         tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<8x1x8xf32>
  return
}

// -----

func.func @attention_eps(%x: tensor<8x1x8xf32>, %w: tensor<8x8xf32>,
                         %wb: tensor<4x8xf32>, %bo: tensor<8xf32>) {
  // expected-error @+1 {{eps must be positive and finite, got -1}}
  %y = fwp.attention %x, %w, %w, %w, %wb, %w, %bo heads = 4 eps = -1.0
      : (tensor<8x1x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>,
         tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<8x1x8xf32>
  return
}

// -----

func.func @attention_bias(%x: tensor<8x1x8xf32>, %w: tensor<8x8xf32>,
                          %wb: tensor<4x8xf32>, %bo: tensor<16xf32>) {
  // expected-error @+1 {{'b_o' dimension 0 (d_model) is 16, but 'x' gives d_model = 8}}
  %y = fwp.attention %x, %w, %w, %w, %wb, %w, %bo heads = 4
      : (tensor<8x1x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>,
         tensor<4x8xf32>, tensor<8x8xf32>, tensor<16xf32>) -> tensor<8x1x8xf32>
  return
}

// -----

func.func @attention_rule(%x: tensor<8x1x8xf32>, %w: tensor<8x8xf32>,
                          %wb: tensor<4x8xf32>, %bo: tensor<8xf32>) {
  // expected-error @+1 {{enum values for attribute 'rule' [delta, sum]}}
  %y = fwp.attention %x, %w, %w, %w, %wb, %w, %bo heads = 4 rule = hebb
      : (tensor<8x1x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>,
         tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<8x1x8xf32>
  return
}

// -----

func.func @scan_dpfp_state_width(%q: tensor<8x1x2x4xf32>, %v: tensor<8x1x2x4xf32>) {
  // expected-error @+1 {{'final_state' dimension 3 (D) is 8, but 'q with DPFP' gives D = 16}}
  %y, %s = fwp.scan sum %q, %q, %v dpfp(nu = 2, eps = 1.0e-6)
      : tensor<8x1x2x4xf32>, tensor<8x1x2x4xf32>, tensor<8x1x2x4xf32>
      -> tensor<8x1x2x4xf32>, tensor<1x2x4x8xf32>
  return
}

// -----

func.func @scan_dpfp_pair(%q: tensor<8x1x2x4xf32>, %v: tensor<8x1x2x4xf32>) {
  // expected-error @+1 {{'dpfp_nu' and 'dpfp_eps' go together}}
  %y = "fwp.scan"(%q, %q, %v) {rule = 1 : i32, dpfp_nu = 2 : i64,
                                operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>}
      : (tensor<8x1x2x4xf32>, tensor<8x1x2x4xf32>, tensor<8x1x2x4xf32>) -> tensor<8x1x2x4xf32>
  return
}

// -----

func.func @scan_grad_dbeta(%q: tensor<8x1x2x4xf32>, %v: tensor<8x1x2x2xf32>,
                           %b: tensor<8x1x2xf32>) {
  // expected-error @+1 {{'dbeta' is returned exactly when 'beta' is given}}
  %dq, %dk, %dv = fwp.scan_grad delta %q, %q, %v beta(%b : tensor<8x1x2xf32>)
      dy(%v : tensor<8x1x2x2xf32>)
      : tensor<8x1x2x4xf32>, tensor<8x1x2x4xf32>, tensor<8x1x2x2xf32>
      -> tensor<8x1x2x4xf32>, tensor<8x1x2x4xf32>, tensor<8x1x2x2xf32>
  return
}

// -----

func.func @scan_grad_type(%q: tensor<8x1x2x4xf32>, %v: tensor<8x1x2x2xf32>) {
  // expected-error @+1 {{'dk' must have the type of 'k' ('tensor<8x1x2x4xf32>'), got 'tensor<?x1x2x4xf32>'}}
  %dq, %dk, %dv = fwp.scan_grad sum %q, %q, %v dy(%v : tensor<8x1x2x2xf32>)
      : tensor<8x1x2x4xf32>, tensor<8x1x2x4xf32>, tensor<8x1x2x2xf32>
      -> tensor<8x1x2x4xf32>, tensor<?x1x2x4xf32>, tensor<8x1x2x2xf32>
  return
}

// -----

func.func @scan_grad_y(%q: tensor<8x1x2x4xf32>, %v: tensor<8x1x2x2xf32>) {
  // expected-error @+1 {{'y' dimension 3 (d_v) is 4, but 'v' gives d_v = 2}}
  %dq, %dk, %dv, %y = fwp.scan_grad sum %q, %q, %v dy(%v : tensor<8x1x2x2xf32>)
      : tensor<8x1x2x4xf32>, tensor<8x1x2x4xf32>, tensor<8x1x2x2xf32>
      -> tensor<8x1x2x4xf32>, tensor<8x1x2x4xf32>, tensor<8x1x2x2xf32>
         y(tensor<8x1x2x4xf32>)
  return
}

// -----

func.func @scan_grad_dy(%q: tensor<8x1x2x4xf32>, %v: tensor<8x1x2x2xf32>,
                        %dy: tensor<8x1x2x3xf32>) {
  // expected-error @+1 {{'dy' dimension 3 (d_v) is 3, but 'v' gives d_v = 2}}
  %dq, %dk, %dv = fwp.scan_grad sum %q, %q, %v dy(%dy : tensor<8x1x2x3xf32>)
      : tensor<8x1x2x4xf32>, tensor<8x1x2x4xf32>, tensor<8x1x2x2xf32>
      -> tensor<8x1x2x4xf32>, tensor<8x1x2x4xf32>, tensor<8x1x2x2xf32>
  return
}

// -----

func.func @attention_grad_dy(%x: tensor<8x1x8xf32>, %w: tensor<8x8xf32>,
                             %wb: tensor<4x8xf32>, %bo: tensor<8xf32>,
                             %dy: tensor<8x2x8xf32>) {
  // expected-error @+1 {{'dy' dimension 1 (batch) is 2, but 'x' gives batch = 1}}
  %dx, %dwq, %dwk, %dwv, %dwb, %dwo, %dbo = fwp.attention_grad
      %x, %w, %w, %w, %wb, %w, %bo dy(%dy) heads = 4
      : (tensor<8x1x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>,
         tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8x2x8xf32>)
      -> (tensor<8x1x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>,
          tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @attention_grad_type(%x: tensor<8x1x8xf32>, %w: tensor<8x8xf32>,
                               %wb: tensor<4x8xf32>, %bo: tensor<8xf32>) {
  // expected-error @+1 {{'db_o' must have the type of 'b_o' ('tensor<8xf32>'), got 'tensor<?xf32>'}}
  %dx, %dwq, %dwk, %dwv, %dwb, %dwo, %dbo = fwp.attention_grad
      %x, %w, %w, %w, %wb, %w, %bo dy(%x) heads = 4
      : (tensor<8x1x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>,
         tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8x1x8xf32>)
      -> (tensor<8x1x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>,
          tensor<4x8xf32>, tensor<8x8xf32>, tensor<?xf32>)
  return
}

// -----

func.func @kernel_on_other_op(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{'fwp.kernel' marks an scf.forall, a gpu.launch or a function, not 'scf.for'}}
  scf.for %i = %c0 to %n step %c1 {
  } {fwp.kernel = "k"}
  return
}

// -----

func.func @kernel_name_not_identifier(%n: index) {
  // expected-error @+1 {{'fwp.kernel' must name the kernel with an identifier string, got "scan prepare"}}
  scf.forall (%i) in (%n) {
  } {fwp.kernel = "scan prepare"}
  return
}

// -----

func.func @kernel_name_not_string(%n: index) {
  // expected-error @+1 {{'fwp.kernel' must name the kernel with an identifier string, got 3 : i64}}
  scf.forall (%i) in (%n) {
  } {fwp.kernel = 3}
  return
}

// -----

func.func @unknown_attribute(%n: index) {
  // expected-error @+1 {{unknown fwp attribute 'fwp.kernal'}}
  scf.forall (%i) in (%n) {
  } {fwp.kernal = "k"}
  return
}

// -----

func.func @scan_batch_first_sizes(%q: tensor<2x5x4x8xf32>,
                                  %v: tensor<3x5x4x8xf32>)
    -> tensor<3x5x4x8xf32> {
  // expected-error @+1 {{'v' dimension 0 (batch) is 3, but 'q' gives batch = 2}}
  %y = fwp.scan sum %q, %q, %v batch_first
      : tensor<2x5x4x8xf32>, tensor<2x5x4x8xf32>, tensor<3x5x4x8xf32>
      -> tensor<3x5x4x8xf32>
  return %y : tensor<3x5x4x8xf32>
}
