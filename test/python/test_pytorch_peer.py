"""The PyTorch peer of the CPU benchmark (bench/pytorch_peer.py) is right.

Its step-by-step recurrence must match fwp's float64 reference (fwp-run
--backend reference, itself checked against finite differences and the
seeds' equivalence), and its chunked form, the one timed, must match the
recurrence: in float64 to round-off, in float32 within 1e-5.
"""

import os
import subprocess
import sys

import numpy as np
import pytest
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))
import pytorch_peer  # noqa: E402

FWP_RUN = os.environ.get("FWP_RUN", "build/bin/fwp-run")


def relative_error(got, expected):
    return float((got - expected).abs().max() / expected.abs().max())


def reference_forward(tmp_path, x, w, heads, nu, rule):
    """y from fwp's float64 reference, through fwp-run."""
    inputs, outputs = tmp_path / "in", tmp_path / "out"
    inputs.mkdir()
    np.save(inputs / "x.npy", x.numpy())
    for name, key in [("w_q", "q"), ("w_k", "k"), ("w_v", "v"),
                      ("w_beta", "beta"), ("w_o", "o"), ("b_o", "b_o")]:
        np.save(inputs / f"{name}.npy", w[key].numpy())
    subprocess.run([FWP_RUN, "--inputs", str(inputs), "--outputs",
                    str(outputs), "--heads", str(heads), "--nu", str(nu),
                    "--rule", rule, "--backend", "reference"],
                   check=True, capture_output=True)
    return torch.from_numpy(np.load(outputs / "y.npy"))


@pytest.mark.skipif(not os.access(FWP_RUN, os.X_OK),
                    reason=f"no fwp-run at {FWP_RUN}")
@pytest.mark.parametrize("rule", ["delta", "sum"])
@pytest.mark.parametrize("nu", [1, 2])
def test_recurrence_matches_fwp_reference(tmp_path, rule, nu):
    x, w = pytorch_peer.random_problem(11, 2, 8, 2, seed=nu,
                                       dtype=torch.float64)
    got = pytorch_peer.recurrent_forward(x, w, 2, nu=nu, rule=rule)
    expected = reference_forward(tmp_path, x, w, 2, nu, rule)
    assert relative_error(got, expected) < 1e-12


# T = 1, T < C, T a multiple of C, T not a multiple.
@pytest.mark.parametrize("steps", [1, 5, 16, 37])
@pytest.mark.parametrize("rule", ["delta", "sum"])
def test_chunked_matches_recurrence_float64(steps, rule):
    x, w = pytorch_peer.random_problem(steps, 3, 12, 3, seed=steps,
                                       dtype=torch.float64)
    got = pytorch_peer.chunked_forward(x, w, 3, nu=2, rule=rule, chunk=8)
    expected = pytorch_peer.recurrent_forward(x, w, 3, nu=2, rule=rule)
    assert relative_error(got, expected) < 1e-12


@pytest.mark.parametrize("rule", ["delta", "sum"])
def test_chunked_float32_within_1e5(rule):
    x, w = pytorch_peer.random_problem(200, 2, 32, 4, seed=7,
                                       dtype=torch.float64)
    expected = pytorch_peer.recurrent_forward(x, w, 4, rule=rule)
    x32, w32 = x.float(), {k: t.float() for k, t in w.items()}
    got = pytorch_peer.chunked_forward(x32, w32, 4, rule=rule).double()
    assert relative_error(got, expected) < 1e-5
