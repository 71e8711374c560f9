"""fwp against fla on the GPU, both through PyTorch in one process, on the
same tensors (issues 9, 10 and 11):

- the scan, bf16, B=4 T=4096 H=16 d_k=64 nu=1 (128 DPFP features), d_v 64
  and 128: fwp.delta_rule with DPFP fused (reads raw q and k) against fla's
  chunk_delta_rule on features computed by PyTorch (the seeds' DPFP), and
  against fla's scan alone on precomputed features; forward, and forward
  plus backward; fwp in float32 too;
- the whole module, bf16, d_model 1024, 16 heads: fwp.nn.FastWeightsAttention
  against what a user writes today (nn.Linear on cuBLAS, DPFP in PyTorch,
  fla's chunk_delta_rule), forward plus backward, with peak memory.

Each figure is the median of --repeats timed calls (CUDA events) after
warm-up; outputs are compared between the two before timing. fla is
imported from --fla (a checkout of flash-linear-attention, never part of
this repository); without it only fwp's figures are printed.

    python3 bench/gpu_vs_fla.py --fla /path/to/flash-linear-attention
    python3 bench/gpu_vs_fla.py --smoke   # tiny shapes, any device
"""

import argparse
import os
import platform
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))
import fwp  # noqa: E402
import seeds_pytorch as seeds  # noqa: E402


def timed(function, device, repeats, warmup=3):
    """Median milliseconds of `function()` and the peak memory (MiB) above
    what was allocated before, over `repeats` calls."""
    for _ in range(warmup):
        function()
    if device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
    times = []
    for _ in range(repeats):
        if device.type == "cuda":
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            function()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
        else:
            t0 = time.perf_counter()
            function()
            times.append((time.perf_counter() - t0) * 1e3)
    peak = 0.0
    if device.type == "cuda":
        peak = (torch.cuda.max_memory_allocated() - base) / 2 ** 20
    return statistics.median(times), peak


def load_fla(path):
    if not path:
        return None
    sys.path.insert(0, path)
    try:
        from fla.ops.delta_rule import chunk_delta_rule
        return chunk_delta_rule
    except Exception as error:  # noqa: BLE001 - report and go on without
        print(f"fla: cannot import chunk_delta_rule from {path}: {error}")
        return None


def naive_delta_rule(q, k, v, beta, scale=1.0):
    """A step-by-step stand-in with chunk_delta_rule's interface ([B, T, H,
    *], (o, final state)): exercises the peer's code paths in --smoke."""
    state = q.new_zeros(q.shape[0], q.shape[2], q.shape[3], v.shape[3],
                        dtype=torch.float32)
    outputs = []
    for t in range(q.shape[1]):
        kt, qt = k[:, t].float(), q[:, t].float() * scale
        old = torch.einsum("bhd,bhdv->bhv", kt, state)
        write = beta[:, t, :, None].float() * (v[:, t].float() - old)
        state = state + torch.einsum("bhd,bhv->bhdv", kt, write)
        outputs.append(torch.einsum("bhd,bhdv->bhv", qt, state))
    return torch.stack(outputs, 1).to(v.dtype), state


def relative_error(a, b):
    a, b = a.double(), b.double()
    return ((a - b).abs().max() / b.abs().max().clamp_min(1e-30)).item()


def scan_inputs(batch, steps, heads, d_key, d_value, dtype, device, seed=0):
    g = torch.Generator(device="cpu").manual_seed(seed)

    def rand(*shape):
        return torch.randn(*shape, generator=g).to(device, dtype)

    q, k = rand(batch, steps, heads, d_key), rand(batch, steps, heads, d_key)
    v = rand(batch, steps, heads, d_value)
    beta = torch.rand(batch, steps, heads, generator=g).to(device, dtype)
    return q, k, v, beta


def bench_scan(args, device, chunk_delta_rule, rows):
    dpfp = seeds.DPFP(1)
    for d_value in args.d_values:
        q, k, v, beta = scan_inputs(args.batch, args.steps, args.heads,
                                    args.d_key, d_value, torch.bfloat16,
                                    device)
        label = (f"scan B={args.batch} T={args.steps} H={args.heads} "
                 f"d_k={args.d_key} d_v={d_value} bf16")
        leaves = [t.clone().requires_grad_(True) for t in (q, k, v, beta)]

        def fwp_forward():
            with torch.no_grad():
                return fwp.delta_rule(q, k, v, beta, dpfp=fwp.DPFP(1))[0]

        def fwp_training():
            o, _ = fwp.delta_rule(*leaves, dpfp=fwp.DPFP(1))
            o.sum().backward()

        o_fwp = fwp_forward()
        rows.append((label, "fwp forward (DPFP fused)",
                     *timed(fwp_forward, device, args.repeats)))
        rows.append((label, "fwp forward+backward",
                     *timed(fwp_training, device, args.repeats)))
        q32, k32, v32, b32 = (t.float() for t in (q, k, v, beta))

        def fwp_f32():
            with torch.no_grad():
                return fwp.delta_rule(q32, k32, v32, b32, dpfp=fwp.DPFP(1))

        rows.append((label, "fwp forward, f32 inputs",
                     *timed(fwp_f32, device, args.repeats)))
        if chunk_delta_rule is None:
            continue
        qf, kf = dpfp(q), dpfp(k)

        def fla_forward_with_dpfp():
            with torch.no_grad():
                return chunk_delta_rule(dpfp(q), dpfp(k), v, beta,
                                        scale=1.0)[0]

        def fla_forward():
            with torch.no_grad():
                return chunk_delta_rule(qf, kf, v, beta, scale=1.0)[0]

        fla_leaves = [t.clone().requires_grad_(True) for t in (q, k, v, beta)]

        def fla_training():
            a, b, c, d = fla_leaves
            o, _ = chunk_delta_rule(dpfp(a), dpfp(b), c, d, scale=1.0)
            o.sum().backward()

        o_fla = fla_forward()
        print(f"{label}: fwp vs fla output, relative difference "
              f"{relative_error(o_fwp, o_fla):.2e} (both bf16 outputs)")
        rows.append((label, "fla + PyTorch DPFP forward",
                     *timed(fla_forward_with_dpfp, device, args.repeats)))
        rows.append((label, "fla forward on features",
                     *timed(fla_forward, device, args.repeats)))
        rows.append((label, "fla + PyTorch DPFP forward+backward",
                     *timed(fla_training, device, args.repeats)))


