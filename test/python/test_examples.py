"""Small runs of the examples (examples/*), checking their figures."""

import importlib.util
import os

import pytest

from test_package import library  # noqa: F401

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples")


def load(name, path):
    spec = importlib.util.spec_from_file_location(
        name, os.path.join(EXAMPLES, path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_equivalence_to_round_off():
    equivalence = load("equivalence", "equivalence/equivalence.py")
    results = equivalence.run(steps=40, seed=1)
    assert len(results) == 3
    for name, diff in results.items():
        assert diff <= 1e-12, name


def test_capacity_table_has_the_seeds_shape(tmp_path):
    capacity = load("capacity", "capacity/capacity.py")
    rows = capacity.main(["--steps", "100", "--max-pairs", "4",
                          "--episodes", "60", "--plots", str(tmp_path)])
    assert sorted(rows) == [1, 2, 3, 4]
    for column in rows[1]:
        # One stored pair is retrieved exactly (up to scale) by both rules.
        assert rows[1][column] == pytest.approx(1.0, abs=1e-9), column
        # More pairs interfere: the cosine falls.
        assert rows[4][column] < rows[2][column] < 1.0 - 1e-3, column
    for name in ("training.png", "capacity.png", "fast_weights.png"):
        assert (tmp_path / name).stat().st_size > 1000, name


def test_char_lm_trains_like_the_pytorch_model_and_resumes(tmp_path):
    char_lm = load("char_lm", "char-lm/char_lm.py")
    docs = os.path.join(EXAMPLES, "..", "docs", "delta-rule-math.md")
    small = ["--text", docs, "--out", str(tmp_path), "--d-model", "32",
             "--heads", "2", "--d-ff", "64", "--layers", "1", "--seq-len",
             "32", "--batch", "8", "--log-every", "10", "--sample", "30",
             "--checkpoint-every", "10"]
    runs = char_lm.main(small + ["--steps", "40"])
    fwp_run, torch_run = runs
    assert [r[0] for r in fwp_run.log] == [10, 20, 30, 40]
    # The loss falls...
    assert fwp_run.log[-1][1] < fwp_run.log[0][1] - 0.3
    # ... and equals the seeds' PyTorch model's at equal steps (same
    # initial weights, same batches; float32 round-off apart).
    for ours, theirs in zip(fwp_run.log, torch_run.log):
        assert abs(ours[1] - theirs[1]) < 0.01, (ours, theirs)
        assert abs(ours[2] - theirs[2]) < 0.01, (ours, theirs)
    sample = (tmp_path / "sample.txt").read_text()
    assert len(sample) >= 30
    for name in ("loss.csv", "loss.png", "checkpoint.pt"):
        assert (tmp_path / name).exists(), name

    # Resuming continues where the checkpoint left off.
    runs = char_lm.main(small + ["--steps", "50", "--peer-steps", "0",
                                 "--resume"])
    assert [r[0] for r in runs[0].log] == [10, 20, 30, 40, 50]
    assert runs[0].log[:4] == fwp_run.log
