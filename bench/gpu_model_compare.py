#!/usr/bin/env python3
"""fwp's and fla's kernels in bench/gpu_model.py at the reference shape
(B 4, T 4096, H 16, d_k 64 -> D 128 by DPFP nu 1, d_v 128, bf16), from the
emulator's counters at T 128 and 256 (B 1, H 2) in REPORTS:

  fwp-stages-T.jsonl, fwp-tile-T.jsonl  bench/fwp-scan-counts (a bare
      ScanDesc, forward then backward); NAME-T.forward, where present, the
      number of the forward's launches (else 4 and 3)
  fla-T.jsonl  bench/fla_on_emulator.py (fla's forward, its first 5
      launches, then its backward), fla checked against float64 in the run

fla is given the features: the feature maps a caller would run beside it
(DPFP of q and k forward; its gradient backward) are added on its side as
one elementwise launch each, DRAM-bound: forward reads q and k (64 bf16 a
row each) and writes their features (128 bf16), 768 bytes a row; backward
also reads the features' gradients and writes dq and dk, 1024 bytes a row;
about 100 warp instructions a row.

  python3 bench/gpu_model_compare.py [--reports DIR] [--gpu a100|h100]

`make gpu-model` makes the reports and runs this; the default REPORTS are
those of bench/results/gpu-model-2026-11-27.
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gpu_model  # noqa: E402

TARGET = (4096, 4, 16)
ROWS = TARGET[0] * TARGET[1] * TARGET[2]
FORWARD_LAUNCHES = {"fwp-stages": 4, "fwp-tile": 3, "fla": 5}
REPORTS = os.path.join(HERE, "results", "gpu-model-2026-11-27", "reports")


def load(name, t, reports=REPORTS):
    with open(os.path.join(reports, f"{name}-{t}.jsonl")) as f:
        return [json.loads(line) for line in f if line.strip()]


def forward_launches(name, reports):
    path = os.path.join(reports, f"{name}-128.forward")
    if os.path.exists(path):
        with open(path) as f:
            return int(f.read())
    return FORWARD_LAUNCHES[name]


def at_target(name, reports=REPORTS):
    return gpu_model.extrapolate(
        [((128, 1, 2), load(name, 128, reports)),
         ((256, 1, 2), load(name, 256, reports))], TARGET)


def feature_map(kernel, bytes_per_row):
    return {"kernel": kernel, "ctas": ROWS // 64, "threads_per_cta": 128,
            "registers_per_thread": 32, "shared_bytes_per_cta": 0,
            "warp_instructions": 100 * ROWS,
            "distinct_global_sectors": bytes_per_row * ROWS / 32,
            "shared_wavefronts": 0, "barriers": 0,
            "mma": {"tf32": 0, "bf16": 0, "f16": 0}}


def fwp_workspace(reports, stages):
    """fwp's workspace at TARGET, {entry: bytes}, from the launch plans
    fwp-scan-counts left in REPORTS/cache (bench/plan_memory.py); empty
    where there are none."""
    import glob
    import plan_memory
    t, b, h = TARGET
    out = {}
    for plan in glob.glob(os.path.join(reports, "cache", "v1", "*",
                                       "plan.fwp")):
        with open(os.path.join(os.path.dirname(plan), "module.txt")) as f:
            key = f.read()
        if ("gpu-stages" in key) != stages or "scan cuda" not in key:
            continue
        entry = "forward" if "entry=forward" in key else "backward"
        with open(plan) as f:
            text = f.read()
        shapes = {}
        for line in text.splitlines():
            words = line.split()
            if words[:1] != ["arg"] or "?" not in words:
                continue
            dims = words[3:]
            known = [t, b, h] if dims.count("?") == 3 else [b, h]
            shapes[words[1]] = known + [int(d) for d in dims if d != "?"]
        out[entry] = sum(x[3] for x in plan_memory.evaluate(text, shapes))
    return out


def fla_workspace(k=128, v=128, chunk=64):
    """The tensors fla's chunk_delta_rule wrappers allocate beside their
    inputs and outputs at TARGET, at their peaks (fla-sm80-2026-11-27's
    README): the forward's during chunk_fwd_o, Ai, w, u, h, v_new; the
    backward's during prepare_wy_repr_bwd, Ai (autograd keeps it), w, u, h,
    v_new, dh, dv2, dw, dk2. bf16 throughout."""
    t, b, h = TARGET
    rows = b * t * h * 2
    states = b * (t // chunk) * h * k * v * 2
    ai = rows * chunk
    forward = ai + rows * (k + v + v) + states
    backward = forward + states + rows * (v + k + k)
    return {"forward": forward, "backward": backward}


def table(gpu, title, launches):
    total = 0.0
    print(f"\n{title}")
    print(f"  {'kernel':44s} {'CTAs':>6s} {'MB':>8s} {'Mwarpi':>8s} "
          f"{'GFLOP':>7s} {'us':>9s}  bound")
    for launch in launches:
        m = gpu_model.model_launch(gpu, launch)
        total += m["time"]
        print(f"  {launch['kernel'][:44]:44s} {launch['ctas']:6d} "
              f"{launch['distinct_global_sectors'] * 32 / 1e6:8.1f} "
              f"{launch['warp_instructions'] / 1e6:8.2f} "
              f"{m['flops'] / 1e9:7.1f} {m['time'] * 1e6:9.1f}  {m['bound']}")
    print(f"  {'total':44s} {'':6s} {'':8s} {'':8s} {'':7s} "
          f"{total * 1e6:9.1f}")
    return total


def main(argv):
    parser = argparse.ArgumentParser()
    parser.add_argument("--gpu", choices=sorted(gpu_model.GPUS),
                        default="a100")
    parser.add_argument("--reports", default=REPORTS)
    args = parser.parse_args(argv)
    gpu = gpu_model.GPUS[args.gpu]
    print(f"model {gpu.name}; B {TARGET[1]}, T {TARGET[0]}, H {TARGET[2]}, "
          "D 128 (d_k 64, DPFP nu 1), d_v 128, bf16")
    times = {}
    for name in ("fwp-stages", "fwp-tile", "fla"):
        launches = at_target(name, args.reports)
        n = forward_launches(name, args.reports)
        forward, backward = launches[:n], launches[n:]
        if name == "fla":
            forward = [feature_map("(dpfp of q and k, beside fla)", 768)] + \
                forward
            backward = backward + [feature_map("(dpfp_grad, beside fla)",
                                               1024)]
        fwd = table(gpu, f"{name} forward", forward)
        bwd = table(gpu, f"{name} backward (a training step's second half)",
                    backward)
        times[name] = (fwd, fwd + bwd)
    mib = 2 ** 20
    stages, tile = (fwp_workspace(args.reports, x) for x in (True, False))
    fla = fla_workspace()
    if stages and tile:
        print(f"\nworkspace beside inputs and outputs, MiB (forward, "
              f"backward): fwp {stages['forward'] / mib:.0f}, "
              f"{stages['backward'] / mib:.0f} (tile-scan "
              f"{tile['forward'] / mib:.0f}, {tile['backward'] / mib:.0f}); "
              f"fla {fla['forward'] / mib:.0f}, {fla['backward'] / mib:.0f}")
    short = gpu.name.split()[-1].strip("()")
    print(f"\nmodel {short}: fwp fwd {times['fwp-stages'][0] * 1e3:.2f} ms, "
          f"fwd+bwd {times['fwp-stages'][1] * 1e3:.2f} ms (tile-scan "
          f"{times['fwp-tile'][0] * 1e3:.2f}, "
          f"{times['fwp-tile'][1] * 1e3:.2f}); fla fwd "
          f"{times['fla'][0] * 1e3:.2f} ms, fwd+bwd "
          f"{times['fla'][1] * 1e3:.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
