"""fwp's kernels as PyTorch custom operators (torch.library).

    torch.ops.fwp.scan, torch.ops.fwp.scan_backward
    torch.ops.fwp.attention, torch.ops.fwp.attention_backward

Each has a fake kernel (shapes and dtypes only) and the forward ops have
their backward registered as the autograd formula, so torch.compile traces
a model through them without a graph break and torch.export exports it.
The ops take checked, contiguous tensors (fwp.delta_rule and fwp.attention
check and prepare them); a scan's states are in the kernels' [N, H, V, D]
order.
"""

from typing import List, Optional, Tuple

import torch
from torch import Tensor

from . import _kernels

if not hasattr(torch.library, "custom_op"):
    raise ImportError(f"fwp needs PyTorch 2.4 or later (torch.library."
                      f"custom_op); this is PyTorch {torch.__version__}")


def _features(d_key, nu):
    return 2 * d_key * nu if nu else d_key


def _segments(offsets, batch, steps):
    """(start, end, state index, batch) per kernel call: the whole batch,
    or one call per sequence packed at `offsets` (cu_seqlens)."""
    if not offsets:
        return [(0, steps, 0, batch)]
    return [(a, b, i, 1) for i, (a, b) in enumerate(zip(offsets,
                                                         offsets[1:]))]


def _states_shape(q, v, nu, offsets):
    batch, _, heads, d_value = v.shape
    sequences = len(offsets) - 1 if offsets else batch
    return (sequences, heads, d_value, _features(q.shape[3], nu))


def _rows(t, start, end):
    return None if t is None else t[:, start:end]


def _states(t, index, size):
    return None if t is None else t[index:index + size]


def _scan_kernel(v, rule, d_key, nu, eps, chunk_size):
    return _kernels.scan(v.device, v.dtype, rule, d_key, v.shape[3], nu, eps,
                         chunk_size)


@torch.library.custom_op("fwp::scan", mutates_args=())
def scan(q: Tensor, k: Tensor, v: Tensor, beta: Optional[Tensor],
         initial_state: Optional[Tensor], rule: str, nu: int, eps: float,
         chunk_size: int, cu_seqlens: List[int]) -> Tuple[Tensor, Tensor]:
    """(o, final state [N, H, V, D]) of the scan over batch-first q, k, v,
    beta from initial_state ([N, H, V, D] or None: zero)."""
    kernel = _scan_kernel(v, rule, q.shape[3], nu, eps, chunk_size)
    batch, steps, heads, _ = v.shape
    y = torch.empty_like(v)
    final = v.new_empty(_states_shape(q, v, nu, cu_seqlens))
    for start, end, index, size in _segments(cu_seqlens, batch, steps):
        kernel.forward(end - start, size, heads, _rows(q, start, end),
                       _rows(k, start, end), _rows(v, start, end),
                       _rows(beta, start, end),
                       _states(initial_state, index, size),
                       _rows(y, start, end), _states(final, index, size))
    return y, final


@scan.register_fake
def _(q, k, v, beta, initial_state, rule, nu, eps, chunk_size, cu_seqlens):
    return (torch.empty_like(v),
            v.new_empty(_states_shape(q, v, nu, cu_seqlens)))


@torch.library.custom_op("fwp::scan_backward", mutates_args=())
def scan_backward(q: Tensor, k: Tensor, v: Tensor, beta: Optional[Tensor],
                  initial_state: Optional[Tensor], dy: Tensor,
                  d_final: Tensor, rule: str, nu: int, eps: float,
                  chunk_size: int, cu_seqlens: List[int]
                  ) -> Tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
    """(dq, dk, dv, dbeta, d_initial_state) from dy and the final state's
    gradient; dbeta is empty when there is no beta (the sum rule)."""
    kernel = _scan_kernel(v, rule, q.shape[3], nu, eps, chunk_size)
    batch, steps, heads, _ = v.shape
    grads = [torch.empty_like(q), torch.empty_like(k), torch.empty_like(v),
             None if beta is None else torch.empty_like(beta),
             v.new_empty(_states_shape(q, v, nu, cu_seqlens))]
    for start, end, index, size in _segments(cu_seqlens, batch, steps):
        inputs = [_rows(t, start, end) for t in (q, k, v, beta)]
        inputs.append(_states(initial_state, index, size))
        out = [_rows(g, start, end) for g in grads[:4]]
        out.append(_states(grads[4], index, size))
        kernel.backward(end - start, size, heads, inputs,
                        _rows(dy, start, end), _states(d_final, index, size),
                        out)
    if grads[3] is None:
        grads[3] = v.new_empty(0)
    return tuple(grads)


