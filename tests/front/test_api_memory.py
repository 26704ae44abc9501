"""The front end keeps nothing alive: no reference cycles, so the caller's arrays and the
gradients are freed the moment the caller drops them, with the garbage collector off."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import adswitch as ad


@pytest.fixture
def collector_off() -> Iterator[None]:
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def loss(p: dict[str, Any], x: Any) -> Any:
    xp = ad.array_namespace(p["w"])
    return xp.sum(xp.tanh(x @ p["w"]) * p["b"][0]), {"note": "aux"}


@pytest.mark.parametrize("entry", [ad.gradient, ad.withgradient])
@pytest.mark.parametrize("engine", ["fd", "tape"])
def test_a_call_leaves_no_garbage_cycles(
    entry: Any, engine: str, fd: Any, collector_off: None
) -> None:
    backend = fd if engine == "fd" else engine
    p = {"w": np.ones((3, 2)), "b": [np.full(2, 0.5)]}
    x = np.arange(12.0).reshape(4, 3) / 10
    entry(loss, p, ad.Const(x), backend=backend)  # first call: caches fill
    gc.collect()
    result = entry(loss, p, ad.Const(x), backend=backend)
    grad = result[0] if entry is ad.gradient else result.grad[0]
    freed = weakref.ref(grad["w"])
    del result, grad
    assert freed() is None  # freed by reference counting alone
    assert gc.collect() == 0  # and the call made no cycles


def test_a_failed_check_leaves_no_garbage_cycles(collector_off: None) -> None:
    p = {"w": np.ones(2)}
    shadow = {"w": np.zeros(3)}  # wrong shape: refused before f runs
    gc.collect()
    with pytest.raises(ad.ActivityError):
        ad.gradient(lambda q: q["w"].sum(), ad.Duplicated(p, shadow))
    assert gc.collect() == 0
