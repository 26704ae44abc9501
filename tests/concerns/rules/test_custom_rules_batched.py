"""``Capabilities.batched_rules`` says how a rule's ``bwd`` meets a batched sweep: once
for the whole batch (``vmap``) or once per row. Counted on a reverse-mode Jacobian of a
rule with three outputs; the numbers are the same either way (oracle: closed form)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import adswitch as ad

ENGINES = ["tape", "torch", "jax", "autograd"]
calls: list[int] = []

double = ad.custom_vjp(lambda x: x * 2.0)


def _bwd(_: Any, ct: Any) -> tuple[Any]:
    calls.append(1)
    return (ct * 2.0,)


double.defvjp(lambda x: (x * 2.0, None), _bwd)


@pytest.mark.parametrize("engine", ENGINES)
def test_bwd_calls_follow_the_declared_batching(engine: str) -> None:
    if engine != "tape":
        pytest.importorskip(engine)
    calls.clear()
    x = np.array([1.0, -2.0, 0.5])
    (j,) = ad.jacobian(lambda x: double(x) ** 2, x, mode="reverse", backend=engine)
    np.testing.assert_allclose(j, np.diag(8.0 * x))
    info = next(b for b in ad.backends() if b.name == engine)
    assert info.capabilities is not None
    batched = info.capabilities.batched_rules
    assert len(calls) == (1 if batched else 3), (engine, batched, len(calls))
