#!/usr/bin/env python3
"""Sum rule vs delta rule: how many key/value pairs a fast weight matrix
holds -- seed 002's study, run through fwp's compiled scans.

    $(scripts/python-env.sh) examples/capacity/capacity.py [--plots DIR]

The task (seed 002): an episode stores N pairs (k_t, v_t) and is then asked
for the value of one of its keys. Raw keys share a bias direction b,
k_t = alpha b + noise N(0, I) (alpha 1.0, noise 0.4, d_key = d_val = 8),
so that with identity keys every key looks like every other; values are
N(0, I / d_val). A slow projector W_K (init I + 0.05 N(0, I)) maps keys,
and the fast weights are written with the projected keys:

    sum rule:    W <- W + v_t (W_K k_t)^T
    delta rule:  W <- W + (v_t - W W_K k_t) (W_K k_t)^T   (beta = 1)
    read:        y = W (W_K k_q),  loss 0.5 |y - v_q|^2

Each episode is one fwp.delta_rule call (B episodes, T = N steps, one head;
the query is given at the last step only). W_K is trained by plain SGD
(lr 0.05, gradient norm clipped at 1.0, 1500 episodes of N = 5) with
gradients through the compiled scan's backward: once through the sum rule
(as the seed) and once through the delta rule (the seed's open question).
Then the capacity sweep: mean cos(y, v_q) over fresh episodes for N = 1..16
with each projector and each rule. Prints the table; writes PNGs (training
curves, capacity curves, both rules' fast weights) to --plots.
"""

import argparse
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))
import _fwp_path  # noqa: E402,F401

import torch  # noqa: E402

import fwp  # noqa: E402

D = 8  # d_key = d_val
ALPHA, NOISE = 1.0, 0.4


def bias_direction():
    """The fixed unit vector b every raw key shares."""
    return torch.ones(D, dtype=torch.float64) / math.sqrt(D)


def episodes(count, pairs, g):
    """Raw keys [count, N, D], values [count, N, D], the queried index."""
    keys = ALPHA * bias_direction() + NOISE * torch.randn(
        count, pairs, D, generator=g, dtype=torch.float64)
    values = torch.randn(count, pairs, D, generator=g,
                         dtype=torch.float64) / math.sqrt(D)
    asked = torch.randint(pairs, (count,), generator=g)
    return keys, values, asked


def retrieve(w_k, keys, values, asked, rule, return_state=False):
    """y = W_N (W_K k_q) for each episode, through one scan: the keys and
    values are written at steps 1..N, the query read at step N."""
    count, pairs, _ = keys.shape
    projected = keys @ w_k.T                            # [count, N, D]
    query = projected[torch.arange(count), asked]       # [count, D]
    reads = torch.zeros_like(projected)
    reads = torch.cat([reads[:, :-1], query[:, None]], dim=1)

    def heads(t):  # [count, N, D] -> fla's [B, T, H = 1, D]
        return t[:, :, None, :].contiguous()

    beta = None
    if rule == "delta":
        beta = torch.ones(count, pairs, 1, dtype=torch.float64)
    o, state = fwp.delta_rule(heads(reads), heads(projected), heads(values),
                              beta, rule=rule, output_final_state=True)
    y = o[:, -1, 0]
    # The fast weights of each episode as [D_key, D_val] (fla's layout).
    return (y, state[:, 0]) if return_state else y


def cosine(y, target):
    return torch.nn.functional.cosine_similarity(y, target, dim=-1)


def train(rule, steps, pairs, seed, lr=0.05, clip=1.0):
    """W_K after `steps` episodes of SGD through `rule`'s write; the loss
    and cosine of each step."""
    g = torch.Generator().manual_seed(seed)
    w_k = torch.eye(D, dtype=torch.float64) + 0.05 * torch.randn(
        D, D, generator=g, dtype=torch.float64)
    w_k.requires_grad_(True)
    losses, cosines = [], []
    for _ in range(steps):
        keys, values, asked = episodes(1, pairs, g)
        target = values[torch.arange(1), asked]
        y = retrieve(w_k, keys, values, asked, rule)
        loss = 0.5 * ((y - target) ** 2).sum()
        w_k.grad = None
        loss.backward()
        with torch.no_grad():
            norm = w_k.grad.norm()
            scale = min(1.0, clip / norm.item()) if norm > 0 else 1.0
            w_k -= lr * scale * w_k.grad
        losses.append(loss.item())
        cosines.append(cosine(y, target).item())
    return w_k.detach(), losses, cosines


def mean_cosine(w_k, rule, pairs, count, seed):
    g = torch.Generator().manual_seed(seed)
    keys, values, asked = episodes(count, pairs, g)
    with torch.no_grad():
        y = retrieve(w_k, keys, values, asked, rule)
    return cosine(y, values[torch.arange(count), asked]).mean().item()


