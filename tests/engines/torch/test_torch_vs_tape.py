"""The torch engine against the built-in tape engine (an independent implementation)
on the benchmark workloads, first and second order, numpy in and numpy out."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("torch")

import adswitch as ad

sys.path.insert(0, str(Path(__file__).parents[3] / "benchmarks"))
from workloads import WORKLOADS


def _tape_available() -> bool:
    return any(b.name == "tape" and b.available for b in ad.backends())


@pytest.mark.skipif(not _tape_available(), reason="the tape engine is not installed")
@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_torch_matches_tape(name: str) -> None:
    f, make = WORKLOADS[name]
    first, *rest = make(np.random.default_rng(7))
    consts = [ad.Const(r) for r in rest]

    def grad(backend: str) -> Any:
        return ad.gradient(f, first, *consts, backend=backend)[0]

    tape, torch_ = grad("tape"), grad("torch")
    if isinstance(tape, dict):
        assert set(tape) == set(torch_)
        for key in tape:
            assert isinstance(torch_[key], np.ndarray) and torch_[key].dtype == np.float64
            np.testing.assert_allclose(torch_[key], tape[key], rtol=1e-10, atol=1e-12)
    else:
        assert isinstance(torch_, np.ndarray) and torch_.dtype == np.float64
        np.testing.assert_allclose(torch_, tape, rtol=1e-10, atol=1e-12)
