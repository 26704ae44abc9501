"""How a case calls adswitch: the injectable :data:`Caller` (and :data:`Preparer`, its
prepared form) and the call sequence of each entry (a ``vjp`` case also calls its
pullback, once per cotangent)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .case import Case
from .checks_sparse import sparse_options

__all__ = [
    "Caller",
    "Preparer",
    "Prepared",
    "Got",
    "ad_caller",
    "ad_preparer",
    "prepared_caller",
    "options_for",
    "invoke",
]

Caller = Callable[..., Any]
"""``caller(entry, fn, args, backend, zero, **options)`` -> what the ``adswitch``
function named ``entry`` returns for ``fn`` and ``args``. ``options`` holds only the
keywords the entry takes besides ``backend`` and ``zero``: ``has_aux`` (``vjp``, ``jvp``,
``jacobian``), ``mode`` (``jacobian``), ``tangents`` (``jvp``, ``hvp``; ``args`` are then
the primals). Gradient entries get no options, so a caller written for them alone keeps
working. Injectable so that the runner's own logic can be tested without an engine."""

Prepared = Callable[..., Any]
"""``prepared(args, **options)`` -> what the prepared entry returns for ``args`` (the
primals for ``jvp``/``hvp``, whose ``tangents`` come in ``options`` as for a
:data:`Caller`)."""

Preparer = Callable[..., Prepared]
"""``preparer(entry, fn, example_args, backend, zero, **options)`` -> a :data:`Prepared`
call: ``ad.prepare`` of the entry at the example (``options`` as for a :data:`Caller`; for
``jvp``/``hvp`` their ``tangents`` are the example's). Injectable like :data:`Caller`."""

_OPTIONS: dict[str, tuple[str, ...]] = {
    "vjp": ("has_aux",),
    "jvp": ("tangents", "has_aux"),
    "jacobian": ("mode", "has_aux"),
    "hvp": ("tangents",),
}


def options_for(case: Case, seeds: tuple[Any, ...]) -> dict[str, Any]:
    """The keyword options ``case``'s entry is called with.

    Example:
        >>> from adswitch_conformance.case import Case
        >>> options_for(Case("o.j", "operators", "a jacobian", abs, tuple, entry="jacobian",
        ...                  mode="forward"), ())
        {'mode': 'forward', 'has_aux': False}
    """
    values = {"has_aux": case.has_aux, "mode": case.mode, "tangents": seeds}
    options = {name: values[name] for name in _OPTIONS.get(case.entry, ())}
    return {**options, **sparse_options(case)}  # (sparsity=, check=: sparse cases only)


def ad_caller(
    entry: str,
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    backend: str,
    zero: bool,
    **options: Any,
) -> Any:
    """The real caller: ``adswitch``'s own functions."""
    import adswitch as ad

    if entry == "gradient":
        return ad.gradient(fn, *args, backend=backend, zero=zero)
    if entry == "withgradient":
        return ad.withgradient(fn, *args, backend=backend, zero=zero)
    if entry == "vjp":
        return ad.vjp(fn, *args, backend=backend, zero=zero, **options)
    if entry == "jvp":
        return ad.jvp(fn, args, options.pop("tangents"), backend=backend, **options)
    if entry == "jacobian":
        return ad.jacobian(fn, *args, backend=backend, **options)
    if entry == "hessian":
        return ad.hessian(fn, *args, backend=backend, **options)  # (sparse cases' options)
    if entry == "hvp":
        return ad.hvp(fn, args, options["tangents"], backend=backend, zero=zero)
    if entry == "derivative":
        return ad.derivative(fn, args[0], *args[1:], backend=backend)
    raise ValueError(f"unknown entry {entry!r}")


def _operator(entry: str) -> Any:
    import adswitch as ad

    operators = {
        "gradient": ad.gradient,
        "withgradient": ad.withgradient,
        "vjp": ad.vjp,
        "jvp": ad.jvp,
        "jacobian": ad.jacobian,
        "hessian": ad.hessian,
        "hvp": ad.hvp,
        "derivative": ad.derivative,
    }
    if entry not in operators:
        raise ValueError(f"unknown entry {entry!r}")
    return operators[entry]


# The keywords each entry's operator takes (``ad.prepare`` checks them like the operator).
_KEYWORDS: dict[str, tuple[str, ...]] = {
    "gradient": ("zero",),
    "withgradient": ("zero",),
    "vjp": ("zero", "has_aux"),
    "jvp": ("has_aux",),
    "jacobian": ("mode", "has_aux"),
    "hvp": ("zero",),
}


def ad_preparer(
    entry: str,
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    backend: str,
    zero: bool,
    **options: Any,
) -> Prepared:
    """The real preparer: ``ad.prepare`` of the entry's operator at ``args``.

    Example:
        >>> import adswitch as ad, numpy as np
        >>> def f(x):
        ...     return ad.array_namespace(x).sum(x * x)
        >>> prepared = ad_preparer("gradient", f, (np.ones(2),), "tape", True)
        >>> prepared((np.array([1.0, 3.0]),))[0].tolist()
        [2.0, 6.0]
    """
    import adswitch as ad

    values = {"zero": zero, **options}
    names = (*_KEYWORDS.get(entry, ()), "sparsity", "check")  # (the last two: sparse cases)
    keywords = {name: values[name] for name in names if name in values}
    split = entry in ("jvp", "hvp")
    example = (args, options["tangents"]) if split else args
    prep = ad.prepare(_operator(entry), fn, *example, backend=backend, **keywords)

    def call(call_args: tuple[Any, ...], **call_options: Any) -> Any:
        return prep(call_args, call_options["tangents"]) if split else prep(*call_args)

    return call


def prepared_caller(prepared: Prepared) -> Caller:
    """A :data:`Caller` that runs ``prepared`` (whatever entry, function and engine it is
    asked for: those were fixed when it was prepared), so :func:`invoke` drives it."""

    def call(
        entry: str,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        backend: str,
        zero: bool,
        **options: Any,
    ) -> Any:
        return prepared(args, **options)

    return call


@dataclass
class Got:
    """What one run of a case's entry gave.

    Attributes:
        result: the entry's return value (for ``vjp``: ``(y, pullback[, aux])``).
        pulled: ``vjp`` only: what the pullback returned, per cotangent.
    """

    result: Any
    pulled: list[Any] = field(default_factory=list)

    @property
    def pullback(self) -> Any:
        return self.result[1]


def invoke(
    case: Case, args: tuple[Any, ...], backend: str, caller: Caller, seeds: tuple[Any, ...]
) -> Got:
    """Run ``case``'s entry on ``args`` (``repeat_same`` times), then a ``vjp``'s pullback
    on each cotangent in ``seeds``. Exceptions propagate: the runner classifies them."""
    options = options_for(case, seeds)
    result = None
    for _ in range(case.repeat_same):
        result = caller(case.entry, case.fn, args, backend, case.zero, **options)
    got = Got(result)
    if case.entry == "vjp":
        if not isinstance(result, tuple) or len(result) != (3 if case.has_aux else 2):
            return got  # the check reports the malformed result
        got.pulled = [got.pullback(u) for u in seeds]
    return got
