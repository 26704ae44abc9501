"""How the jax engine runs one primitive call: compiled from the cache, eager, or nested.

One call goes one of three ways:

* **compiled** (top level, the call keyable): one ``jax.jit`` program per cache key
  (:mod:`adswitch_jax.programs.compiled`).
* **eager** (the function cannot be traced under ``jit``, or cannot be keyed): the same
  jax transformations without ``jit``. Said once per function with a warning.
* **nested** (inside another differentiation): the transformations on the enclosing
  call's traced values, so the results stay differentiable by the enclosing call.

Imported only once jax is in use (it imports jax at the top).
"""

from __future__ import annotations

from typing import Any

import jax
from jax.core import Tracer

from adswitch_jax.closures.captures import Walk
from adswitch_jax.closures.recall import recall
from adswitch_jax.primitives.request import Request, eager_run, unkeyed
from adswitch_jax.programs.compiled import CACHE, SLOT, Prepared, compiled, state_of
from adswitch_jax.programs.keys import Scan, scan
from adswitch_jax.refusals.errors import TRACE_FAILURES, translate

__all__ = ["CACHE", "Request", "run"]

_trace_ctx: Any = None  # jax's current trace: no public API says whether one is staging
try:
    from jax._src.core import EvalTrace as _EvalTrace
    from jax._src.core import trace_ctx as _trace_ctx
except ImportError:  # pragma: no cover - a jax without them: tracer leaves still tell
    pass

_config: Any = jax.config  # its flags are dynamic attributes
_SLOT = SLOT  # (read by programs.shortcut)


def run(request: Request) -> tuple[list[Any], Any]:
    """``(output leaves, result)`` of one call, in the caller's kinds: the result is the
    gradients per leaf (``value_and_grad``, ``vjp_apply``), the output tangents (``jvp``)
    or a :class:`~adswitch_jax.primitives.pullback.Pullback` (``vjp``)."""
    try:
        return _run(request)
    except Exception as exc:
        if request.info.depth and isinstance(exc, TRACE_FAILURES):
            # Inside an enclosing call, which may be tracing a program: let it see jax's
            # error and run eagerly (it translates the error if even that fails).
            raise
        replacement = translate(exc)
        if replacement is None:
            raise
        raise replacement from exc


def _run(request: Request) -> tuple[list[Any], Any]:
    info = request.info
    state: Prepared | None = None
    prepared = info.prepared
    if prepared is not None and not info.depth:
        state = state_of(prepared, request)  # (a Slot; a plain dict from a direct caller)
        found = state.scan
    else:
        found = scan(request.leaves, request.active)
    # A jax transformation (jit, vmap, grad) tracing right now stages the call inline
    # even when every leaf is concrete: f may read tracers from an object's attributes
    # (model.w = w inside jax.jit), which a program of adswitch's own would bake in as
    # stale constants. (Inline: this is every compiled call's path.)
    traced = (
        info.depth > 0
        or found.traced
        or (_trace_ctx is not None and type(_trace_ctx.trace) is not _EvalTrace)
    )
    x64 = found.x64
    captures: Walk | None = None
    if (
        not traced
        and (info.structure is not None or info.cache_key is not None)
        and not found.unhashable
    ):
        captures = recall(info.func)
        x64 = x64 or captures.wide
        if captures.lifted and _holds_tracer(captures.lifted):
            # f closes over a tracer of an enclosing jax transformation (jax.jit around
            # the call, the tracer captured, not passed): that transformation stages the
            # call, so it runs inline there rather than as a program nested in it.
            traced, captures = True, None
    if x64 and not _config.jax_enable_x64:
        with jax.enable_x64(True):
            return _route(request, found, captures, traced, x64, state)
    return _route(request, found, captures, traced, x64, state)


def _holds_tracer(lifted: list[Any]) -> bool:
    for value in lifted:  # noqa: SIM110 (a loop: no generator on every compiled call)
        if isinstance(value, Tracer):
            return True
    return False


def _route(
    request: Request,
    found: Scan,
    captures: Walk | None,
    traced: bool,
    x64: bool,
    state: Prepared | None,
) -> tuple[list[Any], Any]:
    if traced:
        # inside another differentiation: whatever the enclosing call had
        return eager_run(request, found, None, x64)
    if captures is None:
        return unkeyed(request, found, x64)
    return compiled(request, found, captures, x64, state)
