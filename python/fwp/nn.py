"""The seeds' modules (shared/seeds/001) on fwp's kernels.

`FastWeightsAttentionTransformerLayer` and `FastWeightsAttentionTransformer`
are the seeds' layer and stack, with `FeedForward` (labml's, which the seeds
import): same signatures and parameter names, so the seeds' state dicts
load. The seeds' layer makes `norm_self_attn` and does not apply it; so do
these, so that a seeds' model gives the same numbers here.

`FastWeightsAttention(heads, d_model, dropout_prob, phi)` has the seeds'
signature, layout ([seq_len, batch, d_model]) and parameter names
(`query.linear.weight`, `key.linear.weight`, `value.linear.weight`,
`interpolation_weight.0.linear.weight`, `output.weight`, `output.bias`), so
a state dict of the seeds' PyTorch module loads into it and gives the same
outputs and gradients; the whole module runs as fwp's compiled forward and
backward, with DPFP and the gate fused into the kernels.
"""

import copy

import torch
from torch import nn

from ._attention import RULES, attention
from ._dpfp import DPFP
from ._scan import delta_rule_step


class PrepareForMultiHeadAttention(nn.Module):
    """The seeds' head projection: a bias-free nn.Linear named `linear`
    (d_model -> heads * d_k), kept under that name so that state dicts
    match. fwp reads its weight; the projection itself runs in the
    kernels."""

    def __init__(self, d_model: int, heads: int, d_k: int, bias: bool):
        super().__init__()
        if bias:
            raise ValueError("fwp.nn: the fast-weight projections have no "
                             "bias")
        self.linear = nn.Linear(d_model, heads * d_k, bias=False)
        self.heads = heads
        self.d_k = d_k


