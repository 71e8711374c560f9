"""bench/gpu_model.py against figures worked out by hand from its stated
rules and the whitepapers' numbers: occupancy limits, each bound, the
choice of the largest, and the command line."""
import math
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "bench"))
import gpu_model  # noqa: E402

A100 = gpu_model.GPUS["a100"]


def launch(**fields):
    base = {"kernel": "k", "ctas": 108, "threads_per_cta": 128,
            "registers_per_thread": 32, "shared_bytes_per_cta": 0,
            "warp_instructions": 0, "distinct_global_sectors": 0,
            "shared_wavefronts": 0, "barriers": 0,
            "mma": {"tf32": 0, "bf16": 0, "f16": 0}}
    base.update(fields)
    return base


def test_occupancy_takes_the_tightest_limit():
    # 255 registers: 8160 a warp, allocated as 8192; 4 warps take 32768 of
    # the 65536: two CTAs.
    assert gpu_model.ctas_per_sm(A100, launch(registers_per_thread=255)) == 2
    # 100 KB of shared memory in 164 KB: one.
    assert gpu_model.ctas_per_sm(
        A100, launch(shared_bytes_per_cta=100 * 1024)) == 1
    # 1024 threads of 2048: two; 32 registers and no shared memory would
    # allow more.
    assert gpu_model.ctas_per_sm(A100, launch(threads_per_cta=1024)) == 2
    # Small CTAs: the 32-CTA limit.
    assert gpu_model.ctas_per_sm(A100, launch(threads_per_cta=32)) == 32


def test_a_pure_copy_is_dram_bound_at_the_datasheet_bandwidth():
    sectors = 10 ** 8  # 3.2 GB
    m = gpu_model.model_launch(A100, launch(distinct_global_sectors=sectors,
                                            warp_instructions=1000))
    assert m["bound"] == "dram"
    assert m["time"] == pytest.approx(3.2e9 / 2039e9 + 4e-6)


def test_bf16_mma_at_the_dense_peak_on_every_sm():
    # 312 TFLOPS dense bf16 over 108 SMs at 1.41 GHz: 2048 FLOPs per SM and
    # clock; one mma.sync m16n8k16 is 4096 FLOPs.
    mmas = 10 ** 9
    m = gpu_model.model_launch(A100, launch(ctas=10_000,
                                            mma={"bf16": mmas}))
    assert m["bound"] == "tensor"
    assert m["tensor"] == pytest.approx(mmas * 4096 / (2048 * 108 * 1.41e9))
    # tf32 (m16n8k8, 2048 FLOPs) at half the rate: the same time per MMA.
    t = gpu_model.model_launch(A100, launch(ctas=10_000, mma={"tf32": mmas}))
    assert t["tensor"] == pytest.approx(m["tensor"])


def test_a_grid_smaller_than_the_gpu_leaves_sms_idle():
    full = gpu_model.model_launch(A100, launch(ctas=108,
                                               mma={"bf16": 10 ** 8}))
    quarter = gpu_model.model_launch(A100, launch(ctas=27,
                                                  mma={"bf16": 10 ** 8}))
    assert quarter["tensor"] == pytest.approx(4 * full["tensor"])


def test_a_serial_cta_is_latency_bound():
    # 8 CTAs of 4 warps, 10^6 warp instructions each warp: every
    # instruction waits dependent_cycles for the one before.
    m = gpu_model.model_launch(A100, launch(ctas=8,
                                            warp_instructions=32 * 10 ** 6))
    assert m["bound"] == "latency"
    assert m["latency"] == pytest.approx(
        10 ** 6 * A100.dependent_cycles / 1.41e9)
    # Twice the CTAs of one SM's capacity make a second wave.
    many = launch(ctas=2 * 108 * 16, warp_instructions=2 * 108 * 16 * 4)
    assert gpu_model.model_launch(A100, many)["waves"] == 2


def test_the_command_line_sums_launches_by_kernel(tmp_path, capsys):
    report = tmp_path / "report.jsonl"
    lines = [launch(kernel="a", distinct_global_sectors=10 ** 7),
             launch(kernel="a", distinct_global_sectors=10 ** 7),
             launch(kernel="b", ctas=8, warp_instructions=32 * 10 ** 5)]
    import json
    report.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    assert gpu_model.main([str(report), "--gpu", "a100"]) == 0
    out = capsys.readouterr().out
    a = 2 * (3.2e8 / 2039e9 + 4e-6) * 1e6
    b = (10 ** 5 * A100.dependent_cycles / 1.41e9 + 4e-6) * 1e6
    assert f"{a:10.1f}" in out and "dram x2" in out
    assert f"{b:10.1f}" in out and "latency x1" in out
    assert f"{a + b:10.1f}" in out.splitlines()[-1]
    assert math.isfinite(a + b)


def test_extrapolation_scales_ctas_and_fits_work_affine_in_t():
    # A per-chunk kernel (CTAs with T, 100 instructions each) and a state
    # kernel (CTAs fixed, 50 + 10 T / 64 instructions each), at T = 128 and
    # 256, B H = 2, taken to T = 4096 and B H = 64.
    def runs_at(t):
        chunks = t // 64
        return [launch(kernel="per_chunk", ctas=2 * chunks,
                       warp_instructions=200 * chunks,
                       mma={"bf16": 4 * chunks}),
                launch(kernel="states", ctas=2,
                       warp_instructions=2 * (50 + 10 * chunks))]
    out = gpu_model.extrapolate([((128, 1, 2), runs_at(128)),
                                 ((256, 1, 2), runs_at(256))], (4096, 4, 16))
    assert out[0]["ctas"] == 64 * 64
    assert out[0]["warp_instructions"] == pytest.approx(100 * 64 * 64)
    assert out[0]["mma"]["bf16"] == pytest.approx(2 * 64 * 64)
    assert out[1]["ctas"] == 64
    assert out[1]["warp_instructions"] == pytest.approx(64 * (50 + 10 * 64))
    with pytest.raises(ValueError):
        gpu_model.extrapolate([((128, 1, 2), runs_at(128)),
                               ((256, 1, 2), runs_at(128)[::-1])],
                              (4096, 4, 16))


def test_global_accesses_add_their_latency_to_the_serial_path():
    # 8 CTAs of 4 warps; each warp 10^6 instructions, 10^4 of them global
    # accesses, each of which waits global_latency_cycles more.
    base = launch(ctas=8, warp_instructions=32 * 10 ** 6)
    loads = dict(base, by_class={"global": 32 * 10 ** 4})
    m = gpu_model.model_launch(A100, loads)
    assert m["latency"] == pytest.approx(
        (1e6 * A100.dependent_cycles + 1e4 * A100.global_latency_cycles) /
        1.41e9)
    assert m["latency"] > gpu_model.model_launch(A100, base)["latency"]
