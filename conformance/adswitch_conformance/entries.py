"""How a case calls adswitch: the injectable :data:`Caller` and the call sequence of each
entry (a ``vjp`` case also calls its pullback, once per cotangent)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .case import Case

__all__ = ["Caller", "Got", "ad_caller", "options_for", "invoke"]

Caller = Callable[..., Any]
"""``caller(entry, fn, args, backend, zero, **options)`` -> what the ``adswitch``
function named ``entry`` returns for ``fn`` and ``args``. ``options`` holds only the
keywords the entry takes besides ``backend`` and ``zero``: ``has_aux`` (``vjp``, ``jvp``,
``jacobian``), ``mode`` (``jacobian``), ``tangents`` (``jvp``, ``hvp``; ``args`` are then
the primals). Gradient entries get no options, so a caller written for them alone keeps
working. Injectable so that the runner's own logic can be tested without an engine."""

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
    return {name: values[name] for name in _OPTIONS.get(case.entry, ())}


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
        return ad.hessian(fn, *args, backend=backend)
    if entry == "hvp":
        return ad.hvp(fn, args, options["tangents"], backend=backend, zero=zero)
    if entry == "derivative":
        return ad.derivative(fn, args[0], *args[1:], backend=backend)
    raise ValueError(f"unknown entry {entry!r}")


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