class TorchStack(torch.nn.Module):
    """The module as a user writes it today: nn.Linear (cuBLAS), DPFP in
    PyTorch, fla's chunk_delta_rule; the seeds' parameter layout."""

    def __init__(self, heads, d_model, chunk_delta_rule):
        super().__init__()
        self.heads, self.d_head = heads, d_model // heads
        self.q = torch.nn.Linear(d_model, d_model, bias=False)
        self.k = torch.nn.Linear(d_model, d_model, bias=False)
        self.v = torch.nn.Linear(d_model, d_model, bias=False)
        self.beta = torch.nn.Linear(d_model, heads, bias=False)
        self.out = torch.nn.Linear(d_model, d_model)
        self.dpfp = seeds.DPFP(1)
        self.scan = chunk_delta_rule

    def forward(self, x):  # x [T, B, d_model]
        steps, batch, _ = x.shape
        xb = x.transpose(0, 1)  # fla's batch-first layout

        def heads(t):
            return t.view(batch, steps, self.heads, self.d_head)

        q = self.dpfp(heads(self.q(xb)))
        k = self.dpfp(heads(self.k(xb)))
        o, _ = self.scan(q, k, heads(self.v(xb)),
                         torch.sigmoid(self.beta(xb)), scale=1.0)
        return self.out(o.reshape(batch, steps, -1)).transpose(0, 1)


def bench_module(args, device, chunk_delta_rule, rows):
    d_model = args.heads * args.d_key
    label = (f"module T={args.steps} B={args.batch} d_model={d_model} "
             f"H={args.heads} bf16")
    layer = fwp.nn.FastWeightsAttention(args.heads, d_model, 0.0,
                                        fwp.nn.DPFP(1)).to(device,
                                                           torch.bfloat16)
    x = torch.randn(args.steps, args.batch, d_model, device=device,
                    dtype=torch.bfloat16, requires_grad=True)

    def fwp_training():
        layer(x).sum().backward()

    rows.append((label, "fwp forward+backward",
                 *timed(fwp_training, device, args.repeats)))
    if chunk_delta_rule is None:
        return
    stack = TorchStack(args.heads, d_model, chunk_delta_rule).to(
        device, torch.bfloat16)

    def stack_training():
        stack(x).sum().backward()

    rows.append((label, "nn.Linear + PyTorch DPFP + fla forward+backward",
                 *timed(stack_training, device, args.repeats)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fla", default=os.environ.get("FLA_PATH"),
                        help="flash-linear-attention checkout")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--smoke", action="store_true",
                        help="tiny shapes on any device (checks the script)")
    args = parser.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if args.smoke:
        args.batch, args.steps, args.heads, args.d_key = 1, 70, 2, 8
        args.d_values, args.repeats = [8], 2
    else:
        if device.type != "cuda":
            sys.exit("gpu_vs_fla.py: no CUDA GPU (use --smoke to check the "
                     "script on the CPU)")
        args.batch, args.steps, args.heads, args.d_key = 4, 4096, 16, 64
        args.d_values = [64, 128]
    name = torch.cuda.get_device_name() if device.type == "cuda" else \
        platform.processor() or platform.machine()
    print(f"machine: {platform.node()}, {name}; torch {torch.__version__}; "
          f"{time.strftime('%Y-%m-%d %H:%M %Z')}")
    chunk_delta_rule = load_fla(args.fla)
    if chunk_delta_rule is None and args.smoke:
        print("peer: a step-by-step PyTorch stand-in for fla (--smoke)")
        chunk_delta_rule = naive_delta_rule
    rows = []
    bench_scan(args, device, chunk_delta_rule, rows)
    bench_module(args, device, chunk_delta_rule, rows)
    print(f"{'shape':<52} {'what':<48} {'ms':>9} {'peak MiB':>9}")
    for label, what, ms, peak in rows:
        print(f"{label:<52} {what:<48} {ms:9.3f} {peak:9.1f}")


if __name__ == "__main__":
    main()
