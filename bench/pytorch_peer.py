"""FastWeightsAttention in PyTorch: the peers fwp's CPU figures are set against.

`chunked_forward` is the forward a PyTorch user would write today: the
projections as matrix products, DPFP and the gate as tensor maps, and the
delta rule in the chunked WY form (docs/delta-rule-math.md, section 4), one
batched product per step of the recurrence over chunks, with the unit lower
triangular system solved by `torch.linalg.solve_triangular`. Everything in
float32 unless the inputs are float64.

`recurrent_forward` is the step-by-step recurrence (section 3), the
independent yardstick the chunked form is checked against
(test/python/test_pytorch_peer.py).

Layouts are fwp's (and the seeds'): x [T, B, d_model], W_q, W_k, W_v, W_o
[d_model, d_model] (nn.Linear), W_beta [heads, d_model], b_o [d_model].
"""

import torch


def dpfp(x, nu, eps):
    """DPFP's phi' of the last dimension (section 2; torch.roll order)."""
    x = torch.cat([torch.relu(x), torch.relu(-x)], dim=-1)
    phi = torch.cat([x * x.roll(shifts=i, dims=-1) for i in range(1, nu + 1)],
                    dim=-1)
    return phi / (phi.sum(dim=-1, keepdim=True) + eps)


def _heads_first(t, heads):
    """[T, B, H * d] -> [B, H, T, d]."""
    steps, batch, width = t.shape
    return t.view(steps, batch, heads, width // heads).permute(1, 2, 0, 3)


def _project(x, w, heads, nu, eps, rule):
    q = dpfp(_heads_first(x @ w["q"].T, heads), nu, eps)
    k = dpfp(_heads_first(x @ w["k"].T, heads), nu, eps)
    v = _heads_first(x @ w["v"].T, heads)
    beta = None
    if rule == "delta":
        beta = torch.sigmoid(x @ w["beta"].T).permute(1, 2, 0)  # [B, H, T]
    return q, k, v, beta


def _output(o, w, steps):
    """[B, H, T', d] -> y [T, B, d_model]."""
    batch, heads, _, d = o.shape
    o = o[:, :, :steps].permute(2, 0, 1, 3).reshape(steps, batch, heads * d)
    return o @ w["o"].T + w["b_o"]


def chunked_forward(x, w, heads, nu=1, eps=1e-6, rule="delta", chunk=64):
    steps = x.shape[0]
    q, k, v, beta = _project(x, w, heads, nu, eps, rule)
    batch, heads, _, d = v.shape
    features = q.shape[-1]
    chunks = -(-steps // chunk)
    pad = chunks * chunk - steps

    def split(t):  # [B, H, T, *] -> [B, H, N, C, *], zero rows past T
        t = torch.nn.functional.pad(t, (0, 0, 0, pad))
        return t.view(batch, heads, chunks, chunk, t.shape[-1])

    q, k, v = split(q), split(k), split(v)
    if rule == "delta":
        b = torch.nn.functional.pad(beta, (0, pad)).view(batch, heads, chunks,
                                                         chunk, 1)
        kb, vb = k * b, v * b
        # A = (I + diag(b) stril(K K^T))^-1, then W~ = A diag(b) K and
        # U~ = A diag(b) V, every chunk at once.
        system = (kb @ k.transpose(-1, -2)).tril(-1)
        system = system + torch.eye(chunk, dtype=x.dtype)
        w_t = torch.linalg.solve_triangular(system, kb, upper=False,
                                            unitriangular=True)
        u_t = torch.linalg.solve_triangular(system, vb, upper=False,
                                            unitriangular=True)
    causal = torch.ones(chunk, chunk, dtype=torch.bool).tril()
    state = x.new_zeros(batch, heads, features, d)  # S^T: y = Q S^T
    outputs = []
    for n in range(chunks):
        qn, kn = q[:, :, n], k[:, :, n]
        p = (qn @ kn.transpose(-1, -2)).masked_fill(~causal, 0)
        un = u_t[:, :, n] - w_t[:, :, n] @ state if rule == "delta" else v[:, :,
                                                                            n]
        outputs.append(qn @ state + p @ un)
        state = state + kn.transpose(-1, -2) @ un
    o = torch.stack(outputs, dim=2).view(batch, heads, chunks * chunk, d)
    return _output(o, w, steps)


def recurrent_forward(x, w, heads, nu=1, eps=1e-6, rule="delta"):
    """The recurrence one step at a time (section 3): the yardstick."""
    steps = x.shape[0]
    q, k, v, beta = _project(x, w, heads, nu, eps, rule)
    batch, heads, _, d = v.shape
    state = x.new_zeros(batch, heads, d, q.shape[-1])  # W: d_v x D
    outputs = []
    for t in range(steps):
        kt, vt = k[:, :, t], v[:, :, t]
        if rule == "delta":
            recalled = (state @ kt.unsqueeze(-1)).squeeze(-1)
            u = beta[:, :, t, None] * (vt - recalled)
        else:
            u = vt
        state = state + u.unsqueeze(-1) * kt.unsqueeze(-2)
        outputs.append((state @ q[:, :, t].unsqueeze(-1)).squeeze(-1))
    return _output(torch.stack(outputs, dim=2), w, steps)


def random_problem(steps, batch, d_model, heads, seed=0, dtype=torch.float32):
    """Inputs as fwp-bench makes them: x ~ N(0, 1), weights as nn.Linear."""
    g = torch.Generator().manual_seed(seed)
    bound = d_model**-0.5

    def uniform(*shape):
        return (torch.rand(*shape, generator=g, dtype=torch.float64) * 2 -
                1) * bound

    x = torch.randn(steps, batch, d_model, generator=g, dtype=torch.float64)
    w = {
        "q": uniform(d_model, d_model),
        "k": uniform(d_model, d_model),
        "v": uniform(d_model, d_model),
        "beta": uniform(heads, d_model),
        "o": uniform(d_model, d_model),
        "b_o": uniform(d_model),
    }
    return x.to(dtype), {name: t.to(dtype) for name, t in w.items()}
