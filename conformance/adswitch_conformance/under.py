"""The runner's ``--under`` mode: each case's adswitch call made inside one of the
engine's own transforms, with the plain mode's checks -- ``"jit"``: the engine's
compiler; ``"vmap"``: its vectorising map over a batch of two stacked copies of the
inputs, each row checked (two rows that differ are WRONG).

This module is the engine-neutral part: which cases can run under a transform, how
a case's arguments split into the transform's inputs, and how the outcome is judged.
What a transform is belongs to one small adapter per engine, imported only when that
engine is run (:mod:`~adswitch_conformance.under_jax`: ``jax.jit``, ``jax.vmap``;
:mod:`~adswitch_conformance.under_torch`: ``torch.func.vmap``). An adapter is a module
with ``KINDS`` (the transforms it knows) and ``call(kind, inner, arrays)``: the result
of ``inner(*arrays)`` made inside the transform (the arrays stacked twice for
``"vmap"``), back as numpy as the plain call gives it, a ``vjp``'s pullback called
inside the transform too; it raises :class:`Skip` where the case's own code cannot
run traced, and :class:`RowMismatch`.

The case's floating numpy arrays (plain or inside ``Const``, in tuples, lists and dicts)
become the transform's inputs, tied arrays one input; everything else is closed over as
it is (a ``jvp``'s tangents too). A case that cannot run under the transform is
**skipped**, with the reason: it expects an error, an engine declares no such transform
(``Capabilities.under``) or the harness has no adapter for it, an argument is
``Duplicated`` (written in place) or a Python scalar (its gradient is a Python float,
which a traced call cannot give), arrays overlap without being the same, the case writes
in place (``mutation``: the transform's inputs are no views of the case's arrays) or is
a sparse Jacobian or Hessian built on the host there (several arguments or a tree, or
under vmap: ``checks_sparse.sparse_under``), the case's own function needs a
concrete value of a traced input (a Python branch, ``float(x)``), or a result is no type
the transform can return (jax: a string aux). A failure anywhere else (adswitch's own
code, a raw engine error) stays an ERROR; a clear ``UnsupportedError`` raised only under
the transform (what adswitch cannot do there, said with its fix) is ``unsupported``.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from . import trees
from .attempt import UNSUPPORTED, WRONG, Verdict, describe
from .capabilities import composes
from .case import Case
from .checks_sparse import sparse_under
from .entries import Caller

__all__ = [
    "SKIPPED",
    "UNDER",
    "RowMismatch",
    "Skip",
    "chain",
    "raised_in_case",
    "run_under",
    "same_rows",
    "under_caller",
]

UNDER = ("jit", "vmap")
SKIPPED = "skipped"
# The adapter module of each engine whose transforms the harness knows.
_ADAPTERS = {"jax": "under_jax", "torch": "under_torch"}


class Skip(Exception):
    """The case cannot run under the transform (its reason is the message)."""


class RowMismatch(Exception):
    """Under ``vmap``, two rows of identical inputs gave different results."""


class _Slot:
    """Where the transform's ``index``-th input goes back into the arguments."""

    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index


def _split(value: Any, arrays: list[Any], const: bool) -> Any:
    """``value`` with its floating numpy arrays replaced by :class:`_Slot` s (appended
    to ``arrays``, each object once); raises :class:`Skip`."""
    import adswitch as ad

    if isinstance(value, np.ndarray) and value.dtype.kind in "fc":
        for i, seen in enumerate(arrays):
            if seen is value:
                return _Slot(i)
            if np.shares_memory(seen, value):
                raise Skip("arrays overlap in memory without being one array")
        arrays.append(value)
        return _Slot(len(arrays) - 1)
    if type(value) in (tuple, list):
        return type(value)(_split(v, arrays, const) for v in value)
    if type(value) is dict:
        return {k: _split(v, arrays, const) for k, v in value.items()}
    if isinstance(value, ad.Const):
        return ad.Const(_split(value.val, arrays, True))
    if isinstance(value, ad.Duplicated):
        raise Skip("a Duplicated argument: its shadow is written in place")
    if not const and _is_scalar(value):
        raise Skip("a Python or numpy scalar argument: its gradient is a scalar")
    # Another container (a dataclass, a registered type) is closed over whole, but a
    # scalar in it is still differentiated: its gradient would be a traced value.
    if (
        not const
        and trees.children(value) is not None
        and any(map(_is_scalar, trees.leaves(value)))
    ):
        raise Skip("a Python or numpy scalar in an argument: its gradient is a scalar")
    return value


def _is_scalar(value: Any) -> bool:
    return isinstance(value, (float, complex, np.floating, np.complexfloating))


def _join(template: Any, values: Any) -> Any:
    import adswitch as ad

    if isinstance(template, _Slot):
        return values[template.index]
    if type(template) in (tuple, list):
        return type(template)(_join(v, values) for v in template)
    if type(template) is dict:
        return {k: _join(v, values) for k, v in template.items()}
    if isinstance(template, ad.Const):
        return ad.Const(_join(template.val, values))
    return template


