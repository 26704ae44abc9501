"""The primitives' keep flags, checked against their gradient rules.

A tape entry keeps only what its primitive's flags say the rules read -- ``keep_ans``,
``keep_args`` (``"values"``, ``"shapes"``, ``"none"``; ``keep_x`` of ``unary``) -- and
``saves`` says whether constant arguments are locked against writes by ``f``. The flags
are set by hand beside each primitive (``rules/primitives.py``). Here every primitive
is recorded on a real trace (at top level and inside an enclosing call; with all its
array arguments traced, and with only the differentiated one), and each rule is run on
the entry the tape holds:

* a value the flags drop is a sentinel that raises on any use: a rule reading it fails;
* the rule's result must match central differences of the primitive's numpy code (an
  oracle independent of the rules), so a rule that misreads what it is handed -- a
  shape tuple where it expects a value -- fails too;
* with ``saves=False`` the constant arguments are overwritten after recording, as a
  write by ``f`` into an unlocked array would be: the rules must not notice.

The soft check reports (a warning, not a failure) flags that keep what no rule reads.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import adswitch_tape.namespace
import numpy as np
import pytest
from adswitch_tape import recording
from adswitch_tape.array.tracer import Tracer, raw
from adswitch_tape.core import Trace
from adswitch_tape.recording import PRIMS, Prim, defvjp, unary
from adswitch_tape.rules import primitives as P

from tests.support.tape_linalg_examples import linalg_examples


class ReadDropped(Exception):
    """A rule used a value the tape dropped (deliberately not an AttributeError or a
    TypeError: the rules' helpers and the sweep catch those)."""


class Dropped:
    """Stands for a value the tape does not keep: any use raises :class:`ReadDropped`."""

    __slots__ = ("_what",)

    def __init__(self, what: str) -> None:
        object.__setattr__(self, "_what", what)

    def __getattribute__(self, name: str) -> Any:  # also isinstance's look at __class__
        raise ReadDropped(f"{object.__getattribute__(self, '_what')} (.{name})")

    def __repr__(self) -> str:
        return f"<dropped {object.__getattribute__(self, '_what')}>"


def _refuse(op: str) -> Callable[..., Any]:
    def refuse(self: Dropped, *args: Any, **kwargs: Any) -> Any:
        raise ReadDropped(f"{object.__getattribute__(self, '_what')} ({op})")

    return refuse


_OPERATORS = (
    "add", "radd", "sub", "rsub", "mul", "rmul", "truediv", "rtruediv", "pow", "rpow", "matmul",
    "rmatmul", "mod", "rmod", "neg", "pos", "abs", "eq", "ne", "lt", "le", "gt", "ge", "len",
    "iter", "getitem", "bool", "float", "int", "index", "hash", "array", "array_ufunc",
    "array_function", "array_namespace",
)  # fmt: skip
for _op in _OPERATORS:
    setattr(Dropped, f"__{_op}__", _refuse(_op))


@dataclass
class Case:
    """One call ``fn(*args, **kw)`` of a primitive; its float arrays are differentiated."""

    fn: Callable[..., Any]
    args: tuple[Any, ...]
    kw: dict[str, Any] = field(default_factory=dict)
    eps: float = 1e-6
    rtol: float = 1e-5


_rng = np.random.default_rng(0)


def u(lo: float, hi: float, *shape: int) -> np.ndarray:
    return _rng.uniform(lo, hi, shape)


def _cases() -> Iterator[Case]:
    """Example calls of every primitive, away from non-smooth points."""
    domain = {"asin": (-0.8, 0.8), "acos": (-0.8, 0.8), "atanh": (-0.8, 0.8), "acosh": (1.5, 3)}
    for fn in (
        P.negative, P.positive, P.abs, P.exp, P.expm1, P.log, P.log1p, P.log2, P.log10, P.sqrt,
        P.square, P.sin, P.cos, P.tan, P.sinh, P.cosh, P.tanh, P.asin, P.acos, P.atan, P.asinh,
        P.acosh, P.atanh,
    ):  # fmt: skip
        yield Case(fn, (u(*domain.get(PRIMS[fn].name, (0.2, 1.5)), 2, 3),))
    for fn in (
        P.add, P.subtract, P.multiply, P.divide, P.pow, P.maximum, P.minimum, P.atan2, P.hypot,
        P.logaddexp,
    ):  # fmt: skip
        yield Case(fn, (u(0.2, 1.5, 2, 3), u(0.2, 1.5, 2, 3)))
        yield Case(fn, (u(0.2, 1.5, 2, 3), u(0.2, 1.5, 3)))  # broadcast
        yield Case(fn, (u(0.2, 1.5, 3), 1.7))  # a Python scalar constant
        yield Case(fn, (1.7, u(0.2, 1.5, 2, 3)))
    yield Case(P.pow, (u(0.2, 1.5, 3), 2))
    yield Case(P.pow, (u(0.2, 1.5, 3), 0))
    yield Case(P.copysign, (u(0.2, 1.5, 2, 3), np.array([-1.0, 2.0, -0.5])))
    yield Case(P.remainder, (np.array([0.3, 2.1, 4.2]), np.array([1.3, 1.7, 1.9])))
    for a, b in [
        ((2, 3), (3, 4)), ((3,), (3, 4)), ((2, 3), (3,)), ((3,), (3,)), ((2, 2, 3), (3, 4)),
    ]:  # fmt: skip
        yield Case(P.matmul, (u(-1, 1, *a), u(-1, 1, *b)))
    for a, b in [((2, 3), (4, 3)), ((2, 1), (4, 1)), ((2, 2, 3), (4, 3))]:
        yield Case(P.matmul_nt, (u(-1, 1, *a), u(-1, 1, *b)))
    for a, b in [((3, 2), (3, 4)), ((1, 2), (1, 4))]:
        yield Case(P.matmul_tn, (u(-1, 1, *a), u(-1, 1, *b)))
    yield Case(P.tanh_grad, (u(-1, 1, 2, 3), u(-0.9, 0.9, 2, 3)))
    yield Case(P.where, (u(-1, 1, 2, 3) > 0, u(-1, 1, 2, 3), u(-1, 1, 3)))
    for axis, keepdims in [(None, False), ((1,), False), ((0,), True), ((0, 1), False)]:
        for name in ("sum", "prod", "max", "min"):
            yield Case(getattr(P, name), (u(0.2, 1.5, 2, 3),), {"axis": axis, "keepdims": keepdims})
    yield Case(P.prod, (np.array([[0.5, 0.0, 2.0], [1.5, 0.7, 1.1]]),), {"axis": (1,)})
    for axis, initial in [(0, False), (1, True)]:
        yield Case(P.cumulative_sum, (u(-1, 1, 2, 3),), {"axis": axis, "include_initial": initial})
    yield Case(P.reshape, (u(-1, 1, 2, 3),), {"shape": (3, 2)})
    yield Case(P.permute_dims, (u(-1, 1, 2, 3, 4),), {"axes": (2, 0, 1)})
    yield Case(P.matrix_transpose, (u(-1, 1, 2, 3),))
    yield Case(P.broadcast_to, (u(-1, 1, 2, 1),), {"shape": (2, 3)})
    yield Case(P.flip, (u(-1, 1, 2, 3),), {"axis": (1,)})
    yield Case(P.flip, (u(-1, 1, 2, 3),))
    yield Case(P.astype, (u(-1, 1, 2, 3),), {"dtype": np.float32}, eps=1e-3, rtol=1e-3)
    for key in [(slice(0, 2), 1), (np.array([0, 2, 0]),)]:
        yield Case(P.getitem, (u(-1, 1, 3, 3),), {"key": key})
    yield Case(P.scatter, (u(-1, 1, 2),), {"key": (slice(0, 2), 1), "shape": (3, 3)})
    yield Case(P.scatter, (u(-1, 1, 3),), {"key": (np.array([0, 2, 0]),), "shape": (3,)})
    yield Case(P.index_update, (u(-1, 1, 3, 3), u(-1, 1, 2)), {"key": (slice(0, 2), 1)})
    yield Case(P.index_update, (u(-1, 1, 3, 3), u(-1, 1, 3)), {"key": (np.array([0, 2]),)})
    for axis in (0, 1, None):
        yield Case(P.concat, (u(-1, 1, 2, 3), u(-1, 1, 2, 3)), {"axis": axis})
    yield Case(P.stack, (u(-1, 1, 2, 3), u(-1, 1, 2, 3)), {"axis": 1})
    for fn, args, kw in linalg_examples():  # the factorizations and solvers
        yield Case(fn, args, kw)
    # ad.checkpoint's one operation, around a small function of two arguments
    from adswitch_tape import checkpoint as C

    def body(values: list[Any]) -> list[Any]:
        return [adswitch_tape.namespace.sin(values[0]) * values[1]]

    yield Case(C._checkpoint, (u(-1, 1, 3), u(-1, 1, 3)), {"node": C._Node(body, [True, True])})


CASES = list(_cases())


def _name(case: Case) -> str:
    return PRIMS[case.fn].name


def _case_id(case: Case) -> str:
    args = ",".join(str(a.shape) if isinstance(a, np.ndarray) else repr(a) for a in case.args)
    return f"{_name(case)}({args}){'-' + '-'.join(case.kw) if case.kw else ''}"


_ORACLES: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}


