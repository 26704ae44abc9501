"""How an operation on tracers is recorded: primitives, and the verb that gives them rules.

``unary``/``binary``/``nary`` wrap a numpy function into a primitive: called with no
tracer it is the numpy function; called with tracers it records itself on the trace of
its highest-level argument -- arguments of lower levels (and numpy arrays, Python
scalars) are constants at that level -- computing its value by calling itself on the
unwrapped values, which records it on the lower levels in turn. ``defvjp`` fills the
table of gradient rules and ``defjvp`` that of tangent rules (the rules themselves are
in ``rules``). Numpy arrays an entry keeps for its rules are locked read-only until the
call ends. While a prepared call's first run is recorded for replay, each recorded
operation also tells the trace's ``recording`` its whole arguments (``replay/``).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from types import MappingProxyType
from typing import Any

import numpy as np

from .core import Rule, Trace, Tracer, escaped, raw, sync

__all__ = [
    "PRIMS", "Prim", "TangentRule", "binary", "defjvp", "defvjp", "defvjp_variadic", "nary",
    "unary",
]  # fmt: skip

TangentRule = Callable[..., Any]
"""A tangent rule ``jvp(tangents, ans, *args, **params)``: ``tangents`` holds one tangent
per argument (``None`` for a constant one); returns the output's tangent."""


class Prim:
    """A primitive: its name, its numpy implementation, one gradient rule per argument and
    its tangent rule (``jvp``, see :data:`TangentRule`).

    ``saves`` is False for operations whose rules never read a constant argument's value
    (only its shape): their numpy constants need no write protection.

    What a tape entry keeps for the rules (the rest is dropped at once, so the forward
    pass frees intermediates the backward pass never reads, as plain numpy would):
    ``keep_ans`` -- the rules read the output; ``keep_args`` -- ``"values"`` (the rules
    read the arguments), ``"shapes"`` (only their shapes: the entry holds shape tuples)
    or ``"none"`` (the entry holds ``None`` per argument). ``tests/engines/tape/test_tape_rules.py``
    checks all three flags against the rules.
    """

    __slots__ = ("fn", "impl", "jvp", "keep_ans", "keep_args", "name", "rules", "saves")

    def __init__(
        self,
        name: str,
        impl: Callable[..., Any],
        saves: bool,
        keep_ans: bool = True,
        keep_args: str = "values",
    ) -> None:
        self.name = name
        self.impl = impl
        self.saves = saves
        self.keep_ans = keep_ans
        self.keep_args = keep_args
        self.rules: list[Rule | None] = []
        self.jvp: TangentRule | None = None
        self.fn: Callable[..., Any] = impl


def _shape(v: Any) -> tuple[int, ...]:
    """The shape an entry keeps of an argument (``()`` for a Python scalar)."""
    shape: tuple[int, ...] = getattr(v, "shape", ())
    return shape


def _kept(p: Prim, vals: tuple[Any, ...]) -> tuple[Any, ...]:
    """The arguments a tape entry of ``p`` keeps (see :class:`Prim`)."""
    if p.keep_args == "values":
        return vals
    if p.keep_args == "shapes":
        return tuple(_shape(v) for v in vals)
    return (None,) * len(vals)


def _record(p: Prim, args: tuple[Any, ...], kw: dict[str, Any]) -> Tracer:
    """Record ``p(*args, **kw)`` with tracers among ``args`` (the general path)."""
    top: Trace | None = None
    for a in args:
        if type(a) is Tracer:
            if a._base is not None:
                sync(a)
            if top is None or a._trace.level > top.level:
                top = a._trace
    assert top is not None
    if not top.live:
        raise escaped(p.name)
    vals = list(args)
    parents: list[int | None] = []
    nested = False
    for i, a in enumerate(args):
        if type(a) is Tracer and a._trace is top:
            vals[i] = v = a._value
            parents.append(a._idx)
            nested = nested or type(v) is Tracer
        else:
            parents.append(None)
            if type(a) is Tracer:
                if a._trace.level == 0:  # a fresh buffer of constants: use its value
                    vals[i] = a = raw(a)
                else:
                    nested = True
            if p.saves and type(a) is np.ndarray and id(a) not in top.locked:
                vals[i] = top.guard(a, f"a constant argument of `{p.name}`")
    ans = p.fn(*vals, **kw) if nested else p.impl(*vals, **kw)
    if all(j is None for j in parents):
        return Tracer(ans, top, None)
    tape = top.tape
    kept = _kept(p, tuple(vals))
    tape.append((p, kept, ans if p.keep_ans else None, kw or None, tuple(parents)))
    if top.recording is not None:
        top.recording.op(tuple(vals), kw or None, ans)
    return Tracer(ans, top, len(tape) - 1)


