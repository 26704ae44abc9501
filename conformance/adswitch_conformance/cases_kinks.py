"""Kinks where engines disagree (issue 19): adswitch's kink convention, in closed form.

At a point where a function is not differentiable every engine must return the limit of
the symmetric difference quotient (the README's table): abs'(0) = 0, sign' = 0, clip at a
bound 1/2 to ``x`` and 1/2 to a differentiated bound, maximum/minimum ties 1/2 each, k tied
extrema of a max/min reduction 1/k each, sort's tied entries the mean of the tied places'
cotangents, floor/ceil/round/trunc 0, where the selected branch, the 2-norm's gradient at 0
the zero vector, sqrt'(0) = +inf (never nan), ``x ** p`` at 0 by ``p * 0 ** (p - 1)``;
and a zero seed (cotangent or tangent) times an infinite slope contributes exactly 0.
Second derivatives are the symmetric limits too (0 for the piecewise linear kinks). Each
point runs through ``gradient`` (reverse), ``jacobian(mode="forward")`` and, where the
second derivative is defined, ``hessian``; ``--prepared`` runs them prepared.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import adswitch as ad

from .case import Case

F = "kinks"
NESTED = ("nested",)  # second derivatives differentiate the engine's own gradient
W = np.array([1.0, 2.0, 3.0])


def _abs(x: Any) -> Any:
    xp = ad.array_namespace(x)
    return xp.sum(xp.abs(x) * xp.asarray(W))


def _sign(x: Any) -> Any:
    xp = ad.array_namespace(x)
    return xp.sum(xp.sign(x)) + xp.sum(x * x) / 2.0  # sign adds 0: the gradient is x


def _clip(x: Any) -> Any:
    xp = ad.array_namespace(x)
    return xp.sum(xp.clip(x, -1.0, 1.0) * xp.asarray(W))


def _clip_bounds(x: Any, lo: Any, hi: Any) -> Any:
    xp = ad.array_namespace(x, lo, hi)
    return xp.sum(xp.clip(x, lo, hi))


def _max_min(x: Any, y: Any) -> Any:
    xp = ad.array_namespace(x, y)
    return xp.sum(xp.maximum(x, y) * xp.asarray(W) + xp.minimum(x, y) * 10.0)


def _relu_max(x: Any) -> Any:
    xp = ad.array_namespace(x)
    return xp.sum(xp.maximum(x, 0.0) * xp.asarray(W))


def _relu_where(x: Any) -> Any:
    xp = ad.array_namespace(x)
    return xp.sum(xp.where(x > 0, x, 0.0) * xp.asarray(W))


def _where(x: Any) -> Any:
    xp = ad.array_namespace(x)
    return xp.sum(xp.where(x > 0, x * x, 3.0 * x))


def _reductions(x: Any) -> Any:
    xp = ad.array_namespace(x)
    return xp.max(x) + xp.sum(xp.max(x, axis=1) * 10.0) + xp.sum(xp.min(x, axis=0) * 100.0)


def _sort(x: Any) -> Any:
    xp = ad.array_namespace(x)
    # sort(-x): the tie sits at the front (numpy's sort, the reference, has no descending)
    return xp.sum(xp.sort(x) ** 2 * xp.asarray(W)) + xp.sum(xp.sort(-x) * xp.asarray(W))


def _sort_rows(x: Any) -> Any:
    xp = ad.array_namespace(x)
    weights = xp.asarray(np.array([[1.0, 5.0], [2.0, 6.0], [4.0, 7.0]]))
    return xp.sum(xp.sort(x, axis=0) * weights)


def _rounding(x: Any) -> Any:
    xp = ad.array_namespace(x)
    return xp.sum(xp.floor(x) + xp.ceil(x) + xp.round(x) + xp.trunc(x) + x)


def _norm(x: Any) -> Any:
    return ad.array_namespace(x).linalg.vector_norm(x)


def _nuclear(x: Any) -> Any:
    return ad.array_namespace(x).linalg.matrix_norm(x, ord="nuc")


def _smallest_singular(x: Any) -> Any:
    return ad.array_namespace(x).linalg.matrix_norm(x, ord=-2)


def _sqrt(x: Any) -> Any:
    xp = ad.array_namespace(x)
    return xp.sum(xp.sqrt(x)) + xp.sum(xp.pow(x, 0.5))


def _pow(x: Any) -> Any:
    xp = ad.array_namespace(x)
    return xp.sum(xp.pow(x, 0.0) + xp.pow(x, 1.0) + xp.pow(x, 2.0))


def _sqrt_vec(x: Any) -> Any:
    return ad.array_namespace(x).sqrt(x)


def _pow_half_vec(x: Any) -> Any:
    return ad.array_namespace(x).pow(x, 0.5)


def _pow_third_vec(x: Any) -> Any:
    return ad.array_namespace(x).pow(x, 1.0 / 3.0)


def _acos_vec(x: Any) -> Any:
    return ad.array_namespace(x).acos(x)


def _sqrt_weighted(x: Any) -> Any:
    xp = ad.array_namespace(x)
    return xp.sum(xp.sqrt(x) * xp.asarray(np.array([0.0, 1.0, 2.0]), dtype=x.dtype))


def _sqrt_hessian_fn(x: Any) -> Any:
    xp = ad.array_namespace(x)
    w = xp.asarray(np.array([1.0, 0.0, 2.0]))
    return xp.sum(xp.sqrt(x) * w) + xp.sum(xp.pow(x, 0.5) * w)


def _check_sqrt(grads: Any, x: Any) -> str | None:
    # sqrt'(0) + (x ** 0.5)'(0): +inf (one-sided; never nan), at a 0-d point (the
    # vector points, zero seeds times the infinite slope, are the SEEDS cases).
    g = np.asarray(grads[0], dtype=np.float64) if grads[0] is not None else None
    if g is None or g.shape != () or g != np.inf:
        return f"expected inf (sqrt and x ** 0.5 at 0), got {grads[0]!r}"
    return None


def _a(*v: Any) -> Callable[[], tuple[Any, ...]]:
    return lambda: tuple(np.array(a, dtype=np.float64) for a in v)


# id, description, f, arguments, gradient (per argument), Hessian of the first argument
# (None: not run; the argument count must be 1 for a Hessian)
POINTS: list[tuple[str, str, Callable[..., Any], Any, tuple[Any, ...], Any]] = [
    ("abs_at_0", "abs at 0: derivative 0 (the mean of -1 and 1)", _abs, _a([0.0, 2.0, -1.0]),
     ([0.0, 2.0, -3.0],), np.zeros((3, 3))),
    ("sign", "sign at 0 and elsewhere: derivative 0 (a step)", _sign, _a([0.0, 2.0, -1.0]),
     ([0.0, 2.0, -1.0],), np.eye(3)),
    ("clip_at_bounds", "clip(x, -1, 1) at both bounds: 1/2 to x", _clip,
     _a([-1.0, 1.0, 0.5]), ([0.5, 1.0, 3.0],), np.zeros((3, 3))),
    ("clip_bound_differentiated",
     "clip(x, lo, hi) with traced bounds: x == lo and x == hi share 1/2 with the bound",
     _clip_bounds, _a([-1.0, 0.0, 1.0, 3.0], -1.0, 1.0), ([0.5, 1.0, 0.5, 0.0], 0.5, 1.5), None),
    ("maximum_minimum_ties", "maximum/minimum at x == y: 1/2 to each", _max_min,
     _a([0.0, 1.0, 2.0], [0.0, 1.0, 0.0]), ([5.5, 6.0, 3.0], [5.5, 6.0, 10.0]), None),
    ("relu_maximum", "relu as maximum(x, 0) at 0: 1/2", _relu_max, _a([0.0, 1.0, -1.0]),
     ([0.5, 2.0, 0.0],), np.zeros((3, 3))),
    ("relu_where", "relu as where(x > 0, x, 0) at 0: 0 (the selected branch)", _relu_where,
     _a([0.0, 1.0, -1.0]), ([0.0, 2.0, 0.0],), np.zeros((3, 3))),
    ("where_branch", "where(x > 0, x*x, 3x) at 0: the selected branch's derivative only",
     _where, _a([0.0, 1.0, -1.0]), ([3.0, 2.0, 3.0],), np.diag([0.0, 2.0, 0.0])),
    ("reduction_ties", "max/min reductions (global, per row, per column) over k tied "
     "extrema: 1/k to each", _reductions, _a([[2.0, 1.0, 2.0], [2.0, 2.0, 2.0]]),
     ([[10 / 2 + 1 / 5 + 50, 100.0, 10 / 2 + 1 / 5 + 50],
       [10 / 3 + 1 / 5 + 50, 10 / 3 + 1 / 5, 10 / 3 + 1 / 5 + 50]],), None),
    # sort [1, 2, 2], 2 w y = [2, 8, 12]: the 2s share 10; sort(-x) = [-2, -2, -1]: the
    # tied -2s share -(1 + 2) / 2; Hessian: the tied pair's block shares 2 w = 4 and 6
    ("sort_ties", "sort with tied entries (first and last places): the mean of the tied "
     "places' cotangents", _sort, _a([2.0, 1.0, 2.0]), ([8.5, -1.0, 8.5],),
     [[2.5, 0.0, 2.5], [0.0, 2.0, 0.0], [2.5, 0.0, 2.5]]),
    ("sort_ties_axis0", "sort along axis 0 with ties in one column, all tied in the other",
     _sort_rows, _a([[3.0, 0.0], [3.0, 0.0], [1.0, 0.0]]), ([[3.0, 6.0], [3.0, 6.0], [1.0, 6.0]],),
     None),
    ("rounding_at_jumps", "floor, ceil, round, trunc at their jumps: 0", _rounding,
     _a([1.0, 0.5, 1.5]), ([1.0, 1.0, 1.0],), np.zeros((3, 3))),
    ("vector_norm_at_0", "vector_norm (2-norm) at 0: the zero vector (never nan)", _norm,
     _a([0.0, 0.0, 0.0]), ([0.0, 0.0, 0.0],), None),
    ("pow_at_0", "x ** p at 0 for p = 0, 1, 2: p * 0 ** (p - 1) (0, 1, 0; never nan)", _pow,
     _a([0.0, 2.0]), ([1.0, 5.0],), np.diag([2.0, 2.0])),
    # (a zero singular value has slope 0, as abs at 0: the symmetric quotient along the
    # null space is (|h| - |h|) / 2h = 0; the tape gave the nuclear norm U V^T = I here)
    ("nuclear_norm_rank_deficient", "matrix_norm 'nuc' at diag(2, 0, 0): slope 0 on the "
     "zero singular values (U_r V_r^T)", _nuclear, _a(np.diag([2.0, 0.0, 0.0])),
     (np.diag([1.0, 0.0, 0.0]),), None),
    ("smallest_singular_value_zero_twice", "matrix_norm -2 (the smallest singular value) at "
     "diag(2, 0, 0), zero twice: slope 0", _smallest_singular, _a(np.diag([2.0, 0.0, 0.0])),
     (np.zeros((3, 3)),), None),
]  # fmt: skip

_LINALG = {"vector_norm_at_0", "nuclear_norm_rank_deficient", "smallest_singular_value_zero_twice"}
# (reverse mode only: a forward-mode derivative that moves a zero singular value is
# refused by jax's and torch's rules, a choice the linalg family's cases leave them)
_REVERSE_ONLY = {"nuclear_norm_rank_deficient", "smallest_singular_value_zero_twice"}


def _cases() -> list[Case]:
    cases = []
    for name, what, fn, make, grad, hess in POINTS:
        closed = tuple(np.asarray(g, dtype=np.float64) for g in grad)
        requires = ("kinks", "linalg") if name in _LINALG else ("kinks",)
        for entry, suffix, mode in (("gradient", "", "auto"), ("jacobian", "_forward", "forward")):
            if suffix and name in _REVERSE_ONLY:
                continue
            cases.append(
                Case(
                    f"kinks.{name}{suffix}",
                    F,
                    what + (" (forward-mode jacobian)" if suffix else ""),
                    fn,
                    make,
                    entry=entry,
                    mode=mode,
                    closed_form=lambda *_, c=closed: tuple(a.copy() for a in c),
                    requires=requires,
                )
            )
        if hess is not None:
            h = np.asarray(hess, dtype=np.float64)
            cases.append(
                Case(
                    f"kinks.{name}_hessian",
                    F,
                    what + " (hessian: the symmetric limit, 0 for piecewise linear kinks)",
                    fn,
                    make,
                    entry="hessian",
                    closed_form=lambda *_, c=h: ((c.copy(),),),
                    requires=(*NESTED, *requires),
                )
            )
    return cases


# Infinite slopes times ZERO seeds (issue 19): sqrt and x ** p (p < 1) at 0 in a vector.
# A zero cotangent or tangent contributes 0 (never 0 * inf = nan): a Jacobian's
# structurally zero entries are exactly 0, its diagonal entry at 0 is +inf.
_INF = np.inf
_SQRT_J = [[_INF, 0.0, 0.0], [0.0, 0.5, 0.0], [0.0, 0.0, 0.25]]  # at [0, 1, 4]
_THIRD_J = [[_INF, 0.0], [0.0, 1.0 / 12.0]]  # d x ** (1/3) = x ** (-2/3) / 3, at [0, 8]
# id, description, f, point, entry, closed form (the whole result), dtype requirement
SEEDS: list[tuple[str, str, Callable[..., Any], Any, str, Any, tuple[str, ...]]] = [
    ("sqrt_at_0_vec", "jacobian of sqrt at [0, 1, 4]: +inf at 0, exact 0 off the "
     "diagonal (a zero seed times the infinite slope)", _sqrt_vec, _a([0.0, 1.0, 4.0]),
     "jacobian", (np.array(_SQRT_J),), ()),
    ("pow_half_at_0_vec", "jacobian of x ** 0.5 at [0, 1, 4]: +inf at 0, exact 0 off the "
     "diagonal", _pow_half_vec, _a([0.0, 1.0, 4.0]), "jacobian", (np.array(_SQRT_J),), ()),
    ("pow_third_at_0_vec", "jacobian of x ** (1/3) at [0, 8]: +inf at 0, exact 0 off the "
     "diagonal", _pow_third_vec, _a([0.0, 8.0]), "jacobian", (np.array(_THIRD_J),), ()),
    ("acos_at_1_vec", "jacobian of acos at [1, 0.5]: -inf at 1 (-1 / sqrt(1 - x^2)), exact 0 "
     "off the diagonal", _acos_vec, _a([1.0, 0.5]), "jacobian",
     (np.array([[-_INF, 0.0], [0.0, -2.0 / np.sqrt(3.0)]]),), ()),
    ("sqrt_zero_weight", "gradient of sum(sqrt(x) * w), w = 0 where x = 0: exactly 0 "
     "there (never nan)", _sqrt_weighted, _a([0.0, 1.0, 4.0]), "gradient",
     (np.array([0.0, 0.5, 0.5]),), ()),
    ("sqrt_zero_weight_float32", "float32 gradient of sum(sqrt(x) * w), w = 0 where "
     "x = 0: exactly 0 there", _sqrt_weighted,
     lambda: (np.array([0.0, 1.0, 4.0], dtype=np.float32),), "gradient",
     (np.array([0.0, 0.5, 0.5]),), ("float32",)),
]  # fmt: skip


def _seed_cases() -> list[Case]:
    cases = []
    for name, what, fn, make, entry, closed, dtypes in SEEDS:
        # (a gradient: reverse mode only; forward mode carries sqrt's tangent +inf at 0
        # into ``* w`` with w = 0: inf * 0 = nan, a limit of forward mode, README)
        modes = ("reverse", "forward") if entry == "jacobian" else ("auto",)
        for mode in modes:
            suffix = "_forward" if mode == "forward" else ""
            cases.append(
                Case(
                    f"kinks.{name}{suffix}",
                    F,
                    what + (" (forward mode)" if suffix else ""),
                    fn,
                    make,
                    entry="jacobian" if mode == "forward" else entry,
                    mode=mode,
                    closed_form=lambda *_, c=closed: tuple(a.copy() for a in c),
                    requires=("kinks", *dtypes),
                )
            )
    # Hessian of sum(w sqrt(x)) + sum(w x ** 0.5), w = [1, 0, 2], at [0, 1, 4]:
    # diag(2 w * -x ** -1.5 / 4) = diag(-inf, 0, -1/8), exact 0 off the diagonal.
    hess = np.diag([-_INF, 0.0, -0.125])
    cases.append(
        Case(
            "kinks.sqrt_at_0_vec_hessian",
            F,
            "hessian of w-weighted sqrt and x ** 0.5 at [0, 1, 4]: -inf at 0, exact 0 "
            "off the diagonal and where w = 0",
            _sqrt_hessian_fn,
            _a([0.0, 1.0, 4.0]),
            entry="hessian",
            closed_form=lambda *_, c=hess: ((c.copy(),),),
            requires=(*NESTED, "kinks"),
        )
    )
    return cases


CASES = [
    *_cases(),
    *_seed_cases(),
    Case(
        "kinks.sqrt_at_0",
        F,
        "sqrt(x) and x ** 0.5 at 0: +inf (the one-sided derivative), never nan",
        _sqrt,
        _a(0.0),
        check=_check_sqrt,
        requires=("kinks",),
    ),
]