def same_rows(first: np.ndarray, second: np.ndarray) -> None:
    """Raise :class:`RowMismatch` unless the rows of two identical inputs agree (to the
    rounding a batched kernel may add)."""
    if not np.allclose(first, second, rtol=1e-6, atol=0.0, equal_nan=True):
        raise RowMismatch(f"rows of identical inputs differ: {first} vs {second}")


def chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and its causes and contexts, each once."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def raised_in_case(exc: BaseException, engine_packages: tuple[str, ...]) -> bool:
    """Whether the last frame outside the engine (the installed folders of the
    top-level ``engine_packages``, e.g. ``("jax", "jaxlib")``) that led to ``exc`` is a
    case's own code (the catalogue's, a test's) -- not adswitch's front end or engine
    plugins.

    The folders come from the imported packages themselves: a name fragment such as
    ``"/torch/"`` would also match a user's or a test's own folder of that name.
    """
    roots = _package_roots(engine_packages)
    last = ""
    tb = exc.__traceback__
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename.replace("\\", "/")
        if not any(name.startswith(root) for root in roots):
            last = name
        tb = tb.tb_next
    folders = last.split("/")[:-1]
    ours = [f for f in folders if f == "adswitch" or f.startswith("adswitch_")]
    return bool(last) and all(f == "adswitch_conformance" for f in ours)


def _package_roots(packages: tuple[str, ...]) -> tuple[str, ...]:
    """The folders (ending in ``/``) that the imported ``packages`` load from."""
    roots: list[str] = []
    for package in packages:
        module = sys.modules.get(package)
        for folder in getattr(module, "__path__", None) or ():
            roots.append(str(folder).replace("\\", "/").rstrip("/") + "/")
    return tuple(roots)


def _adapter(backend: str) -> Any:
    """The adapter module for ``backend``'s transforms; raises :class:`Skip`."""
    name = _ADAPTERS.get(backend)
    if name is None:
        known = ", ".join(sorted(_ADAPTERS))
        raise Skip(f"the harness knows no transforms of {backend!r} (adapters: {known})")
    return importlib.import_module(f"{__package__}.{name}")


def under_caller(kind: str, caller: Caller) -> Caller:
    """A :data:`~adswitch_conformance.entries.Caller` making ``caller``'s call inside
    the engine's transform ``kind`` (``"jit"``, ``"vmap"``); raises :class:`Skip`.

    Example:
        >>> import adswitch as ad, numpy as np
        >>> from adswitch_conformance.entries import ad_caller
        >>> def f(x):
        ...     return ad.array_namespace(x).sum(x * x)
        >>> call = under_caller("vmap", ad_caller)
        >>> call("gradient", f, (np.array([1.0, 3.0]),), "torch", True)[0].tolist()
        [2.0, 6.0]
    """

    def call(
        entry: str,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        backend: str,
        zero: bool,
        **o: Any,
    ) -> Any:
        adapter = _adapter(backend)
        if kind not in adapter.KINDS:
            raise Skip(f"the harness runs {backend!r} under {', '.join(adapter.KINDS)} only")
        arrays: list[Any] = []
        template = _split(args, arrays, False)
        if not arrays:
            raise Skip("no floating array among the inputs")

        def inner(*values: Any) -> Any:
            return caller(entry, fn, _join(template, values), backend, zero, **o)

        return adapter.call(kind, inner, arrays)

    return call


def _found(exc: BaseException, kind: type[BaseException]) -> BaseException | None:
    return next((e for e in chain(exc) if isinstance(e, kind)), None)


def run_under(
    case: Case,
    caps: Any,
    caller: Caller,
    kind: str,
    run_plain: Callable[[Caller], list[str]],
) -> list[str]:
    """Run ``case`` as ``run_plain`` runs it, through ``caller`` made inside the
    transform ``kind``; return the notes or raise the
    :class:`~adswitch_conformance.attempt.Verdict` (:data:`SKIPPED` with the reason)."""
    from adswitch.errors import UnsupportedError

    if not composes(caps, kind):
        raise Verdict(SKIPPED, f"the engine declares no under={kind!r}")
    if case.raises is not None:
        raise Verdict(SKIPPED, f"expects {case.raises.__name__} (error cases run plain)")
    if case.family == "mutation":
        raise Verdict(SKIPPED, "in-place writes: the transform's inputs are no numpy views")
    if getattr(case, "sparse", None) is not None:  # (served under jit: one bare array)
        why, caller = sparse_under(case, kind, caller)
        if why is not None:
            raise Verdict(SKIPPED, why)
    try:
        return run_plain(under_caller(kind, caller))
    except Verdict as verdict:
        skip = _found(verdict, Skip)
        if skip is not None:
            raise Verdict(SKIPPED, str(skip)) from verdict
        rows = _found(verdict, RowMismatch)
        if rows is not None:
            raise Verdict(WRONG, f"under vmap: {rows}") from verdict
        refused = _found(verdict, UnsupportedError)
        if refused is not None and verdict.outcome != WRONG:
            # adswitch's clear refusal of what it cannot do inside the transform
            raise Verdict(UNSUPPORTED, f"under {kind}: {describe(refused)}") from verdict
        raise
