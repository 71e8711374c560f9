// RUN: fwp-opt %s -split-input-file -verify-diagnostics -pass-pipeline='builtin.module(gpu.module(fwp-kernel-launch-bounds))' | FileCheck %s
// RUN: fwp-opt %s -split-input-file -pass-pipeline='builtin.module(gpu.module(fwp-kernel-launch-bounds{min-blocks=2}))' | FileCheck %s --check-prefix=TWO
// RUN: not fwp-opt %s -pass-pipeline='builtin.module(gpu.module(fwp-kernel-launch-bounds{min-blocks=0}))' 2>&1 | FileCheck %s --check-prefix=BAD

// BAD: error: fwp-kernel-launch-bounds: min-blocks must be in [1, 32], got 0

// Kernels get nvvm.minctasm (PTX .minnctapersm); device functions do not.
// CHECK-LABEL: gpu.module @kernels
// CHECK: gpu.func @scan_state() kernel attributes {nvvm.minctasm = 1 : i32}
// CHECK: gpu.func @helper() {
// TWO: gpu.func @scan_state() kernel attributes {nvvm.minctasm = 2 : i32}
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @scan_state() kernel {
      gpu.return
    }
    gpu.func @helper() {
      gpu.return
    }
  }
}
