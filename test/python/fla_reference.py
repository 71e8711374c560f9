"""fla's naive delta-rule recurrence (fla/ops/delta_rule/naive.py, from the
pinned fla-core package) behind fla's fused_recurrent_delta_rule
signature: the reference that fla's tests take from fla's Triton kernel,
which needs a GPU. The adapter only changes layouts and options around
fla's own loop: fla's [B, T, H, *] to its head-first [B, H, T, *], scale
by pre-multiplying q (the loop always scales by K^-0.5), fla's L2 norm,
and packed sequences one by one. The loop computes in float32 (its
`.float()`); outputs come back in the inputs' dtype, the state float32."""

import torch
from fla.ops.delta_rule.naive import delta_rule_recurrence


def l2norm(x):
    x = x.float()
    return x * torch.rsqrt(x.square().sum(-1, keepdim=True) + 1e-6)


def _one(q, k, v, beta, scale, initial_state):
    d_key = q.shape[-1]
    # The loop computes in float32 and scales by K^-0.5 itself.
    q = q.float() * (scale * d_key ** 0.5)
    head_first = [t.transpose(1, 2) for t in (q, k, v, beta)]
    o, state = delta_rule_recurrence(*head_first, initial_state=initial_state,
                                     output_final_state=True)
    return o.transpose(1, 2), state


def fused_recurrent_delta_rule(q, k, v, beta=None, scale=None,
                               initial_state=None, output_final_state=False,
                               use_qk_l2norm_in_kernel=False,
                               cu_seqlens=None):
    dtype = v.dtype
    if use_qk_l2norm_in_kernel:
        q, k = l2norm(q), l2norm(k)
    if scale is None:
        scale = q.shape[-1] ** -0.5
    if beta is None:
        beta = torch.ones_like(v[..., 0])
    if initial_state is not None:
        initial_state = initial_state.float()
    if cu_seqlens is None:
        o, state = _one(q, k, v, beta, scale, initial_state)
        states = [state]
    else:
        offsets = [int(t) for t in cu_seqlens.tolist()]
        outputs, states = [], []
        for i, (a, b) in enumerate(zip(offsets, offsets[1:])):
            h0 = None if initial_state is None else initial_state[i:i + 1]
            o, state = _one(*(t[:, a:b] for t in (q, k, v, beta)), scale, h0)
            outputs.append(o)
            states.append(state)
        o = torch.cat(outputs, dim=1)
    final = torch.cat(states) if output_final_state else None
    return o.to(dtype), final
