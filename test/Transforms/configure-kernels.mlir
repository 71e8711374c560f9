// RUN: fwp-opt %s -split-input-file -fwp-configure-kernels | FileCheck %s --check-prefix=CPU
// RUN: fwp-opt %s -split-input-file -fwp-configure-kernels="target=gpu chunk-size=32 block-size=256 products=tf32" | FileCheck %s --check-prefix=GPU
// RUN: fwp-opt %s -split-input-file -fwp-configure-kernels=target=gpu-on-host | FileCheck %s --check-prefix=HOST
// RUN: fwp-opt %s -split-input-file -fwp-configure-kernels='config=#fwp.kernel_config<target=cpu,chunk_size=8>' | FileCheck %s --check-prefix=GIVEN
// RUN: not fwp-opt %s -split-input-file -fwp-configure-kernels=chunk-size=0 2>&1 | FileCheck %s --check-prefix=CHUNK
// RUN: not fwp-opt %s -split-input-file -fwp-configure-kernels="target=gpu block-size=48" 2>&1 | FileCheck %s --check-prefix=BLOCK
// RUN: not fwp-opt %s -split-input-file -fwp-configure-kernels='config=#fwp.kernel_config<target=gpu,chunk_size=8>' 2>&1 | FileCheck %s --check-prefix=PARTIAL
// RUN: not fwp-opt %s -split-input-file -fwp-configure-kernels='config=#fwp.kernel_config<target="gpu-on-host",chunk_size=8,value_block=32,state_memory=registers>' 2>&1 | FileCheck %s --check-prefix=MEMORY
// RUN: not fwp-opt %s -split-input-file -fwp-configure-kernels=config=64 2>&1 | FileCheck %s --check-prefix=NOTCONFIG
// RUN: not fwp-opt %s -split-input-file -fwp-configure-kernels=target=tpu 2>&1 | FileCheck %s --check-prefix=TARGET

// Each target's choices (lib/Transforms/KernelConfig.cpp) recorded on the
// function; the CPU's needs only the chunk size.
// CPU-LABEL: func @scan
// CPU-SAME: fwp.kernel_config = #fwp.kernel_config<target = cpu, chunk_size = 64>
// GPU-LABEL: func @scan
// GPU-SAME: fwp.kernel_config = #fwp.kernel_config<target = gpu, chunk_size = 32, value_block = 32, state_memory = workgroup, scratch_slots = 512, local_bytes = 34816, stage_floats = 8192, products = tf32, block_size = 256>
// HOST-LABEL: func @scan
// HOST-SAME: fwp.kernel_config = #fwp.kernel_config<target = "gpu-on-host", chunk_size = 64, value_block = 32, state_memory = stack, scratch_slots = 8, local_bytes = 34816>
// GIVEN-LABEL: func @scan
// GIVEN-SAME: fwp.kernel_config = #fwp.kernel_config<target = cpu, chunk_size = 8>

// CHUNK: error: fwp-configure-kernels: chunk_size must lie in [1, 4096], got 0
// BLOCK: error: fwp-configure-kernels: a GPU configuration needs products and a block_size that is a multiple of 32 in [32, 1024], got 48
// PARTIAL: error: a GPU configuration needs a value_block and a state_memory
// MEMORY: error: expected one of [workspace, workgroup, stack] for where fwp-tile-scan's unfused state kernels keep their block of the state across the chunks, got: registers
// NOTCONFIG: error: fwp-configure-kernels: config must be a #fwp.kernel_config, got '64'
// TARGET: for the --target option: Cannot find option named 'tpu'!
func.func @scan(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

// A function that has a configuration keeps it.
// CPU-LABEL: func @configured
// CPU-SAME: #fwp.kernel_config<target = cpu, chunk_size = 16>
// GPU-LABEL: func @configured
// GPU-SAME: #fwp.kernel_config<target = cpu, chunk_size = 16>
func.func @configured(%x: tensor<4xf32>) -> tensor<4xf32>
    attributes {fwp.kernel_config = #fwp.kernel_config<target = cpu, chunk_size = 16>} {
  return %x : tensor<4xf32>
}
