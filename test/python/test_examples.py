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
