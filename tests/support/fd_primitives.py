"""Finite-difference engines that implement one primitive each -- only ``jvp``, only
``vjp`` -- to test how the front end derives the others (``adswitch/derive.py``).

Central differences on float64 copies of the leaves: approximate (tests use a tolerance)
and independent of every engine under test.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import numpy as np

from adswitch.spec import BackendBase, CallInfo, Capabilities, OutputFn, Pullback

STEP = 1e-6


def _diffs_at(fn: OutputFn, values: list[Any]) -> list[np.ndarray]:
    diffs, _ = fn(copy.deepcopy(values))
    return [np.asarray(d, dtype=np.float64) for d in diffs]


def _directional(fn: OutputFn, leaves: Sequence[Any], tangents: Sequence[Any]) -> list[np.ndarray]:
    plus, minus = list(leaves), list(leaves)
    for i, t in enumerate(tangents):
        if t is None:
            continue
        if isinstance(leaves[i], float):
            plus[i] = leaves[i] + STEP * float(t)
            minus[i] = leaves[i] - STEP * float(t)
        else:
            base = np.asarray(leaves[i], dtype=np.float64)
            plus[i] = base + STEP * np.asarray(t, dtype=np.float64)
            minus[i] = base - STEP * np.asarray(t, dtype=np.float64)
    return [(p - m) / (2 * STEP) for p, m in zip(_diffs_at(fn, plus), _diffs_at(fn, minus))]


class ForwardOnly(BackendBase):
    """Implements only ``jvp`` (unbatched): like a forward-mode engine without batching."""

    name = "fd-forward"
    install_hint = "(defined in the tests)"
    capabilities = Capabilities(mutation=True, forward=True)

    def __init__(self) -> None:
        self.jvp_calls = 0

    def version(self) -> str:
        return "test"

    def jvp(
        self,
        fn: OutputFn,
        leaves: Sequence[Any],
        active: Sequence[bool],
        tangents: Sequence[Any],
        info: CallInfo,
    ) -> tuple[list[Any], list[Any]]:
        assert not info.batched, "the front end must loop for an engine without batching"
        self.jvp_calls += 1
        out_tangents = _directional(fn, leaves, tangents)
        _, out = fn(list(leaves))
        return out, out_tangents


class ReverseOnly(BackendBase):
    """Implements only ``vjp``: its pullback contracts a finite-difference Jacobian."""

    name = "fd-reverse"
    install_hint = "(defined in the tests)"
    capabilities = Capabilities(mutation=True)

    def version(self) -> str:
        return "test"

    def vjp(
        self, fn: OutputFn, leaves: Sequence[Any], active: Sequence[bool], info: CallInfo
    ) -> tuple[list[Any], Pullback]:
        values = list(leaves)
        columns: dict[tuple[int, tuple[int, ...]], list[np.ndarray]] = {}
        for i, a in enumerate(active):
            if not a:
                continue
            shape = np.shape(values[i])
            for index in np.ndindex(shape):
                e = np.zeros(shape)
                e[index] = 1.0
                tangents: list[Any] = [None] * len(values)
                tangents[i] = 1.0 if isinstance(values[i], float) else e
                columns[(i, index)] = _directional(fn, values, tangents)
        _, out = fn(values)

        def pullback(cotangents: Sequence[Any], batched: bool = False) -> list[Any | None]:
            assert not batched, "the front end must loop for an engine without batching"
            grads: list[Any | None] = [None] * len(values)
            for i, a in enumerate(active):
                if not a:
                    continue
                g = np.zeros(np.shape(values[i]))
                for index in np.ndindex(g.shape):
                    g[index] = sum(
                        float(np.sum(np.asarray(u) * col))
                        for u, col in zip(cotangents, columns[(i, index)])
                    )
                grads[i] = float(g) if isinstance(values[i], float) else g.astype(values[i].dtype)
            return grads

        return out, pullback
