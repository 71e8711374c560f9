"""A drop-in for fla's delta rule: fla's signatures, defaults and return
values on fwp's kernels.

    from fwp.fla import chunk_delta_rule, fused_recurrent_delta_rule

Both take what fla's `fla.ops.delta_rule` functions take, in fla's
positional order: q, k [B, T, H, K], v [B, T, H, V], beta [B, T, H] (or
headwise [B, T, H, V]; None: ones), scale (None: K^-0.5),
initial_state [N, H, K, V], output_final_state, use_qk_l2norm_in_kernel,
cu_seqlens; and return (o [B, T, H, V] in the inputs' dtype, the final
state [N, H, K, V] or None). As in fla, states are float32 for 16-bit
inputs, and the final state is contiguous. Any strides; float32 and
float64 as well as bfloat16 and float16 (fla's chunk_delta_rule refuses
float32). Decoding is fla's too: a call on [B, 1, H, *] with the state.

`fwp.delta_rule` keeps fwp's own semantics: no scale (q as given), states
in the inputs' dtype, DPFP fused into the kernels, the sum rule.

How fla's semantics map onto fwp's kernels, and what they cost:
- The L2 norm (fla's: x / sqrt(sum x^2 + 1e-6)) of q and k and the scale
  of q are applied in PyTorch before the scan, in float32.
- fwp's kernels keep states in the storage dtype. With 16-bit inputs and a
  state in or out, the scan runs on float32 copies of the inputs, so the
  float32 state is exact; without states it runs on the 16-bit inputs.
- Headwise beta updates each value column with its own gate: the columns
  of the state are independent, so each (head, column) is a head of one
  value column (q and k repeated V times: memory V times theirs).
"""

import math

import torch

from ._checks import fail
from ._kernels import DTYPES
from ._scan import delta_rule

_SIXTEEN_BIT = (torch.bfloat16, torch.float16)
_L2NORM_EPS = 1e-6


def _l2norm(x):
    """fla's in-kernel L2 norm of the last dimension."""
    return x * torch.rsqrt(x.square().sum(-1, keepdim=True) + _L2NORM_EPS)


def _check(function, q, k, v, beta, scale, initial_state):
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor):
            fail(function, f"{name} is a {type(t).__name__}, expected a "
                 "torch.Tensor", TypeError)
        if t.dim() != 4:
            fail(function, f"{name} has shape {list(t.shape)}, expected 4 "
                 "dimensions [B, T, H, *]")
    if v.dtype not in DTYPES:
        fail(function, f"v is {v.dtype}; fwp runs float32, float64, "
             "bfloat16 or float16", TypeError)
    for name, t in (("q", q), ("k", k)):
        if t.dtype != v.dtype:
            fail(function, f"{name} is {t.dtype}, expected {v.dtype} like v",
                 TypeError)
    if beta is not None:
        headwise = tuple(v.shape)
        if not isinstance(beta, torch.Tensor) or tuple(beta.shape) not in (
                headwise[:3], headwise):
            shape = list(beta.shape) if isinstance(beta, torch.Tensor) \
                else type(beta).__name__
            fail(function, f"beta has shape {shape}, expected "
                 f"{list(headwise[:3])} or headwise {list(headwise)}")
    if scale is not None and not (isinstance(scale, (int, float)) and
                                  math.isfinite(scale) and scale > 0):
        fail(function, f"scale = {scale!r}, expected a finite number > 0")
    if initial_state is not None and (
            not isinstance(initial_state, torch.Tensor) or
            not initial_state.is_floating_point()):
        fail(function, "initial_state must be a floating-point tensor "
             "[N, H, K, V]", TypeError)


