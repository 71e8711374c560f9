"""The whole FastWeightsAttention module as one differentiable function.

`attention(x, w_q, w_k, w_v, w_beta, w_o, b_o, heads=...)` runs fwp's
compiled forward, and its backward under autograd, as the custom operator
torch.ops.fwp.attention (fwp._ops): the layouts are the seeds' (x
[seq_len, batch, d_model]; nn.Linear weights [out, in]), so contiguous
tensors go to the kernels by pointer, without copies.
"""

import math
import torch

from . import _ops
from ._checks import check_tensor, fail
from ._kernels import DTYPES, RULES


def _fail(message):
    fail("attention", message)


def _check_tensor(name, t, shape, dtype, device=None):
    check_tensor("attention", name, t, shape, dtype, like="x", device=device)


def _check_arguments(x, weights, heads, nu, eps, rule):
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"fwp.attention: x is a {type(x).__name__}, expected "
                        "a torch.Tensor")
    if x.dtype not in DTYPES:
        raise TypeError(f"fwp.attention: x is {x.dtype}; fwp runs float32, "
                        "float64, bfloat16 or float16")
    if x.dim() != 3:
        _fail(f"x has shape {list(x.shape)}, expected [seq_len, batch, "
              "d_model]")
    if rule not in RULES:
        _fail(f"rule is {rule!r}, expected 'delta' or 'sum'")
    d_model = x.shape[2]
    if not isinstance(heads, int) or heads < 1 or d_model % heads:
        _fail(f"heads = {heads!r} does not divide d_model = {d_model}")
    d_head = d_model // heads
    if not isinstance(nu, int) or not 1 <= nu <= 2 * d_head - 1:
        _fail(f"nu = {nu!r}, expected 1 <= nu <= 2 d_head - 1 = "
              f"{2 * d_head - 1}")
    if not (isinstance(eps, (int, float)) and math.isfinite(eps) and eps > 0):
        _fail(f"eps = {eps!r}, expected a finite number > 0")
    square = (d_model, d_model)
    shapes = [square, square, square, (heads, d_model), square, (d_model,)]
    _check_tensor("x", x, tuple(x.shape), x.dtype)
    for name, t, shape in zip(("w_q", "w_k", "w_v", "w_beta", "w_o", "b_o"),
                              weights, shapes):
        _check_tensor(name, t, shape, x.dtype, x.device)


def attention(x, w_q, w_k, w_v, w_beta, w_o, b_o, *, heads, nu=1, eps=1e-6,
              rule="delta", chunk_size=None):
    """y = FastWeightsAttention(x) with DPFP(nu, eps) and the given rule.

    x, y: [seq_len, batch, d_model]; w_q, w_k, w_v, w_o: [d_model, d_model]
    and w_beta: [heads, d_model] (nn.Linear weights, no bias); b_o:
    [d_model]. All on one device (the CPU, or CUDA: then in PyTorch's
    current stream), of one dtype (float32, float64,
    bfloat16 or float16; 16-bit is storage only, the arithmetic is float32).
    Differentiable in x and every weight. w_beta is read by the delta rule
    only; under the sum rule its gradient is zero.
    """
    weights = (w_q, w_k, w_v, w_beta, w_o, b_o)
    _check_arguments(x, weights, heads, nu, eps, rule)
    if chunk_size is not None and (not isinstance(chunk_size, int) or
                                   chunk_size < 1):
        _fail(f"chunk_size = {chunk_size!r}, expected a positive int")
    # The kernels read the tensors in place: a copy only where the strides
    # are not the contiguous ones.
    weights = [w.contiguous() for w in weights]
    return _ops.attention(x.contiguous(), *weights, heads, nu, float(eps),
                          rule, chunk_size or 0)
