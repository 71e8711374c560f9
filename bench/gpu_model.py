#!/usr/bin/env python3
"""A first model of GPU time on the PTX emulator's counters (issue 29).

  python3 bench/gpu_model.py REPORT.jsonl [--gpu a100|h100]

REPORT is what the emulator writes with FWP_EMU_REPORT: one JSON line of
counters per launch (docs/emulator.md). For each launch the model bounds the
time by each resource the kernel uses, at the GPU's peak, and takes the
largest bound; the summary is their sum plus a launch overhead each:

  dram     distinct 32-byte sectors read or written / DRAM bandwidth. No L2
           reuse between kernels yet: a kernel's reads of what the one
           before wrote count in full (an upper bound where it fits in L2).
  tensor   MMA FLOPs by operand type / the tensor cores' dense peak, on the
           SMs the grid occupies (a grid smaller than the GPU leaves SMs
           idle). mma.sync m16n8k16 for 16-bit operands (4096 FLOPs), m16n8k8
           for tf32 (2048): the shapes fwp and fla issue.
  issue    warp instructions / (schedulers x clock) on the occupied SMs.
  shared   shared-memory wavefronts / (one a clock) on the occupied SMs.
  latency  the serial path of one CTA: its warps' instructions one after
           another, each waiting `dependent_cycles` for the one before and
           each global access `global_latency_cycles` more (a loop over
           chunks is long here), times the waves.

Occupancy (CTAs an SM holds at once) comes from the registers, shared
memory and threads a CTA takes, as the CUDA occupancy calculator counts
them; waves = ceil(CTAs / (SMs x CTAs per SM)). The parameters come from
NVIDIA's architecture whitepapers and datasheets (GPUS below), but for
three: `dependent_cycles` and `global_latency_cycles`, fitted (least
squares of log time) to the 14 kernels, fwp's and fla's, that ncu timed on
an H200 (bench/results/gpu-h200-2026-11-26.md; the fit in
bench/results/gpu-model-2026-11-27/calibrate.py: within 0.42x to 1.97x
each, 9 of 14 within 30%) and taken for the A100 too; and the H100's rate of the legacy
mma.sync (taken as the A100's per SM and clock; Hopper's full rate is
wgmma's).
"""
import argparse
import dataclasses
import json
import math
import sys


@dataclasses.dataclass(frozen=True)
class Gpu:
    name: str
    sms: int
    clock_ghz: float             # the boost clock the peak rates assume
    dram_gbps: float             # GB/s
    l2_bytes: int
    shared_per_sm: int           # bytes a kernel's CTAs may take per SM
    registers_per_sm: int
    threads_per_sm: int
    ctas_per_sm: int
    schedulers_per_sm: int       # warp instructions issued a clock
    mma_flops_per_sm_clock: dict  # dense, by operand type
    launch_us: float             # one launch's fixed cost
    dependent_cycles: float      # latency of a dependent instruction
    global_latency_cycles: float  # and of a global access, past overlap
    source: str


GPUS = {
    # NVIDIA A100 Tensor Core GPU Architecture (whitepaper, 2020), tables 1
    # and 3: 108 SMs, 1410 MHz boost, 312 TFLOPS dense bf16/f16 and 156
    # tf32 (2048 and 1024 FLOPs per SM and clock), 40 MB L2, 164 KB of
    # shared memory per SM of which 163 KB to one CTA, 64 K registers,
    # 2048 threads and 32 CTAs per SM, four warp schedulers per SM. A100
    # 80GB SXM datasheet: 2039 GB/s.
    "a100": Gpu("A100-SXM4-80GB (sm_80)", 108, 1.41, 2039.0, 40 << 20,
                164 * 1024, 65536, 2048, 32, 4,
                {"bf16": 2048, "f16": 2048, "tf32": 1024}, 4.0, 3.0, 160.0,
                "A100 architecture whitepaper (2020), A100 80GB datasheet"),
    # NVIDIA H100 Tensor Core GPU Architecture (whitepaper, 2022): H100 SXM5
    # 132 SMs, 989 TFLOPS dense bf16 at 1830 MHz (4096 FLOPs per SM and
    # clock with wgmma), 50 MB L2, 228 KB of shared memory per SM (227 KB to
    # one CTA), 64 K registers, 2048 threads and 32 CTAs per SM. H100 SXM
    # datasheet: 3.35 TB/s. mma.sync assumed at the A100's rate per SM and
    # clock (an assumption: only a GPU can say).
    "h100": Gpu("H100-SXM5 (sm_90)", 132, 1.83, 3350.0, 50 << 20,
                228 * 1024, 65536, 2048, 32, 4,
                {"bf16": 2048, "f16": 2048, "tf32": 1024}, 4.0, 3.0, 160.0,
                "H100 architecture whitepaper (2022), H100 datasheet"),
}

# FLOPs of one warp's mma.sync by operand type (shapes as documented above).
MMA_FLOPS = {"bf16": 2 * 16 * 8 * 16, "f16": 2 * 16 * 8 * 16,
             "tf32": 2 * 16 * 8 * 8}
REGISTER_GRANULE = 256  # registers are allocated per warp in units of 256


