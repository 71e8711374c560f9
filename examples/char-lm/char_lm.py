#!/usr/bin/env python3
"""A character-level fast-weight transformer (the seeds' experiment, 001)
trained on fwp's kernels, beside the same model on the seeds' PyTorch
attention.

    $(scripts/python-env.sh) examples/char-lm/char_lm.py [--text FILE] [--steps N]
        [--out DIR] [--resume] [--peer-steps N]

The model is 001's FastWeightsAttentionTransformer: token embeddings,
layers of (fast-weight attention, add, layer norm, feed-forward, add, layer
norm), a final layer norm and a linear generator; the attention is
fwp.nn.FastWeightsAttention (delta rule, DPFP nu = 1), the whole module
one compiled forward and backward. The text is any file (--text); by
default the King James Bible (public domain, 4.3 MB), from Debian's
bible-kjv, which scripts/install-deps.sh installs.

Writes to --out (default build/char-lm): loss.csv (step, train loss, valid
loss, seconds per step, model), checkpoint.pt every --checkpoint-every
steps (--resume continues from it: model, optimiser, step, data position),
loss.png (both models' curves) and sample.txt (text generated token by
token with fwp's one-step decoding). The peer (the same model with the
seeds' step-by-step PyTorch attention, same initial weights, same batches)
trains for --peer-steps (default: as many as fwp) in the same run.
"""

import argparse
import csv
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))
import _fwp_path  # noqa: E402,F401
import seeds_pytorch  # noqa: E402

import torch  # noqa: E402
from torch import nn  # noqa: E402

import fwp  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))

# ---------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------


