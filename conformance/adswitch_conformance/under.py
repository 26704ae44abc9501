"""The runner's ``--under`` mode: each case's adswitch call made inside one of the
engine's own transforms (``"jit"``: ``jax.jit``; ``"vmap"``: ``jax.vmap`` over a batch of
two stacked copies of the inputs, each row checked), with the plain mode's checks.

The case's floating numpy arrays (plain or inside ``Const``, in tuples, lists and dicts)
become the transform's inputs, tied arrays one input; everything else is closed over as
it is. A case that cannot run under the transform is **skipped**, with the reason: it
expects an error, an engine declares no such transform (``Capabilities.under``), an
argument is ``Duplicated`` (written in place) or a Python scalar (its gradient is a
Python float, which a traced call cannot give), arrays overlap without being the same,
the case writes in place (``mutation``: with traced inputs ``f`` has jax's rebinding
semantics, not numpy's views) or is a sparse Jacobian (its colouring runs on the host),
the case's own function branches in Python on a traced value, or a result is no jax
type (a string aux). A failure anywhere else (adswitch's own code) stays an ERROR.
A refusal decided on values inside the program (a linear-algebra rule's host check)
reaches the caller of ``jax.jit`` as jax's ``JaxRuntimeError`` carrying adswitch's
``UnsupportedError`` text: it is judged as that ``UnsupportedError``.
Results come back as numpy, as the plain call gives them; a ``vjp``'s pullback leaves
the transform (it is a jax pytree) and is called inside ``jax.jit`` / ``jax.vmap`` too.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from .attempt import WRONG, Verdict
from .capabilities import composes
from .case import Case
from .entries import Caller

__all__ = ["SKIPPED", "UNDER", "RowMismatch", "Skip", "run_under", "under_caller"]

UNDER = ("jit", "vmap")
SKIPPED = "skipped"
_UNTRACEABLE = (
    "ConcretizationTypeError",
    "TracerBoolConversionError",
    "TracerIntegerConversionError",
    "TracerArrayConversionError",
)
_REFUSAL = re.compile(
    r"UnsupportedError: (?:<<adswitch-linalg>>)?(.*?)(?:<<adswitch-linalg>>|$)", re.S
)


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
    if not const and isinstance(value, (float, complex, np.floating, np.complexfloating)):
        raise Skip("a Python or numpy scalar argument: its gradient is a scalar")
    return value


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
        first, second = np.asarray(leaf[0]), np.asarray(leaf[1])
        if not np.allclose(first, second, rtol=1e-6, atol=0.0, equal_nan=True):
            raise RowMismatch(f"rows of identical inputs differ: {first} vs {second}")
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
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        name = type(current).__name__
        text = str(current)
        if name in _UNTRACEABLE and _raised_in_case(current):
            return "the case's function needs a concrete value of a traced input"
        if isinstance(current, TypeError) and "not a valid JAX type" in text:
            return "a result (aux or output) is not a jax type"
        current = current.__cause__ or current.__context__
    return None


def _raised_in_case(exc: BaseException) -> bool:
    """Whether the last frame outside jax that led to ``exc`` is a case's own code."""
    last = ""
    tb = exc.__traceback__
    for frame in _frames(tb):
        name = frame.replace("\\", "/")
        if "/jax/" not in name and "/jaxlib/" not in name:
            last = name
    return "adswitch_conformance" in last


def _frames(tb: Any) -> Iterator[str]:
    while tb is not None:
        yield tb.tb_frame.f_code.co_filename
        tb = tb.tb_next


def under_caller(kind: str, caller: Caller) -> Caller:
    """A :data:`~adswitch_conformance.entries.Caller` making ``caller``'s call inside
    ``jax.jit`` (``kind="jit"``) or ``jax.vmap`` (``"vmap"``); raises :class:`Skip`.

    Example:
        >>> import adswitch as ad, numpy as np
        >>> from adswitch_conformance.entries import ad_caller
        >>> def f(x):
        ...     return ad.array_namespace(x).sum(x * x)
        >>> call = under_caller("jit", ad_caller)
        >>> call("gradient", f, (np.array([1.0, 3.0]),), "jax", True)[0].tolist()
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
        import jax

        arrays: list[Any] = []
        template = _split(args, arrays, False)
        if not arrays:
            raise Skip("no floating array among the inputs")
        wide = any(a.dtype.itemsize >= 8 for a in arrays)

        def inner(*values: Any) -> Any:
            return caller(entry, fn, _join(template, values), backend, zero, **o)

        def run() -> Any:
            if kind == "jit":
                return jax.jit(inner)(*arrays)
            return _rows(jax.vmap(inner)(*[np.stack([a, a]) for a in arrays]))

        return _host(_judged(run, wide), lambda p: _Pulled(p, kind, wide))

    return call


def _found(exc: BaseException, kind: type[BaseException]) -> BaseException | None:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, kind):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


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
    if not composes(caps, kind):
        raise Verdict(SKIPPED, f"the engine declares no under={kind!r}")
    if case.raises is not None:
        raise Verdict(SKIPPED, f"expects {case.raises.__name__} (error cases run plain)")
    if case.family == "mutation":
        raise Verdict(SKIPPED, "in-place writes: traced inputs have jax's semantics")
    if getattr(case, "sparse", None) is not None:
        raise Verdict(SKIPPED, "a sparse Jacobian: its colouring runs on the host")
    try:
        return run_plain(under_caller(kind, caller))
    except Verdict as verdict:
        skip = _found(verdict, Skip)
        if skip is not None:
            raise Verdict(SKIPPED, str(skip)) from verdict
        rows = _found(verdict, RowMismatch)
        if rows is not None:
            raise Verdict(WRONG, f"under vmap: {rows}") from verdict
        raise
