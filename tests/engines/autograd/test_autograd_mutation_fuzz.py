"""Random programs of views, writes, writes through views and in-place operators, on a
fresh buffer or on the argument itself: the autograd engine's gradient must equal central
finite differences of the same program run by numpy, and the caller's array must end as
numpy leaves it -- or the engine must refuse with an AdswitchError. Never a wrong number."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from tests.support.fd_oracle import central_fd

pytest.importorskip("autograd")

import adswitch as ad
from adswitch.errors import AdswitchError

Op = tuple[Any, ...]

VIEWS = {
    "row0": lambda xp, b: b[0],
    "row1": lambda xp, b: b[1],
    "col1": lambda xp, b: b[:, 1],
    "T": lambda xp, b: b.T,
    "reshape": lambda xp, b: xp.reshape(b, (2, 3)),
    "reversed": lambda xp, b: b[::-1],
    "slice": lambda xp, b: b[:, 1:],
}
WRITES = ["b[0, 1]", "b[1]", "b[:, 0]", "b[...]", "b[fancy]"]


def make_program(rng: random.Random) -> list[Op]:
    ops: list[Op] = []
    for _ in range(rng.randint(3, 9)):
        k = rng.random()
        if k < 0.25:
            ops.append(("view", rng.choice(sorted(VIEWS))))
        elif k < 0.5:
            ops.append(("write", rng.choice(WRITES), rng.randint(0, 3)))
        elif k < 0.65:
            ops.append(("write_view", rng.randint(0, 5)))
        elif k < 0.8:
            ops.append(("inplace", rng.choice(["+=", "*=", "-="])))
        else:
            ops.append(("read", rng.randint(0, 5)))
    return ops


def run(ops: list[Op], x: Any, xp: Any, on_argument: bool) -> Any:
    if on_argument:
        b = x
    else:
        b = xp.zeros((3, 2))
        b[...] = xp.reshape(x, (3, 2)) * 0.5
    views: list[Any] = []
    total = 0.0
    for op in ops:
        if op[0] == "view":
            views.append(VIEWS[op[1]](xp, b))
        elif op[0] == "write":
            val = (x[op[2] % 3, 0] if on_argument else x[op[2]]) * 1.3 + 0.1
            where = op[1]
            if where == "b[0, 1]":
                b[0, 1] = val
            elif where == "b[1]":
                b[1] = val
            elif where == "b[:, 0]":
                b[:, 0] = val
            elif where == "b[...]":
                b[...] = b * 0.5 + val
            else:
                b[np.array([2, 0])] = val
        elif op[0] == "write_view" and views:
            v = views[op[1] % len(views)]
            v[...] = v * 0.7 + 0.2
        elif op[0] == "inplace":
            if op[1] == "+=":
                b += 0.3 * b
            elif op[1] == "*=":
                b *= 1.1
            else:
                b -= 0.05
        elif op[0] == "read" and views:
            v = views[op[1] % len(views)]
            total = total + xp.sum(v * v) * (1 + op[1])
    return total + xp.sum(b * b * 1.7)


@pytest.mark.parametrize("seed", range(8))
def test_random_write_programs_match_numpy(seed: int) -> None:
    rng = random.Random(seed)
    checked = 0
    for _ in range(25):
        ops = make_program(rng)
        on_argument = rng.random() < 0.5
        x0 = np.array([[0.3, 0.7], [-0.4, 1.1], [0.2, -0.9]])
        if not on_argument:
            x0 = x0.ravel()
        x = x0.copy()

        def traced(a: Any, ops: list[Op] = ops, on_argument: bool = on_argument) -> Any:
            return run(ops, a, ad.array_namespace(a), on_argument)

        try:
            (grad,) = ad.gradient(traced, x, backend="autograd")
        except AdswitchError:
            np.testing.assert_array_equal(x, x0)  # refused: the caller's data untouched
            continue
        plain = x0.copy()
        run(ops, plain, np, on_argument)
        np.testing.assert_allclose(x, plain, rtol=1e-12, err_msg=str(ops))
        expected = central_fd(lambda v, o=ops, a=on_argument: float(run(o, v.copy(), np, a)), x0)
        np.testing.assert_allclose(grad, expected, rtol=1e-5, atol=1e-6, err_msg=str(ops))
        checked += 1
    assert checked > 0
