"""The pullback the jax engine's ``vjp`` returns.

Compiled calls give a pullback that runs jitted programs of their cache entry (one for
single cotangents, one for batches) on the residuals the compiled forward pass returned;
eager and nested calls give one that runs ``jax.vjp``'s own pullback. Either holds its
residuals (jax arrays of its own) and what its results must look like, never the
caller's arrays.

Both it and the front end's :class:`adswitch.Pullback` are jax pytrees (registered here),
whose leaves are the residuals: ``jax.jit`` and ``jax.vmap`` can return a pullback made
inside them, as they return ``jax.vjp``'s. A pullback that came out of ``jax.vmap``
holds batched residuals and is refused outside ``vmap`` (jax's own would compute with
mismatched shapes). Imported only once jax is in use (it imports jax at the top).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax

import adswitch
from adswitch.errors import UnsupportedError
from adswitch_jax.primitives.results import Kinds, per_leaf
from adswitch_jax.refusals.errors import translate

__all__ = ["Pullback", "compiled_apply", "eager_apply"]

_config: Any = jax.config
Apply = Callable[[Any, Sequence[Any], bool], Sequence[Any]]


class Pullback:
    """``pullback(cotangents, batched=False)`` -> one gradient per leaf (``None`` where
    inactive), as :class:`adswitch.spec.Pullback` says.

    Args:
        apply: ``(residuals, cotangents, batched) -> gradients of the active leaves``.
        residuals: what ``apply`` needs of the forward pass.
        kinds: what each gradient must look like.
        x64: the forward pass ran in 64-bit mode (so does the pullback).
    """

    __slots__ = ("_apply", "_batched", "_fixed", "_kinds", "_residuals", "_x64")

    def __init__(self, apply: Apply, residuals: Any, kinds: Kinds, x64: bool) -> None:
        self._apply = apply
        self._residuals = residuals
        self._kinds = kinds
        self._x64 = x64
        self._fixed: _Fixed | None = None
        self._batched = False

    def __call__(self, cotangents: Sequence[Any], batched: bool = False) -> list[Any | None]:
        if self._batched:
            raise UnsupportedError(
                "this pullback was returned from jax.vmap, so its residuals carry the "
                "batch axis and it cannot be called outside vmap (the shapes would not "
                "match). Fix: call it inside jax.vmap too, e.g. "
                "jax.vmap(lambda pb, ct: pb(ct))(pullback, cotangents), or call ad.vjp "
                "and its pullback in the same vmapped function."
            )
        try:
            if self._x64 and not _config.jax_enable_x64:
                with jax.enable_x64(True):
                    grads = self._apply(self._residuals, cotangents, batched)
            else:
                grads = self._apply(self._residuals, cotangents, batched)
        except Exception as exc:
            replacement = translate(exc)
            if replacement is None:
                raise
            raise replacement from exc
        return per_leaf(grads, self._kinds, batched)

    def __repr__(self) -> str:
        return "<adswitch jax pullback>"


class _Fixed:
    """A :class:`Pullback`'s static part: how to apply it, the residuals' tree and the
    shapes their leaves had when first flattened (a leaf of another shape later is a
    batch axis that ``jax.vmap`` added). Compared by identity."""

    __slots__ = ("apply", "kinds", "shapes", "treedef", "x64")

    def __init__(self, pullback: Pullback, treedef: Any, leaves: Sequence[Any]) -> None:
        self.apply, self.kinds, self.x64 = pullback._apply, pullback._kinds, pullback._x64
        self.treedef = treedef
        self.shapes = tuple(getattr(leaf, "shape", None) for leaf in leaves)


def _flatten(pullback: Pullback) -> tuple[list[Any], _Fixed]:
    leaves, treedef = jax.tree_util.tree_flatten(pullback._residuals)
    fixed = pullback._fixed
    if fixed is None:
        fixed = pullback._fixed = _Fixed(pullback, treedef, leaves)
    return leaves, fixed


def _unflatten(fixed: _Fixed, leaves: Sequence[Any]) -> Pullback:
    pullback = Pullback(
        fixed.apply, jax.tree_util.tree_unflatten(fixed.treedef, leaves), fixed.kinds, fixed.x64
    )
    pullback._fixed = fixed
    # jax unflattens with placeholders too (no shape): only real arrays decide.
    pullback._batched = any(
        shape is not None and getattr(leaf, "shape", shape) != shape
        for leaf, shape in zip(leaves, fixed.shapes)
    )
    return pullback


def _register() -> None:
    """Make both pullbacks jax pytrees (once: this module is imported once)."""
    front: Any = adswitch.Pullback
    jax.tree_util.register_pytree_node(Pullback, _flatten, _unflatten)
    jax.tree_util.register_pytree_node(front, front.tree_flatten, front.tree_unflatten)


_register()


def compiled_apply(appliers: tuple[Callable[..., Any], Callable[..., Any]]) -> Apply:
    """``apply`` for residuals returned by a compiled ``vjp`` program."""
    single, batch = appliers

    def apply(residuals: Any, cotangents: Sequence[Any], batched: bool) -> Sequence[Any]:
        program = batch if batched else single
        return program(residuals, tuple(cotangents))  # type: ignore[no-any-return]

    return apply


def eager_apply(
    pullback: Callable[[Any, Sequence[Any], bool], Sequence[Any]],
) -> Apply:
    """``apply`` for an eager ``jax.vjp``: ``pullback(jax's pullback, cotangents,
    batched)``, jax's pullback (a pytree of its residuals) being the residuals."""

    def apply(residuals: Any, cotangents: Sequence[Any], batched: bool) -> Sequence[Any]:
        return pullback(residuals, cotangents, batched)

    return apply
