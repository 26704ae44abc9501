"""Operators called from code that an engine's compiler is tracing (``torch.compile``).

A compiler that traces Python bytecode (torch's dynamo) would otherwise step through
adswitch's own bookkeeping -- argument planning, the engine's guards, the backward pass
-- symbolically, where none of it is meant to run. Every public operator is wrapped by
:func:`outside_compilers`: it asks each engine's optional ``compiler_barrier()`` hook
(``adswitch.spec.Backend``) whether the caller is being compiled; if so the hook returns
the compiler's way to make a function opaque, and ``op`` is called through it, as one
opaque call of the compiler's (for torch, ``torch.compiler.disable``: one graph break
where the call is, as ``torch.autograd.grad`` itself would break the graph; the code
before and after it is still compiled). The differentiation inside then runs eagerly
on real values and gives the numbers a plain call gives. Outside any compiler the cost
is one call of the engines' hook (well under a microsecond).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

from adswitch.registry import default_registry

__all__ = ["outside_compilers"]

P = ParamSpec("P")
R = TypeVar("R")


def outside_compilers(op: Callable[P, R]) -> Callable[P, R]:
    """``op``, called as an opaque call when an engine's compiler traces its caller.

    Args:
        op: a public operator (``ad.gradient``...) or a prepared call's ``__call__``.

    Returns:
        A function with ``op``'s signature, name and docstring (``__wrapped__`` is ``op``).
    """

    @functools.wraps(op)
    def entry(*args: P.args, **kwargs: P.kwargs) -> R:
        # (kept flat, as in a plain function: a compiler that cannot resume after a step
        # it does not trace -- in a loop, or in a method called from here -- runs that
        # step as is, where it would see no compiler, and then traces everything below)
        opaque = default_registry().compiler_barrier()()
        if opaque is not None:
            run = _made.get(op)
            if run is None:
                run = _made[op] = opaque(op)
            return run(*args, **kwargs)  # type: ignore[no-any-return]
        return op(*args, **kwargs)

    return entry


# operator -> its opaque version (made once per process: the compiler's own wrapper)
_made: dict[Any, Any] = {}
