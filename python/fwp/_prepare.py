"""Compiling CUDA kernels ahead of time, on a machine without a GPU.

A GPU machine without fwp's compiler (MLIR/LLVM) runs fwp through
libfwp_runtime.so, which finds kernels in the disk cache only. Where fwp is
built, these functions compile the kernels a program will need into the
cache ($FWP_CACHE_DIR, else ~/.cache/fwp), for that directory to be copied
to the GPU machine:

    FWP_CACHE_DIR=/tmp/kernels python3 -c "import fwp, torch; \\
        fwp.prepare_cuda_scan(torch.bfloat16, 64, 64, dpfp=fwp.DPFP(1))"
"""

import torch

from . import _capi, _kernels, _scan
from ._checks import fail

_CUDA = torch.device("cuda", 0)


def prepare_cuda_scan(dtype, d_key, d_value, *, rule="delta", dpfp=None,
                      chunk_size=None):
    """Compiles what fwp.delta_rule runs on CUDA tensors of `dtype` with q,
    k [.., K = d_key] and v [.., V = d_value] (forward and backward)."""
    if dtype not in _kernels.DTYPES:
        fail("prepare_cuda_scan", f"dtype {dtype}, expected float32, "
             "float64, bfloat16 or float16", TypeError)
    if rule not in _kernels.RULES:
        fail("prepare_cuda_scan", f"rule is {rule!r}, expected 'delta' or "
             "'sum'")
    nu, eps, _ = _scan._feature_map("prepare_cuda_scan", dpfp, d_key)
    _kernels.scan(_CUDA, dtype, rule, d_key, d_value, nu, eps,
                chunk_size or 0).prepare()


def prepare_cuda_attention(dtype, heads, d_model, *, nu=1, eps=1e-6,
                           rule="delta", chunk_size=None):
    """Compiles what fwp.attention (and fwp.nn.FastWeightsAttention) runs on
    CUDA tensors of `dtype`, forward and backward."""
    if dtype not in _kernels.DTYPES:
        fail("prepare_cuda_attention", f"dtype {dtype}, expected float32, "
             "float64, bfloat16 or float16", TypeError)
    if not isinstance(heads, int) or heads < 1 or d_model % heads:
        fail("prepare_cuda_attention", f"heads = {heads!r} does not divide "
             f"d_model = {d_model}")
    _kernels.attention(_CUDA, dtype, rule, heads, d_model // heads, nu,
                       float(eps), chunk_size or 0).prepare()


def compiler_available():
    """Whether fwp compiles kernels here (libfwp.so) or only loads them
    from the disk cache (libfwp_runtime.so)."""
    return _capi.compiler_available()
