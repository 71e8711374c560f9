// RUN: fwp-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{'fwp.kernel_config' configures a function, not 'arith.constant'}}
%0 = arith.constant {fwp.kernel_config = #fwp.kernel_config<target = cpu, chunk_size = 64>} 0 : i32

// -----

// expected-error @+1 {{'fwp.kernel_config' must be a #fwp.kernel_config, got 64 : i64}}
func.func @not_a_config() attributes {fwp.kernel_config = 64} {
  return
}

// -----

// expected-error @+1 {{chunk_size must lie in [1, 4096], got 5000}}
func.func @big_chunks() attributes {fwp.kernel_config = #fwp.kernel_config<target = cpu, chunk_size = 5000>} {
  return
}

// -----

// expected-error @+1 {{scratch_slots must not be negative, got -1}}
func.func @negative_slots() attributes {fwp.kernel_config = #fwp.kernel_config<target = cpu, chunk_size = 64, scratch_slots = -1>} {
  return
}

// -----

// expected-error @+1 {{a GPU configuration needs products and a block_size that is a multiple of 32 in [32, 1024], got 0}}
func.func @no_block_size() attributes {fwp.kernel_config = #fwp.kernel_config<target = gpu, chunk_size = 64, value_block = 32, state_memory = workgroup>} {
  return
}
