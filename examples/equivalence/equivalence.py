#!/usr/bin/env python3
"""Linear attention is a sum-rule fast-weight programmer; the delta rule is
the seeds' step loop (shared/seeds/001, 002) -- checked through fwp's
compiled kernels in float64.

    $(scripts/python-env.sh) examples/equivalence/equivalence.py [--steps 200]

1. Quadratic causal linear attention, y_i = sum_{j<=i} v_j <phi(k_j),
   phi(q_i)> (every key re-read at every step), against fwp's sum-rule scan
   (fwp.delta_rule(rule="sum"): one outer-product write per step into a
   fixed-size fast weight matrix, one read).
2. The delta rule: the seeds' step loop (retrieve, write beta (v - vbar),
   read) against fwp's delta-rule scan.
3. The whole module: the seeds' FastWeightsAttention against
   fwp.nn.FastWeightsAttention with its weights.

phi is DPFP. Prints the largest absolute difference of each; exits with
status 1 if one is above 1e-12.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))
import _fwp_path  # noqa: E402,F401
import seeds_pytorch  # noqa: E402

import torch  # noqa: E402

import fwp  # noqa: E402

TOLERANCE = 1e-12


def linear_attention(q, k, v):
    """Causal linear attention, quadratic form; q, k [B, T, H, D] (features),
    v [B, T, H, V]."""
    scores = torch.einsum("bihd,bjhd->bhij", q, k)
    steps = q.shape[1]
    causal = torch.ones(steps, steps, dtype=torch.bool).tril()
    scores = scores.masked_fill(~causal, 0.0)
    return torch.einsum("bhij,bjhv->bihv", scores, v)


def seeds_delta_loop(q, k, v, beta):
    """The seeds' recurrence (001's FastWeightsAttention.__call__) on
    features: W [B, H, V, D]."""
    batch, steps, heads, d = k.shape
    weights = k.new_zeros(batch, heads, v.shape[-1], d)
    outputs = []
    for i in range(steps):
        value_existing = torch.einsum("bhvk,bhk->bhv", weights, k[:, i])
        weights = weights + torch.einsum(
            "bhv,bhk->bhvk", beta[:, i, :, None] * (v[:, i] - value_existing),
            k[:, i])
        outputs.append(torch.einsum("bhvk,bhk->bhv", weights, q[:, i]))
    return torch.stack(outputs, dim=1)


def seeds_module(heads, d_model, nu):
    """The seeds' FastWeightsAttention, in plain PyTorch."""
    return seeds_pytorch.FastWeightsAttention(
        heads, d_model, 0.0, seeds_pytorch.DPFP(nu)).double()


def run(steps=200, batch=2, heads=4, d_key=8, nu=2, seed=0):
    """The three largest absolute differences, by name."""
    g = torch.Generator().manual_seed(seed)

    def randn(*shape):
        return torch.randn(*shape, generator=g, dtype=torch.float64)

    q, k = randn(batch, steps, heads, d_key), randn(batch, steps, heads, d_key)
    v = randn(batch, steps, heads, d_key)
    beta = torch.rand(batch, steps, heads, generator=g, dtype=torch.float64)
    phi = fwp.DPFP(nu)
    results = {}

    o, _ = fwp.delta_rule(q, k, v, None, rule="sum", dpfp=phi)
    results["linear attention vs fwp sum rule"] = \
        (o - linear_attention(phi(q), phi(k), v)).abs().max().item()

    o, _ = fwp.delta_rule(q, k, v, beta, dpfp=phi)
    results["seeds' delta loop vs fwp delta rule"] = \
        (o - seeds_delta_loop(phi(q), phi(k), v, beta)).abs().max().item()

    d_model = heads * d_key
    torch.manual_seed(seed)
    reference = seeds_module(heads, d_model, nu)
    module = fwp.nn.FastWeightsAttention(heads, d_model, 0.0, fwp.nn.DPFP(nu))
    module.load_state_dict(reference.state_dict())
    module.double()
    x = randn(steps, batch, d_model)
    with torch.no_grad():
        results["seeds' module vs fwp.nn module"] = \
            (module(x) - reference(x)).abs().max().item()
    return results


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    print(f"float64, T = {args.steps}, B = 2, H = 4, d_k = d_v = 8, "
          f"DPFP nu = 2 (D = 32), seed {args.seed}")
    results = run(steps=args.steps, seed=args.seed)
    for name, diff in results.items():
        print(f"  {name:40s} max |diff| = {diff:.3e}")
    worst = max(results.values())
    verdict = "equal to round-off" if worst <= TOLERANCE else "DIFFERENT"
    print(f"largest difference {worst:.3e} (bound {TOLERANCE:g}): {verdict}")
    return 0 if worst <= TOLERANCE else 1


if __name__ == "__main__":
    sys.exit(main())
