"""What a plain function reads besides its arguments: the globals its code names (not its
attribute names, which share ``co_names`` with them), and all of its reads at once.

No jax import here.
"""

from __future__ import annotations

import dis
import types
from typing import Any

__all__ = ["MISSING", "global_names", "known_names", "reads_now"]

MISSING: Any = object()  # a global not defined (a builtin, or not yet assigned)


_GLOBAL_OPS = frozenset(("LOAD_GLOBAL", "STORE_GLOBAL", "DELETE_GLOBAL", "LOAD_NAME"))
_names_of: dict[int, tuple[types.CodeType, tuple[str, ...]]] = {}
_NAMES_MAX = 4096


def global_names(code: types.CodeType) -> tuple[str, ...]:
    """The names ``code`` (and the code nested in it: comprehensions, lambdas) reads as
    globals -- not its attribute names, which share ``co_names`` with them.

    Example:
        >>> global_names((lambda x: np.sum(x.T)).__code__)
        ('np',)
    """
    found = _names_of.get(id(code))
    if found is not None and found[0] is code:
        return found[1]
    names: dict[str, None] = {}
    pending = [code]
    while pending:
        current = pending.pop()
        for instruction in dis.get_instructions(current):
            if instruction.opname in _GLOBAL_OPS:
                names[str(instruction.argval)] = None
        pending.extend(c for c in current.co_consts if isinstance(c, types.CodeType))
    result = tuple(names)
    if len(_names_of) >= _NAMES_MAX:
        _names_of.clear()
    _names_of[id(code)] = (code, result)  # the code is held: its id stays its own
    return result


def known_names(code: types.CodeType) -> tuple[str, ...]:
    """:func:`global_names`, from the cache when ``code`` was seen before (the hot path)."""
    found = _names_of.get(id(code))
    return found[1] if found is not None and found[0] is code else global_names(code)


def reads_now(fn: types.FunctionType) -> list[Any]:
    """What ``fn`` reads now, in the order :attr:`adswitch_jax.closures.captures.Walk.reads` records
    it: its code, defaults, closure cells' contents, the globals it names (``ValueError``
    for an empty closure cell)."""
    code = fn.__code__
    reads: list[Any] = [code, fn.__defaults__, fn.__kwdefaults__]
    closure = fn.__closure__
    if closure:
        reads += [cell.cell_contents for cell in closure]  # ValueError: an empty cell
    get = fn.__globals__.get
    reads += [get(name, MISSING) for name in known_names(code)]
    return reads
