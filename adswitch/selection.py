"""Which engine a call uses, and the stack of differentiation calls in progress.

The rules, first that applies:
    1. the ``backend=`` keyword (a name or a Backend object);
    2. inside ``f`` of an enclosing differentiation: the enclosing call's engine (any
       other engine there is an ``UnsupportedError``: engines cannot differentiate
       through each other);
    3. the innermost ``with ad.use(name):``;
    4. the ``ADSWITCH_BACKEND`` environment variable;
    5. the array types among the arguments (torch tensors -> "torch", jax arrays ->
       "jax"), looked up by module name without importing any engine;
    6. the built-in default, ``"tape"``.

Both the ``use`` stack and the call stack live in ``contextvars``, so threads and
asyncio tasks each see their own.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from adswitch.errors import AdswitchError, UnsupportedError
from adswitch.registry import Registry, default_registry
from adswitch.spec import PRIMITIVES, Backend

__all__ = ["DEFAULT_BACKEND", "use", "select", "enclosing", "current_calls", "innermost_use"]

DEFAULT_BACKEND = "tape"

_use_stack: ContextVar[tuple[str | Backend, ...]] = ContextVar("adswitch_use", default=())
# Engines of the differentiation calls in progress, outermost first.
current_calls: ContextVar[tuple[Backend, ...]] = ContextVar("adswitch_calls", default=())


@contextmanager
def use(backend: str | Backend) -> Iterator[Backend]:
    """Select the engine for the calls inside the ``with`` block.

    Args:
        backend: an engine name (see :func:`adswitch.backends`) or a Backend object.

    Returns:
        A context manager yielding the engine object.

    Example:
        >>> import adswitch as ad, numpy as np
        >>> with ad.use("tape"):
        ...     ad.gradient(lambda x: ad.array_namespace(x).sum(x * x), np.array([3.0]))
        (array([6.]),)
    """
    resolved = resolve(backend, default_registry(), f"ad.use({backend!r})")
    token = _use_stack.set((*_use_stack.get(), resolved))
    try:
        yield resolved
    finally:
        _use_stack.reset(token)


def resolve(backend: str | Backend, registry: Registry, source: str = "backend=") -> Backend:
    """The engine ``backend`` names; ``source`` says where the name came from (for the
    message of an unknown one)."""
    if isinstance(backend, str):
        return registry.get(backend, source)
    if not any(hasattr(backend, name) for name in PRIMITIVES):
        raise AdswitchError(
            f"backend={backend!r} is neither an engine name nor a Backend object; "
            f"pass a name such as 'tape' (installed: {', '.join(registry.names())})"
        )
    return backend


def innermost_use() -> str | Backend | None:
    """The engine of the innermost ``with ad.use(...)`` block, or ``None`` outside any."""
    used = _use_stack.get()
    return used[-1] if used else None


def enclosing() -> Backend | None:
    calls = current_calls.get()
    return calls[-1] if calls else None


def select(backend: str | Backend | None, leaves: Sequence[Any], registry: Registry) -> Backend:
    """Apply the selection rules above to one call."""
    calls = current_calls.get()  # (``enclosing`` inline: every call runs this)
    outer = calls[-1] if calls else None
    if backend is not None:
        chosen = resolve(backend, registry, f"backend={backend!r}")
        if outer is not None and chosen is not outer:
            raise UnsupportedError(
                f"this call runs inside a differentiation on engine {outer.name!r} but "
                f"asks for {chosen.name!r}; engines cannot differentiate through each other. "
                f"Drop backend= on the inner call (it defaults to {outer.name!r})."
            )
        return chosen
    if outer is not None:
        return outer
    used = _use_stack.get()
    if used:
        return resolve(used[-1], registry, f"ad.use({used[-1]!r})")
    from_env = _env_backend()
    if from_env:
        return registry.get(from_env, "the ADSWITCH_BACKEND environment variable")
    found = _from_array_types(leaves, registry)
    return found if found is not None else registry.get(DEFAULT_BACKEND)


def _env_backend() -> str | None:
    """``ADSWITCH_BACKEND``, read on every call through the public mapping (an unset
    variable costs two caught ``KeyError``s, 2-3 us of a tiny call; CPython's private
    ``os.environ._data`` would avoid them and is not read)."""
    return os.environ.get("ADSWITCH_BACKEND") or None


def _from_array_types(leaves: Sequence[Any], registry: Registry) -> Backend | None:
    found: Backend | None = None
    for leaf in leaves:
        module = type(leaf).__module__
        if module == "numpy" or module == "builtins":
            continue
        owner = registry.owner(leaf)
        if owner is None:
            continue
        if found is not None and owner is not found:
            raise AdswitchError(
                f"the arguments mix arrays of engines {found.name!r} and {owner.name!r}; "
                "convert them to one kind (or to numpy) and pick the engine with backend=."
            )
        found = owner
    if found is not None:
        registry.version(found)
    return found
