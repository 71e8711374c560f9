"""Compiles, into $FWP_CACHE_DIR, every CUDA kernel that the GPU bundle's
Python part runs (test/python/test_cuda.py and bench/gpu_vs_fla.py), so
that libfwp_runtime.so finds them on a GPU machine without the compiler.
Run by `make gpu-bundle`; needs no GPU."""

import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "python"))
import fwp  # noqa: E402

F32, BF16 = torch.float32, torch.bfloat16

# dtype, d_key, d_value, rule, nu (0: q and k are features)
SCANS = [
    (F32, 8, 8, "delta", 1), (F32, 4, 4, "delta", 0), (F32, 16, 8, "delta", 0),
    (F32, 4, 8, "sum", 2), (F32, 64, 64, "delta", 1), (F32, 4, 8, "delta", 1),
    (F32, 4, 4, "delta", 1), (F32, 4, 4, "sum", 1), (F32, 16, 16, "delta", 1),
    (BF16, 8, 8, "delta", 1),
    # bench/gpu_vs_fla.py
    (BF16, 64, 64, "delta", 1), (BF16, 64, 128, "delta", 1),
    (F32, 64, 128, "delta", 1),
]
# dtype, heads, d_model, nu, rule
MODULES = [
    (F32, 2, 16, 1, "delta"), (F32, 2, 16, 2, "sum"),
    (BF16, 16, 1024, 1, "delta"),  # bench/gpu_vs_fla.py
]

if not os.environ.get("FWP_CACHE_DIR"):
    sys.exit("prepare_kernels.py: set FWP_CACHE_DIR to the bundle's cache")
start = time.time()
for dtype, d_key, d_value, rule, nu in SCANS:
    fwp.prepare_cuda_scan(dtype, d_key, d_value, rule=rule,
                          dpfp=fwp.DPFP(nu) if nu else None)
for dtype, heads, d_model, nu, rule in MODULES:
    fwp.prepare_cuda_attention(dtype, heads, d_model, nu=nu, rule=rule)
print(f"prepare_kernels.py: {len(SCANS)} scans and {len(MODULES)} modules "
      f"for CUDA in {time.time() - start:.0f} s")
