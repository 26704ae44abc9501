"""destructure: one flat vector of unique float leaves; ties listed once (seed 001)."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

import adswitch as ad


@dataclasses.dataclass
class Dense:
    W: Any
    b: Any


@dataclasses.dataclass
class Model:
    a: Dense
    b: Dense


def test_tied_layers_are_listed_once_and_gradients_sum(fd) -> None:
    d = Dense(np.array([[2.0]]), np.array([0.5]))
    model = Model(d, d)  # seed 001: the same layer twice
    flat, rebuild = ad.destructure(model)
    assert flat.shape == (2,)
    x = 3.0

    def loss(v):
        m = rebuild(v)
        return float(np.sum(m.a.W * x + m.a.b) + np.sum(m.b.W * x + m.b.b))

    (g,) = ad.gradient(loss, flat, backend=fd)
    np.testing.assert_allclose(g, [2 * x, 2.0], rtol=1e-6)  # both uses summed


def test_rebuild_round_trip_keeps_dtypes_ties_and_fixed_leaves() -> None:
    w = np.arange(4.0, dtype=np.float32).reshape(2, 2)
    tree = {"w": w, "again": w, "b": np.ones(3), "n": 7, "s": 1.5}
    flat, rebuild = ad.destructure(tree)
    assert flat.dtype == np.float64 and flat.shape == (8,)
    back = rebuild(flat)
    assert back["w"].dtype == np.float32 and back["w"] is back["again"] and back["n"] == 7
    np.testing.assert_array_equal(back["w"], w)
    assert float(back["s"]) == 1.5


def test_rebuild_checks_length() -> None:
    _, rebuild = ad.destructure({"w": np.ones(3)})
    with pytest.raises(ad.ActivityError, match="length 3"):
        rebuild(np.ones(4))