def default_text(directory):
    """The King James Bible as plain text, made once with bible-kjv's
    `bible` program."""
    path = os.path.join(directory, "kjv.txt")
    if os.path.exists(path):
        return path
    try:
        text = subprocess.run(["bible", "gen1:1-rev22:21"], check=True,
                              capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as error:
        raise SystemExit(
            f"char_lm: no --text given and the default text cannot be made "
            f"({error}); install Debian's bible-kjv (scripts/install-deps.sh "
            "does) or pass --text FILE")
    os.makedirs(directory, exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    return path


class Corpus:
    """Characters as token ids, 90% for training and 10% for validation."""

    def __init__(self, path):
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        if len(text) < 10_000:
            raise SystemExit(f"char_lm: {path} holds {len(text)} characters;"
                             " at least 10000 are needed")
        self.chars = sorted(set(text))
        self.index = {c: i for i, c in enumerate(self.chars)}
        ids = torch.tensor([self.index[c] for c in text], dtype=torch.long)
        split = int(len(ids) * 0.9)
        self.train, self.valid = ids[:split], ids[split:]

    def batch(self, data, seq_len, batch, g):
        """x, y [seq_len, batch] (y = x shifted by one), random windows."""
        starts = torch.randint(len(data) - seq_len - 1, (batch,), generator=g)
        x = torch.stack([data[s:s + seq_len] for s in starts], dim=1)
        y = torch.stack([data[s + 1:s + seq_len + 1] for s in starts], dim=1)
        return x, y

    def encode(self, text):
        return [self.index[c] for c in text if c in self.index]

    def decode(self, ids):
        return "".join(self.chars[i] for i in ids)


# ---------------------------------------------------------------------------
# The model (001's FastWeightsAttentionTransformer)
# ---------------------------------------------------------------------------


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff, dropout):
        super().__init__()
        self.layer1 = nn.Linear(d_model, d_ff)
        self.layer2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.layer2(self.dropout(torch.relu(self.layer1(x))))


class TransformerLayer(nn.Module):
    def __init__(self, d_model, attn, feed_forward, dropout):
        super().__init__()
        self.attn = attn
        self.feed_forward = feed_forward
        self.dropout = nn.Dropout(dropout)
        self.norm_self_attn = nn.LayerNorm([d_model])
        self.norm_ff = nn.LayerNorm([d_model])

    def forward(self, x):
        x = self.norm_self_attn(x + self.dropout(self.attn(x)))
        return self.norm_ff(x + self.dropout(self.feed_forward(x)))

    def step(self, x, state):
        """One token [batch, d_model] (fwp's attention only)."""
        attn, state = self.attn.step(x, state)
        x = self.norm_self_attn(x + attn)
        return self.norm_ff(x + self.feed_forward(x)), state


class CharModel(nn.Module):
    def __init__(self, vocab, d_model, heads, d_ff, layers, dropout,
                 attention):
        super().__init__()
        self.src_embed = nn.Embedding(vocab, d_model)
        self.layers = nn.ModuleList([
            TransformerLayer(d_model, attention(heads, d_model, dropout),
                             FeedForward(d_model, d_ff, dropout), dropout)
            for _ in range(layers)])
        self.norm = nn.LayerNorm([d_model])
        self.generator = nn.Linear(d_model, vocab)

    def forward(self, x):  # [seq_len, batch] -> logits [seq_len, batch, V]
        h = self.src_embed(x)
        for layer in self.layers:
            h = layer(h)
        return self.generator(self.norm(h))

    @torch.no_grad()
    def generate(self, prompt, count, temperature, g):
        """Token ids after `prompt`, one at a time with fwp's decoding
        step: each layer keeps its fast weights, nothing is recomputed."""
        states = [None] * len(self.layers)
        out, logits = [], None
        for token in prompt + [None] * count:
            if token is None:
                probs = torch.softmax(logits / temperature, dim=-1)
                token = int(torch.multinomial(probs, 1, generator=g))
                out.append(token)
            h = self.src_embed(torch.tensor([token]))
            for i, layer in enumerate(self.layers):
                h, states[i] = layer.step(h, states[i])
            logits = self.generator(self.norm(h))[0]
        return out


def fwp_attention(heads, d_model, dropout):
    return fwp.nn.FastWeightsAttention(heads, d_model, dropout,
                                       fwp.nn.DPFP(nu=1))


def seeds_attention(heads, d_model, dropout):
    return seeds_pytorch.FastWeightsAttention(heads, d_model, dropout,
                                              seeds_pytorch.DPFP(nu=1))


# ---------------------------------------------------------------------------
# Training
# ---------------------------------------------------------------------------


def loss_of(model, x, y):
    logits = model(x)
    return nn.functional.cross_entropy(logits.view(-1, logits.shape[-1]),
                                       y.view(-1))


@torch.no_grad()
def valid_loss(model, corpus, args, batches=4):
    g = torch.Generator().manual_seed(1234)
    model.eval()
    total = sum(loss_of(model, *corpus.batch(corpus.valid, args.seq_len,
                                             args.batch, g)).item()
                for _ in range(batches))
    model.train()
    return total / batches


class Run:
    """One model's training: optimiser, data stream, log, step times."""

    def __init__(self, name, model, args, seed):
        self.name, self.model, self.args = name, model, args
        self.optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
        self.data = torch.Generator().manual_seed(seed)
        self.step, self.log, self.times = 0, [], []

    def train_step(self, corpus):
        x, y = corpus.batch(corpus.train, self.args.seq_len, self.args.batch,
                            self.data)
        start = time.perf_counter()
        loss = loss_of(self.model, x, y)
        self.optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.optimizer.step()
        elapsed = time.perf_counter() - start
        self.times.append(elapsed)
        self.step += 1
        return loss.item(), elapsed

    def ms_per_step(self):
        """The median step: the first steps of a process compile (fwp) or
        warm up, and a shared machine has outliers."""
        times = sorted(self.times)
        return 1e3 * times[len(times) // 2] if times else float("nan")

    def state(self):
        return {"model": self.model.state_dict(),
                "optimizer": self.optimizer.state_dict(),
                "step": self.step, "log": self.log, "times": self.times,
                "data": self.data.get_state()}

    def restore(self, state):
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.step, self.log = state["step"], state["log"]
        self.times = state["times"]
        self.data.set_state(state["data"])


def progress(run, steps, loss, elapsed):
    done = int(30 * run.step / steps)
    sys.stdout.write(f"\r{run.name:5s} [{'#' * done}{'.' * (30 - done)}] "
                     f"{run.step}/{steps} loss {loss:.3f} "
                     f"{elapsed * 1e3:.0f} ms/step")
    sys.stdout.flush()


def train(run, corpus, steps, checkpoint=None):
    """Trains `run` up to `steps`; logs (step, train, valid, s/step)."""
    window = []
    while run.step < steps:
        loss, elapsed = run.train_step(corpus)
        window.append((loss, elapsed))
        if run.step % run.args.log_every == 0 or run.step == steps:
            mean = sum(w[0] for w in window) / len(window)
            per_step = sum(w[1] for w in window) / len(window)
            run.log.append((run.step, mean, valid_loss(run.model, corpus,
                                                       run.args), per_step))
            window = []
            progress(run, steps, mean, per_step)
        if checkpoint and run.step % run.args.checkpoint_every == 0:
            checkpoint(run)
    sys.stdout.write("\n")


def build(corpus, args, attention):
    torch.manual_seed(args.seed)
    return CharModel(len(corpus.chars), args.d_model, args.heads, args.d_ff,
                     args.layers, args.dropout, attention)


def plot_losses(path, runs):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for run in runs:
        steps = [r[0] for r in run.log]
        per_step = run.ms_per_step()
        ax.plot(steps, [r[1] for r in run.log],
                label=f"{run.name} train ({per_step:.0f} ms/step)")
        ax.plot(steps, [r[2] for r in run.log], linestyle="--",
                label=f"{run.name} valid")
    ax.set(xlabel="step", ylabel="cross-entropy (nats/char)",
           title="character-level fast-weight transformer")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def write_log(path, runs):
    with open(path, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["model", "step", "train_loss", "valid_loss",
                      "seconds_per_step"])
        for run in runs:
            for row in run.log:
                out.writerow([run.name, *row])


def gradient_check(model, corpus, args):
    """The largest error, relative to each parameter's largest gradient, of
    the gradients of `model` (fwp) and of the seeds' float32 model with its
    weights, against the seeds' model in float64, on one batch."""
    peer = build(corpus, args, seeds_attention)
    truth = build(corpus, args, seeds_attention)
    for m in (peer, truth):
        m.load_state_dict(model.state_dict())
    truth.double()
    x, y = corpus.batch(corpus.train, args.seq_len, args.batch,
                        torch.Generator().manual_seed(5))
    grads = []
    for m in (model, peer, truth):
        m.zero_grad()
        loss_of(m, x, y).backward()
        grads.append([p.grad.double() for p in m.parameters()])
    model.zero_grad()

    def worst(got):
        return max(((g - t).abs().max() / t.abs().max()).item()
                   for g, t in zip(got, grads[2]) if t.abs().max() > 0)

    return worst(grads[0]), worst(grads[1])


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--text", help="a UTF-8 text file (default: the KJV)")
    p.add_argument("--out", default=os.path.join(ROOT, "build", "char-lm"))
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--peer-steps", type=int, default=None,
                   help="steps of the PyTorch peer (default: --steps; 0: "
                        "none)")
    p.add_argument("--resume", action="store_true")
    p.add_argument("--seq-len", type=int, default=128)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--d-model", type=int, default=128)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--d-ff", type=int, default=512)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--dropout", type=float, default=0.0)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--log-every", type=int, default=50)
    p.add_argument("--checkpoint-every", type=int, default=200)
    p.add_argument("--sample", type=int, default=400,
                   help="characters to generate at the end")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=os.cpu_count(),
                   help="threads of both models (default: every core)")
    return p.parse_args(argv)


