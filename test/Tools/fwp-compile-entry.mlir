// fwp-compile --backend: one kernel description's entry points, compiled
// into the directories the disk cache holds (docs/compiled-modules.md). No
// IR is read; this file only carries the RUN lines.

// RUN: rm -rf %t && fwp-compile --backend cuda --heads 2 --d-head 4 --nu 2 --rule sum -o %t | FileCheck %s
// CHECK: /forward: cuda f32 sum heads=2 d_head=4 nu=2 eps=1e-06 chunk=64 entry=forward target=sm_90 compiler=
// CHECK: /backward: cuda f32 sum heads=2 d_head=4 nu=2 eps=1e-06 chunk=64 entry=backward target=sm_90 compiler=

// RUN: FileCheck %s --check-prefix=MANIFEST < %t/forward/module.txt
// MANIFEST: fwp-module 1
// MANIFEST: backend cuda
// MANIFEST: entry forward
// MANIFEST: file plan.fwp

// RUN: rm -rf %t.cpu && fwp-compile --backend cpu --heads 1 --d-head 4 --dtype f64 --chunk-size 8 --entry forward -o %t.cpu | FileCheck %s --check-prefix=CPU
// RUN: test -f %t.cpu/forward/kernel.so && test ! -e %t.cpu/backward
// CPU: /forward: cpu f64 delta heads=1 d_head=4 nu=1 eps=1e-06 chunk=8 entry=forward target=

// The shared object exports its entry points only: the functions that the
// split into one part per core made global are hidden.
// RUN: nm -D --defined-only -j %t.cpu/forward/kernel.so | FileCheck %s --check-prefix=EXPORTS
// EXPORTS: {{^}}_mlir_ciface_fwp_attention{{$}}
// EXPORTS-NEXT: {{^}}fwp_attention{{$}}
// EXPORTS-NOT: {{.}}

// RUN: not fwp-compile --backend cpu --heads 2 --d-head 4 --chip sm_90 -o %t.chip 2>&1 | FileCheck %s --check-prefix=CHIP
// CHIP: fwp-compile: --chip is for --backend cuda; the CPU code is for this host

// RUN: not fwp-compile --backend cuda --heads 2 --d-head 0 -o %t.bad 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: fwp-compile: invalid kernel description: dHead must be >= 1, got 0

// RUN: not fwp-compile --backend cuda --heads 2 --d-head 4 -o %t 2>&1 | FileCheck %s --check-prefix=EXISTS
// EXISTS: /forward: exists already; give a new directory

// RUN: not fwp-compile -o %t.none 2>&1 | FileCheck %s --check-prefix=NEITHER
// NEITHER: fwp-compile: give either an .mlir input (with --function) or --backend cpu|cuda and a kernel description, not neither
