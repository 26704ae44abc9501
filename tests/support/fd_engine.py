"""A finite-difference engine for testing the front end without any real AD engine.

Central differences on deep copies of the leaves: slow, approximate (tests use a
tolerance), and independent of every engine under test.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import numpy as np

from adswitch.spec import BackendBase, CallInfo, Capabilities, LossFn

STEP = 1e-6


class FiniteDifferenceBackend(BackendBase):
    name = "fd"
    install_hint = "(defined in the tests)"
    capabilities = Capabilities(mutation=True)

    def __init__(self) -> None:
        self.calls: list[CallInfo] = []

    def version(self) -> str:
        return "test"

    def value_and_grad(
        self, fn: LossFn, leaves: Sequence[Any], active: Sequence[bool], info: CallInfo
    ) -> tuple[list[Any], list[Any | None]]:
        self.calls.append(info)

        def loss_at(values: list[Any]) -> float:
            return float(fn(copy.deepcopy(values))[0])

        base = list(leaves)
        grads: list[Any] = []
        for i, (leaf, is_active) in enumerate(zip(base, active)):
            if not is_active:
                grads.append(None)
                continue
            if isinstance(leaf, float):
                plus, minus = list(base), list(base)
                plus[i], minus[i] = leaf + STEP, leaf - STEP
                grads.append((loss_at(plus) - loss_at(minus)) / (2 * STEP))
                continue
            grad = np.zeros_like(leaf)
            for index in np.ndindex(leaf.shape):
                plus, minus = list(base), list(base)
                # float64 copies (np.generic too): a 1e-6 step is lost in float32
                plus[i], minus[i] = np.array(leaf, np.float64), np.array(leaf, np.float64)
                plus[i][index] += STEP
                minus[i][index] -= STEP
                grad[index] = (loss_at(plus) - loss_at(minus)) / (2 * STEP)
            grads.append(grad)
        # The real call last, on the caller's own leaves, so that a mutating f leaves
        # them as a plain call would.
        _, out = fn(base)
        return out, grads
