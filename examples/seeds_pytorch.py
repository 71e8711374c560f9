"""The seeds' FastWeightsAttention (shared/seeds/001), step by step in
plain PyTorch: the independent yardstick of the fwp package's tests and
the peer of the examples. labml's Module and PrepareForMultiHeadAttention
are replaced by their plain PyTorch equivalents; the math and the
parameter names are the seeds'. The seeds' transformer layer and stack
and labml's FeedForward follow. `sum_rule` swaps the delta rule's update
for the sum rule's (W += v k^T), for the sum rule's tests.
"""

import copy

import torch
from torch import nn


class PrepareForMultiHeadAttention(nn.Module):
    def __init__(self, d_model, heads, d_k, bias):
        super().__init__()
        self.linear = nn.Linear(d_model, heads * d_k, bias=bias)
        self.heads = heads
        self.d_k = d_k

    def forward(self, x):
        head_shape = x.shape[:-1]
        x = self.linear(x)
        return x.view(*head_shape, self.heads, self.d_k)


class DPFP(nn.Module):
    def __init__(self, nu=1, eps=1e-6):
        super().__init__()
        self.nu = nu
        self.relu = nn.ReLU()
        self.eps = eps

    def forward(self, k):
        k = self.dpfp(k)
        return k / (torch.sum(k, dim=-1, keepdim=True) + self.eps)

    def dpfp(self, k):
        x = self.relu(torch.cat([k, -k], dim=-1))
        x_rolled = [x.roll(shifts=i, dims=-1) for i in range(1, self.nu + 1)]
        x_rolled = torch.cat(x_rolled, dim=-1)
        x_repeat = torch.cat([x] * self.nu, dim=-1)
        return x_repeat * x_rolled


class FastWeightsAttention(nn.Module):
    def __init__(self, heads, d_model, dropout_prob, phi, sum_rule=False):
        super().__init__()
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
        self.sum_rule = sum_rule

    def forward(self, x):
        seq_len = x.shape[0]
        query = self.phi(self.query(x))
        key = self.phi(self.key(x))
        value = self.value(x)
        beta = self.interpolation_weight(x)
        weights = key.new_zeros((key.shape[1], key.shape[2], value.shape[3],
                                 key.shape[3]))
        outputs = []
        for i in range(seq_len):
            if self.sum_rule:
                write = value[i]
            else:
                value_existing = torch.einsum('bhvk,bhk->bhv', weights,
                                              key[i])
                write = beta[i] * (value[i] - value_existing)
            weights = weights + torch.einsum('bhv,bhk->bhvk', write, key[i])
            y = torch.einsum('bhvk,bhk->bhv', weights, query[i])
            outputs.append(y.reshape(y.shape[0], -1))
        x = torch.stack(outputs)
        return self.output(x)


class FeedForward(nn.Module):
    """labml's FeedForward (labml_nn.transformers.feed_forward), which seed
    001 imports: layer1, activation, dropout, layer2 (is_gated: layer1's
    activation times layer_v)."""

    def __init__(self, d_model, d_ff, dropout=0.1, activation=nn.ReLU(),
                 is_gated=False, bias1=True, bias2=True, bias_gate=True):
        super().__init__()
        self.layer1 = nn.Linear(d_model, d_ff, bias=bias1)
        self.layer2 = nn.Linear(d_ff, d_model, bias=bias2)
        self.dropout = nn.Dropout(dropout)
        self.activation = activation
        self.is_gated = is_gated
        if is_gated:
            self.linear_v = nn.Linear(d_model, d_ff, bias=bias_gate)

    def forward(self, x):
        g = self.activation(self.layer1(x))
        x = g * self.linear_v(x) if self.is_gated else g
        return self.layer2(self.dropout(x))


class FastWeightsAttentionTransformerLayer(nn.Module):
    """Seed 001's layer as written: norm_self_attn is made and not applied;
    the attention's input is x itself."""

    def __init__(self, *, d_model, attn, feed_forward, dropout_prob):
        super().__init__()
        self.size = d_model
        self.attn = attn
        self.feed_forward = feed_forward
        self.dropout = nn.Dropout(dropout_prob)
        self.norm_self_attn = nn.LayerNorm([d_model])
        self.norm_ff = nn.LayerNorm([d_model])

    def forward(self, x):
        attn = self.attn(x)
        x = x + self.dropout(attn)
        z = self.norm_ff(x)
        ff = self.feed_forward(z)
        return x + self.dropout(ff)


class FastWeightsAttentionTransformer(nn.Module):
    """Seed 001's stack: n_layers copies of `layer`, then a LayerNorm."""

    def __init__(self, layer, n_layers):
        super().__init__()
        self.layers = nn.ModuleList([copy.deepcopy(layer)
                                     for _ in range(n_layers)])
        self.norm = nn.LayerNorm([layer.size])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return self.norm(x)
