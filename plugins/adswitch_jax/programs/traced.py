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

import sys
from typing import Any

__all__ = ["stands_in"]


def stands_in(value: Any, cls: type) -> bool:
    """Whether ``value`` is a jax tracer and ``cls`` a jax array type."""
    core = sys.modules.get("jax.core")
    jax = sys.modules.get("jax")
    if core is None or jax is None:  # no jax imported: no jax tracer exists
        return False
    return isinstance(value, core.Tracer) and issubclass(cls, jax.Array)
