// Every verifier message of the chunked scan's stages, once each.
// RUN: fwp-opt %s -split-input-file -verify-diagnostics

func.func @chunk_size(%k: tensor<40x2x4x32xf32>, %v: tensor<40x2x4x8xf32>,
                      %b: tensor<40x2x4xf32>) {
  // expected-error @+1 {{chunk_size must be at least 1, got 0}}
  %wt, %ut = fwp.chunk_wy %k, %v, %b chunk_size = 0
      : tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>, tensor<40x2x4xf32>
      -> tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>
  return
}

// -----

func.func @wy_result(%k: tensor<40x2x4x32xf32>, %v: tensor<40x2x4x8xf32>,
                     %b: tensor<40x2x4xf32>) {
  // expected-error @+1 {{'wt' dimension 3 (D) is 16, but 'k' gives D = 32}}
  %wt, %ut = fwp.chunk_wy %k, %v, %b chunk_size = 16
      : tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>, tensor<40x2x4xf32>
      -> tensor<40x2x4x16xf32>, tensor<40x2x4x8xf32>
  return
}

// -----

func.func @chunk_count(%k: tensor<40x2x4x32xf32>, %v: tensor<40x2x4x8xf32>) {
  // expected-error @+1 {{'h' dimension 2 (chunks) is 2, but 'seq_len / chunk_size' gives chunks = 3}}
  %h, %u, %final = fwp.chunk_states %k, %v chunk_size = 16
      : tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>
      -> tensor<2x4x2x8x32xf32>, tensor<40x2x4x8xf32>, tensor<2x4x8x32xf32>
  return
}

// -----

func.func @initial_state(%k: tensor<40x2x4x32xf32>, %v: tensor<40x2x4x8xf32>,
                         %s0: tensor<2x4x32x8xf32>) {
  // expected-error @+1 {{'initial' dimension 2 (d_v) is 32, but 'values' gives d_v = 8}}
  %h, %u, %final = fwp.chunk_states %k, %v initial(%s0 : tensor<2x4x32x8xf32>)
      chunk_size = 16 : tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>
      -> tensor<2x4x3x8x32xf32>, tensor<40x2x4x8xf32>, tensor<2x4x8x32xf32>
  return
}

// -----

func.func @output_layout(%q: tensor<2x40x4x32xf32>, %k: tensor<40x2x4x32xf32>,
                         %u: tensor<40x2x4x8xf32>, %h: tensor<2x4x3x8x32xf32>) {
  // expected-error @+1 {{'k' dimension 0 (seq_len) is 40, but 'q' gives seq_len = 2}}
  %y = fwp.chunk_output %q, %k, %u, %h chunk_size = 16
      : tensor<2x40x4x32xf32>, tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>,
        tensor<2x4x3x8x32xf32> -> tensor<40x2x4x8xf32>
  return
}

// -----

func.func @handed_element_types(%q: tensor<40x2x4x32xf32>,
    %k: tensor<40x2x4x32xf32>, %u: tensor<40x2x4x8xf32>,
    %h: tensor<2x4x3x8x32xf64>) {
  // expected-error @+1 {{'u' has element type 'f32', but 'h' has 'f64'; what the stages hand each other shares one type}}
  %y = fwp.chunk_output %q, %k, %u, %h chunk_size = 16
      : tensor<40x2x4x32xf32>, tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>,
        tensor<2x4x3x8x32xf64> -> tensor<40x2x4x8xf32>
  return
}

// -----

func.func @handed_in_storage_type(%k: tensor<40x2x4x32xbf16>,
    %v: tensor<40x2x4x8xbf16>, %b: tensor<40x2x4xbf16>) {
  // expected-error @+1 {{'wt' has element type 'bf16': the stages hand each other f32 or f64 tensors}}
  %wt, %ut = fwp.chunk_wy %k, %v, %b chunk_size = 16
      : tensor<40x2x4x32xbf16>, tensor<40x2x4x8xbf16>, tensor<40x2x4xbf16>
      -> tensor<40x2x4x32xbf16>, tensor<40x2x4x8xbf16>
  return
}

// -----

func.func @storage_wider_than_arithmetic(%q: tensor<40x2x4x32xf64>,
    %k: tensor<40x2x4x32xf32>, %u: tensor<40x2x4x8xf32>,
    %h: tensor<2x4x3x8x32xf32>) {
  // expected-error @+1 {{'q' has element type 'f64', wider than the arithmetic type 'f32'}}
  %y = fwp.chunk_output %q, %k, %u, %h chunk_size = 16
      : tensor<40x2x4x32xf64>, tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>,
        tensor<2x4x3x8x32xf32> -> tensor<40x2x4x8xf32>
  return
}

// -----

func.func @states_grad_chunks(%q: tensor<40x2x4x32xf32>,
    %k: tensor<40x2x4x32xf32>, %dy: tensor<40x2x4x8xf32>) {
  // expected-error @+1 {{'dh' dimension 2 (chunks) is 5, but 'seq_len / chunk_size' gives chunks = 3}}
  %du, %dh, %d0 = fwp.chunk_states_grad %q, %k, %dy chunk_size = 16
      : tensor<40x2x4x32xf32>, tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>
      -> tensor<40x2x4x8xf32>, tensor<2x4x5x8x32xf32>, tensor<2x4x8x32xf32>
  return
}

// -----

func.func @qk_grad_dwt(%q: tensor<40x2x4x32xf32>, %k: tensor<40x2x4x32xf32>,
    %u: tensor<40x2x4x8xf32>, %h: tensor<2x4x3x8x32xf32>,
    %dy: tensor<40x2x4x8xf32>) {
  // expected-error @+1 {{'dwt' dimension 3 (D) is 8, but 'q' gives D = 32}}
  %dq, %dk, %dwt = fwp.chunk_qk_grad %q, %k, %u, %h, %h, %dy, %dy
      chunk_size = 16 : tensor<40x2x4x32xf32>, tensor<40x2x4x32xf32>,
      tensor<40x2x4x8xf32>, tensor<2x4x3x8x32xf32>, tensor<2x4x3x8x32xf32>,
      tensor<40x2x4x8xf32>, tensor<40x2x4x8xf32>
      -> tensor<40x2x4x32xf32>, tensor<40x2x4x32xf32> dwt(tensor<40x2x4x8xf32>)
  return
}

// -----

func.func @wy_grad_dbeta(%k: tensor<40x2x4x32xf32>, %v: tensor<40x2x4x8xf32>,
    %b: tensor<40x2x4xf32>, %dwt: tensor<40x2x4x32xf32>) {
  // expected-error @+1 {{'dbeta' must have rank 3 [seq_len, batch, heads], got 'tensor<40x2x4x1xf32>'}}
  %dk, %dv, %db = fwp.chunk_wy_grad %k, %v, %b, %v, %dwt chunk_size = 16
      : tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>, tensor<40x2x4xf32>,
        tensor<40x2x4x8xf32>, tensor<40x2x4x32xf32>
      -> tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>, tensor<40x2x4x1xf32>
  return
}
