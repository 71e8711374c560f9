"""The seeds' modules (shared/seeds/001) on fwp's kernels.

`FastWeightsAttention(heads, d_model, dropout_prob, phi)` has the seeds'
signature, layout ([seq_len, batch, d_model]) and parameter names
(`query.linear.weight`, `key.linear.weight`, `value.linear.weight`,
`interpolation_weight.0.linear.weight`, `output.weight`, `output.bias`), so
a state dict of the seeds' PyTorch module loads into it and gives the same
outputs and gradients; the whole module runs as fwp's compiled forward and
backward, with DPFP and the gate fused into the kernels.
"""

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

    Input and output [seq_len, batch, d_model]; float32, float64, bfloat16
    or float16 parameters and inputs, on the CPU. `dropout_prob` is kept for
    the seeds' signature; like the seeds' module, the forward applies no
    dropout.
    """

    def __init__(self, heads: int, d_model: int, dropout_prob: float,
                 phi: DPFP, *, rule: str = "delta", chunk_size: int = None):
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

    def step(self, x: torch.Tensor, state: torch.Tensor = None):
        """One token, for decoding: x [batch, d_model] and the fast weights
        after the tokens before it (None: zero) -> (y [batch, d_model], the
        new state [batch, heads, D, d_k], D = 2 d_k nu). T steps give what
        forward gives on the T tokens. The projections run in PyTorch, the
        state update in fwp's compiled scan."""
        batch = x.shape[0]

        def heads(w):
            return torch.nn.functional.linear(x, w).view(batch, self.heads,
                                                         -1)

        q, k, v = (heads(m.linear.weight)
                   for m in (self.query, self.key, self.value))
        beta = None
        if self.rule == "delta":
            beta = torch.sigmoid(
                heads(self.interpolation_weight[0].linear.weight))[..., 0]
        if state is None:
            d_feature = 2 * self.d_k * self.phi.nu
            state = x.new_zeros(batch, self.heads, d_feature, self.d_k)
        o, state = delta_rule_step(q.contiguous(), k.contiguous(),
                                   v.contiguous(), beta, state,
                                   rule=self.rule, dpfp=self.phi)
        return self.output(o.reshape(batch, -1)), state

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return attention(
            x, self.query.linear.weight, self.key.linear.weight,
            self.value.linear.weight,
            self.interpolation_weight[0].linear.weight, self.output.weight,
            self.output.bias, heads=self.heads, nu=self.phi.nu,
            eps=self.phi.eps, rule=self.rule, chunk_size=self.chunk_size)
