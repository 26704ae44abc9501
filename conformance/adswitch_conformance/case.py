"""What one conformance case is: a small frozen description plus its expected outcome."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

__all__ = [
    "Case",
    "Tolerance",
    "DEFAULT_TOL",
    "FAMILIES",
    "ENTRIES",
    "GRADIENT_ENTRIES",
    "TREE_ENTRIES",
    "arr",
    "pos",
]

Tolerance = tuple[float, float]
"""``(rtol, atol)``: a value passes when ``|got - ref| <= atol + rtol * |ref| + fd_error``."""

DEFAULT_TOL: Mapping[str, Tolerance] = MappingProxyType(
    {"float64": (1e-8, 1e-10), "float32": (2e-3, 2e-4), "float16": (2e-2, 2e-2)}
)

FAMILIES = (
    "basics",
    "ops",
    "trees",
    "activity",
    "ties",
    "kinks",
    "nested",
    "mutation",
    "hygiene",
    "operators",
    "linalg",
    "rules",
    "checkpoint",
    "host",
    "sparse",
)
"""Catalogue families in the order the reports list them."""

GRADIENT_ENTRIES = ("gradient", "withgradient")
ENTRIES = (*GRADIENT_ENTRIES, "vjp", "jvp", "jacobian", "hessian", "hvp", "derivative")
"""The ``adswitch`` functions a case can call (``Case.entry``)."""

# Entries whose result is one tree compared leaf by leaf (closed forms give that tree).
TREE_ENTRIES = ("jacobian", "hessian", "derivative")


@dataclass(frozen=True)
class Case:
    """One edge case, run the same way on every engine.

    Attributes:
        id: unique, ``family.name``.
        family: one of :data:`FAMILIES`.
        description: one line: what it checks and which failure mode it guards against.
        fn: the user function, written only against ``ad.array_namespace`` (and
            ``ad.gradient`` for nested cases).
        make_args: returns fresh arguments (float64 numpy trees with activity wrappers)
            on every call.
        entry: one of :data:`ENTRIES`: ``ad.gradient``, ``ad.withgradient``, or an
            operator (``vjp``, ``jvp``, ``jacobian``, ``hessian``, ``hvp``,
            ``derivative``). For ``jvp``/``hvp`` the arguments are the primals; for
            ``derivative`` the first argument is ``x``.
        zero: the ``zero=`` keyword (gradient entries, ``vjp``, ``hvp``).
        raises: the exception the call must raise (an ``AdswitchError`` subclass, or the
            user's own exception for cases where ``f`` fails); ``None`` for a result.
        also_ok: errors that count as a pass besides the right numbers (e.g.
            ``AliasingError`` for overlapping memory, where both answers are allowed).
        ref_fn: a function with the same value as ``fn`` but no ``ad.gradient`` inside
            (inner gradients in closed form); references and plain calls use it.
        closed_form: ``closed_form(*vals) -> per-argument gradient trees`` (``None`` for
            ``Const``), used instead of finite differences; for ``jacobian``,
            ``hessian`` and ``derivative`` the operator's whole result in its layout.
        check: ``check(grads, *vals) -> message or None`` for points where the
            derivative is a set (kinks); replaces the reference comparison.
        requires: capability names (fields of ``adswitch.spec.Capabilities``, or a dtype
            name) the case needs; an engine lacking one may raise an ``AdswitchError``.
        tol: ``(rtol, atol)`` per dtype name of the leaf compared.
        repeat_same: how many times the entry is called on the same arguments
            (checks ``zero=`` semantics: accumulate or restart).
        second_args: arguments for the hygiene re-run (default: ``make_args`` again);
            different values catch stale caches. In the runner's prepared mode, the
            point the call prepared at ``make_args`` is first called at.
        prepared_second_raises: what a call prepared at ``make_args`` must raise at
            ``second_args``: ``PreparationError`` where they differ from ``make_args`` in
            structure, activity, shapes or dtypes (a prepared call is strict; the prepared
            mode then checks each point with a call prepared at its own kind of
            arguments). ``None``: ``second_args`` are of the prepared structure.
        has_aux: the ``has_aux=`` keyword (``vjp``, ``jvp``, ``jacobian``).
        mode: the ``mode=`` keyword of ``jacobian``.
        seeds: fresh directions on every call: for ``vjp`` the cotangents (each a tree
            like the differentiated output; the pullback is called once per cotangent,
            in order), for ``jvp`` and ``hvp`` the tangents (one tree per primal).
        sparse: a ``jacobian`` case computed compressed: an
            :class:`~adswitch_conformance.checks_sparse.Sparse` (its ``sparsity=`` and
            ``check=`` keywords, the colorings it expects); ``None``: dense.
    """

    id: str
    family: str
    description: str
    fn: Callable[..., Any]
    make_args: Callable[[], tuple[Any, ...]]
    entry: str = "gradient"
    zero: bool = True
    raises: type[BaseException] | None = None
    also_ok: tuple[type[BaseException], ...] = ()
    ref_fn: Callable[..., Any] | None = None
    closed_form: Callable[..., tuple[Any, ...]] | None = None
    check: Callable[..., str | None] | None = None
    requires: tuple[str, ...] = ()
    tol: Mapping[str, Tolerance] = field(default_factory=lambda: DEFAULT_TOL)
    repeat_same: int = 1
    second_args: Callable[[], tuple[Any, ...]] | None = None
    prepared_second_raises: type[BaseException] | None = None
    has_aux: bool = False
    mode: str = "auto"
    seeds: Callable[[], tuple[Any, ...]] | None = None
    sparse: Any = None

    @property
    def expected(self) -> str:
        """A short human description of the expected outcome (for docs and listings)."""
        if self.raises is not None:
            return f"raises {self.raises.__name__}"
        if self.check is not None:
            how = "subgradient check"
        elif self.closed_form is not None:
            how = "closed form"
        elif self.ref_fn is not None:
            how = "finite differences of a closed-form inner gradient"
        else:
            how = "finite differences"
        if self.entry not in GRADIENT_ENTRIES and self.check is None:
            how = how.replace("finite differences", "dense finite differences")
        if self.entry in ("vjp", "jvp"):
            how += "; `<vjp(u), v> = <u, jvp(v)>`"
        if self.also_ok:
            how += " or " + "/".join(e.__name__ for e in self.also_ok)
        return how


def arr(seed: int, *shape: int, lo: float = -1.0, hi: float = 1.0, dtype: Any = np.float64) -> Any:
    """A reproducible uniform random array (float64 unless ``dtype`` says otherwise).

    Example:
        >>> arr(0, 2, 3).shape
        (2, 3)
    """
    values = np.random.default_rng(seed).uniform(lo, hi, size=shape)
    return np.asarray(values, dtype=dtype)


def pos(seed: int, *shape: int) -> Any:
    """A reproducible array in ``[0.5, 2]``: safe for log, sqrt, division.

    Example:
        >>> bool((pos(1, 4) >= 0.5).all())
        True
    """
    return arr(seed, *shape, lo=0.5, hi=2.0)
