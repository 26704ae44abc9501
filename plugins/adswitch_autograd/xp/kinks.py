"""adswitch's kink convention where HIPS autograd's own rules differ from it.

At a point where a function is not differentiable, adswitch's derivative is the limit of
the symmetric difference quotient (the README's table). autograd already gives it for
``abs``, ``sign``, ``maximum``/``minimum`` (ties share half and half), the ``max``/``min``
reductions, ``where``, ``sqrt`` and ``pow``; what differs is taken here, in the plugin's
namespace only (autograd's own functions are left as they are):

* ``clip`` at a bound: autograd's ``clip`` gives ``x`` slope 0 there; here it is
  ``minimum(maximum(x, min), max)``, so ``x`` and the bound share the slope (1/2 each,
  the bound's half when it is differentiated).
* ``sort``'s tied entries: a gather by one permutation gives them different,
  order-dependent gradients; here each gets the mean of the cotangents at the tied
  sorted places (:func:`share_ties`).
* ``sqrt`` at 0, ``pow(x, p)`` for a Python ``float`` ``p < 1`` (``p != 0``) at 0,
  ``asin``/``acos`` at +-1 and ``acosh`` at 1: the slope is infinite there, and
  autograd's rules give ``0 * inf = nan`` for a zero cotangent or tangent (a Jacobian's
  structurally zero entries); here a zero seed contributes 0 (:func:`sqrt`,
  :func:`power`, :func:`asin`, ...), at every order. Only arrays holding such a point
  take these rules (elsewhere autograd's own are exact, and faster).

``clip`` and ``sort`` are composed of autograd's primitives, the other two are primitives
whose rules are written with them again, so forward mode and nested derivatives go
through them all.
"""

from __future__ import annotations

from typing import Any

import autograd.numpy as anp
import numpy as np
from autograd.extend import defjvp, defvjp, primitive

from adswitch.spec import tied_runs

from .support import is_traced, untraced

__all__ = ["acos", "acosh", "asin", "clip_shared", "power", "share_ties", "sqrt"]


def clip_shared(x: Any, lo: Any, hi: Any) -> Any:
    """``clip(x, lo, hi)`` (either bound may be ``None``) whose slope at a bound is
    shared by ``x`` and the bound: ``maximum``/``minimum`` split ties half and half."""
    if lo is not None:
        x = anp.maximum(x, lo)
    if hi is not None:
        x = anp.minimum(x, hi)
    return x


def share_ties(y: Any, axis: int) -> Any:
    """The traced ``y``, sorted along ``axis``, with its tied entries sharing their
    derivative: each tied place is ``y0 + (m - m0)``, ``m`` its run's mean of ``y`` and
    ``y0``, ``m0`` the values as constants -- the value is ``y``'s exactly, the
    derivative the run's mean. ``y`` itself when nothing is tied."""
    value = np.asarray(untraced(y))
    if value.ndim == 0:
        return y
    axis %= value.ndim
    moved = np.moveaxis(value, axis, -1)
    runs = tied_runs(moved)
    if not runs:
        return y
    flat = anp.reshape(anp.moveaxis(y, axis, -1), (value.size,))
    value_flat = moved.ravel()
    pieces, index, offset = [flat], np.arange(value.size), value.size
    for idx, mask, lengths, entries in runs:
        means = anp.sum(flat[idx] * mask, axis=1) / lengths.astype(value.dtype)  # (runs,)
        mean = means[np.repeat(np.arange(idx.shape[0]), lengths)]  # per tied entry
        pieces.append(value_flat[entries] + (mean - untraced(mean)))
        index[entries] = offset + np.arange(entries.size)
        offset += entries.size
    out = anp.concatenate(pieces, axis=0)[index]
    return anp.moveaxis(anp.reshape(out, moved.shape), -1, axis)


