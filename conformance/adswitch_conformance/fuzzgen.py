"""Hypothesis strategies that draw random differentiable programs (see :mod:`.fuzzprogram`).

Every program is written against ``ad.array_namespace`` and uses the operations of the
tape issue's list: elementwise math, arithmetic with broadcasting both ways and with
Python scalars, matmul, reductions with ``axis``/``keepdims``, reshape/permute/expand/
squeeze/broadcast/flip, concat/stack, slicing, integer and ``take`` indexing,
``cumulative_sum``, and the non-smooth ``abs``/``maximum``/``minimum``/``clip``/``where``.
Arguments are plain, ``Duplicated``, ``Const``, Python floats, or one array passed twice.

Domain safety is built into the templates (``log(a*a + 0.5)``, ``a / (b*b + 1)``,
``exp`` only of bounded values) and a magnitude bound is tracked per value, so nothing
overflows. Non-smooth operations record a *margin* -- the inputs' distance to the kink
-- which the runner checks before trusting finite differences.

Example:
    >>> from hypothesis import given, settings
    >>> @settings(max_examples=3, derandomize=True, database=None)
    ... @given(programs())
    ... def show(program):
    ...     assert "def f(" in program.source()
    >>> show()
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from adswitch_conformance.requires import missing_hypothesis

try:
    from hypothesis import strategies as st
except ModuleNotFoundError as error:  # the fuzzer's one extra dependency
    raise missing_hypothesis(error) from error

from adswitch_conformance.fuzzprogram import Arg, Program

__all__ = ["KINK_MARGIN", "MODES", "programs"]

KINK_MARGIN = 5e-3
"""Smallest distance to a kink (``abs`` at 0, a tie in ``maximum``...) a program's inputs
may have for finite differences to be trusted (the runner's steps are far smaller)."""

MODES = ("plain", "mutating", "nested", "float32")
"""Kinds of program; Hypothesis shrinks towards the first."""

_MAX_BOUND = 50.0  # values beyond this get squashed, so FD stays accurate
_MAX_DIM = 4
_VIEW_OPS = frozenset(
    {
        "reshape",
        "expand_dims",
        "squeeze",
        "permute_dims",
        "matrix_transpose",
        "T",
        "broadcast_to",
        "flip",
        "slice",
        "int_index",
        "ellipsis",
        "newaxis",
        "index",
    }
)


@dataclass
class _Value:
    name: str
    shape: tuple[int, ...]
    bound: float
    consumed: bool = False
    traced: bool = True  # depends on a differentiated argument (else it is plain numpy)
    is_view: bool = False  # may share memory with another value (numpy semantics)
    viewed: bool = False  # some other value may be a view of this one

    @property
    def writable(self) -> bool:
        """In-place writes are portable only on values no view can see: engines without
        views (jax) and with them (numpy, torch) then agree."""
        return self.name.startswith("v") and not self.is_view and not self.viewed


class _Builder:
    """Draws one program step by step, tracking each value's shape and magnitude."""

    def __init__(self, draw: Any, max_inputs: int, mode: str) -> None:
        self.draw = draw
        self.mode = mode
        self.smooth = mode == "nested"  # second derivatives of kinks are not checkable
        self.max_dim = 3 if mode == "nested" else _MAX_DIM
        self.args: list[Arg] = []
        self.consts: list[np.ndarray] = []
        self.lines: list[str] = []
        self.margins: list[tuple[int, str]] = []
        self.values: list[_Value] = []
        self.scalars: list[str] = []  # differentiated Python-float arguments
        self.ops: list[str] = []
        self.max_inputs = max_inputs
        self.counter = 0

    # --- drawing helpers ------------------------------------------------------------
    def pick(self, options: list[Any]) -> Any:
        return options[self.draw(st.integers(0, len(options) - 1))]

    def shape(self, min_rank: int = 0, max_rank: int = 3) -> tuple[int, ...]:
        rank = self.draw(st.integers(min_rank, max_rank))
        return tuple(self.draw(st.integers(1, self.max_dim)) for _ in range(rank))

    def data(self, shape: tuple[int, ...]) -> np.ndarray:
        seed = self.draw(st.integers(0, 2**32 - 1))
        rng = np.random.default_rng(seed)
        # Rounded to 4 digits: readable printouts, and the printout reproduces exactly.
        data = np.asarray(np.round(rng.uniform(-1.0, 1.0, size=shape), 4))
        if self.draw(st.integers(0, 7)) == 0:
            # Exact zeros: where rules that divide (prod's, say) give NaN.
            data[rng.uniform(size=shape) < 0.5] = 0.0
        return data

    def fresh(self) -> str:
        self.counter += 1
        return f"v{self.counter}"

    # --- operands -------------------------------------------------------------------
    def new_input(self, shape: tuple[int, ...], first: bool = False) -> _Value:
        """A new array argument (or, once in a while, a constant) of ``shape``; the first
        one is differentiated, so that every program has something to differentiate."""
        if not first and self.draw(st.integers(0, 4)) == 0:
            return self.const(shape)
        if len(self.args) >= self.max_inputs:
            return self.const(shape)
        index = len(self.args)
        name = f"x{index}"
        kinds = ["plain", "plain", "plain", "dup"] + ([] if first else ["const"])
        activity = self.pick(kinds)
        self.args.append(Arg(name, self.data(shape), activity))
        value = _Value(name, shape, 1.0, traced=activity != "const")
        self.values.append(value)
        if activity == "plain" and self.draw(st.integers(0, 5)) == 0:
            # The same array object passed a second time (a tied parameter).
            self.args.append(Arg(f"x{len(self.args)}", self.args[index].value, "tie", index))
            tied = _Value(f"x{len(self.args) - 1}", shape, 1.0)
            self.values.append(tied)
        return value

    def const(self, shape: tuple[int, ...]) -> _Value:
        self.consts.append(self.data(shape))
        return _Value(
            f"xp.asarray(c{len(self.consts) - 1})", shape, 1.0, consumed=True, traced=False
        )

    def new_scalar(self) -> str:
        if len(self.args) >= self.max_inputs:
            return repr(float(self.draw(st.sampled_from([0.5, -1.5, 2.0, 0.75]))))
        name = f"s{len(self.args)}"
        activity = self.pick(["plain", "plain", "const"])
        self.args.append(Arg(name, float(self.data(())), activity))
        if activity != "const":
            self.scalars.append(name)
        return name

    def operand(
        self, accept: Callable[[tuple[int, ...]], bool], make: Callable[[], tuple[int, ...]]
    ) -> _Value:
        """An existing value whose shape ``accept`` s, or a new input of shape ``make()``."""
        found = [v for v in self.values if accept(v.shape)]
        if found and self.draw(st.integers(0, 2)) > 0:
            return self.pick(found)  # type: ignore[no-any-return]
        return self.new_input(make())

    def emit(
        self,
        op: str,
        expr: str,
        shape: tuple[int, ...],
        bound: float,
        *used: _Value,
        traced: bool = False,
    ) -> None:
        view = op in _VIEW_OPS
        traced = traced or any(value.traced for value in used)
        for value in used:
            value.consumed = True
            value.viewed = value.viewed or view
        name = self.fresh()
        if bound > _MAX_BOUND:
            expr, bound, view = f"xp.tanh({expr})", 1.0, False
        self.lines.append(f"{name} = {expr}")
        self.values.append(_Value(name, shape, bound, traced=traced, is_view=view))
        self.ops.append(op)

    def margin(self, expression: str) -> None:
        """Record a kink's margin, measured on the values the next line sees."""
        self.margins.append((len(self.lines), expression))

    def broadcast_partner(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        """A shape that broadcasts with ``shape``, smaller or larger ("both ways")."""
        rank = self.draw(st.integers(0, 3))
        out: list[int] = []
        for k in range(rank):
            i = len(shape) - rank + k
            if i < 0 or shape[i] == 1:
                out.append(self.draw(st.integers(1, 3)))
            else:
                out.append(self.pick([shape[i], shape[i], 1]))
        return tuple(out)

    # --- steps ----------------------------------------------------------------------
    def step(self) -> None:
        kinds = ["unary", "binary", "scalar", "reduce", "shape", "index", "matmul", "join"]
        kinds += ["cumsum"] + ([] if self.smooth else ["kink"])
        if self.mode == "mutating":
            kinds += ["setitem", "inplace", "fresh_buffer"] * 2
        kind = self.pick(kinds)
        a: _Value = self.pick(self.values)
        getattr(self, f"step_{kind}")(a)

    def step_unary(self, a: _Value) -> None:
        n, b = a.name, a.bound
        options: list[tuple[str, str, float]] = [
            ("sin", f"xp.sin({n})", 1.0),
            ("cos", f"xp.cos({n})", 1.0),
            ("tanh", f"xp.tanh({n})", 1.0),
            ("log", f"xp.log({n} * {n} + 0.5)", max(abs(math.log(0.5)), math.log(b * b + 0.5))),
            ("log1p", f"xp.log1p(xp.square({n}))", math.log1p(b * b)),
            ("sqrt", f"xp.sqrt({n} * {n} + 0.25)", math.sqrt(b * b + 0.25)),
            ("atan", f"xp.atan({n})", 1.6),
            ("asin", f"xp.asin(0.9 * xp.tanh({n}))", 1.2),
            ("acos", f"xp.acos(0.9 * xp.tanh({n}))", 3.0),
            ("square", f"xp.square({n})", b * b),
            ("negative", f"-{n}", b),
            ("pow", f"({n} * {n} + 0.5) ** 1.5", (b * b + 0.5) ** 1.5),
            ("reciprocal", f"1.0 / ({n} * {n} + 1.0)", 1.0),
        ]
        if b <= 2.0:
            options += [
                ("exp", f"xp.exp({n})", math.exp(b)),
                ("expm1", f"xp.expm1({n})", math.exp(b)),
                ("sinh", f"xp.sinh({n})", math.sinh(b)),
                ("cosh", f"xp.cosh({n})", math.cosh(b)),
            ]
        else:
            options.append(("exp", f"xp.exp(xp.tanh({n}))", math.e))
        if b <= 1.2:
            options.append(("tan", f"xp.tan({n})", math.tan(b)))
        op, expr, bound = self.pick(options)
        self.emit(op, expr, a.shape, bound, a)

    def step_binary(self, a: _Value) -> None:
        partner = self.broadcast_partner(a.shape)

        def fits(s: tuple[int, ...]) -> bool:
            try:
                np.broadcast_shapes(a.shape, s)
            except ValueError:
                return False
            return True

        b = self.operand(fits, lambda: partner)
        shape = tuple(np.broadcast_shapes(a.shape, b.shape))
        x, y = (a, b) if self.draw(st.booleans()) else (b, a)
        p, q = x.name, y.name
        options: list[tuple[str, str, float]] = [
            ("add", f"{p} + {q}", x.bound + y.bound),
            ("subtract", f"{p} - {q}", x.bound + y.bound),
            ("multiply", f"{p} * {q}", x.bound * y.bound),
            ("divide", f"{p} / ({q} * {q} + 1.0)", x.bound),
            ("add", f"xp.add({p}, {q})", x.bound + y.bound),
            ("multiply", f"xp.multiply({p}, {q})", x.bound * y.bound),
            ("divide", f"xp.divide({p}, xp.square({q}) + 1.0)", x.bound),
            ("logaddexp", f"xp.logaddexp({p}, {q})", max(x.bound, y.bound) + 0.7),
        ]
        if y.bound <= 2.0 and x.bound <= 3.0:
            worst = max((x.bound**2 + 0.5) ** y.bound, 0.5**-y.bound)
            options.append(("pow", f"xp.pow({p} * {p} + 0.5, {q})", worst))
        op, expr, bound = self.pick(options)
        self.emit(op, expr, shape, bound, a, b)

    def step_scalar(self, a: _Value) -> None:
        """Array with a Python scalar (a literal or a Python-float argument), both orders."""
        s = (
            self.new_scalar()
            if self.draw(st.integers(0, 2)) == 0
            else self.pick(["1.5", "-0.7", "2.0"])
        )
        sb = 1.5 if s[0].isdigit() or s[0] == "-" else 1.0
        n = a.name
        op, expr, bound = self.pick(
            [
                ("add", f"{n} + {s}", a.bound + sb),
                ("radd", f"{s} + {n}", a.bound + sb),
                ("rsub", f"{s} - {n}", a.bound + sb),
                ("mul", f"{n} * {s}", a.bound * sb),
                ("rmul", f"{s} * {n}", a.bound * sb),
                ("div", f"{n} / 2.0", a.bound),
                ("rdiv", f"{s} / ({n} * {n} + 1.0)", sb),
            ]
        )
        self.emit(op, expr, a.shape, bound, a, traced=s in self.scalars)

    def axis_arg(self, ndim: int) -> tuple[Any, str]:
        """``(axis, printed)``: None, one (maybe negative) axis, or a tuple of axes."""
        if ndim == 0:
            return None, ""
        choice = self.draw(st.integers(0, 2))
        if choice == 0:
            return None, ""
        if choice == 1:
            ax = self.draw(st.integers(-ndim, ndim - 1))
            return ax, f", axis={ax}"
        axes = tuple(
            sorted(set(self.draw(st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim))))
        )
        return axes, f", axis={axes!r}"

    def step_reduce(self, a: _Value) -> None:
        axis, printed = self.axis_arg(len(a.shape))
        keepdims = self.draw(st.booleans())
        kd = ", keepdims=True" if keepdims else ""
        axes = (
            tuple(range(len(a.shape)))
            if axis is None
            else axis
            if isinstance(axis, tuple)
            else (axis,)
        )
        axes = tuple(ax % len(a.shape) for ax in axes) if a.shape else ()
        count = int(np.prod([a.shape[ax] for ax in axes])) if axes else 1
        shape = tuple(
            1 if i in axes else d for i, d in enumerate(a.shape) if keepdims or i not in axes
        )
        n = a.name
        options: list[tuple[str, str, float, str | None]] = [
            ("sum", f"xp.sum({n}{printed}{kd})", a.bound * count, None),
            ("mean", f"xp.mean({n}{printed}{kd})", a.bound, None),
            ("var", f"xp.var({n}{printed}{kd})", a.bound * a.bound, None),
        ]
        if not self.smooth:
            options += [
                ("max", f"xp.max({n}{printed}{kd})", a.bound, f"_gap({n}, {axis!r})"),
                ("min", f"xp.min({n}{printed}{kd})", a.bound, f"_gap({n}, {axis!r})"),
            ]
        if count > 1 and not self.smooth:
            options.append(
                ("std", f"xp.std({n}{printed}{kd})", a.bound, f"np.min(np.std({n}{printed}))")
            )
        if a.bound**count <= _MAX_BOUND and count <= 8:
            options.append(("prod", f"xp.prod({n}{printed}{kd})", a.bound**count, None))
        op, expr, bound, margin = self.pick(options)
        if margin is not None:
            self.margin(margin)
        self.emit(op, expr, shape, bound, a)

    def step_shape(self, a: _Value) -> None:
        n, shape = a.name, a.shape
        options: list[tuple[str, str, tuple[int, ...]]] = []
        size = int(np.prod(shape)) if shape else 1
        target = self.factor(size)
        options.append(("reshape", f"xp.reshape({n}, {target!r})", target))
        at = self.draw(st.integers(-len(shape) - 1, len(shape)))
        grown = list(shape)
        grown.insert(at % (len(shape) + 1), 1)
        options.append(("expand_dims", f"xp.expand_dims({n}, axis={at})", tuple(grown)))
        ones = [i for i, d in enumerate(shape) if d == 1]
        if ones:
            i = self.pick(ones)
            options.append(("squeeze", f"xp.squeeze({n}, axis={i})", shape[:i] + shape[i + 1 :]))
        if len(shape) >= 2:
            perm = tuple(self.draw(st.permutations(range(len(shape)))))
            options.append(
                ("permute_dims", f"xp.permute_dims({n}, {perm!r})", tuple(shape[p] for p in perm))
            )
            options.append(
                (
                    "matrix_transpose",
                    f"xp.matrix_transpose({n})",
                    (*shape[:-2], shape[-1], shape[-2]),
                )
            )
        if len(shape) == 2:
            options.append(("T", f"{n}.T", (shape[1], shape[0])))
        wide = tuple(d if d != 1 else self.draw(st.integers(1, 3)) for d in shape)
        wide = (self.draw(st.integers(1, 3)),) * self.draw(st.integers(0, 1)) + wide
        if len(wide) <= 4:
            options.append(("broadcast_to", f"xp.broadcast_to({n}, {wide!r})", wide))
        if shape:
            ax = self.draw(st.integers(-len(shape), len(shape) - 1))
            options.append(("flip", f"xp.flip({n}, axis={ax})", shape))
        op, expr, new = self.pick(options)
        self.emit(op, expr, new, a.bound, a)

    def factor(self, size: int) -> tuple[int, ...]:
        """A random shape of ``size`` elements, rank 0 to 3."""
        dims: list[int] = []
        rest = size
        for _ in range(self.draw(st.integers(0, 2))):
            divisors = [d for d in range(1, rest + 1) if rest % d == 0]
            d = self.pick(divisors)
            dims.append(d)
            rest //= d
        if rest > 1 or self.draw(st.booleans()):
            dims.append(rest)
        return tuple(dims)

    def step_index(self, a: _Value) -> None:
        n, shape = a.name, a.shape
        if not shape:
            self.emit("index", f"{n}[None]", (1,), a.bound, a)
            return
        axis = self.draw(st.integers(0, len(shape) - 1))
        size = shape[axis]
        kind = self.pick(["slice", "int", "ellipsis", "take", "newaxis"])
        pre = ":, " * axis
        if kind == "slice":
            start = self.draw(st.integers(0, size - 1))
            stop = self.draw(st.integers(start + 1, size))
            step = self.pick([1, 1, 2])
            text = f"{start}:{stop}" + (f":{step}" if step != 1 else "")
            new = (*shape[:axis], len(range(start, stop, step)), *shape[axis + 1 :])
            self.emit("slice", f"{n}[{pre}{text}]", new, a.bound, a)
        elif kind == "int":
            i = self.draw(st.integers(-size, size - 1))
            self.emit("int_index", f"{n}[{pre}{i}]", shape[:axis] + shape[axis + 1 :], a.bound, a)
        elif kind == "ellipsis":
            i = self.draw(st.integers(0, shape[-1] - 1))
            self.emit("ellipsis", f"{n}[..., {i}]", shape[:-1], a.bound, a)
        elif kind == "newaxis":
            self.emit("newaxis", f"{n}[{pre}None]", (*shape[:axis], 1, *shape[axis:]), a.bound, a)
        else:
            # Repeated indices: the gradient must accumulate, not overwrite.
            idx = self.draw(st.lists(st.integers(0, size - 1), min_size=1, max_size=4))
            new = (*shape[:axis], len(idx), *shape[axis + 1 :])
            self.emit("take", f"xp.take({n}, xp.asarray({idx!r}), axis={axis})", new, a.bound, a)

    def step_matmul(self, a: _Value) -> None:
        shape = a.shape
        if not shape:
            self.step_unary(a)
            return
        k = self.draw(st.integers(1, 3))
        batch = shape[:-2]
        if self.draw(st.booleans()):  # a @ b
            n = shape[-1]
            other = self.pick([(n,), (n, k), (2, n, k) if not batch else (*batch, n, k)])
            b = self.operand(lambda s: s == other, lambda: other)
            out = np.matmul(np.zeros(shape), np.zeros(other)).shape
            expr = self.pick([f"{a.name} @ {b.name}", f"xp.matmul({a.name}, {b.name})"])
            self.emit("matmul", expr, out, a.bound * b.bound * n, a, b)
        else:  # b @ a
            n = shape[-2] if len(shape) >= 2 else shape[0]
            other = self.pick([(n,), (k, n)])
            b = self.operand(lambda s: s == other, lambda: other)
            out = np.matmul(np.zeros(other), np.zeros(shape)).shape
            self.emit("matmul", f"{b.name} @ {a.name}", out, a.bound * b.bound * n, a, b)

    def step_join(self, a: _Value) -> None:
        shape = a.shape
        if self.draw(st.booleans()) or not shape:
            axis = self.draw(st.integers(-len(shape) - 1, len(shape)))
            b = self.operand(lambda s: s == shape, lambda: shape)
            stacked = list(shape)
            stacked.insert(axis % (len(shape) + 1), 2)
            pair = f"[{a.name}, {b.name}]" if self.draw(st.booleans()) else f"({a.name}, {b.name})"
            self.emit(
                "stack",
                f"xp.stack({pair}, axis={axis})",
                tuple(stacked),
                max(a.bound, b.bound),
                a,
                b,
            )
            return
        axis = self.draw(st.integers(-len(shape), len(shape) - 1))
        m = self.draw(st.integers(1, 3))
        other = tuple(m if i == axis % len(shape) else d for i, d in enumerate(shape))
        b = self.operand(lambda s: s == other, lambda: other)
        new = tuple(d + m if i == axis % len(shape) else d for i, d in enumerate(shape))
        self.emit(
            "concat",
            f"xp.concat([{a.name}, {b.name}], axis={axis})",
            new,
            max(a.bound, b.bound),
            a,
            b,
        )

    def step_kink(self, a: _Value) -> None:
        n = a.name
        kind = self.pick(["abs", "maximum", "minimum", "clip", "where"])
        if kind == "abs":
            self.margin(f"np.min(np.abs({n}))")
            self.emit("abs", f"xp.abs({n})", a.shape, a.bound, a)
            return
        if kind == "clip":
            self.margin(f"np.min(np.minimum(np.abs({n} - 0.5), np.abs({n} + 0.5)))")
            self.emit("clip", f"xp.clip({n}, -0.5, 0.5)", a.shape, a.bound, a)
            return
        # A fresh operand: an existing one is too often the same value (a tie).
        b = self.new_input(a.shape)
        self.margin(f"np.min(np.abs({n} - {b.name}))")
        bound = max(a.bound, b.bound)
        if kind == "where":
            expr = f"xp.where({n} > {b.name}, {n}, 0.5 * {b.name})"
        else:
            expr = f"xp.{kind}({n}, {b.name})"
        self.emit(kind, expr, a.shape, bound, a, b)

    def step_cumsum(self, a: _Value) -> None:
        if not a.shape:
            self.step_unary(a)
            return
        axis = self.draw(st.integers(-len(a.shape), len(a.shape) - 1))
        count = a.shape[axis]
        self.emit(
            "cumulative_sum",
            f"xp.cumulative_sum({a.name}, axis={axis})",
            a.shape,
            a.bound * count,
            a,
        )

    # --- the loss ----------------------------------------------------------------------
    # --- in-place writes (mutating programs) --------------------------------------------
    def selection(self, shape: tuple[int, ...]) -> tuple[str, tuple[int, ...]]:
        """An index on one axis (a slice or an integer) and the shape it selects."""
        axis = self.draw(st.integers(0, len(shape) - 1))
        size, pre = shape[axis], ":, " * axis
        if self.draw(st.booleans()):
            start = self.draw(st.integers(0, size - 1))
            stop = self.draw(st.integers(start + 1, size))
            return f"{pre}{start}:{stop}", (*shape[:axis], stop - start, *shape[axis + 1 :])
        i = self.draw(st.integers(-size, size - 1))
        return f"{pre}{i}", shape[:axis] + shape[axis + 1 :]

    def source_for(self, target: _Value, shape: tuple[int, ...]) -> tuple[str, float]:
        """The right-hand side of a write of ``shape``: a literal or another value that
        broadcasts to it (never the target itself)."""
        if self.draw(st.integers(0, 3)) == 0:
            return "1.5", 1.5

        def fits(s: tuple[int, ...]) -> bool:
            try:
                return tuple(np.broadcast_shapes(s, shape)) == shape
            except ValueError:
                return False

        # A traced value written into plain numpy would lose its derivative: engines
        # rightly refuse that, so untraced targets only receive untraced values.
        found = [
            v
            for v in self.values
            if v is not target and fits(v.shape) and (target.traced or not v.traced)
        ]
        if found and self.draw(st.booleans()):
            value = self.pick(found)
        else:
            value = self.new_input(shape) if target.traced else self.const(shape)
        value.consumed = True
        return value.name, value.bound

    def write(self, target: _Value, op: str = "setitem") -> None:
        index, shape = self.selection(target.shape)
        text, bound = self.source_for(target, shape)
        self.lines.append(f"{target.name}[{index}] = {text}")
        target.bound = max(target.bound, bound)
        target.consumed = False  # its new contents should reach the loss
        self.ops.append(op)

    def step_setitem(self, a: _Value) -> None:
        targets = [v for v in self.values if v.writable and v.shape]
        if not targets:
            self.step_fresh_buffer(a)
            return
        self.write(self.pick(targets))

    def step_inplace(self, a: _Value) -> None:
        targets = [v for v in self.values if v.writable]
        if not targets:
            self.step_fresh_buffer(a)
            return
        target: _Value = self.pick(targets)
        text, bound = self.source_for(target, target.shape)
        op = self.pick(["+=", "-=", "*="])
        new = target.bound * bound if op == "*=" else target.bound + bound
        if new > _MAX_BOUND:
            op, text, new = "*=", "0.5", target.bound * 0.5
        self.lines.append(f"{target.name} {op} {text}")
        target.bound = new
        target.consumed = False
        self.ops.append("inplace")

    def step_fresh_buffer(self, a: _Value) -> None:
        """``buf = xp.zeros_like(a)`` then writes into it (seed 003's fill!(similar(x)))."""
        bases = [v for v in self.values if v.traced and v.shape]
        if not bases:
            self.step_unary(a)
            return
        # Made like a traced value, so that it is the engine's array (seed 003's
        # fill!(similar(x))); xp.zeros_like of a plain numpy array may be plain numpy.
        base: _Value = a if a in bases else self.pick(bases)
        name = self.fresh()
        self.lines.append(f"{name} = xp.zeros_like({base.name})")
        buffer = _Value(name, base.shape, 0.0, traced=True)
        self.values.append(buffer)
        self.ops.append("fresh_buffer")
        for _ in range(self.draw(st.integers(1, 2))):
            self.write(buffer, "buffer_write")  # before any read: fresh_buffer_writes

    # --- the loss ----------------------------------------------------------------------
    def finish(self, zero: bool) -> Program:
        pending = [v for v in self.values if not v.consumed and v.name.startswith("v")]
        terms = []
        for value in (pending or self.values[-1:])[-3:]:
            weights = self.const(value.shape)
            terms.append(f"xp.sum({value.name} * {weights.name})")
        outer: list[str | None] = []
        with_value = False
        if self.mode == "nested":
            for arg in self.args:
                if arg.activity in ("const", "tie"):
                    outer.append(None)
                elif arg.is_array:
                    self.const(np.shape(arg.value))
                    outer.append(f"c{len(self.consts) - 1}")
                else:
                    outer.append(self.pick(["0.37", "-1.25"]))
            with_value = self.draw(st.booleans())
        return Program(
            args=tuple(self.args),
            consts=tuple(self.consts),
            lines=tuple(self.lines),
            loss=" + ".join(terms),
            margins=tuple(self.margins),
            zero=zero,
            dtype="float32" if self.mode == "float32" else "float64",
            nested=self.mode == "nested",
            outer=tuple(outer),
            with_value=with_value,
            ops=tuple(self.ops),
        )


_WEIGHTS = {"plain": 4, "mutating": 3, "nested": 2, "float32": 1}


@st.composite
def programs(
    draw: Any, max_steps: int = 6, max_inputs: int = 3, modes: tuple[str, ...] = MODES
) -> Program:
    """Hypothesis strategy: random programs of up to ``max_steps`` operations.

    Args:
        draw: supplied by Hypothesis.
        max_steps: the most operation steps (nested programs: at most 4); at least 3.
        max_inputs: the most arguments (further operands become constants).
        modes: the kinds of program to draw from (see :data:`MODES`).

    Returns:
        A :class:`Program`; it shrinks towards plain programs with fewer, simpler steps
        and smaller shapes.
    """
    choices = [mode for mode in MODES if mode in modes for _ in range(_WEIGHTS[mode])]
    mode = draw(st.sampled_from(choices))
    builder = _Builder(draw, max_inputs, mode)
    builder.new_input(builder.shape(), first=True)
    steps = min(max_steps, 4) if mode == "nested" else max_steps
    # At least a few steps: Hypothesis favours the smallest draws, and a failing program
    # is cut down line by line afterwards (fuzz.minimize) anyway.
    for _ in range(draw(st.integers(min(3, steps), steps))):
        builder.step()
    program = builder.finish(zero=draw(st.integers(0, 3)) > 0)
    if draw(st.integers(0, 3)) == 0:
        program = dataclasses.replace(program, entry="gradient")
    if draw(st.integers(0, 3)) == 0:
        program = dataclasses.replace(program, native=True)
    return program
