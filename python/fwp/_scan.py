"""The bare fast-weight scan, fla-style: `delta_rule` and `delta_rule_step`.

On CPU tensors or CUDA tensors (in PyTorch's current stream), through the
custom operator torch.ops.fwp.scan (fwp._ops).
Public layouts are fla's: q, k [B, T, H, K], v and o [B, T, H, V], beta
[B, T, H], states [B, H, D, V] (D = K, or 2 K nu with DPFP). The kernels
are compiled for that layout (the C ABI's "batch_first") and read and
write the tensors in place; a decoding step is a sequence of one step.
They keep the state as [B, H, V, D] (docs/delta-rule-math.md), so a state
is transposed (small) on the way in and viewed transposed on the way out.
"""

import torch

from . import _ops
from ._checks import check_device, check_tensor, fail
from ._dpfp import DPFP
from ._kernels import DTYPES, RULES


def _feature_map(function, dpfp, d_key):
    """(nu, eps, D) of `dpfp` (None: q and k are features already)."""
    if dpfp is None:
        return 0, 1e-6, d_key
    if not isinstance(dpfp, DPFP):
        fail(function, f"dpfp is a {type(dpfp).__name__}, expected None or "
              "fwp.DPFP(nu, eps)", TypeError)
    if dpfp.nu > 2 * d_key - 1:
        fail(function, f"dpfp nu = {dpfp.nu}, expected at most 2 K - 1 = "
              f"{2 * d_key - 1}")
    return dpfp.nu, float(dpfp.eps), 2 * d_key * dpfp.nu


def _offsets(function, cu_seqlens, batch, steps):
    """The checked offsets of cu_seqlens as a list ([] for None)."""
    if cu_seqlens is None:
        return []
    if batch != 1:
        fail(function, f"cu_seqlens packs sequences into a batch of one "
              f"(B = 1), but q has B = {batch}")
    if not isinstance(cu_seqlens, torch.Tensor) or cu_seqlens.dim() != 1 or \
            cu_seqlens.is_floating_point() or cu_seqlens.numel() < 2:
        fail(function, "cu_seqlens must be a 1-D integer tensor [0, ..., T] "
              "of at least two offsets")
    offsets = [int(o) for o in cu_seqlens.tolist()]
    if offsets[0] != 0 or offsets[-1] != steps:
        fail(function, f"cu_seqlens runs from {offsets[0]} to {offsets[-1]},"
              f" expected 0 to T = {steps}")
    for i, (a, b) in enumerate(zip(offsets, offsets[1:])):
        if b <= a:
            fail(function, f"cu_seqlens is not increasing: offset {i + 1} is "
                  f"{b} after {a}")
    return offsets


def _run(function, q, k, v, beta, rule, dpfp, initial_state, cu_seqlens,
         chunk_size):
    """The checked scan on batch-first q, k, v, beta."""
    if rule not in RULES:
        fail(function, f"rule is {rule!r}, expected 'delta' or 'sum'")
    if not isinstance(v, torch.Tensor):
        fail(function, f"v is a {type(v).__name__}, expected a torch.Tensor",
              TypeError)
    if v.dim() != 4:
        fail(function, f"v has shape {list(v.shape)}, expected 4 "
              "dimensions")
    if v.dtype not in DTYPES:
        fail(function, f"v is {v.dtype}; fwp runs float32, float64, "
              "bfloat16 or float16", TypeError)
    check_device(function, "v", v)
    if not isinstance(q, torch.Tensor) or q.dim() != 4:
        fail(function, "q must be a 4-D tensor like v")
    lead = tuple(v.shape[:3])
    d_key, d_value = q.shape[3], v.shape[3]
    check_tensor(function, "q", q, lead + (d_key,), v.dtype, "v",
                 device=v.device)
    check_tensor(function, "k", k, lead + (d_key,), v.dtype, "v",
                 device=v.device)
    if rule == "delta":
        if beta is None:
            fail(function, "the delta rule needs beta")
        check_tensor(function, "beta", beta, lead, v.dtype, "v",
                     device=v.device)
    elif beta is not None:
        fail(function, "the sum rule takes no beta (pass None)")
    nu, eps, d_feature = _feature_map(function, dpfp, d_key)
    if chunk_size is not None and (not isinstance(chunk_size, int) or
                                   chunk_size < 1):
        fail(function, f"chunk_size = {chunk_size!r}, expected a positive "
              "int")

    batch, steps, heads = lead
    offsets = _offsets(function, cu_seqlens, batch, steps)
    sequences = len(offsets) - 1 if offsets else batch
    if initial_state is not None:
        check_tensor(function, "initial_state", initial_state,
                     (sequences, heads, d_feature, d_value), v.dtype, "v",
                     device=v.device)
        # The kernels' [V, D] order; no copy for a state fwp returned.
        initial_state = initial_state.transpose(-1, -2).contiguous()
    # The kernels read the tensors in place: a copy only where the strides
    # are not the contiguous ones.
    q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
    beta = None if beta is None else beta.contiguous()
    y, final = _ops.scan(q, k, v, beta, initial_state, rule, nu, eps,
                         chunk_size or 0, offsets)
    return y, final.transpose(-1, -2)


def delta_rule(q, k, v, beta=None, *, rule="delta", dpfp=None,
               initial_state=None, output_final_state=False, cu_seqlens=None,
               chunk_size=None):
    """The fast-weight scan of fla's chunk_delta_rule, on fwp's kernels.

    q, k: [B, T, H, K]; v: [B, T, H, V]; beta: [B, T, H] (delta rule; None
    for rule="sum"). dpfp=fwp.DPFP(nu, eps) applies DPFP to q and k inside
    the kernels (D = 2 K nu features), else q and k are the features
    (D = K). initial_state: [B, H, D, V] (or [N, H, D, V] for N packed
    sequences), zero if None. cu_seqlens: offsets [0, ..., T] of sequences
    packed into a batch of one, each scanned from its own state. Returns
    (o [B, T, H, V], final state [B or N, H, D, V] if output_final_state
    else None); differentiable in q, k, v, beta and initial_state. Any
    strides (tensors that are not contiguous are copied). No scaling of q
    (fla scales by K^-0.5 by default: pass q * scale, or call
    fwp.fla.chunk_delta_rule, which has fla's semantics).
    """
    o, final = _run("delta_rule", q, k, v, beta, rule, dpfp, initial_state,
                    cu_seqlens, chunk_size)
    return o, (final if output_final_state else None)


def delta_rule_step(q, k, v, beta, state, *, rule="delta", dpfp=None):
    """One step of the scan, for decoding: q, k [B, H, K], v [B, H, V],
    beta [B, H] (None for rule="sum"), state [B, H, D, V]. Returns
    (o [B, H, V], the new state [B, H, D, V]); differentiable."""
    if not isinstance(state, torch.Tensor):
        fail("delta_rule_step", "state must be a tensor [B, H, D, V]",
              TypeError)
    # [B, H, *] is [B, 1, H, *]: a sequence of one step, in place.
    as_step = [None if t is None else
               (t.unsqueeze(1) if isinstance(t, torch.Tensor) else t)
               for t in (q, k, v, beta)]
    o, final = _run("delta_rule_step", *as_step, rule, dpfp, state, None,
                    None)
    return o[:, 0], final