def _oracle(case: Case, k: int) -> tuple[np.ndarray, np.ndarray]:
    """A cotangent ``g`` of the output, and central differences of ``sum(g * fn(*args))``
    in ``args[k]``, of the primitive's numpy code only."""
    key = (id(case), k)
    if key not in _ORACLES:
        impl = PRIMS[case.fn].impl
        g = np.random.default_rng(k).standard_normal(np.shape(impl(*case.args, **case.kw)))
        x = case.args[k]
        grad = np.zeros(x.shape)
        for index in np.ndindex(x.shape):
            sides = []
            for step in (case.eps, -case.eps):
                moved = list(case.args)
                moved[k] = x.copy()
                moved[k][index] += step
                sides.append(float(np.sum(g * impl(*moved, **case.kw))))
            grad[index] = (sides[0] - sides[1]) / (2 * case.eps)
        _ORACLES[key] = (g, grad)
    return _ORACLES[key]


def _slot(trace: Trace) -> int:
    trace.tape.append(None)
    return len(trace.tape) - 1


def _kept(p: Prim, entry: Any, relax: str | None) -> tuple[Any, tuple[Any, ...]]:
    """The entry's ``(ans, args)`` with what the flags drop -- and what ``relax``, a soft
    check's candidate, would drop too -- as sentinels."""
    _, args, ans, _, _ = entry
    assert p.keep_ans or ans is None, f"`{p.name}` keeps its output although keep_ans=False"
    if not p.keep_ans or relax == "ans":
        ans = Dropped(f"the output of `{p.name}`")
    if p.keep_args == "none" or relax == "args:none":
        args = tuple(Dropped(f"argument {i} of `{p.name}`") for i in range(len(args)))
    elif relax == "args:shapes":
        args = tuple(getattr(a, "shape", ()) for a in args)
    return ans, args