def unary(
    name: str,
    impl: Callable[..., Any],
    saves: bool = True,
    params: bool = False,
    keep_x: bool = True,
    keep_ans: bool = True,
) -> Callable[..., Any]:
    """A one-array primitive: ``f(x)``, or ``f(x, **params)`` (axis, shape...: never
    arrays) when ``params`` -- two variants, so elementwise calls pass no dict around.
    ``keep_x``/``keep_ans``: whether its rules read the argument / the output."""
    p = Prim(name, impl, saves, keep_ans, "values" if keep_x else "none")

    def prim(x: Any, /) -> Any:
        if type(x) is not Tracer:
            return impl(x)
        if x._base is not None:
            sync(x)
        trace = x._trace
        if not trace.live:
            raise escaped(name)
        v = x._value
        ans = prim(v) if type(v) is Tracer else impl(v)
        idx = x._idx
        if idx is None:
            return Tracer(ans, trace, None)
        tape = trace.tape
        tape.append((p, (v,) if keep_x else _NONE1, ans if keep_ans else None, None, idx))
        if trace.recording is not None:
            trace.recording.op((v,), None, ans)
        return Tracer(ans, trace, len(tape) - 1)

    def prim_params(x: Any, /, **kw: Any) -> Any:
        if type(x) is not Tracer:
            return impl(x, **kw)
        if x._base is not None:
            sync(x)
        trace = x._trace
        if not trace.live:
            raise escaped(name)
        v = x._value
        ans = prim_params(v, **kw) if type(v) is Tracer else impl(v, **kw)
        idx = x._idx
        if idx is None:
            return Tracer(ans, trace, None)
        tape = trace.tape
        tape.append((p, (v,) if keep_x else _NONE1, ans if keep_ans else None, kw, idx))
        if trace.recording is not None:
            trace.recording.op((v,), kw, ans)
        return Tracer(ans, trace, len(tape) - 1)

    return _register(p, prim_params if params else prim)


_NONE1 = (None,)


def binary(
    name: str,
    impl: Callable[..., Any],
    saves: bool = True,
    keep_ans: bool = True,
    keep_args: str = "values",
) -> Callable[..., Any]:
    """A two-array primitive ``f(x, y)``: the hot path of arithmetic, kept lean.
    ``keep_ans``/``keep_args``: what its rules read (see :class:`Prim`)."""
    p = Prim(name, impl, saves, keep_ans, keep_args)
    by_value, shapes = keep_args == "values", keep_args == "shapes"
    role = f"a constant argument of `{name}`"

    def constant_traced(x: Any, y: Tracer) -> Any:
        """constant (+) traced (``W @ x``, ``1.0 - t``, reflected operators): the mirror of
        the traced (+) constant path below."""
        if y._base is not None:
            sync(y)
        trace = y._trace
        if not trace.live:
            raise escaped(name)
        if saves and type(x) is np.ndarray and id(x) not in trace.locked:
            x = trace.guard(x, role)  # (or a private copy)
        yv = y._value
        ans = prim(x, yv) if type(yv) is Tracer else impl(x, yv)
        idx = y._idx
        if idx is None:
            return Tracer(ans, trace, None)
        tape = trace.tape
        tape.append(
            (
                p,
                (x, yv) if by_value else (_shape(x), yv.shape) if shapes else (None, None),
                ans if keep_ans else None,
                None,
                (None, idx),
            )
        )
        if trace.recording is not None:
            trace.recording.op((x, yv), None, ans)
        return Tracer(ans, trace, len(tape) - 1)

    def prim(x: Any, y: Any, /) -> Any:
        if type(x) is not Tracer:
            if type(y) is not Tracer:
                return impl(x, y)
            return constant_traced(x, y)
        if x._base is not None:
            sync(x)
        trace = x._trace
        if not trace.live:
            raise escaped(name)
        xv = x._value
        if type(y) is Tracer:  # traced (+) traced, the same level: one straight path
            if y._trace is not trace or y._base is not None:
                return _record(p, (x, y), {})
            yv = y._value
            nested = type(xv) is Tracer or type(yv) is Tracer
            ans = prim(xv, yv) if nested else impl(xv, yv)
            xi, yi = x._idx, y._idx
            if xi is None and yi is None:
                return Tracer(ans, trace, None)
            tape = trace.tape
            tape.append(
                (
                    p,
                    (xv, yv) if by_value else (xv.shape, yv.shape) if shapes else (None, None),
                    ans if keep_ans else None,
                    None,
                    (xi, yi),
                )
            )
            if trace.recording is not None:
                trace.recording.op((xv, yv), None, ans)
            return Tracer(ans, trace, len(tape) - 1)
        # traced (+) constant: the commonest case (x * 2.0, x + b, x @ W...)
        if saves and type(y) is np.ndarray and id(y) not in trace.locked:
            y = trace.guard(y, role)  # (or a private copy)
        ans = prim(xv, y) if type(xv) is Tracer else impl(xv, y)
        idx = x._idx
        if idx is None:
            return Tracer(ans, trace, None)
        tape = trace.tape
        tape.append(
            (
                p,
                (xv, y) if by_value else (xv.shape, _shape(y)) if shapes else (None, None),
                ans if keep_ans else None,
                None,
                idx,
            )
        )
        if trace.recording is not None:
            trace.recording.op((xv, y), None, ans)
        return Tracer(ans, trace, len(tape) - 1)

    return _register(p, prim)


