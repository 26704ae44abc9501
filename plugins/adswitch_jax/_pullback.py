"""The pullback the jax engine's ``vjp`` returns.

Compiled calls give a pullback that runs jitted programs of their cache entry (one for
single cotangents, one for batches) on the residuals the compiled forward pass returned;
eager and nested calls give one that runs ``jax.vjp``'s own pullback. Either holds its
residuals (jax arrays of its own) and what its results must look like, never the
caller's arrays. Imported only once jax is in use (it imports jax at the top).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax

from adswitch_jax._errors import translate
from adswitch_jax._results import Kinds, per_leaf

__all__ = ["Pullback", "compiled_apply"]

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

    __slots__ = ("_apply", "_kinds", "_residuals", "_x64")

    def __init__(self, apply: Apply, residuals: Any, kinds: Kinds, x64: bool) -> None:
        self._apply = apply
        self._residuals = residuals
        self._kinds = kinds
        self._x64 = x64

    def __call__(self, cotangents: Sequence[Any], batched: bool = False) -> list[Any | None]:
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


def compiled_apply(appliers: tuple[Callable[..., Any], Callable[..., Any]]) -> Apply:
    """``apply`` for residuals returned by a compiled ``vjp`` program."""
    single, batch = appliers

    def apply(residuals: Any, cotangents: Sequence[Any], batched: bool) -> Sequence[Any]:
        program = batch if batched else single
        return program(residuals, tuple(cotangents))  # type: ignore[no-any-return]

    return apply


def eager_apply(pullback: Callable[[Sequence[Any], bool], Sequence[Any]]) -> Apply:
    """``apply`` for an eager ``jax.vjp``'s pullback (its residuals are its own)."""

    def apply(residuals: Any, cotangents: Sequence[Any], batched: bool) -> Sequence[Any]:
        return pullback(cotangents, batched)

    return apply