def check(case: Case, k: int, traced: list[int], nested: bool, relax: str | None) -> None:
    """Record ``case`` with the ``traced`` arguments traced (``nested``: their values and
    ``g`` traced by an enclosing call too), run rule ``k`` on the entry the tape holds and
    compare with finite differences. Raises ReadDropped, or AssertionError."""
    p = PRIMS[case.fn]
    args = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in case.args]
    outer, inner = Trace(), Trace()
    try:
        leaves = list(args)
        for i in traced:
            value = Tracer(args[i], outer, _slot(outer)) if nested else args[i]
            leaves[i] = Tracer(value, inner, _slot(inner))
        out = case.fn(*leaves, **case.kw)
        assert type(out) is Tracer and out._idx == len(inner.tape) - 1
        entry = inner.tape[-1]
        for i, a in enumerate(args):  # the constants: locked exactly when ``saves``
            if i in traced or not isinstance(a, np.ndarray):
                continue
            assert a.flags.writeable is not p.saves, f"constant {i}: saves={p.saves}"
            if not p.saves or relax == "saves":  # f writes into it
                a.setflags(write=True)
                a[...] = ~a if a.dtype == bool else np.nan
        g, expected = _oracle(case, k)
        if nested:
            g = Tracer(g, outer, _slot(outer))
        ans, kept = _kept(p, entry, relax)
        kw, rule = entry[3], p.rules[k]
        assert rule is not None
        got = raw(rule(g, ans, *kept, **kw) if kw else rule(g, ans, *kept))
        assert np.shape(got) == case.args[k].shape, f"a gradient of shape {np.shape(got)}"
        np.testing.assert_allclose(got, expected, rtol=case.rtol, atol=1e-8)
    finally:
        inner.close()
        outer.close()