class FastWeightsAttention(nn.Module):
    """Fast-weight attention with the delta rule (or, as an option, the sum
    rule), the seeds' module on fwp's compiled kernels.

    Input and output [seq_len, batch, d_model], any strides; float32,
    float64, bfloat16 or float16 parameters and inputs, on the CPU or CUDA.
    `dropout_prob` is kept for the seeds' signature; like the seeds'
    module, the forward applies no dropout.

    With `context_parallel_group` (a torch.distributed group, or
    torch.distributed.group.WORLD), x is this rank's segment of the
    sequence and the scan runs context-parallel (fwp.distributed); the
    projections then run in PyTorch around fwp's scan kernels.
    """

    def __init__(self, heads: int, d_model: int, dropout_prob: float,
                 phi: DPFP, *, rule: str = "delta", chunk_size: int = None,
                 context_parallel_group=None):
        super().__init__()
        if not isinstance(phi, DPFP):
            raise TypeError("fwp.nn.FastWeightsAttention: phi is a "
                            f"{type(phi).__name__}; fwp fuses its own "
                            "fwp.nn.DPFP into the kernels")
        if heads < 1 or d_model % heads:
            raise ValueError(f"fwp.nn.FastWeightsAttention: heads = {heads} "
                             f"does not divide d_model = {d_model}")
        if rule not in RULES:
            raise ValueError(f"fwp.nn.FastWeightsAttention: rule {rule!r}, "
                             "expected 'delta' or 'sum'")
        self.d_k = d_model // heads
        self.heads = heads
        self.query = PrepareForMultiHeadAttention(d_model, heads, self.d_k,
                                                  bias=False)
        self.key = PrepareForMultiHeadAttention(d_model, heads, self.d_k,
                                                bias=False)
        self.value = PrepareForMultiHeadAttention(d_model, heads, self.d_k,
                                                  bias=False)
        self.interpolation_weight = nn.Sequential(
            PrepareForMultiHeadAttention(d_model, heads, 1, bias=False),
            nn.Sigmoid())
        self.phi = phi
        self.output = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout_prob)
        self.rule = rule
        self.chunk_size = chunk_size
        self.context_parallel_group = context_parallel_group

    def _projections(self, x):
        """q, k, v [batch, steps, heads, d_k] and beta [batch, steps,
        heads] (None for the sum rule) of x [steps, batch, d_model], in
        PyTorch (the fused kernels do this themselves)."""
        steps, batch, _ = x.shape

        def heads(w):
            return torch.nn.functional.linear(x, w).view(
                steps, batch, self.heads, -1).transpose(0, 1)

        q, k, v = (heads(m.linear.weight)
                   for m in (self.query, self.key, self.value))
        beta = None
        if self.rule == "delta":
            beta = torch.sigmoid(
                heads(self.interpolation_weight[0].linear.weight))[..., 0]
        return q, k, v, beta

    def step(self, x: torch.Tensor, state: torch.Tensor = None):
        """One token, for decoding: x [batch, d_model] and the fast weights
        after the tokens before it (None: zero) -> (y [batch, d_model], the
        new state [batch, heads, D, d_k], D = 2 d_k nu). T steps give what
        forward gives on the T tokens. The projections run in PyTorch, the
        state update in fwp's compiled scan."""
        batch = x.shape[0]
        q, k, v, beta = (None if t is None else t[:, 0]
                         for t in self._projections(x.unsqueeze(0)))
        if state is None:
            d_feature = 2 * self.d_k * self.phi.nu
            state = x.new_zeros(batch, self.heads, d_feature, self.d_k)
        o, state = delta_rule_step(q, k, v, beta, state, rule=self.rule,
                                   dpfp=self.phi)
        return self.output(o.reshape(batch, -1)), state

    def _forward_context_parallel(self, x):
        from . import distributed
        steps, batch, _ = x.shape
        o, _ = distributed.delta_rule(
            *self._projections(x), group=self.context_parallel_group,
            rule=self.rule, dpfp=self.phi, chunk_size=self.chunk_size)
        return self.output(o.transpose(0, 1).reshape(steps, batch, -1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.context_parallel_group is not None:
            return self._forward_context_parallel(x)
        return attention(
            x, self.query.linear.weight, self.key.linear.weight,
            self.value.linear.weight,
            self.interpolation_weight[0].linear.weight, self.output.weight,
            self.output.bias, heads=self.heads, nu=self.phi.nu,
            eps=self.phi.eps, rule=self.rule, chunk_size=self.chunk_size)


class FeedForward(nn.Module):
    """labml's position-wise feed-forward network (the seeds' FeedForward):
    layer2(dropout(activation(layer1(x)))), or with is_gated the
    activation times linear_v(x)."""

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.1,
                 activation=nn.ReLU(), is_gated: bool = False,
                 bias1: bool = True, bias2: bool = True,
                 bias_gate: bool = True):
        super().__init__()
        self.layer1 = nn.Linear(d_model, d_ff, bias=bias1)
        self.layer2 = nn.Linear(d_ff, d_model, bias=bias2)
        self.dropout = nn.Dropout(dropout)
        self.activation = activation
        self.is_gated = is_gated
        if is_gated:
            self.linear_v = nn.Linear(d_model, d_ff, bias=bias_gate)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        g = self.activation(self.layer1(x))
        x = g * self.linear_v(x) if self.is_gated else g
        return self.layer2(self.dropout(x))


class FastWeightsAttentionTransformerLayer(nn.Module):
    """The seeds' transformer layer: x + dropout(attn(x)), then
    x + dropout(feed_forward(norm_ff(x))). `norm_self_attn` exists, as in
    the seeds, and is not applied."""

    def __init__(self, *, d_model: int, attn: FastWeightsAttention,
                 feed_forward: nn.Module, dropout_prob: float):
        super().__init__()
        self.size = d_model
        self.attn = attn
        self.feed_forward = feed_forward
        self.dropout = nn.Dropout(dropout_prob)
        self.norm_self_attn = nn.LayerNorm([d_model])
        self.norm_ff = nn.LayerNorm([d_model])

    def _after_attention(self, x, attn):
        x = x + self.dropout(attn)
        return x + self.dropout(self.feed_forward(self.norm_ff(x)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self._after_attention(x, self.attn(x))

    def step(self, x: torch.Tensor, state: torch.Tensor = None):
        """One token [batch, d_model] and the attention's fast weights
        (None: zero) -> (output, new state), as forward on T tokens."""
        attn, state = self.attn.step(x, state)
        return self._after_attention(x, attn), state


class FastWeightsAttentionTransformer(nn.Module):
    """The seeds' stack: n_layers copies of `layer` (fresh parameters
    copied from it, as labml's clone_module_list), then a LayerNorm."""

    def __init__(self, layer: FastWeightsAttentionTransformerLayer,
                 n_layers: int):
        super().__init__()
        self.layers = nn.ModuleList([copy.deepcopy(layer)
                                     for _ in range(n_layers)])
        self.norm = nn.LayerNorm([layer.size])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)
        return self.norm(x)

    def step(self, x: torch.Tensor, states=None):
        """One token [batch, d_model] and each layer's state (None: zero)
        -> (output, the new states)."""
        states = states or [None] * len(self.layers)
        new_states = []
        for layer, state in zip(self.layers, states):
            x, state = layer.step(x, state)
            new_states.append(state)
        return self.norm(x), new_states
