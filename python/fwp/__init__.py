"""fwp: fast-weight attention on compiled kernels, for PyTorch.

    import fwp
    layer = fwp.nn.FastWeightsAttention(heads=4, d_model=64,
                                        dropout_prob=0.0, phi=fwp.nn.DPFP(1))
    y = layer(x)            # x: [seq_len, batch, d_model]; y.backward(...)

`fwp.attention(x, w_q, w_k, w_v, w_beta, w_o, b_o, heads=...)` is the same
module as a function; `fwp.delta_rule(q, k, v, beta, dpfp=fwp.DPFP(1))` is
the bare scan with fla's interface (states, packed sequences) and
`fwp.delta_rule_step` one step of it, for decoding; `fwp.fla` has fla's
`chunk_delta_rule` and `fused_recurrent_delta_rule` with fla's semantics
(scale, float32 states), a drop-in. CPU tensors and CUDA
tensors (any cuda:N, in its current stream) both work. Kernels are compiled on
first use by libfwp.so (the fwp build's C ABI) and kept in fwp's disk cache
(~/.cache/fwp); on a machine without the compiler, libfwp_runtime.so runs
CUDA kernels compiled elsewhere into that cache (fwp.prepare_cuda_scan,
fwp.prepare_cuda_attention).
"""

__version__ = "0.1.0"  # CMakeLists.txt's project(fwp VERSION ...)

from . import fla, nn
from ._attention import attention
from ._capi import LibraryNotFound
from ._scan import delta_rule, delta_rule_step
from ._dpfp import DPFP
from ._prepare import (compiler_available, prepare_cuda_attention,
                       prepare_cuda_scan)

__all__ = ["__version__", "attention", "fla", "delta_rule", "delta_rule_step", "DPFP", "nn",
           "LibraryNotFound", "compiler_available", "prepare_cuda_attention",
           "prepare_cuda_scan"]
