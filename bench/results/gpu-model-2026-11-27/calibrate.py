#!/usr/bin/env python3
"""Fits bench/gpu_model.py's `dependent_cycles` and `global_latency_cycles`
to the kernels ncu timed on an H200 (bench/results/gpu-h200-2026-11-26.md,
d_v 64, bf16, B 4, T 4096, H 16): fwp's tile-scan kernels and fla's, from
emulator counters at d_v 64 (reports/fwp-tile64-T.jsonl, reports/fla64-T
.jsonl, T 128 and 256) taken to that shape. Least squares of log time over
a grid; prints the fit and each kernel's modelled against measured time.

  python3 bench/results/gpu-model-2026-11-27/calibrate.py
"""
import dataclasses
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", ".."))
from gpu_model_compare import TARGET, gpu_model, load  # noqa: E402

# ncu's microseconds on the H200, first launch of each kernel name.
MEASURED = {
    "scan_prepare": 2250, "scan_state": 1910, "scan_state_grad": 2090,
    "scan_chunk_grad": 4670, "scan_input_grad": 2800,
    "chunk_scaled_dot_kkt_fwd_kernel": 31.7,
    "merge_16x16_to_64x64_inverse_kernel": 157,
    "recompute_w_u_fwd_kernel": 60.8,
    "chunk_gated_delta_rule_fwd_kernel_h_blockdim64": 70.0,
    "chunk_fwd_kernel_o": 67.3, "chunk_bwd_kernel_dv_local": 53.9,
    "chunk_gated_delta_rule_bwd_kernel_dhu_blockdim64": 94.2,
    "chunk_bwd_kernel_dqkwg": 181, "prepare_wy_repr_bwd_kernel": 334}
# fwp's scan_state runs twice (forward, training's forward): the first.
H200 = dataclasses.replace(gpu_model.GPUS["h100"], name="H200",
                           dram_gbps=4800.0)


def kernels():
    seen, out = set(), []
    for name in ("fwp-tile64", "fla64"):
        launches = gpu_model.extrapolate(
            [((128, 1, 2), load(name, 128)), ((256, 1, 2), load(name, 256))],
            TARGET)
        for launch in launches:
            if launch["kernel"] in MEASURED and launch["kernel"] not in seen:
                seen.add(launch["kernel"])
                out.append(launch)
    return out


def error(gpu, launches):
    return sum(math.log(gpu_model.model_launch(gpu, x)["time"] * 1e6 /
                        MEASURED[x["kernel"]]) ** 2 for x in launches)


def main():
    launches = kernels()
    fits = [(error(dataclasses.replace(H200, dependent_cycles=c,
                                       global_latency_cycles=g), launches),
             c, g)
            for c in [x / 2 for x in range(2, 41)] for g in range(0, 401, 10)]
    err, c, g = min(fits)
    gpu = dataclasses.replace(H200, dependent_cycles=c,
                              global_latency_cycles=g)
    print(f"fit: dependent_cycles {c}, global_latency_cycles {g} "
          f"(sum of squared log ratios {err:.2f} over {len(launches)})")
    for x in launches:
        m = gpu_model.model_launch(gpu, x)
        t = m["time"] * 1e6
        print(f"  {x['kernel'][:44]:44s} ncu {MEASURED[x['kernel']]:7.1f} "
              f"model {t:7.1f} x{t / MEASURED[x['kernel']]:.2f} {m['bound']}")


if __name__ == "__main__":
    main()