def runs(case: Case) -> Iterator[tuple[int, list[int], bool]]:
    """Every ``(rule k, traced arguments, nested)`` a case is checked with."""
    wrt = [i for i, a in enumerate(case.args) if isinstance(a, np.ndarray) and a.dtype.kind == "f"]
    for nested in (False, True):
        for k in wrt:
            yield k, wrt, nested
            if len(wrt) > 1:
                yield k, [k], nested


def check_case(case: Case) -> None:
    """Every run of ``case`` with the flags as they are; fails saying what was read."""
    for k, traced, nested in runs(case):
        where = f"rule {k}, traced {traced}, {'nested' if nested else 'top level'}"
        try:
            check(case, k, traced, nested, None)
        except ReadDropped as exc:
            pytest.fail(
                f"`{_name(case)}` ({where}) reads {exc}, which the primitive's flags drop. "
                "Fix: keep it (the flags in rules/primitives.py) or write the rule without it."
            )
        except AssertionError as exc:
            raise AssertionError(f"`{_name(case)}` ({where}): {exc}") from None


@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_each_rule_reads_only_what_the_flags_keep(case: Case) -> None:
    check_case(case)


def test_every_primitive_has_a_case() -> None:
    missing = {p.name for p in PRIMS.values()} - {_name(c) for c in CASES}
    assert not missing, f"primitives without an example call in CASES: {sorted(missing)}"


# A soft check's candidate: what it would drop, and whether the flags keep it now.
CANDIDATES: dict[str, Callable[[Prim], bool]] = {
    "ans": lambda p: p.keep_ans,
    "args:none": lambda p: p.keep_args != "none",
    "args:shapes": lambda p: p.keep_args == "values",
    "saves": lambda p: p.saves,
}


def _passes(case: Case, relax: str) -> bool:
    try:
        with np.errstate(all="ignore"):  # (NaN constants, shape tuples read as values)
            for k, traced, nested in runs(case):
                check(case, k, traced, nested, relax)
    except Exception:  # a read of what it would drop, a wrong gradient, a rule that fails
        return False
    return True


def over_kept(cases: list[Case]) -> dict[str, set[str]]:
    """Per primitive, the candidates its rules pass in all its cases: what it keeps and
    no rule reads. ``saves`` counts only where some case has a constant array."""
    found: dict[str, set[str]] = {}
    for p in {PRIMS[c.fn] for c in cases}:
        mine = [c for c in cases if PRIMS[c.fn] is p]
        constants = any(len(t) < len(c.args) for c in mine for _, t, _ in runs(c))
        for relax, keeps in CANDIDATES.items():
            if relax == "saves" and not constants:
                continue
            if keeps(p) and all(_passes(c, relax) for c in mine):
                found.setdefault(p.name, set()).add(relax)
        if "args:none" in found.get(p.name, set()):
            found[p.name].discard("args:shapes")
    return found


def test_soft_check_flags_that_keep_what_no_rule_reads() -> None:
    found = over_kept(CASES)
    if found:
        warnings.warn(
            "tape primitives keep values their rules never read (drop them with the flags "
            f"in rules/primitives.py): {dict(sorted(found.items()))}",
            stacklevel=1,
        )


@pytest.fixture
def seeded() -> Iterator[Callable[..., Any]]:
    """A throwaway primitive, ``sin``, unregistered after the test."""
    made: list[Callable[..., Any]] = []

    def make(**flags: Any) -> Callable[..., Any]:
        made.append(unary("seeded_sin", np.sin, **flags))
        return made[-1]

    yield make
    for fn in made:
        del recording._PRIMS[fn]


def test_the_check_catches_a_rule_reading_what_the_flags_drop(seeded: Any) -> None:
    fn = seeded(keep_x=False)  # the mistake: sin's rule reads x
    defvjp(fn, lambda g, ans, x: g * P.cos(x))
    with pytest.raises(pytest.fail.Exception, match="reads argument 0 of `seeded_sin`"):
        check_case(Case(fn, (u(0.2, 1.5, 3),)))


def test_the_soft_check_reports_a_flag_that_keeps_what_no_rule_reads(seeded: Any) -> None:
    fn = seeded(keep_ans=True)  # the rule reads x only
    defvjp(fn, lambda g, ans, x: g * P.cos(x))
    case = Case(fn, (u(0.2, 1.5, 3),))
    check_case(case)
    assert over_kept([case]) == {"seeded_sin": {"ans"}}
