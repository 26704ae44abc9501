"""A fuzz program: its arguments, its straight-line source, and the script that reruns it.

The printed source *is* the executed source, so a reported mismatch can be pasted into a
file (or the conformance catalogue) and rerun as it is.

Kinds of program:
    * plain: ``f`` applies a few operations and returns a weighted sum;
    * float32: the same, in float32 (arguments and constants);
    * mutating: some lines write in place (``v[1:3] = w``, ``v += w``, or into a fresh
      buffer ``xp.zeros_like(v)``) -- never into an argument or a view, so that the
      program means the same on engines with and without views;
    * nested: the operations form an inner function ``h``; ``f`` takes
      ``ad.gradient(h, ...)`` inside and returns a weighted sum of those gradients
      (a Hessian-vector product; seed 000's loss on an input gradient).

Example:
    >>> import numpy as np
    >>> p = Program(args=(Arg("x0", np.array([0.5, 1.0])),), consts=(np.array([1.0, 2.0]),),
    ...             lines=("v1 = xp.sin(x0)",), loss="xp.sum(v1 * xp.asarray(c0))")
    >>> print(p.function_source())
    def f(x0):
        xp = ad.array_namespace(x0)
        v1 = xp.sin(x0)
        return xp.sum(v1 * xp.asarray(c0))
    <BLANKLINE>
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Arg", "Program", "gap"]


@dataclass(frozen=True, eq=False)
class Arg:
    """One positional argument of a program.

    Attributes:
        name: its parameter name (``x0``, ``s2``...).
        value: a float64 numpy array, or a Python float.
        activity: ``"plain"``, ``"dup"``, ``"const"``, or ``"tie"`` (the same object as
            argument ``tie_to``, which is plain).
        tie_to: index of the argument this one repeats, for ``"tie"``.
    """

    name: str
    value: Any
    activity: str = "plain"
    tie_to: int | None = None

    @property
    def is_array(self) -> bool:
        return isinstance(self.value, np.ndarray)


@dataclass(frozen=True, eq=False)
class Program:
    """A random program.

    Attributes:
        args: the arguments.
        consts: constant arrays, referenced as ``c0, c1...`` (``xp.asarray(c0)`` in the body).
        lines: the body, one assignment or in-place write per line.
        loss: the returned expression (of the inner function, for a nested program).
        margins: ``(line, expression)``: after running ``lines[:line]`` on numpy, the
            expression gives the distance of the inputs to a kink.
        zero: the ``zero=`` flag of the call (``False``: shadows accumulate).
        entry: ``"withgradient"`` or ``"gradient"``, the API function called.
        native: on the torch engine, pass torch tensors (``torch.from_numpy``) instead
            of numpy arrays: gradients must then come back as tensors.
        dtype: ``"float64"`` or ``"float32"``.
        nested: ``f`` differentiates the body ``h`` inside (see the module docstring).
        outer: for nested programs, per argument, the weight of its inner gradient in
            ``f``'s loss: a constant's index (``"c3"``), a Python literal, or ``None``.
        with_value: for nested programs, ``f`` also adds ``0.5 * h(...)``.
        ops: the operation names, for statistics and reports.
    """

    args: tuple[Arg, ...]
    consts: tuple[np.ndarray, ...]
    lines: tuple[str, ...]
    loss: str
    margins: tuple[tuple[int, str], ...] = ()
    zero: bool = True
    entry: str = "withgradient"
    native: bool = False
    dtype: str = "float64"
    nested: bool = False
    outer: tuple[str | None, ...] = ()
    with_value: bool = False
    ops: tuple[str, ...] = ()

    @property
    def mutates(self) -> bool:
        """Writes into arrays that were already read (capability ``mutation``)."""
        return any(op in ("setitem", "inplace") for op in self.ops)

    @property
    def fills_buffers(self) -> bool:
        """Writes into fresh ``xp.zeros_like`` buffers (``fresh_buffer_writes``)."""
        return "fresh_buffer" in self.ops

    def _signature(self, name: str) -> list[str]:
        params = ", ".join(a.name for a in self.args)
        arrays = ", ".join(a.name for a in self.args if a.is_array and a.activity != "tie")
        return [f"def {name}({params}):", f"    xp = ad.array_namespace({arrays})"]

    def inner_source(self) -> str:
        """The body as a function: ``f`` itself, or ``h`` for a nested program."""
        out = self._signature("h" if self.nested else "f")
        out += [f"    {line}" for line in self.lines]
        out.append(f"    return {self.loss}")
        return "\n".join(out) + "\n"

    def function_source(self) -> str:
        """The function ``f`` (preceded by ``h`` for a nested program)."""
        if not self.nested:
            return self.inner_source()
        inner_args = ", ".join(
            f"ad.Const({a.name})" if a.activity == "const" else a.name for a in self.args
        )
        terms = []
        for i, (arg, weight) in enumerate(zip(self.args, self.outer, strict=True)):
            if weight is None:
                continue
            if arg.is_array:
                terms.append(f"xp.sum(g[{i}] * xp.asarray({weight}))")
            else:
                terms.append(f"g[{i}] * {weight}")
        if self.with_value:
            terms.append(f"0.5 * h({', '.join(a.name for a in self.args)})")
        out = self._signature("f")
        out.append(f"    g = ad.gradient(h, {inner_args})")
        out.append(f"    return {' + '.join(terms)}")
        return self.inner_source() + "\n\n" + "\n".join(out) + "\n"

    def source(self, backend: str | None = None) -> str:
        """A complete, runnable script reproducing the program on ``backend`` (by default
        on the engine adswitch selects)."""
        torch = self.native and backend == "torch"
        out = [
            "import numpy as np",
            *(["import torch"] if torch else []),
            "import adswitch as ad",
            "",
        ]
        out += [f"c{i} = {self._literal(c)}" for i, c in enumerate(self.consts)]
        out += ["", "", self.function_source(), ""]
        call_args = []
        for arg in self.args:
            if arg.activity == "tie":
                call_args.append(self.args[arg.tie_to or 0].name)
                continue
            literal = self._literal(arg.value)
            native = torch and arg.is_array
            out.append(f"{arg.name} = {f'torch.from_numpy({literal})' if native else literal}")
            like = "torch" if native else "np"
            if arg.activity == "dup":
                call_args.append(f"ad.Duplicated({arg.name}, {like}.full_like({arg.name}, 0.25))")
            elif arg.activity == "const":
                call_args.append(f"ad.Const({arg.name})")
            else:
                call_args.append(arg.name)
        options = "" if backend is None else f", backend={backend!r}"
        options += "" if self.zero else ", zero=False"
        out.append(f"result = ad.{self.entry}(f, {', '.join(call_args)}{options})")
        out.append("print(result)")
        return "\n".join(out) + "\n"

    def _literal(self, value: Any) -> str:
        if isinstance(value, float):
            return repr(value)
        flat = ", ".join(repr(float(v)) for v in np.ravel(value))
        dtype = "" if self.dtype == "float64" else f", dtype=np.{self.dtype}"
        return f"np.array([{flat}]{dtype}).reshape({tuple(value.shape)!r})"

    def arrays(self, dtype: str | None = None) -> dict[str, Any]:
        """The constants ``c0, c1...`` in ``dtype`` (default: the program's)."""
        return {f"c{i}": c.astype(dtype or self.dtype) for i, c in enumerate(self.consts)}

    def compile(
        self, ad_module: Any, dtype: str | None = None, inner: bool = False
    ) -> Callable[..., Any]:
        """``f`` (or, with ``inner``, the body function) whose ``ad`` is ``ad_module`` and
        whose constants are in ``dtype``."""
        scope: dict[str, Any] = {"ad": ad_module, "np": np, **self.arrays(dtype)}
        source = self.inner_source() if inner else self.function_source()
        exec(compile(source, "<fuzz program>", "exec"), scope)
        return scope["h" if inner and self.nested else "f"]  # type: ignore[no-any-return]

    def margin(self) -> float:
        """The smallest distance of the inputs to a kink (``inf`` when smooth), each
        measured on the values the kink's line sees."""
        if not self.margins:
            return math.inf
        scope: dict[str, Any] = {"np": np, "xp": np, "_gap": gap, **self.arrays("float64")}
        for arg in self.args:
            source = self.args[arg.tie_to or 0] if arg.activity == "tie" else arg
            value = source.value
            scope[arg.name] = np.array(value) if isinstance(value, np.ndarray) else value
        smallest = math.inf
        done = 0
        for line, expression in sorted(self.margins):
            for statement in self.lines[done:line]:
                exec(statement, scope)
            done = max(done, line)
            smallest = min(smallest, float(eval(expression, scope)))
        return smallest

    def __repr__(self) -> str:
        return "Program:\n" + self.source()

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        # Hypothesis prints falsifying examples with this hook: show the script.
        printer.text(repr(self))


def gap(a: Any, axis: Any) -> float:
    """Distance between the two largest (and the two smallest) entries along ``axis``:
    how far ``max``/``min`` are from a tie."""
    a = np.asarray(a, dtype=np.float64)
    if a.ndim == 0:
        return math.inf
    axes = tuple(range(a.ndim)) if axis is None else (axis if isinstance(axis, tuple) else (axis,))
    axes = tuple(ax % a.ndim for ax in axes)
    keep = [ax for ax in range(a.ndim) if ax not in axes]
    moved = np.transpose(a, keep + list(axes)).reshape([a.shape[k] for k in keep] + [-1])
    if moved.shape[-1] < 2:
        return math.inf
    s = np.sort(moved, axis=-1)
    return float(min(np.min(s[..., -1] - s[..., -2]), np.min(s[..., 1] - s[..., 0])))