def sqrt(x: Any, /) -> Any:
    """``sqrt``; a zero seed contributes 0 at ``x == 0`` (module doc)."""
    if is_traced(x) and _floating_with_zero(x):
        return _power(x, 0.5, 1.0)
    return anp.sqrt(x)


def power(x1: Any, x2: Any, /) -> Any:
    """``x1 ** x2`` for an untraced ``x2``; for a Python float ``x2 < 1`` (not 0) a zero
    seed contributes 0 at ``x1 == 0`` (module doc), else autograd's ``power``."""
    if type(x2) is float and x2 < 1.0 and x2 != 0.0 and is_traced(x1) and _floating_with_zero(x1):
        return _power(x1, x2, 1.0)
    return anp.power(x1, x2)


def _floating_with_zero(x: Any) -> bool:
    # Only a 0 has the infinite slope: elsewhere autograd's own (faster) rule is exact.
    value = np.asarray(untraced(x))
    return value.dtype.kind == "f" and not value.all()


def _inverse(value: Any, inner: Any, sign: float, name: str) -> Any:
    """``asin``/``acos``/``acosh``: slope ``sign * inner(x) ** -0.5``, infinite where
    ``inner(x) == 0``, applied to seeds as a seeded product (``_power`` seeds again)."""
    rule = primitive(value)
    defvjp(rule, lambda ans, x: lambda g: _seeded(g, _power(inner(x), -0.5, sign)))
    defjvp(rule, lambda t, ans, x: _seeded(t, _power(inner(x), -0.5, sign)))

    def call(x: Any, /) -> Any:
        if is_traced(x):
            v = np.asarray(untraced(x))
            if v.dtype.kind == "f" and not np.asarray(inner(v)).all():
                return rule(x)
        return getattr(anp, value.__name__)(x)

    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"``{name}``; a zero seed contributes 0 at its infinite slope (module doc)."
    return call


asin = _inverse(np.arcsin, lambda x: 1.0 - x * x, 1.0, "asin")
acos = _inverse(np.arccos, lambda x: 1.0 - x * x, -1.0, "acos")
acosh = _inverse(np.arccosh, lambda x: x * x - 1.0, 1.0, "acosh")


@primitive  # type: ignore[untyped-decorator]
def _seeded(seed: Any, slope: Any) -> Any:
    # ``seed * slope``, 0 where the seed is 0 and the slope infinite (never 0 * inf);
    # elsewhere the plain product, so a finite slope's derivatives are untouched.
    with np.errstate(invalid="ignore"):
        out = np.multiply(seed, slope)
    return np.where((np.asarray(seed) == 0) & np.isinf(slope), np.zeros_like(out), out)


@primitive  # type: ignore[untyped-decorator]
def _power(x: Any, p: float, k: float) -> Any:
    # ``k * x ** p`` (a 0 ** p < 0 is inf: the slope wanted there)
    with np.errstate(divide="ignore"):
        out = np.power(x, p)
    return out if k == 1.0 else out * k


def _slope(seed: Any, x: Any, p: float, k: float) -> Any:
    """``seed`` times ``_power``'s slope ``k p x ** (p - 1)`` (that rule again), seeded."""
    if p == 0.0 or k == 0.0:  # a constant: no slope (also at x == 0)
        return anp.zeros_like(seed)
    return _seeded(seed, _power(x, p - 1.0, k * p))


# Linear in the seed, and each rule a seeded product again: every order keeps zero seeds.
defvjp(
    _seeded,
    lambda ans, seed, slope: lambda g: _seeded(g, slope),
    lambda ans, seed, slope: lambda g: _seeded(g, seed),
)
defjvp(
    _seeded,
    lambda t, ans, seed, slope: _seeded(t, slope),
    lambda t, ans, seed, slope: _seeded(t, seed),
)
defvjp(_power, lambda ans, x, p, k: lambda g: _slope(g, x, p, k))
defjvp(_power, lambda t, ans, x, p, k: _slope(t, x, p, k))
