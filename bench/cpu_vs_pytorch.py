#!/usr/bin/env python3
"""fwp's CPU forward against the chunked PyTorch forward, in one run.

    bench/cpu_vs_pytorch.py [--fwp-bench build/bin/fwp-bench] [--quick]
                            [--training] [--rounds N] [--markdown FILE]

Runs fwp-bench (fwp's compiled float32 forward of the whole module, timed
in C++, median after a warm-up) and then, on the same shapes, the chunked
PyTorch forward of bench/pytorch_peer.py (float32, chunk 64) on one thread
and on every core, and prints one table with the ratios. With --training,
a training step on both sides: the forward, then the backward of a random
dL/dy (fwp-bench --training; PyTorch's autograd through the chunked
forward, gradients of x and of every weight). PyTorch's timings
are medians of at least 3 runs and 0.5 s after a warm-up call, like
fwp-bench's. The script says which BLAS PyTorch was built with (PyPI's
wheels: MKL, never the reference BLAS, for a fair peer).

The whole comparison runs --rounds times (default 3), fwp and PyTorch
taking turns, and each figure is the best of its rounds: on a shared or
virtual machine the speed of a core varies by 20% or more over minutes,
and the best of a few rounds is what the code can do, for both sides alike.
"""

import argparse
import csv
import datetime
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import torch

sys.path.insert(0, os.path.dirname(__file__))
import pytorch_peer  # noqa: E402


def median_ms(call, min_runs=3, min_seconds=0.5, max_seconds=5.0):
    call()  # warm-up
    times = []
    start = time.perf_counter()
    while True:
        t0 = time.perf_counter()
        call()
        times.append(time.perf_counter() - t0)
        spent = time.perf_counter() - start
        if (len(times) >= min_runs and spent >= min_seconds) or \
                spent >= max_seconds:
            break
    return statistics.median(times) * 1e3


def peer_ms(threads, training, steps, batch, d_model, heads, nu, rule):
    """The peer's median in a process of its own: the BLAS sizes its thread
    pool from the environment when it loads, which torch.set_num_threads
    does not change, and idle pool threads that spin would steal the core
    from a one-thread run."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads),
               MKL_NUM_THREADS=str(threads),
               OPENBLAS_NUM_THREADS=str(threads))
    shape = f"{steps},{batch},{d_model},{heads},{nu},{rule}"
    out = subprocess.run(
        [sys.executable, __file__, "--peer", shape, "--threads",
         str(threads)] + (["--training"] if training else []),
        env=env, check=True, capture_output=True, text=True)
    return float(out.stdout.strip())


def time_peer(shape, threads, training):
    steps, batch, d_model, heads, nu, rule = shape.split(",")
    steps, batch, d_model, heads, nu = map(int,
                                           (steps, batch, d_model, heads, nu))
    torch.set_num_threads(threads)
    x, w = pytorch_peer.random_problem(steps, batch, d_model, heads)
    if not training:
        with torch.no_grad():
            return median_ms(lambda: pytorch_peer.chunked_forward(
                x, w, heads, nu=nu, rule=rule))
    dy = torch.randn(x.shape, generator=torch.Generator().manual_seed(1))
    for t in [x, *w.values()]:
        t.requires_grad_(True)

    def step():
        for t in [x, *w.values()]:
            t.grad = None
        pytorch_peer.chunked_forward(x, w, heads, nu=nu, rule=rule).backward(dy)

    return median_ms(step)


def fwp_rows(args, threads):
    """fwp-bench's CPU rows with `threads` OpenMP threads."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    with tempfile.TemporaryDirectory() as tmp:
        table = os.path.join(tmp, "fwp.csv")
        command = [args.fwp_bench, "--csv", table]
        command += ["--quick"] if args.quick else []
        command += ["--training"] if args.training else []
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL,
                       env=env)
        with open(table) as f:
            return [r for r in csv.DictReader(f) if r["backend"] == "cpu"]


def blas_in_use():
    """PyTorch's BLAS, as its build configuration names it."""
    config = torch.__config__.show()
    for name in ("BLAS_INFO=", "LAPACK_INFO="):
        if name in config:
            return "PyTorch " + torch.__version__ + ", " + \
                config.split(name)[1].split(",")[0]
    return "PyTorch " + torch.__version__ + ", BLAS unknown"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fwp-bench", default="build/bin/fwp-bench")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--training", action="store_true",
                        help="time a training step (forward, then backward)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="rounds of the whole comparison; each figure "
                        "is the best of its rounds (default 3)")
    parser.add_argument("--markdown", help="also write the table here")
    parser.add_argument("--peer", help=argparse.SUPPRESS)  # T,B,d,H,nu,rule
    parser.add_argument("--threads", type=int, default=1,
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error(f"--rounds must be at least 1, got {args.rounds}")
    if args.peer:
        print(time_peer(args.peer, args.threads, args.training))
        return

    cores = os.cpu_count()
    counts = (1, cores)
    fwp_runs = {threads: [] for threads in counts}
    peer_runs = {}
    for _ in range(args.rounds):
        for threads in counts:
            fwp_runs[threads].append(fwp_rows(args, threads))
        for i, r in enumerate(fwp_runs[1][0]):
            shape = (int(r["seq_len"]), int(r["batch"]), int(r["d_model"]),
                     int(r["heads"]), int(r["nu"]), r["rule"])
            for threads in counts:
                peer_runs.setdefault((i, threads), []).append(
                    peer_ms(threads, args.training, *shape))
    rows = fwp_runs[1][0]

    def best_fwp(threads, i):
        return min(float(run[i]["compiled_ms"]) for run in fwp_runs[threads])

    lines = [
        f"fwp (compiled, float32, chunk 64) vs chunked PyTorch {torch.__version__}"
        f" (float32, chunk 64), "
        f"{'training step (forward + backward)' if args.training else 'forward'}"
        f" of the whole module",
        f"machine: {platform.processor() or platform.machine()}, {cores} cores;"
        f" BLAS: {blas_in_use()}; {datetime.date.today()};"
        f" best of {args.rounds} rounds",
        "",
        f"{'T':>5} {'B':>2} {'d_model':>7} {'heads':>5} {'nu':>2}  {'rule':<5}"
        f" {'fwp 1t':>9} {f'fwp {cores}t':>9} {'torch 1t':>9}"
        f" {f'torch {cores}t':>9} {'1t ratio':>8} {f'{cores}t ratio':>8}"
        f" {f'fwp {cores}t/1t':>10}",
    ]
    print("\n".join(lines), flush=True)
    for i, r in enumerate(rows):
        steps, batch, d_model = int(r["seq_len"]), int(r["batch"]), int(
            r["d_model"])
        heads, nu, rule = int(r["heads"]), int(r["nu"]), r["rule"]
        timings = [min(peer_runs[(i, threads)]) for threads in counts]
        one, every = best_fwp(1, i), best_fwp(cores, i)
        line = (f"{steps:>5} {batch:>2} {d_model:>7} {heads:>5} {nu:>2}  "
                f"{rule:<5} {one:>9.3f} {every:>9.3f} {timings[0]:>9.3f} "
                f"{timings[1]:>9.3f} {timings[0] / one:>7.2f}x "
                f"{timings[1] / every:>7.2f}x {one / every:>9.2f}x")
        print(line, flush=True)
        lines.append(line)
    lines.append("")
    lines.append("times in ms; a ratio is PyTorch's time over fwp's at the "
                 "same thread count (> 1: fwp is faster); the last column is "
                 "fwp's speedup from 1 thread to all.")
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write("```\n" + "\n".join(lines) + "\n```\n")


if __name__ == "__main__":
    main()
