// The PTX pipeline produces one gpu.binary whose PTX holds our scan kernels
// and the kernels of the projections.
// RUN: fwp-opt %fwp_src_root/examples/attention.mlir -fwp-to-ptx | FileCheck %s
// RUN: fwp-opt %fwp_src_root/examples/scan.mlir '-fwp-to-ptx=chip=sm_80 block-size=256' \
// RUN:   | FileCheck %s --check-prefix=SM80
// RUN: fwp-opt %fwp_src_root/examples/scan.mlir '-fwp-to-ptx=gpu-stages=1' \
// RUN:   | FileCheck %s --check-prefix=STAGES --implicit-check-not='gpu.binary @scan_'
// RUN: not fwp-opt %fwp_src_root/examples/scan.mlir '-fwp-to-ptx=f32-products=f16' 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BADPRODUCTS
// BADPRODUCTS: for the --f32-products option: Cannot find option named 'f16'!

// CHECK: gpu.binary @{{.*}} [#gpu.object<#nvvm.target<O = 3, chip = "sm_90">
// CHECK-SAME: .target sm_90
// CHECK-SAME: .entry

// SM80: #nvvm.target<O = 3, chip = "sm_80">
// SM80-SAME: .maxntid 256, 1, 1

// The scan's kernels with gpu-stages: one per chunk operation, the outputs
// made in the states' kernel.
// STAGES-DAG: gpu.binary @chunk_wy
// STAGES-DAG: gpu.binary @chunk_states_output