@scan_backward.register_fake
def _(q, k, v, beta, initial_state, dy, d_final, rule, nu, eps, chunk_size,
      cu_seqlens):
    dbeta = v.new_empty(0) if beta is None else torch.empty_like(beta)
    return (torch.empty_like(q), torch.empty_like(k), torch.empty_like(v),
            dbeta, v.new_empty(_states_shape(q, v, nu, cu_seqlens)))


def _scan_setup(ctx, inputs, output):
    q, k, v, beta, initial_state, *options = inputs
    ctx.save_for_backward(q, k, v, beta, initial_state)
    ctx.options = options


def _scan_gradient(ctx, dy, d_final):
    q, k, v, beta, initial_state = ctx.saved_tensors
    dq, dk, dv, dbeta, d_initial = scan_backward(
        q, k, v, beta, initial_state, dy.contiguous(), d_final.contiguous(),
        *ctx.options)
    return (dq, dk, dv, None if beta is None else dbeta,
            None if initial_state is None else d_initial, None, None, None,
            None, None)


scan.register_autograd(_scan_gradient, setup_context=_scan_setup)


def _attention_kernel(x, heads, nu, eps, rule, chunk_size):
    return _kernels.attention(x.device, x.dtype, rule, heads,
                              x.shape[2] // heads, nu, eps, chunk_size)


@torch.library.custom_op("fwp::attention", mutates_args=())
def attention(x: Tensor, w_q: Tensor, w_k: Tensor, w_v: Tensor,
              w_beta: Tensor, w_o: Tensor, b_o: Tensor, heads: int, nu: int,
              eps: float, rule: str, chunk_size: int) -> Tensor:
    """FastWeightsAttention(x), x and y [seq_len, batch, d_model]."""
    kernel = _attention_kernel(x, heads, nu, eps, rule, chunk_size)
    y = torch.empty_like(x)
    kernel.forward(x.shape[0], x.shape[1], (x, w_q, w_k, w_v, w_beta, w_o,
                                            b_o), y)
    return y


@attention.register_fake
def _(x, w_q, w_k, w_v, w_beta, w_o, b_o, heads, nu, eps, rule, chunk_size):
    return torch.empty_like(x)


@torch.library.custom_op("fwp::attention_backward", mutates_args=())
def attention_backward(x: Tensor, w_q: Tensor, w_k: Tensor, w_v: Tensor,
                       w_beta: Tensor, w_o: Tensor, b_o: Tensor, dy: Tensor,
                       heads: int, nu: int, eps: float, rule: str,
                       chunk_size: int) -> List[Tensor]:
    """The gradients of x and of the six weights, from dy."""
    kernel = _attention_kernel(x, heads, nu, eps, rule, chunk_size)
    inputs = [x, w_q, w_k, w_v, w_beta, w_o, b_o]
    grads = [torch.empty_like(t) for t in inputs]
    kernel.backward(x.shape[0], x.shape[1], inputs, dy, grads)
    return grads


@attention_backward.register_fake
def _(x, w_q, w_k, w_v, w_beta, w_o, b_o, dy, heads, nu, eps, rule,
      chunk_size):
    return [torch.empty_like(t) for t in (x, w_q, w_k, w_v, w_beta, w_o, b_o)]


def _attention_setup(ctx, inputs, output):
    ctx.save_for_backward(*inputs[:7])
    ctx.options = inputs[7:]


def _attention_gradient(ctx, dy):
    grads = attention_backward(*ctx.saved_tensors, dy.contiguous(),
                               *ctx.options)
    return tuple(grads) + (None,) * 5


attention.register_autograd(_attention_gradient,
                            setup_context=_attention_setup)
