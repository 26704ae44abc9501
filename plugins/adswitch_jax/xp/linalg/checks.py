"""Refusals inside compiled jax programs: an ``UnsupportedError`` where a linear-algebra
derivative does not exist, decided on the values, without Python branching on traced
values.

:func:`guard` is the identity whose derivative (any mode, any order) first checks a flag
that the forward computation made: ``lax.cond`` on the flag, whose taken branch calls
the host (``jax.pure_callback``), where the error is raised. The branch not taken costs
nothing, so a well-posed call pays one comparison and a conditional (under a microsecond
on CPU, measured once, where an effectful ``jax.debug.callback`` on every call costs tens
of microseconds). Under ``jax.vmap`` over the flag the conditional becomes a select and
the host is asked once per batch element.
jax reports the host's exception as a ``JaxRuntimeError`` carrying its text:
:func:`refusal_in` finds the message again, for the engine's error translation
(``refusals.errors``).

:func:`linear_check` refuses a first derivative by the value of its tangent (forward
mode) or of its cotangent (reverse mode, where a ``custom_jvp`` rule's tangents are
symbolic): a zero-valued linear term of the tangent, made with
``jax.lax.custom_linear_solve``, whose solve checks the tangent and whose transpose solve
checks the cotangent (``jax.custom_derivatives.linear_call`` would fit too, but has no
batching rule: ``jacrev``, ``vmap`` fail on it).

Imported only once jax is in use (it imports jax).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from adswitch.errors import UnsupportedError
from adswitch.spec import known_linalg_refusal, linalg_refusal

__all__ = ["guard", "known_refusal", "linear_check", "refusal", "refusal_in"]

_MARK = "<<adswitch-linalg>>"
_FOUND = re.compile(re.escape(_MARK) + "(.*?)" + re.escape(_MARK), re.DOTALL)


class _QuietRefusals(logging.Filter):
    """Drops jax's log record of a callback that raised one of these refusals (jax logs
    every failed callback with its traceback, then raises): the refusal reaches the
    caller as an ``UnsupportedError``, and needs no second, noisier report."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not (isinstance(exc, UnsupportedError) and _MARK in str(exc))


logging.getLogger("jax._src.callback").addFilter(_QuietRefusals())


def refusal(name: str, why: str, fix: str) -> str:
    """The message for ``xp.linalg.<name>`` at a point where its derivative does not
    exist (or is not computed) -- in the words every engine uses (``adswitch.spec``)."""
    return linalg_refusal("jax", name, why, fix)


def known_refusal(key: str) -> str:
    """One of the refusals every engine shares (``adswitch.spec.LINALG_REFUSALS``)."""
    return known_linalg_refusal("jax", key)


def refusal_in(exc: BaseException) -> UnsupportedError | None:
    """The ``UnsupportedError`` a :func:`guard` raised on the host, found in the
    exception jax raised for it (``None`` when ``exc`` is not one)."""
    found = _FOUND.search(str(exc))
    return None if found is None else UnsupportedError(found.group(1))


def _host_check(message: str, bad: Any) -> Any:
    if np.any(bad):
        raise UnsupportedError(f"{_MARK}{message}{_MARK}")
    return np.ones((), bool)


def _passed(bad: Any, message: str, dtype: Any) -> Any:
    """A scalar 1 of ``dtype`` -- after the host has raised, if ``bad`` has a true entry.
    (The host answers a boolean: a float it answers may be narrowed to 32 bits where the
    callback runs outside the call's 64-bit mode, as under ``vmap``, which runs it.)"""
    one = jax.ShapeDtypeStruct((), bool)  # type: ignore[no-untyped-call]

    def ask_host() -> Any:
        check = partial(_host_check, message)
        return jax.pure_callback(check, one, bad, vmap_method="sequential")

    return jax.lax.cond(jnp.any(bad), ask_host, lambda: jnp.ones((), bool)).astype(dtype)


@partial(jax.custom_jvp, nondiff_argnums=(2,))
def guard(value: Any, bad: Any, message: str) -> Any:
    """``value``, whose derivative raises ``UnsupportedError(message)`` where ``bad``.

    Args:
        value: a floating array (an output of a factorization, or a coefficient of a
            first-order rule that must not be differentiated where ``bad``).
        bad: booleans, made by the forward computation (per matrix).
        message: the error's text (the point and the fix).

    Returns:
        ``value`` itself; its tangent is ``value``'s, checked.
    """
    return value


@guard.defjvp
def _guard_jvp(message: str, primals: Any, tangents: Any) -> Any:
    value, bad = primals
    tangent = tangents[0]
    return guard(value, bad, message), tangent * _passed(bad, message, tangent.dtype)


def linear_check(
    tangent: Any,
    forward_bad: Callable[[Any], Any],
    forward_message: str,
    transpose_bad: Callable[[Any], Any],
    transpose_message: str,
) -> Any:
    """Zeros of ``tangent``'s shape, linear in it, that refuse a derivative by value.

    Added into a ``custom_jvp`` rule's tangent output: in forward mode ``tangent`` is
    concrete and ``forward_bad(tangent)`` is checked; in reverse mode the term is
    transposed, and ``transpose_bad`` checks the cotangent that reaches it (where it has a
    true entry, ``UnsupportedError(message)`` is raised on the host, as :func:`guard`).
    Compiles, batches (``vmap``) and differentiates again (the term stays zero).

    Args:
        tangent: a floating array, linear in the rule's input tangent.
        forward_bad: booleans from a tangent: the derivative along it does not exist.
        forward_message: the forward-mode error's text.
        transpose_bad: booleans from a cotangent of ``tangent``'s shape: the gradient
            with it does not exist.
        transpose_message: the reverse-mode error's text.

    Returns:
        Zeros of ``tangent``'s shape and dtype.
    """

    def solve(_: Any, b: Any) -> Any:
        return b * (0.0 * _passed(forward_bad(b), forward_message, b.dtype))

    def transpose_solve(_: Any, c: Any) -> Any:
        return c * (0.0 * _passed(transpose_bad(c), transpose_message, c.dtype))

    return jax.lax.custom_linear_solve(lambda x: x, tangent, solve, transpose_solve)