def main(argv=None):
    args = parse(argv)
    # The same threads for both: PyTorch's, and the OpenMP runtime's that
    # fwp's kernels run on (read when the first kernel loads).
    torch.set_num_threads(args.threads)
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    os.makedirs(args.out, exist_ok=True)
    text = args.text or default_text(os.path.join(args.out, "data"))
    corpus = Corpus(text)
    print(f"{text}: {len(corpus.train) + len(corpus.valid)} characters, "
          f"{len(corpus.chars)} distinct; model d_model={args.d_model} "
          f"heads={args.heads} layers={args.layers}, batch {args.batch} x "
          f"{args.seq_len} chars, {torch.get_num_threads()} threads")

    model = build(corpus, args, fwp_attention)
    peer_model = build(corpus, args, seeds_attention)
    peer_model.load_state_dict(model.state_dict())  # the same start
    runs = [Run("fwp", model, args, args.seed + 1),
            Run("torch", peer_model, args, args.seed + 1)]
    checkpoint_path = os.path.join(args.out, "checkpoint.pt")
    if args.resume and os.path.exists(checkpoint_path):
        saved = torch.load(checkpoint_path)
        for run in runs:
            if run.name in saved:
                run.restore(saved[run.name])
        print(f"resumed from {checkpoint_path} at step {runs[0].step}")

    def checkpoint(_):
        torch.save({run.name: run.state() for run in runs}, checkpoint_path)

    train(runs[0], corpus, args.steps, checkpoint)
    peer_steps = args.steps if args.peer_steps is None else args.peer_steps
    if peer_steps:
        train(runs[1], corpus, peer_steps, checkpoint)
    checkpoint(None)
    active = [run for run in runs if run.log]
    write_log(os.path.join(args.out, "loss.csv"), active)
    plot_losses(os.path.join(args.out, "loss.png"), active)

    for run in active:
        last = run.log[-1]
        print(f"{run.name:5s} step {last[0]}: train {last[1]:.3f}, valid "
              f"{last[2]:.3f} nats/char; {run.ms_per_step():.1f} ms per "
              "training step (median)")
    ours, peer = gradient_check(model, corpus, args)
    print(f"gradients at the last step against the seeds' model in float64 "
          f"(largest error relative to each parameter's largest gradient): "
          f"fwp {ours:.1e}, the seeds' PyTorch model in float32 {peer:.1e}")
    if args.sample:
        g = torch.Generator().manual_seed(args.seed)
        prompt = corpus.encode("And it came to pass")[:19] or [0]
        ids = model.generate(prompt, args.sample, 0.8, g)
        sample = corpus.decode(prompt) + corpus.decode(ids)
        with open(os.path.join(args.out, "sample.txt"), "w") as f:
            f.write(sample + "\n")
        print("sample (fwp, one-token decoding):\n" + sample)
    print(f"wrote {args.out}/loss.csv, loss.png, checkpoint.pt, sample.txt")
    return runs


if __name__ == "__main__":
    main()
