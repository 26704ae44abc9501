"""adswitch's kink convention for ``xp`` on jax (the README's table): at a point where a
function is not differentiable, its derivative is the limit of the symmetric difference
quotient -- the mean of the one-sided derivatives, which a central finite difference
converges to. ``jax.numpy`` already gives it for ``sign``, ``clip``, ``maximum``/``minimum``,
the ``max``/``min`` reductions (ties share evenly), ``floor``/``ceil``/``round``/``trunc``,
``where``, ``sqrt`` and ``linalg.vector_norm``; what differs is taken here:

* ``abs`` (and ``absolute``) of a real array: ``abs'(0) = 0`` (jax's own is 1, the
  right-hand slope); ``abs''(0) = 0``.
* ``sort`` of a real array: entries tied in value share the mean of the cotangents (or
  tangents) at their sorted positions (jax's follows one permutation, so tied inputs
  got different, order-dependent derivatives).
* ``pow`` (and ``power``) with a Python ``float`` exponent ``p``: the derivative
  ``p * b ** (p - 1)`` is taken as 0 where ``p == 0`` (``b ** 0`` is constant; jax gives
  ``0 * inf = nan`` at ``b == 0``), written with this same rule, so ``x ** 1.0`` has
  second derivative 0 (jax: nan) and every order is right at ``b == 0``. Python ``int``
  exponents already go through jax's exact ``integer_pow``; array exponents keep jax's.
* ``sqrt`` at 0, ``pow`` with a Python float ``p < 1`` at 0, ``asin``/``acos`` at +-1
  and ``acosh`` at 1: the slope is infinite there, and jax's rules give
  ``0 * inf = nan`` for a zero cotangent or tangent (e.g. the structurally zero entries
  of a Jacobian). Here the tangent is a *seeded product*
  (``xp.seeded``, a primitive linear in its seed whose transpose and jvp are seeded
  products again): a zero seed contributes 0, at every order and in reverse mode.

Each rule is a ``jax.custom_jvp`` (so reverse mode, ``jit``, ``vmap`` and every nested
order go through it: its jvp computes its primal with the rule itself) whose primal is
``jax.numpy``'s own function: values are jax's.
Complex and integer arrays keep ``jax.numpy``'s functions. Only these ``xp`` functions
take the rules: jax's array methods and operators (``abs(x)``, ``x ** 0.0``) keep jax's.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

__all__ = ["kink_rules"]


def kink_rules(jnp: Any) -> dict[str, Callable[..., Any]]:
    """The ``xp`` functions of the module doc, by name, built over ``jnp``.

    Args:
        jnp: ``jax.numpy``.

    Returns:
        ``{"abs": ..., "absolute": ..., "sort": ..., "pow": ..., "power": ...,
        "sqrt": ..., "asin": ..., "acos": ..., "acosh": ...}``.
    """
    import jax

    from adswitch_jax.xp.seeded import seeded

    def real_float(x: Any) -> bool:
        dtype = getattr(x, "dtype", None)
        return dtype is not None and jnp.issubdtype(dtype, jnp.floating)

    @jax.custom_jvp
    def _abs(x: Any) -> Any:
        return jnp.abs(x)

    @_abs.defjvp
    def _abs_jvp(primals: Any, tangents: Any) -> Any:
        (x,), (t,) = primals, tangents
        # The primal through the rule again: a derivative of this rule (a Hessian) then
        # sees abs'(0) = 0 too, not jnp.abs's own rule.
        return _abs(x), t * jnp.sign(x)  # sign(0) = 0: the mean of -1 and 1

    def abs(x: Any, /) -> Any:
        """``jnp.abs``; for real floating ``x`` with ``abs'(0) = 0`` (module doc)."""
        return _abs(x) if real_float(x) else jnp.abs(x)

    @functools.partial(jax.custom_jvp, nondiff_argnums=(1,))
    def _pow(base: Any, p: float) -> Any:
        return jnp.power(base, p)

    @_pow.defjvp
    def _pow_jvp(p: float, primals: Any, tangents: Any) -> Any:
        (base,), (t,) = primals, tangents
        out = _pow(base, p)  # through the rule again, as in _abs_jvp
        if p == 0:
            return out, jnp.zeros_like(t)
        # The same rule one order down: its own p - 1 == 0 case is what keeps
        # x ** 1.0 twice differentiable at 0. p < 1: the slope is infinite at 0.
        slope = p * _pow(base, p - 1.0)
        return out, seeded(t, slope) if p < 1 else t * slope

    def pow(x1: Any, x2: Any, /) -> Any:
        """``jnp.pow``; exact at ``x1 == 0`` for a Python float exponent (module doc)."""
        if type(x2) is float and real_float(x1):
            return _pow(x1, x2)
        return jnp.pow(x1, x2)

    def power(x1: Any, x2: Any, /) -> Any:
        """``jnp.power``; exact at ``x1 == 0`` for a Python float exponent (module doc)."""
        if type(x2) is float and real_float(x1):
            return _pow(x1, x2)
        return jnp.power(x1, x2)

    @jax.custom_jvp
    def _sqrt(x: Any) -> Any:
        return jnp.sqrt(x)

    @_sqrt.defjvp
    def _sqrt_jvp(primals: Any, tangents: Any) -> Any:
        (x,), (t,) = primals, tangents
        # The slope 0.5 x ** -0.5 through _pow: its own rule seeds again (Hessians).
        return _sqrt(x), seeded(t, 0.5 * _pow(x, -0.5))

    def sqrt(x: Any, /) -> Any:
        """``jnp.sqrt``; a zero seed contributes 0 at ``x == 0`` (module doc)."""
        return _sqrt(x) if real_float(x) else jnp.sqrt(x)

    def inverse(value: Any, inner: Callable[[Any], Any], sign: float) -> Any:
        """``asin``/``acos``/``acosh``: slope ``sign * inner(x) ** -0.5``, infinite where
        ``inner(x) == 0``; seeded, and through ``_pow`` (its own rule seeds again)."""

        @jax.custom_jvp
        def rule(x: Any) -> Any:
            return value(x)

        @rule.defjvp
        def _jvp(primals: Any, tangents: Any) -> Any:
            (x,), (t,) = primals, tangents
            return rule(x), seeded(t, sign * _pow(inner(x), -0.5))

        def call(x: Any, /) -> Any:
            return rule(x) if real_float(x) else value(x)

        call.__doc__ = f"``jnp.{value.__name__}``; zero seeds at its infinite slope."
        return call

    @functools.partial(jax.custom_jvp, nondiff_argnums=(1, 2))
    def _sort(x: Any, axis: int, descending: bool) -> Any:
        return jnp.sort(x, axis=axis, descending=descending)

    @_sort.defjvp
    def _sort_jvp(axis: int, descending: bool, primals: Any, tangents: Any) -> Any:
        (x,), (t,) = primals, tangents
        order = jnp.argsort(x, axis=axis, descending=descending, stable=True)
        return _take_sorted_jvp(axis, (x, order), (t, None))

    @functools.partial(jax.custom_jvp, nondiff_argnums=(2,))
    def _take_sorted(x: Any, order: Any, axis: int) -> Any:
        # ``x`` in the sorted ``order``, with the tie rule: the primal of the sort's rule,
        # so a derivative of that rule (a Hessian) takes the tie rule too, at one gather.
        return jnp.take_along_axis(x, order, axis=axis)

    @_take_sorted.defjvp
    def _take_sorted_jvp(axis: int, primals: Any, tangents: Any) -> Any:
        (x, order), (t, _) = primals, tangents
        values = _take_sorted(x, order, axis)
        moved = jnp.take_along_axis(t, order, axis=axis)
        return values, _tie_mean(jnp, moved, values, axis)

    def sort(
        a: Any,
        axis: int | None = -1,
        *,
        kind: None = None,
        order: None = None,
        stable: bool = True,
        descending: bool = False,
    ) -> Any:
        """``jnp.sort``; for real floating ``a``, ties share their cotangents (module doc)."""
        if kind is not None or order is not None or not real_float(a) or jnp.ndim(a) == 0:
            return jnp.sort(a, axis, kind=kind, order=order, stable=stable, descending=descending)
        if axis is None:
            a, axis = jnp.ravel(a), 0
        # ``stable`` only orders equal values, which the rule makes indistinguishable.
        return _sort(a, int(axis), bool(descending))

    return {
        "abs": abs,
        "absolute": abs,
        "sort": sort,
        "pow": pow,
        "power": power,
        "sqrt": sqrt,
        "asin": inverse(jnp.asin, lambda x: 1.0 - x * x, 1.0),
        "acos": inverse(jnp.acos, lambda x: 1.0 - x * x, -1.0),
        "acosh": inverse(jnp.acosh, lambda x: x * x - 1.0, 1.0),
    }


def _tie_mean(jnp: Any, t: Any, values: Any, axis: int) -> Any:
    """``t`` with each run of equal entries of the sorted ``values`` (along ``axis``)
    replaced by the run's mean; linear in ``t`` (a scatter-add, a scale, a gather), so jax
    transposes it for reverse mode. A run of one keeps its entry exactly."""
    n = values.shape[axis]
    if n < 2:
        return t
    v = jnp.moveaxis(values, axis, -1).reshape(-1, n)
    u = jnp.moveaxis(t, axis, -1)
    shape = u.shape
    u = u.reshape(-1, n)
    starts = v[:, 1:] != v[:, :-1]  # nan != nan: each nan its own run
    group = jnp.concatenate([jnp.zeros_like(starts[:, :1]), starts], axis=1)
    group = jnp.cumsum(group, axis=1, dtype=jnp.int32)
    rows = jnp.arange(v.shape[0])[:, None]
    sums = jnp.zeros_like(u).at[rows, group].add(u)
    counts = jnp.zeros(u.shape, u.dtype).at[rows, group].add(1.0)
    mean = jnp.take_along_axis(sums / jnp.maximum(counts, 1.0), group, axis=1)
    return jnp.moveaxis(mean.reshape(shape), -1, axis)
