"""Forward mode by central differences: one directional derivative per ``jvp`` call.

The derivative of ``g(s) = f(x + s t)`` at 0 is the order-4 stencil
``D(h) = (g(-2h) - 8 g(-h) + 8 g(h) - g(2h)) / (12 h)`` (error ``O(h^4)``), on steps
``h_k = h0 / 4**k``, each pair combined by one Richardson step
``(256 D(h/4) - D(h)) / 255`` (error ``O(h^6)``); the level whose estimate changed least
from the previous one is returned (so a function with a short length scale, like
``sin(1e4 x)``, gets a small step, and a smooth one escapes rounding).

Step rule: ``h0 = eps ** (1/5) * max(1, |x|_inf) / |t|_inf`` with ``eps`` the machine
epsilon of the least precise active leaf. ``eps ** (1/5)`` balances the stencil's
truncation error (``h^4``) against rounding (``eps / h``); scaling by ``|x|`` keeps the
step relative for large inputs (a step below ``|x| * eps`` would vanish), and dividing
by ``|t|`` makes ``h t`` the step in ``x`` whatever the tangent's length.

A point where ``f`` is not smooth along ``t`` (one-sided slopes disagree) is refused with
an ``UnsupportedError``, never answered with the central average.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import numpy as np

from adswitch.errors import UnsupportedError
from adswitch.spec import CallInfo, OutputFn

STENCIL = ((-2, 1.0), (-1, -8.0), (1, 8.0), (2, -1.0))
"""``(offset, weight)`` of the order-4 central difference; divide by ``12 h``."""


def _namespace(value: Any) -> Any:
    # Work through the inputs' own Array API namespace (numpy for numpy and scalars).
    if hasattr(type(value), "__array_namespace__") and not isinstance(value, np.ndarray):
        return value.__array_namespace__()
    return np


def _eps(leaves: Sequence[Any], active: Sequence[bool]) -> float:
    epsilons = [
        float(np.finfo(np.dtype(str(getattr(leaf, "dtype", "float64")).split(".")[-1])).eps)
        for leaf, on in zip(leaves, active, strict=True)
        if on
    ]
    return max(epsilons, default=float(np.finfo(np.float64).eps))


def _inf_norm(value: Any) -> float:
    if isinstance(value, float | int):
        return abs(float(value))
    xp = _namespace(value)
    return float(xp.max(xp.abs(value))) if value.size else 0.0


def _step(leaves: Sequence[Any], active: Sequence[bool], tangents: Sequence[Any]) -> float:
    on = [(x, t) for x, t, a in zip(leaves, tangents, active, strict=True) if a]
    scale = max([1.0] + [_inf_norm(x) for x, _ in on])
    length = max([0.0] + [_inf_norm(t) for _, t in on])
    return _eps(leaves, active) ** 0.2 * scale / length if length > 0 else 0.0


def _probe_values(
    leaves: Sequence[Any], active: Sequence[bool], tangents: Sequence[Any], s: float
) -> list[Any]:
    # Fresh copies for every probe: f may write into its inputs, and the caller's arrays
    # must see only the last, plain call.
    values: list[Any] = []
    for leaf, on, t in zip(leaves, active, tangents, strict=True):
        if on and isinstance(leaf, float):
            values.append(leaf + s * float(t))
        elif on:
            xp = _namespace(leaf)
            values.append(leaf + xp.astype(xp.asarray(s * t), leaf.dtype))
        elif isinstance(leaf, np.ndarray) or hasattr(type(leaf), "__array_namespace__"):
            values.append(copy.copy(leaf))
        else:
            values.append(leaf)
    return values


def _as64(value: Any) -> Any:
    # Snapshot in float64: a diff leaf may be an input the next probe overwrites.
    if isinstance(value, np.ndarray | np.generic):
        return np.array(value, dtype=np.float64)
    if isinstance(value, float | int):
        return float(value)
    xp = _namespace(value)
    return xp.astype(value, xp.float64, copy=True)


LEVELS = 7
"""Steps ``h0 / 4**k``, ``k < LEVELS``: from ``h0`` down to ``h0 / 4096``."""


def _probes(
    fn: OutputFn, leaves: Sequence[Any], active: Sequence[bool], tangents: Sequence[Any], h: float
) -> dict[int, list[Any]]:
    """``g(offset * h)`` per stencil offset, each a snapshot of the differentiated outputs."""
    return {
        offset: [_as64(d) for d in fn(_probe_values(leaves, active, tangents, offset * h))[0]]
        for offset, _ in STENCIL
    }


def _stencil(g: dict[int, list[Any]], h: float) -> list[Any]:
    total = [sum(w * g[o][i] for o, w in STENCIL) for i in range(len(g[1]))]
    return [t / (12.0 * h) for t in total]


def _size(values: Sequence[Any]) -> float:
    return max([0.0] + [float(np.max(np.abs(np.asarray(v)))) for v in values])


def _richardson(
    fn: OutputFn, leaves: Sequence[Any], active: Sequence[bool], tangents: Sequence[Any], h0: float
) -> tuple[list[Any], dict[int, list[Any]], float, float]:
    """The extrapolated derivative whose error estimate (the change from the previous
    level) is smallest, with the probes and step of that level (for the kink check) and
    that error estimate."""
    best: tuple[float, list[Any], dict[int, list[Any]], float] | None = None
    previous_d: list[Any] | None = None
    previous_r: list[Any] | None = None
    for k in range(LEVELS):
        h = h0 / 4.0**k
        g = _probes(fn, leaves, active, tangents, h)
        d = _stencil(g, h)
        if previous_d is not None:
            # Steps shrink by 4, the stencil's error by 4**4: one Richardson step.
            r = [(256.0 * a - b) / 255.0 for a, b in zip(d, previous_d, strict=True)]
            if previous_r is not None:
                error = _size([a - b for a, b in zip(r, previous_r, strict=True)])
                if best is None or error < best[0]:
                    best = (error, r, g, h)
            previous_r = r
        previous_d = d
    assert best is not None
    return best[1], best[2], best[3], best[0]


def _check_smooth(
    estimate: list[Any], g: dict[int, list[Any]], g0: list[Any], h: float, eps: float
) -> None:
    # One-sided order-2 slopes from each side agree to O(h^2) where f is smooth; at a kink,
    # a jump or a tie they differ by the jump, and the central value would be a number no
    # convention gives: refuse instead of returning it.
    for i, centre in enumerate(g0):
        probes = [np.asarray(g[o][i]) for o, _ in STENCIL]
        if np.isfinite(centre).all() and not all(np.isfinite(p).all() for p in probes):
            raise UnsupportedError(
                "fd engine: f is not finite on both sides of this point (the edge of its "
                "domain, e.g. sqrt at 0); finite differences cannot differentiate it there. "
                "Use backend='tape', 'torch', 'jax' or 'autograd'."
            )
        forward = (-g[2][i] + 4.0 * g[1][i] - 3.0 * centre) / (2.0 * h)
        backward = (3.0 * centre - 4.0 * g[-1][i] + g[-2][i]) / (2.0 * h)
        gap = _size([forward - backward])
        noise = 1e3 * eps * max(1.0, _size([centre])) / h
        if gap > 1e-2 * _size([estimate[i]]) + noise:
            raise UnsupportedError(
                "fd engine: f is not smooth at this point along the direction "
                f"differentiated (one-sided slopes differ by {gap:.3g}: a kink, a jump or "
                "a tie); finite differences cannot give the derivative adswitch's "
                "convention defines there. Use backend='tape', 'torch', 'jax' or 'autograd'."
            )


def _widened(value: Any, on: bool) -> Any:
    if on and isinstance(value, np.ndarray | np.float32) and value.dtype == np.float32:
        return np.asarray(value, dtype=np.float64)
    return value


def _like(value: Any, like: Any) -> Any:
    """``value`` (float64) in the type and dtype of the output ``like``."""
    if isinstance(like, float | int) and not isinstance(like, bool):
        return float(value)
    if isinstance(like, np.generic):
        return np.asarray(value, dtype=like.dtype)[()]
    xp = _namespace(like)
    return xp.astype(xp.asarray(value), like.dtype)


def jvp(
    fn: OutputFn,
    leaves: Sequence[Any],
    active: Sequence[bool],
    tangents: Sequence[Any],
    info: CallInfo,
) -> tuple[list[Any], list[Any]]:
    """``(out_leaves, J @ tangents)`` for the front end (see ``adswitch.spec.Backend.jvp``)."""
    if info.depth > 0:
        raise UnsupportedError(
            "fd engine: nested differentiation (a derivative inside a function being "
            "differentiated) is not supported (capabilities.nested=False). "
            "Use backend='tape', 'torch', 'jax' or 'autograd'."
        )
    if info.batched:
        raise UnsupportedError("fd engine: batched tangents (capabilities.batching=False).")
    # numpy float32 is probed in float64: float32's rounding would force steps so long
    # (eps ** (1/5) ~ 0.04) that they cross kinks nearby and answer for the wrong side.
    leaves, probed = list(leaves), [_widened(leaf, on) for leaf, on in zip(leaves, active)]
    tangents = [_widened(t, on) for t, on in zip(tangents, active)]
    h0 = _step(probed, active, tangents)
    found = _richardson(fn, probed, active, tangents, h0) if h0 > 0 else None
    widened = any(p is not x for p, x in zip(probed, leaves))
    centre = None
    if found is not None and widened:  # the kink check compares probes with f at x itself
        centre = [_as64(d) for d in fn(_probe_values(probed, active, tangents, 0.0))[0]]
    # The last call runs on the caller's own arrays: a mutating f leaves them as a plain
    # call would, and the outputs are a plain call's outputs.
    diffs, out = fn(list(leaves))
    if found is None:  # zero tangent: a zero derivative, without probing
        return list(out), [_like(0.0 * _as64(d), d) for d in diffs]
    estimate, g, h, error = found
    if error > 1e-3 * _size(estimate) + 1e3 * _eps(probed, active) * max(1.0, _size(diffs)) / h:
        # The steps never agreed: a jump (sign at 0), noise, or no derivative at all.
        raise UnsupportedError(
            f"fd engine: the difference quotients do not converge (they change by {error:.3g} "
            "between steps): f jumps or is not differentiable at this point. "
            "Use backend='tape', 'torch', 'jax' or 'autograd'."
        )
    if centre is None:
        centre = [_as64(d) for d in diffs]
    _check_smooth(estimate, g, centre, h, _eps(probed, active))
    return list(out), [_like(e, d) for e, d in zip(estimate, diffs, strict=True)]
