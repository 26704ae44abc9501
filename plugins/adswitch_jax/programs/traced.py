"""Traced values of jax's own transforms standing for jax arrays in prepared calls.

A call prepared on a ``jax.Array`` and made inside ``jax.jit`` (or ``vmap``, ``grad``)
gets tracers of the prepared shapes and dtypes: the same call, staged by jax's transform.
The front end asks :func:`stands_in` (the ``Backend.stands_in`` hook) before refusing such
a leaf, then runs the call without the prepared slot, so that the engine runs it inline
in the enclosing trace (``primitives.dispatch``: a traced scan) instead of calling the prepared
``jax.jit`` program nested in it.

Jax-free at import (the plugin imports it): it looks jax up in ``sys.modules``.
"""

from __future__ import annotations

import contextvars
import sys
from typing import Any

import numpy as np

__all__ = ["SHORTCUT_TRACING", "stands_in"]

#: True while a prepared call's shortcut (``programs.shortcut``) is traced: its tracers
#: then stand for numpy arrays too (the shortcut gives numpy back, as the full path does).
SHORTCUT_TRACING: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "adswitch_jax_shortcut_tracing", default=False
)


def stands_in(value: Any, cls: type) -> bool:
    """Whether ``value`` is a jax tracer and ``cls`` a jax array type (or numpy's, while a
    shortcut is traced)."""
    core = sys.modules.get("jax.core")
    jax = sys.modules.get("jax")
    if core is None or jax is None:  # no jax imported: no jax tracer exists
        return False
    if not isinstance(value, core.Tracer):
        return False
    return issubclass(cls, jax.Array) or (cls is np.ndarray and SHORTCUT_TRACING.get())