def sweep(projectors, max_pairs, count, seed):
    """rows[N] = {column: mean cosine}; columns '<rule> (W_K by <rule>)'."""
    rows = {}
    for pairs in range(1, max_pairs + 1):
        rows[pairs] = {
            f"{rule} (W_K by {trained})": mean_cosine(
                w_k, rule, pairs, count, seed + pairs)
            for trained, w_k in projectors.items()
            for rule in ("sum", "delta")}
    return rows


def smooth(values, width=51):
    out, total = [], 0.0
    for i, v in enumerate(values):
        total += v
        if i >= width:
            total -= values[i - width]
        out.append(total / min(i + 1, width))
    return out


def plot(directory, training, rows, projectors, seed):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    os.makedirs(directory, exist_ok=True)
    written = []

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.5))
    for rule, (losses, cosines) in training.items():
        axes[0].plot(smooth(losses), label=f"through the {rule} rule")
        axes[1].plot(smooth(cosines), label=f"through the {rule} rule")
    axes[0].set(title="training loss (51-episode mean)", xlabel="episode")
    axes[1].set(title="cos(y, v_q) (51-episode mean)", xlabel="episode")
    axes[1].legend()
    written.append(_save(fig, directory, "training.png"))

    fig, ax = plt.subplots(figsize=(6, 4))
    pairs = sorted(rows)
    for column in rows[pairs[0]]:
        ax.plot(pairs, [rows[n][column] for n in pairs], marker="o",
                label=column)
    ax.set(title="capacity: mean cos(y, v_q) on fresh episodes",
           xlabel="N stored pairs", ylabel="mean cosine")
    ax.legend()
    written.append(_save(fig, directory, "capacity.png"))

    g = torch.Generator().manual_seed(seed)
    keys, values, asked = episodes(1, 5, g)
    fig, axes = plt.subplots(1, 2, figsize=(8, 3.5))
    w_k = projectors["sum"]
    for ax, rule in zip(axes, ("sum", "delta")):
        with torch.no_grad():
            _, state = retrieve(w_k, keys, values, asked, rule,
                                return_state=True)
        image = ax.imshow(state[0].T.numpy(), cmap="RdBu_r")
        ax.set(title=f"{rule} rule: W_fast (N = 5)", xlabel="key feature",
               ylabel="value row")
        fig.colorbar(image, ax=ax)
    written.append(_save(fig, directory, "fast_weights.png"))
    return written


def _save(fig, directory, name):
    path = os.path.join(directory, name)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    return path


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=1500,
                        help="training episodes (default 1500)")
    parser.add_argument("--pairs", type=int, default=5,
                        help="N while training (default 5)")
    parser.add_argument("--max-pairs", type=int, default=16)
    parser.add_argument("--episodes", type=int, default=200,
                        help="fresh episodes per N in the sweep")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--plots", default=None,
                        help="folder for the PNGs (none if not given)")
    args = parser.parse_args(argv)

    start = time.perf_counter()
    training, projectors = {}, {}
    for rule in ("sum", "delta"):
        w_k, losses, cosines = train(rule, args.steps, args.pairs, args.seed)
        projectors[rule], training[rule] = w_k, (losses, cosines)
    identity = torch.eye(D, dtype=torch.float64)
    before = mean_cosine(identity, "sum", args.pairs, args.episodes, args.seed)
    print(f"seed {args.seed}, N = {args.pairs} while training, "
          f"{args.steps} episodes, d_key = d_val = {D}, float64 through "
          "fwp's compiled scans")
    print(f"mean cos(y, v_q) at N = {args.pairs}, sum rule: W_K = I "
          f"{before:.3f}; trained through the sum rule "
          f"{mean_cosine(projectors['sum'], 'sum', args.pairs, args.episodes, args.seed):.3f}; "  # noqa: E501
          "through the delta rule, read with it "
          f"{mean_cosine(projectors['delta'], 'delta', args.pairs, args.episodes, args.seed):.3f}")  # noqa: E501

    rows = sweep(projectors, args.max_pairs, args.episodes, args.seed)
    columns = list(rows[1])
    print("\n| N | " + " | ".join(columns) + " |")
    print("|---|" + "---|" * len(columns))
    for pairs, row in rows.items():
        print(f"| {pairs} | " + " | ".join(f"{row[c]:.3f}" for c in columns)
              + " |")
    print(f"\n{time.perf_counter() - start:.1f} s")
    if args.plots:
        for path in plot(args.plots, training, rows, projectors, args.seed):
            print(f"wrote {path}")
    return rows


if __name__ == "__main__":
    main()
