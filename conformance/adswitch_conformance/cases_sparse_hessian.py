"""Compressed Hessians (issue 22), the ``sparse`` family's second part:
``ad.hessian(f, x, sparsity=...)`` gives the dense Hessian's numbers in a
``scipy.sparse.csr_array`` on every engine that nests, in both modes. References: closed
forms (``scipy.optimize.rosen_hess`` for the chained Rosenbrock function; finite
differences of second order are too noisy where the Hessian is 0); the colors against
the known optima (tridiagonal: 3; a symmetric arrowhead: 2). Engines without nesting
refuse, as declared.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import adswitch as ad
from adswitch.errors import UsageError

from .case import Case, pos
from .checks_sparse import Sparse

F = "sparse"
NESTED = ("nested",)


def _xp(*xs: Any) -> Any:
    return ad.array_namespace(*xs)


def _rosen(x: Any) -> Any:  # the chained Rosenbrock function: a tridiagonal Hessian
    xp = _xp(x)
    return xp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def _rosen_hessian(x: Any) -> tuple[Any, ...]:
    from scipy.optimize import rosen_hess

    return ((rosen_hess(np.asarray(x)),),)


def _tridiag_loss(x: Any) -> Any:  # couplings of neighbours only
    xp = _xp(x)
    return xp.sum(xp.sin(x[1:] * x[:-1])) + xp.sum(xp.exp(x) * x)


def _arrow_loss(x: Any) -> Any:  # x[0] couples with every element: an arrowhead Hessian
    xp = _xp(x)
    return xp.sum(xp.cos(x) * x[0]) + xp.sum(x[1:] ** 3)


def _tridiag_hessian(x: Any) -> tuple[Any, ...]:
    """The closed form: ``f = sum_i sin(x_i x_{i+1}) + sum_i x_i exp(x_i)``."""
    x = np.asarray(x)
    a, b = x[:-1], x[1:]
    s, c = np.sin(a * b), np.cos(a * b)
    h = np.diag(np.exp(x) * (x + 2.0))
    h[np.arange(a.size), np.arange(a.size)] += -s * b**2
    h[np.arange(1, x.size), np.arange(1, x.size)] += -s * a**2
    off = c - s * a * b
    h[np.arange(a.size), np.arange(1, x.size)] = off
    h[np.arange(1, x.size), np.arange(a.size)] = off
    return ((h,),)


def _arrow_hessian(x: Any) -> tuple[Any, ...]:
    """The closed form: ``f = x0 sum_i cos(x_i) + sum_{i>0} x_i^3``."""
    x = np.asarray(x)
    h = np.diag(np.concatenate([[0.0], -np.cos(x[1:]) * x[0] + 6.0 * x[1:]]))
    h[0, 1:] = h[1:, 0] = -np.sin(x[1:])
    h[0, 0] = -2.0 * np.sin(x[0]) - x[0] * np.cos(x[0])
    return ((h,),)


def _hessian(name: str, what: str, fn: Any, make: Any, sparse: Sparse, **kw: Any) -> Case:
    # (second derivatives: an engine without nesting refuses, as declared)
    return Case(
        f"{F}.{name}", F, what, fn, make, entry="hessian", sparse=sparse, requires=NESTED, **kw
    )


CASES = [
    _hessian(
        "hessian_rosenbrock",
        "the chained Rosenbrock Hessian (tridiagonal) against scipy.optimize.rosen_hess",
        _rosen,
        lambda: (pos(1070, 8),),
        Sparse(columns=3),
        closed_form=_rosen_hessian,
    ),
    _hessian(
        "hessian_tridiagonal",
        "a tridiagonal Hessian (neighbour couplings), against its closed form",
        _tridiag_loss,
        lambda: (pos(1071, 7),),
        Sparse(columns=3),
        closed_form=_tridiag_hessian,
    ),
    _hessian(
        "hessian_arrowhead",
        "an arrowhead Hessian (x[0] couples with all): 2 colors, against its closed form",
        _arrow_loss,
        lambda: (pos(1072, 6),),
        Sparse(columns=2),
        closed_form=_arrow_hessian,
    ),
    _hessian(
        "hessian_wrong_pattern",
        "a Hessian pattern missing nonzeros: check=True refuses",
        _rosen,
        lambda: (pos(1073, 5),),
        Sparse(sparsity=np.eye(5, dtype=bool)),
        raises=UsageError,
    ),
]
