"""Compressed Jacobians (issue 22): ``ad.jacobian(f, *args, sparsity=...)`` gives the
dense Jacobian's numbers in ``scipy.sparse.csr_array`` blocks, on every engine and in
both modes: detected or given patterns, one argument or several, trees in and out, empty
rows and columns, dense rows, value-dependent branches (refused globally, detected
locally), and wrong patterns caught by ``check=True``. The reference is dense finite
differences (densified blocks compared leaf by leaf); ``check=True`` also compares with
the engine's own dense operator; the colorings' sizes are checked against the known
optima (a tridiagonal pattern: 3 colors; an arrowhead: 2 on its thin side). The Hessian
cases (``ad.hessian(..., sparsity=...)``) are in :mod:`.cases_sparse_hessian`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import adswitch as ad
from adswitch.errors import UsageError

from .case import Case, arr, pos
from .checks_sparse import Sparse

F = "sparse"
N = 7


def _xp(*xs: Any) -> Any:
    return ad.array_namespace(*xs)


def _tridiag(x: Any) -> Any:
    xp = _xp(x)
    left = xp.concat([xp.zeros(1), x[:-1]])
    right = xp.concat([x[1:], xp.zeros(1)])
    return xp.sin(x) * 2.0 - left * x + right**2


def _banded(x: Any) -> Any:  # bandwidth 2: a pentadiagonal Jacobian
    xp = _xp(x)
    pad = xp.concat([xp.zeros(2), x, xp.zeros(2)])
    return xp.exp(x) * pad[:-4] + pad[1:-3] * pad[3:-1] - pad[4:] ** 3


def _block_diagonal(x: Any) -> Any:  # 4 blocks of 3, each dense
    xp = _xp(x)
    blocks = xp.reshape(x, (4, 3))
    mixed = xp.sin(blocks) * xp.sum(blocks * blocks, axis=1, keepdims=True)
    return xp.reshape(mixed, (-1,))


def _arrow_col(x: Any) -> Any:  # the diagonal and a dense last column
    xp = _xp(x)
    return xp.exp(x) + xp.sum(x[-1:] ** 3) * x[-1]


def _arrow_row(x: Any) -> Any:  # the diagonal and a dense last row
    xp = _xp(x)
    return xp.concat([x[:-1] ** 2, xp.reshape(xp.sum(xp.sin(x)), (1,))])


def _arrowhead(x: Any) -> Any:  # the diagonal, a dense first row and a dense first column
    xp = _xp(x)
    rest = x[1:] ** 2 + x[0] * x[1:]
    return xp.concat([xp.reshape(xp.sum(xp.cos(x)), (1,)), rest])


def _empty_row(x: Any) -> Any:  # output 1 is constant: an empty row
    xp = _xp(x)
    return xp.stack([x[0] * x[1], 0.0 * xp.sign(x[0]) + 2.0, xp.sin(x[2])])


def _empty_column(x: Any) -> Any:  # x[1] is never used: an empty column
    xp = _xp(x)
    return xp.stack([x[0] ** 2, x[2] * x[0], xp.exp(x[3])])


def _dense_row(x: Any) -> Any:
    xp = _xp(x)
    return xp.concat([xp.reshape(xp.sum(x * x), (1,)), 3.0 * x[1:3]])


def _shift(xp: Any, z: Any, k: int, axis: int) -> Any:
    """``xp.roll(z, k, axis)`` from slices and ``xp.concat`` (the dual example engine has
    no ``roll``)."""
    n = z.shape[axis]
    k %= n
    head = z[..., n - k :] if axis in (-1, z.ndim - 1) else z[n - k :]
    tail = z[..., : n - k] if axis in (-1, z.ndim - 1) else z[: n - k]
    return xp.concat([head, tail], axis=axis)


def _matrix(x: Any) -> Any:  # a (3, 4) input: periodic neighbours along the last axis
    xp = _xp(x)
    return xp.tanh(x) * _shift(xp, x, 1, 1)


def _brusselator(u: Any, n: int) -> Any:
    """``adswitch.sparse.examples.brusselator`` with its ``xp.roll`` written as
    :func:`_shift` (the dual engine has no ``roll``). A copy, not an import: the suite uses
    only adswitch's public API, as a third party's would
    (tests/concerns/sparse/test_sparse_blocks.py checks the two agree)."""
    xp = _xp(u)
    alpha = 10.0 * (n - 1) ** 2 / 10.0
    grid = xp.reshape(u, (n, n, 2))
    a, b = grid[:, :, 0], grid[:, :, 1]

    def lap(z: Any) -> Any:
        return (
            _shift(xp, z, 1, 0)
            + _shift(xp, z, -1, 0)
            + _shift(xp, z, 1, 1)
            + _shift(xp, z, -1, 1)
            - 4.0 * z
        )

    xs = np.linspace(0.0, 1.0, n)
    forcing = xp.asarray(
        np.where(((xs[:, None] - 0.3) ** 2 + (xs[None, :] - 0.6) ** 2) <= 0.01, 5.0, 0.0)
    )
    du = 1.0 + a * a * b - 4.4 * a + alpha * lap(a) + forcing
    dv = 3.4 * a - a * a * b + alpha * lap(b)
    return xp.reshape(xp.stack([du, dv], axis=-1), (-1,))


def _two_args(x: Any, y: Any) -> Any:
    xp = _xp(x, y)
    return xp.sin(x) * y + _shift(xp, y, 1, 0) ** 2


def _with_const(x: Any, w: Any, y: Any) -> Any:
    xp = _xp(x, y)
    return xp.exp(x) * w + y[0] * x


def _float_arg(x: Any, s: Any) -> Any:  # a Python float argument: a one-column block
    xp = _xp(x)
    return xp.sin(x) * s


def _tree_in(p: dict[str, Any]) -> Any:
    xp = _xp(p["a"])
    return p["a"] * p["b"][0] + xp.exp(p["b"][1:]) * p["n"]


def _tree_out(x: Any, y: Any) -> dict[str, Any]:
    xp = _xp(x, y)
    return {"u": xp.sin(x) * y[0], "v": (x[:2] * y[1:], xp.sum(x)), "k": 3}


def _tree_both(p: dict[str, Any], x: Any) -> tuple[Any, Any]:
    xp = _xp(x)
    return xp.tanh(p["W"]) * x[0], {"s": xp.sum(p["W"] ** 2), "t": x * x}


def _scalar_out(x: Any) -> Any:
    xp = _xp(x)
    return xp.sum(xp.sin(x[:3]) * x[1:4])


def _branchy(x: Any) -> Any:  # a branch on a value: no global pattern
    xp = _xp(x)
    return x * x if x[0] > 0 else xp.roll(x, 1)


def _tridiag_aux(x: Any) -> Any:  # has_aux: aux of arrays, an int and a string
    return _tridiag(x), {"twice": 2.0 * x, "n": 3, "tag": "aux"}


def _tree_out_aux(x: Any, y: Any) -> Any:  # has_aux over two arguments and a tree output
    return _tree_out(x, y), ("aux", y[:2] * x[0])


def _band_pattern(n: int, width: int) -> Any:
    i, j = np.indices((n, n))
    return np.abs(i - j) <= width


def _local(fn: Any) -> Any:
    return lambda *vals: ad.sparsity(fn, *vals, local=True)


def _one(seed: int, n: int) -> Callable[[], tuple[Any, ...]]:
    return lambda: (pos(seed, n),)


def _case(name: str, what: str, fn: Any, make: Any, sparse: Sparse, **kw: Any) -> Case:
    return Case(f"{F}.{name}", F, what, fn, make, entry="jacobian", sparse=sparse, **kw)


_VEC = lambda: (pos(1000, N),)  # noqa: E731
_TWELVE = lambda: (arr(1010, 12),)  # noqa: E731
_BRUSS = lambda: (pos(1020, 2 * 4 * 4), ad.Const(4))  # noqa: E731

_TWO = lambda: (pos(1040, 5), pos(1041, 5))  # noqa: E731
_WHOLE = np.ones((5, 10), dtype=bool)  # (the flattened matrix of _two_args: 5 x (5 + 5))

CASES = [
    _case("tridiagonal", "a tridiagonal Jacobian: 3 colors either side", _tridiag, _VEC,
          Sparse(columns=3, rows=3)),
    _case("tridiagonal_forward", "tridiagonal, mode='forward': column colors", _tridiag, _VEC,
          Sparse(columns=3), mode="forward"),
    _case("tridiagonal_reverse", "tridiagonal, mode='reverse': row colors", _tridiag, _VEC,
          Sparse(rows=3), mode="reverse"),
    _case("banded", "a pentadiagonal Jacobian (bandwidth 2): 5 colors", _banded, _TWELVE,
          Sparse(columns=5, rows=5)),
    _case("block_diagonal", "4 dense 3x3 blocks on the diagonal: 3 colors", _block_diagonal,
          _TWELVE, Sparse(columns=3, rows=3)),
    _case("arrow_column", "diagonal plus a dense last column: 2 column colors, n row colors",
          _arrow_col, _VEC, Sparse(columns=2, rows=N)),
    _case("arrow_row", "diagonal plus a dense last row: n column colors, 2 row colors",
          _arrow_row, _VEC, Sparse(columns=N, rows=2)),
    _case("arrowhead", "diagonal, a dense first row and column: n colors either side",
          _arrowhead, _VEC, Sparse(columns=N, rows=N)),
    _case("arrow_column_forward", "the dense last column pushed forward: 2 colors",
          _arrow_col, _VEC, Sparse(columns=2), mode="forward"),
    _case("brusselator", "the 2-D Brusselator (adswitch.sparse.examples) on a 4x4 periodic "
          "grid, Const size", _brusselator, _BRUSS, Sparse()),
    _case("empty_row", "a constant output element: an empty row", _empty_row, _one(1030, 3),
          Sparse()),
    _case("empty_column", "an input element never used: an empty column", _empty_column,
          _one(1031, 4), Sparse()),
    _case("dense_row", "a sum over every input: one dense row", _dense_row, _one(1032, 5),
          Sparse(rows=2)),
    _case("matrix_input", "a (3, 4) input and output: blocks (12, 12) of y.shape + x.shape",
          _matrix, lambda: (arr(1033, 3, 4),), Sparse(columns=2)),
    _case("scalar_output", "a scalar output: one row", _scalar_out, _one(1034, 5),
          Sparse(rows=1)),
    _case("two_args", "two differentiated arrays: one flattened pattern, a block per argument",
          _two_args, _TWO, Sparse()),
    _case("const_between", "a Const between two differentiated arrays: None in its place",
          _with_const, lambda: (pos(1042, 4), ad.Const(arr(1043, 4)), pos(1044, 2)), Sparse()),
    _case("float_argument", "a Python float argument: a one-column block", _float_arg,
          lambda: (pos(1045, 4), 0.7), Sparse()),
    _case("tree_input", "a dict argument with an int leaf: blocks per floating leaf",
          _tree_in, lambda: ({"a": pos(1046, 3), "b": pos(1047, 4), "n": 2},), Sparse()),
    _case("tree_output", "a dict/tuple output with an int leaf, two arguments", _tree_out,
          lambda: (pos(1048, 3), pos(1049, 3)), Sparse()),
    _case("tree_both", "a tree in and a tuple of an array and a dict out", _tree_both,
          lambda: ({"W": arr(1050, 2, 3)}, pos(1051, 3)), Sparse()),
    _case("aux", "has_aux=True: (the sparse Jacobian of y, aux as f made it)", _tridiag_aux,
          _VEC, Sparse(columns=3, rows=3), has_aux=True),
    _case("aux_forward", "has_aux=True, mode='forward'", _tridiag_aux, _VEC, Sparse(),
          has_aux=True, mode="forward"),
    _case("aux_reverse", "has_aux=True, mode='reverse'", _tridiag_aux, _VEC, Sparse(),
          has_aux=True, mode="reverse"),
    _case("aux_tree_output", "has_aux=True, two arguments and a tree output: blocks and aux",
          _tree_out_aux, lambda: (pos(1052, 3), pos(1053, 3)), Sparse(), has_aux=True),
    _case("value_branch_global", "a branch on a value: global detection refuses, naming "
          "local=True", _branchy, _one(1060, 4), Sparse(), raises=UsageError),
    _case("value_branch_local", "the same branch, its pattern detected with local=True",
          _branchy, _one(1061, 4), Sparse(sparsity=_local(_branchy), columns=1)),
    _case("user_pattern", "a user's band pattern (wider than needed: zeros stored)",
          _tridiag, _VEC, Sparse(sparsity=_band_pattern(N, 2), columns=5)),
    _case("user_pattern_two_args", "a user's pattern of the whole flattened matrix, 2 args",
          _two_args, _TWO, Sparse(sparsity=_WHOLE)),
    _case("wrong_pattern", "a pattern missing nonzeros: check=True refuses", _tridiag, _VEC,
          Sparse(sparsity=np.eye(N, dtype=bool)), raises=UsageError),
    _case("wrong_pattern_shape", "a pattern of the wrong shape: refused, naming the shape",
          _two_args, _TWO, Sparse(sparsity=np.eye(5, dtype=bool), check=False),
          raises=UsageError),
]  # fmt: skip