def _headwise(q, k, v, beta, initial_state):
    """Each (head, value column) as a head of its own with V = 1."""
    batch, steps, heads, d_value = v.shape

    def repeat(x):
        return x.unsqueeze(3).expand(-1, -1, -1, d_value, -1).reshape(
            batch, steps, heads * d_value, x.shape[-1])

    if initial_state is not None:
        n, _, d_key, _ = initial_state.shape
        initial_state = initial_state.permute(0, 1, 3, 2).reshape(
            n, heads * d_value, d_key, 1)
    return (repeat(q), repeat(k), v.reshape(batch, steps, -1, 1),
            beta.reshape(batch, steps, -1), initial_state)


def _run(function, q, k, v, beta, scale, initial_state, output_final_state,
         use_qk_l2norm_in_kernel, cu_seqlens, chunk_size=None):
    _check(function, q, k, v, beta, scale, initial_state)
    dtype = v.dtype
    stateful = initial_state is not None or output_final_state
    work = torch.float32 if dtype in _SIXTEEN_BIT and stateful else dtype
    if scale is None:
        scale = q.shape[-1] ** -0.5
    if beta is None:
        beta = v.new_ones(v.shape[:3])
    # The norm and the scale in float32 (or float64), as fla's kernels apply
    # them, and one rounding to the dtype the scan runs in.
    wide = torch.float64 if dtype == torch.float64 else torch.float32
    q, k = q.to(wide), k.to(wide)
    if use_qk_l2norm_in_kernel:
        q, k = _l2norm(q), _l2norm(k)
    q = q * scale
    q, k, v, beta = (t.to(work) for t in (q, k, v, beta))
    if initial_state is not None:
        initial_state = initial_state.to(work)
    headwise = beta.dim() == 4
    if headwise:
        shape = v.shape
        q, k, v, beta, initial_state = _headwise(q, k, v, beta,
                                                 initial_state)
    o, final = delta_rule(q, k, v, beta, initial_state=initial_state,
                          output_final_state=output_final_state,
                          cu_seqlens=cu_seqlens, chunk_size=chunk_size)
    if headwise:
        o = o.reshape(shape)
        if final is not None:
            final = final.reshape(final.shape[0], shape[2], shape[3], -1
                                  ).permute(0, 1, 3, 2)
    if final is not None:
        state_dtype = torch.float32 if dtype in _SIXTEEN_BIT else dtype
        final = final.to(state_dtype).contiguous()
    return o.to(dtype), final


def chunk_delta_rule(q, k, v, beta, scale=None, initial_state=None,
                     output_final_state=False, use_qk_l2norm_in_kernel=False,
                     cu_seqlens=None, cu_seqlens_cpu=None, **kwargs):
    """fla's chunk_delta_rule (fla.ops.delta_rule) on fwp's chunked
    kernels; `chunk_size` may be given, as fla's tests do."""
    chunk_size = kwargs.pop("chunk_size", None)
    if "head_first" in kwargs:
        fail("fla.chunk_delta_rule", "head_first is not supported (fla "
             "deprecated it): pass [B, T, H, *] tensors")
    if kwargs:
        fail("fla.chunk_delta_rule", f"unexpected arguments "
             f"{sorted(kwargs)}", TypeError)
    offsets = cu_seqlens_cpu if cu_seqlens_cpu is not None else cu_seqlens
    return _run("fla.chunk_delta_rule", q, k, v, beta, scale, initial_state,
                output_final_state, use_qk_l2norm_in_kernel, offsets,
                chunk_size)


def fused_recurrent_delta_rule(q, k, v, beta=None, scale=None,
                               initial_state=None, output_final_state=False,
                               use_qk_l2norm_in_kernel=False,
                               cu_seqlens=None):
    """fla's fused_recurrent_delta_rule (fla.ops.delta_rule): the same
    scan, fla's function for decoding ([B, 1, H, *] with the state) and for
    headwise beta. fwp runs it on the same kernels as chunk_delta_rule."""
    return _run("fla.fused_recurrent_delta_rule", q, k, v, beta, scale,
                initial_state, output_final_state, use_qk_l2norm_in_kernel,
                cu_seqlens)