def nary(
    name: str,
    impl: Callable[..., Any],
    saves: bool = True,
    keep_ans: bool = True,
    keep_args: str = "values",
) -> Callable[..., Any]:
    """A primitive of any number of array arguments ``f(*arrays, **params)``.
    ``keep_ans``/``keep_args``: what its rules read (see :class:`Prim`)."""
    p = Prim(name, impl, saves, keep_ans, keep_args)

    def prim(*args: Any, **kw: Any) -> Any:
        for a in args:
            if type(a) is Tracer:
                return _record(p, args, kw)
        return impl(*args, **kw)

    return _register(p, prim)


_PRIMS: dict[Callable[..., Any], Prim] = {}
PRIMS = MappingProxyType(_PRIMS)
"""Every primitive, by its function (read-only: ``tests/engines/tape/test_tape_rules.py``
walks it)."""


def _register(p: Prim, fn: Callable[..., Any]) -> Callable[..., Any]:
    fn.__name__ = fn.__qualname__ = p.name
    fn.__doc__ = f"``{p.name}``, recorded on the tape when an argument is traced."
    p.fn = fn
    _PRIMS[fn] = p
    return fn


def defvjp(prim: Callable[..., Any], *rules: Rule | None) -> None:
    """Register the gradient rules of ``prim``, one per positional argument
    (``None``: not differentiable). Each rule is ``rule(g, ans, *args, **params)`` and
    must be written with primitives (not raw numpy) so that it is recorded when an
    enclosing differentiation is active."""
    _PRIMS[prim].rules = list(rules)


def defjvp(prim: Callable[..., Any], rule: TangentRule) -> None:
    """Register the tangent rule of ``prim`` (see :data:`TangentRule`); like gradient
    rules it is written with primitives, and returns a tangent of exactly
    ``batch + ans.shape`` (see ``core.forward``)."""
    _PRIMS[prim].jvp = rule


class _Variadic:
    """The rules of a primitive of any number of arrays: ``rule(k, g, ans, *args)``."""

    __slots__ = ("rule",)

    def __init__(self, rule: Rule) -> None:
        self.rule = rule

    def __len__(self) -> int:
        return sys.maxsize

    def __getitem__(self, k: int) -> Rule:
        return functools.partial(self.rule, k)


def defvjp_variadic(prim: Callable[..., Any], rule: Rule) -> None:
    """Register one rule ``rule(k, g, ans, *args, **params)`` for every argument ``k``."""
    _PRIMS[prim].rules = _Variadic(rule)  # type: ignore[assignment]
