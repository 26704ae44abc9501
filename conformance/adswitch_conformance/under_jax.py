"""``--under`` on jax (the adapter :mod:`~adswitch_conformance.under` imports when jax
is run): ``"jit"`` is ``jax.jit``, ``"vmap"`` is ``jax.vmap`` over two stacked copies.

Inputs of 8-byte dtypes run in 64-bit mode (``jax.enable_x64``), as the plain call
does. A result that is no jax type (a string aux) cannot leave the transform: skipped.
A refusal decided on values inside the program (a linear-algebra rule's host check)
reaches the caller of ``jax.jit`` as jax's ``JaxRuntimeError`` carrying adswitch's
``UnsupportedError`` text: it is raised as that ``UnsupportedError``. A ``vjp``'s
pullback leaves the transform (it is a jax pytree) and is called inside ``jax.jit`` /
``jax.vmap`` too. Results come back as numpy, as the plain call gives them.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable
from typing import Any

import numpy as np

from .under import Skip, chain, raised_in_case, same_rows

__all__ = ["KINDS", "call"]

KINDS = ("jit", "vmap")
_ENGINE_PACKAGES = ("jax", "jaxlib")
_UNTRACEABLE = (
    "ConcretizationTypeError",
    "TracerBoolConversionError",
    "TracerIntegerConversionError",
    "TracerArrayConversionError",
)
_REFUSAL = re.compile(
    r"UnsupportedError: (?:<<adswitch-linalg>>)?(.*?)(?:<<adswitch-linalg>>|$)", re.S
)


def call(kind: str, inner: Callable[..., Any], arrays: list[np.ndarray]) -> Any:
    """``inner(*arrays)`` made inside ``jax.jit`` or ``jax.vmap`` (``arrays`` stacked
    twice, row 0 returned after checking row 1), as numpy; raises
    :class:`~adswitch_conformance.under.Skip`."""
    import jax

    wide = any(a.dtype.itemsize >= 8 for a in arrays)

    def run() -> Any:
        if kind == "jit":
            return jax.jit(inner)(*arrays)
        return _rows(jax.vmap(inner)(*[np.stack([a, a]) for a in arrays]))

    return _host(_judged(run, wide), lambda p: _Pulled(p, kind, wide))


def _host(result: Any, convert: Callable[[Any], Any]) -> Any:
    """``result`` with jax arrays as numpy and a pullback wrapped by ``convert``."""
    import jax

    import adswitch as ad

    def one(leaf: Any) -> Any:
        if isinstance(leaf, ad.Pullback):
            return convert(leaf)
        return np.array(leaf) if isinstance(leaf, jax.Array) else leaf

    return jax.tree_util.tree_map(one, result, is_leaf=lambda v: isinstance(v, ad.Pullback))


def _rows(batched: Any) -> Any:
    """Row 0 of a batched result, after checking that row 1 equals it (a pullback stays
    batched: :class:`_Pulled` calls it inside ``vmap``)."""
    import jax

    import adswitch as ad

    def row(leaf: Any) -> Any:
        if not isinstance(leaf, jax.Array):
            return leaf
        same_rows(np.asarray(leaf[0]), np.asarray(leaf[1]))
        return leaf[0]

    return jax.tree_util.tree_map(row, batched, is_leaf=lambda v: isinstance(v, ad.Pullback))


class _Pulled:
    """A pullback that left the transform, called inside it again (``jit``: in a new
    ``jax.jit``; ``vmap``: ``jax.vmap`` over the batched pullback and stacked copies of
    the cotangent), its results as numpy."""

    def __init__(self, pullback: Any, kind: str, wide: bool) -> None:
        self.pullback, self.kind, self.wide = pullback, kind, wide

    def __call__(self, cotangent: Any) -> Any:
        import jax

        def run() -> Any:
            if self.kind == "jit":
                return jax.jit(lambda p, u: p(u))(self.pullback, cotangent)
            stacked = jax.tree_util.tree_map(lambda u: np.stack([u, u]), cotangent)
            return _rows(jax.vmap(lambda p, u: p(u))(self.pullback, stacked))

        return _host(_judged(run, self.wide), lambda p: p)


def _judged(run: Callable[[], Any], wide: bool) -> Any:
    """``run()`` (in 64-bit mode when ``wide``), its exceptions as the harness judges
    them: :class:`Skip` for what the case cannot do traced, a host refusal as the
    ``UnsupportedError`` it carries."""
    import jax

    from adswitch.errors import UnsupportedError

    try:
        with jax.enable_x64(True) if wide else contextlib.nullcontext():
            return run()
    except Exception as exc:
        reason = _untraceable(exc)
        if reason is not None:
            raise Skip(reason) from exc
        refused = _REFUSAL.search(str(exc))
        if isinstance(exc, jax.errors.JaxRuntimeError) and refused is not None:
            raise UnsupportedError(refused.group(1).strip()) from exc
        raise


def _untraceable(exc: BaseException) -> str | None:
    """Why ``exc`` says the case's own code cannot run traced, or ``None`` (a failure of
    adswitch's code, or any other, is no reason to skip)."""
    for current in chain(exc):
        name = type(current).__name__
        if name in _UNTRACEABLE and raised_in_case(current, _ENGINE_PACKAGES):
            return "the case's function needs a concrete value of a traced input"
        if isinstance(current, TypeError) and "not a valid JAX type" in str(current):
            return "a result (aux or output) is not a jax type"
    return None
