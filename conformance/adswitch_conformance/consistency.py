"""The adjoint identity ``<pullback(u), v> = <u, jvp(v)>``, both sides computed by the
engine under test: an extra check on ``vjp`` and ``jvp`` cases that needs no reference,
and catches a pullback and a forward mode that disagree (a transposed rule, a dropped
term) even where both look plausible."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .case import Case
from .checks import Mismatch
from .entries import Caller, Got
from .reference import unwrap
from .reference_ops import y_part
from .trees import is_float_leaf, leaves_with_paths, unflatten_like

__all__ = ["probe_tangents", "probe_cotangent", "inner", "check_adjoint"]

_SEED = 20240611


def _draw(rng: Any, leaf: Any) -> Any:
    if type(leaf) is float:
        return float(rng.uniform(-1.0, 1.0))
    dtype = np.asarray(leaf).dtype
    return np.asarray(rng.uniform(-1.0, 1.0, size=np.shape(leaf)), dtype=dtype)


def probe_tangents(vals: Sequence[Any], kinds: Sequence[str]) -> tuple[Any, ...]:
    """Fixed random tangents, one tree per primal: arrays at floating leaves (a tied
    array's one tangent repeated at its later places), ``None`` at ``Const`` primals and
    non-floating leaves.

    Example:
        >>> w = np.ones(2)
        >>> t = probe_tangents([{"a": w, "b": w}, w * 2], ["plain", "const"])
        >>> t[0]["a"].shape, t[0]["b"] is t[0]["a"], t[1]
        ((2,), True, None)
    """
    rng = np.random.default_rng(_SEED)
    drawn: dict[int, Any] = {}
    out: list[Any] = []
    for val, kind in zip(vals, kinds, strict=True):
        if kind == "const":
            out.append(None)
            continue
        new: list[Any] = []
        for _, leaf in leaves_with_paths(val, ""):
            if not is_float_leaf(leaf):
                new.append(None)
            elif isinstance(leaf, np.ndarray):
                new.append(drawn.setdefault(id(leaf), _draw(rng, leaf)))
            else:
                new.append(_draw(rng, leaf))
        out.append(unflatten_like(val, new))
    return tuple(out)


def probe_cotangent(y: Any) -> Any:
    """A fixed random cotangent shaped like ``y`` (``None`` at its non-floating leaves).

    Example:
        >>> probe_cotangent((np.ones(3), "aux"))[1] is None
        True
    """
    rng = np.random.default_rng(_SEED + 1)
    new = [
        _draw(rng, leaf) if is_float_leaf(leaf) or isinstance(leaf, np.floating) else None
        for _, leaf in leaves_with_paths(y, "")
    ]
    return unflatten_like(y, new)


def inner(a: Any, b: Any) -> tuple[float, float]:
    """``(sum of a * b, sum of |a * b|)`` over the leaves both trees hold (``None``
    skipped), in float64.

    Example:
        >>> inner((np.array([1.0, -2.0]), None), (np.array([3.0, 1.0]), 5.0))
        (1.0, 5.0)
    """
    other = dict(leaves_with_paths(b, "t"))
    total = scale = 0.0
    for path, x in leaves_with_paths(a, "t"):
        z = other.get(path)
        if x is None or z is None:
            continue
        prod = np.asarray(x, dtype=np.float64) * np.asarray(z, dtype=np.float64)
        total += float(np.sum(prod))
        scale += float(np.sum(np.abs(prod)))
    return total, scale


def check_adjoint(
    case: Case,
    got: Got,
    fresh_args: tuple[Any, ...],
    backend: str,
    caller: Caller,
    seeds: tuple[Any, ...],
    output: Any,
) -> int:
    """For a ``vjp`` case: ``jvp`` on fresh arguments (``Duplicated`` passed plain) with
    probe tangents; for a ``jvp`` case: ``vjp`` on fresh arguments with a probe cotangent
    shaped like ``output`` (a plain call's).
    Returns 1 when the identity holds, 0 when it does not apply; raises
    :class:`Mismatch` when it fails. Exceptions of the extra call propagate."""
    kinds = [unwrap(a)[0] for a in fresh_args]
    vals = [unwrap(a)[1] for a in fresh_args]
    if case.entry == "vjp":
        if not seeds or not got.pulled or ("dup" in kinds and not case.zero):
            return 0
        u, pulled = seeds[-1], got.pulled[-1]
        v = probe_tangents(vals, kinds)
        primals = tuple(
            val if kind == "dup" else arg
            for arg, kind, val in zip(fresh_args, kinds, vals, strict=True)
        )
        out = caller("jvp", case.fn, primals, backend, False, tangents=v, has_aux=case.has_aux)
        jv = out[1]
    else:
        v, jv = seeds, got.result[1]
        u = probe_cotangent(y_part(case, output))
        out = caller("vjp", case.fn, fresh_args, backend, True, has_aux=case.has_aux)
        pulled = out[1](u)
    lhs, lhs_scale = inner(list(pulled), list(v))
    rhs, rhs_scale = inner(u, jv)
    dtypes = {np.asarray(x).dtype.name for _, x in leaves_with_paths(vals, "") if is_float_leaf(x)}
    rtol, atol = case.tol["float32" if "float32" in dtypes else "float64"]
    if not abs(lhs - rhs) <= atol + rtol * (lhs_scale + rhs_scale):
        raise Mismatch(
            f"<pullback(u), v> = {lhs!r} but <u, jvp(v)> = {rhs!r}: the engine's reverse and "
            "forward derivatives disagree"
        )
    return 1
