"""Host rules on jax: ``ad.custom_vjp(f, host=True)`` / ``ad.custom_jvp(g, host=True)``.

jax traces ``f`` with abstract values (every program is jitted), so host code cannot see
numbers while it is traced: it runs from inside the program through
``jax.pure_callback``, with the output shapes/dtypes the front end gives
(``adswitch.host_rules``: from ``out_shape=`` or one concrete call). Then:

* ``host_custom_vjp``: a ``jax.custom_vjp`` whose primal is a callback of the host
  ``fwd``; residuals cannot leave a compiled program as host objects, so its backward
  callback runs the host ``fwd`` again at the same inputs, then ``bwd`` (one more
  forward solve per pullback). Forward mode through it is jax's own refusal, which
  ``refusals.errors.translate`` raises as ``NoForwardRuleError``, as for any ``custom_vjp``.
* ``host_custom_jvp``: a ``jax.custom_jvp`` whose rule is one callback returning the
  outputs and the tangents. Reverse mode would transpose that callback, which numpy code
  cannot be: the rule meets its tangents as partial-evaluation tracers (``JaxprTracer``:
  jax linearizing to transpose) and refuses with an ``UnsupportedError``.
* Every callback is wrapped in a ``jax.custom_jvp`` whose rule refuses: a derivative of
  host code's derivative (a Hessian, a nested gradient) is an ``UnsupportedError``, never
  jax's "Pure callbacks do not support JVP".
* An exception raised by host code reaches the caller as itself, not as jax's
  ``JaxRuntimeError`` (:func:`raised_in`, used by ``refusals.errors.translate``).

Batching (``vmap`` of a pullback for a Jacobian) calls the host code once per row.
"""

from __future__ import annotations

import itertools
import logging
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from adswitch.errors import UnsupportedError

__all__ = ["host_custom_jvp", "host_custom_vjp", "raised_in", "to_host"]

Spec = tuple[tuple[int, ...], Any]

NESTED = (
    "jax: a derivative of host code's derivative was asked (a Hessian, a nested "
    "derivative): host code is numpy, so its derivative is not differentiable again. "
    "Take only first derivatives through a host rule, or write the rule with xp "
    "operations (host=False)."
)

# Host code raising inside a callback reaches jax's caller as a ``JaxRuntimeError``
# holding only its text. The exception itself is kept here under a number that the
# re-raised text carries; ``refusals.errors.translate`` gives the caller the original (the
# user's own exception, or the front end's ``UsageError``) through :func:`raised_in`.
_MARK = "<<adswitch-host:{}>>"
_FOUND = re.compile(r"<<adswitch-host:(\d+)>>")
_raised: dict[int, BaseException] = {}
_count = itertools.count()


class HostCodeFailed(RuntimeError):
    """Carries host code's exception out of a callback (see :func:`raised_in`)."""