def ctas_per_sm(gpu, launch):
    """CTAs of `launch` one SM holds at once (at least 1)."""
    threads = launch["threads_per_cta"]
    warps = math.ceil(threads / 32)
    per_warp = math.ceil(launch["registers_per_thread"] * 32 /
                         REGISTER_GRANULE) * REGISTER_GRANULE
    limits = [gpu.ctas_per_sm, gpu.threads_per_sm // max(threads, 1)]
    if per_warp:
        limits.append(gpu.registers_per_sm // (per_warp * warps))
    if launch["shared_bytes_per_cta"]:
        limits.append(gpu.shared_per_sm // launch["shared_bytes_per_cta"])
    return max(1, min(limits))


def model_launch(gpu, launch):
    """{bound name: seconds} for one launch, with 'time' and 'bound'."""
    ctas = launch["ctas"]
    resident = ctas_per_sm(gpu, launch)
    waves = math.ceil(ctas / (gpu.sms * resident))
    # CTAs go to SMs one each before any SM takes a second.
    busy_sms = min(gpu.sms, ctas)
    clock = gpu.clock_ghz * 1e9
    flops = sum(MMA_FLOPS[t] * n for t, n in launch["mma"].items())
    tensor = sum(MMA_FLOPS[t] * n / gpu.mma_flops_per_sm_clock[t]
                 for t, n in launch["mma"].items()) / (busy_sms * clock)
    warps = ctas * math.ceil(launch["threads_per_cta"] / 32)
    global_accesses = launch.get("by_class", {}).get("global", 0)
    bounds = {
        "dram": launch["distinct_global_sectors"] * 32 / (gpu.dram_gbps * 1e9),
        "tensor": tensor,
        "issue": launch["warp_instructions"] /
        (busy_sms * gpu.schedulers_per_sm * clock),
        "shared": launch["shared_wavefronts"] / (busy_sms * clock),
        "latency": waves * (launch["warp_instructions"] * gpu.dependent_cycles +
                            global_accesses * gpu.global_latency_cycles) /
        (warps * clock),
    }
    bound = max(bounds, key=bounds.get)
    return dict(bounds, bound=bound, flops=flops, waves=waves,
                resident=resident,
                time=bounds[bound] + gpu.launch_us * 1e-6)


# Counters that grow with a CTA's work; the rest describe the CTA.
WORK_COUNTERS = ("warp_instructions", "distinct_global_sectors",
                 "shared_wavefronts", "barriers")


def extrapolate(runs, target):
    """The launches of `runs` at shape `target`, (T, B, H).

    `runs` holds the same sequence of launches emulated at two sequence
    lengths of one batch and head count: [((T, B, H), launches), ...]. Each
    launch's grid is either a CTA per (batch, head, block of steps) or a CTA
    per (batch, head, other blocks) that loops over the steps: its CTAs grow
    with B H, and with T or not, as the two runs show. A CTA's work (each
    counter of WORK_COUNTERS and each MMA type) is affine in T, fixed by the
    two runs: exact where CTAs of one launch do the same work and T is a
    whole number of chunks. Raises ValueError where the runs disagree with
    that (other launches, or CTAs growing otherwise)."""
    (shape1, small), (shape2, large) = runs
    (t1, b1, h1), (t2, b2, h2) = shape1, shape2
    t, b, h = target
    if (b1, h1) != (b2, h2) or t1 == t2 or len(small) != len(large):
        raise ValueError("two runs of one batch and head count, other T")
    out = []
    for one, two in zip(small, large):
        if one["kernel"] != two["kernel"]:
            raise ValueError(f"launch {one['kernel']} against {two['kernel']}")
        heads = b * h / (b1 * h1)
        if two["ctas"] * t1 == one["ctas"] * t2:
            ctas = one["ctas"] * heads * t / t1
        elif two["ctas"] == one["ctas"]:
            ctas = one["ctas"] * heads
        else:
            raise ValueError(f"{one['kernel']}: CTAs neither follow T nor "
                             "stay")

        def per_cta(c1, c2):
            a1, a2 = c1 / one["ctas"], c2 / two["ctas"]
            return a1 + (a2 - a1) * (t - t1) / (t2 - t1)

        scaled = dict(one, ctas=round(ctas))
        for key in WORK_COUNTERS:
            scaled[key] = per_cta(one[key], two[key]) * ctas
        for key in ("mma", "by_class"):
            if key in one:
                scaled[key] = {k: per_cta(n, two[key][k]) * ctas
                               for k, n in one[key].items()}
        out.append(scaled)
    return out


def model_report(gpu, launches):
    """Per kernel name (launches of one name summed) and the total, in
    seconds: [(name, launches, {bound: seconds, 'time', 'bound'})]."""
    rows = {}
    for launch in launches:
        m = model_launch(gpu, launch)
        row = rows.setdefault(launch["kernel"], {"n": 0, "time": 0.0,
                                                 "bounds": {}})
        row["n"] += 1
        row["time"] += m["time"]
        row["bounds"][m["bound"]] = row["bounds"].get(m["bound"], 0) + 1
    return rows


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report")
    parser.add_argument("--gpu", choices=sorted(GPUS), default="a100")
    args = parser.parse_args(argv)
    gpu = GPUS[args.gpu]
    with open(args.report) as f:
        launches = [json.loads(line) for line in f if line.strip()]
    rows = model_report(gpu, launches)
    print(f"model {gpu.name} ({gpu.source})")
    print(f"{'kernel':28s} {'n':>3s} {'us':>10s}  bound")
    total = 0.0
    for name, row in rows.items():
        total += row["time"]
        bounds = ", ".join(f"{b} x{n}" for b, n in row["bounds"].items())
        print(f"{name:28s} {row['n']:3d} {row['time'] * 1e6:10.1f}  {bounds}")
    print(f"{'TOTAL':28s} {'':3s} {total * 1e6:10.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