class _Quiet(logging.Filter):
    """Drops jax's log record of a failed host callback: the caller gets the exception."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not isinstance(exc, HostCodeFailed)


logging.getLogger("jax._src.callback").addFilter(_Quiet())


def raised_in(exc: BaseException) -> BaseException | None:
    """The exception host code raised in a callback, found in ``exc`` (jax's), or None."""
    if isinstance(exc, HostCodeFailed) and exc.__cause__ is not None:
        return exc.__cause__
    found = _FOUND.search(str(exc))
    return None if found is None else _raised.pop(int(found.group(1)), None)


def _run_host(fun: Callable[[list[Any]], list[Any]], vals: list[Any]) -> list[Any]:
    try:
        return fun(vals)
    except Exception as e:
        n = next(_count)
        _raised[n] = e
        while len(_raised) > 16:  # (those never looked up: keep a few, not all)
            del _raised[min(_raised)]
        raise HostCodeFailed(_MARK.format(n)) from e


def _canon(jax: Any, specs: Sequence[Spec]) -> list[Spec]:
    return [(tuple(s), np.dtype(jax.dtypes.canonicalize_dtype(d))) for s, d in specs]


def _callback(jax: Any, fun: Callable[[list[Any]], list[Any]], specs: list[Spec], args: Any) -> Any:
    """``fun`` (numpy list in, list out) called from the program; not differentiable."""
    structs = [jax.ShapeDtypeStruct(s, d) for s, d in specs]

    def host(*vals: Any) -> tuple[Any, ...]:
        outs = _run_host(fun, [np.asarray(v) for v in vals])
        return tuple(np.asarray(o, dtype=d).reshape(s) for o, (s, d) in zip(outs, specs))

    @jax.custom_jvp  # type: ignore[untyped-decorator]
    def call(*a: Any) -> list[Any]:
        return list(jax.pure_callback(host, structs, *a, vmap_method="sequential"))

    @call.defjvp  # type: ignore[untyped-decorator]
    def _refuse(primals: Any, tangents: Any) -> Any:
        raise UnsupportedError(NESTED)

    return call(*args)


def _floating(dtype: Any) -> bool:
    return np.dtype(dtype).kind in "fc"


def host_custom_vjp(
    jax: Any,
    fwd: Callable[[list[Any]], list[Any]],
    bwd: Callable[[list[Any], list[Any]], list[Any]],
    leaves: Sequence[Any],
    active: Sequence[bool],
    specs: Sequence[Spec],
) -> list[Any]:
    """``Backend.host_custom_vjp`` on jax (module doc): ``fwd(host_leaves)`` gives the
    output leaves, ``bwd(host_leaves, cotangents)`` one cotangent per leaf (or None)."""
    jnp = jax.numpy
    xs = [jnp.asarray(v) for v in leaves]
    n, outs = len(xs), _canon(jax, specs)
    wrt = [i for i, a in enumerate(active) if a]
    ct_specs = _canon(jax, [(tuple(np.shape(xs[i])), xs[i].dtype) for i in wrt])
    carried = [k for k, (_, d) in enumerate(outs) if _floating(d)]  # float0 for others

    @jax.custom_vjp  # type: ignore[untyped-decorator]
    def call(*a: Any) -> list[Any]:
        return _callback(jax, fwd, outs, a)  # type: ignore[no-any-return]

    def call_fwd(*a: Any) -> tuple[list[Any], Any]:
        return call(*a), a

    def call_bwd(a: Any, cts: Any) -> tuple[Any, ...]:
        def host(vals: list[Any]) -> list[Any]:
            full: list[Any] = [np.zeros(s, d) for s, d in outs]
            for k, c in zip(carried, vals[n:]):
                full[k] = c
            got = bwd(vals[:n], full)
            return [
                np.zeros(ct_specs[j][0]) if got[i] is None else got[i] for j, i in enumerate(wrt)
            ]

        found = _callback(jax, host, ct_specs, (*a, *(cts[k] for k in carried)))
        grads: list[Any] = [None] * n
        for j, i in enumerate(wrt):
            grads[i] = found[j]
        return tuple(grads)

    call.defvjp(call_fwd, call_bwd)
    return list(call(*xs))


def host_custom_jvp(
    jax: Any,
    fn: Callable[[list[Any]], list[Any]],
    rule: Callable[[list[Any], list[Any]], tuple[list[Any], list[Any]]],
    leaves: Sequence[Any],
    active: Sequence[bool],
    specs: Sequence[Spec],
    reverse_fix: str,
) -> list[Any]:
    """``Backend.host_custom_jvp`` on jax (module doc)."""
    jnp = jax.numpy
    xs = [jnp.asarray(v) for v in leaves]
    n, outs = len(xs), _canon(jax, specs)
    moving = [i for i, x in enumerate(xs) if _floating(x.dtype)]
    carried = [k for k, (_, d) in enumerate(outs) if _floating(d)]
    both = outs + [outs[k] for k in carried]

    @jax.custom_jvp  # type: ignore[untyped-decorator]
    def call(*a: Any) -> list[Any]:
        return _callback(jax, fn, outs, a)  # type: ignore[no-any-return]

    @call.defjvp  # type: ignore[untyped-decorator]
    def call_rule(primals: Any, tangents: Any) -> tuple[list[Any], list[Any]]:
        if any(type(tangents[i]).__name__ == "JaxprTracer" for i in moving):
            raise UnsupportedError(
                "jax: reverse mode asks to transpose a custom_jvp(host=True) rule, but host "
                f"code is numpy and cannot be transposed. {reverse_fix}"
            )

        def host(vals: list[Any]) -> list[Any]:
            ts: list[Any] = [None] * n
            for i, t in zip(moving, vals[n:]):
                ts[i] = t
            got, tans = rule(vals[:n], ts)
            return [*got, *(tans[k] for k in carried)]

        found = _callback(jax, host, both, (*primals, *(tangents[i] for i in moving)))
        out_t: list[Any] = [np.zeros(s, jax.dtypes.float0) for s, _ in outs]
        for k, t in zip(carried, found[len(outs) :]):
            out_t[k] = t
        return found[: len(outs)], out_t

    return list(call(*xs))


def to_host(jax: Any, value: Any) -> Any:
    """A concrete jax array as numpy; ``None`` for a tracer (no numbers while tracing)."""
    if isinstance(value, jax.core.Tracer):
        return None
    return np.asarray(value)
