"""Independent references: Richardson-extrapolated central differences in float64.

Every function evaluation runs on a fresh deep copy of the inputs, so a function that
mutates its arguments cannot spoil the reference, and tied arrays stay tied in the copy
(``copy.deepcopy`` keeps identity), so perturbing a tied array perturbs every use and
the difference quotient is the *total* derivative -- the one rule 6 asks for.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .case import Case
from .trees import is_float_array, is_float_leaf, leaves, leaves_with_paths, map_unique
from .trees import unflatten_like as _unflatten_like

__all__ = [
    "ArgExpect",
    "Expected",
    "first_output",
    "loss_of",
    "finite_differences",
    "perturbed",
    "richardson",
    "to_float64",
    "unwrap",
    "build_expected",
]


def unwrap(arg: Any) -> tuple[str, Any]:
    """``("dup" | "const" | "active" | "plain", value)`` for one positional argument.

    Example:
        >>> import adswitch as ad
        >>> unwrap(ad.Const(2.0)), unwrap(3.0)
        (('const', 2.0), ('plain', 3.0))
    """
    import adswitch as ad

    if isinstance(arg, ad.Duplicated):
        return "dup", arg.val
    if isinstance(arg, ad.Const):
        return "const", arg.val
    if isinstance(arg, ad.Active):
        return "active", arg.val
    return "plain", arg


def first_output(out: Any) -> Any:
    """The loss inside ``f``'s output (rule 5: itself, or the first element).

    Example:
        >>> first_output((1.5, "aux")), first_output({"loss": 2.0, "x": 1}), first_output(3.0)
        (1.5, 2.0, 3.0)
    """
    if isinstance(out, dict):
        return next(iter(out.values()))
    if isinstance(out, list | tuple):
        return out[0]
    return out


def loss_of(fn: Callable[..., Any], args: Sequence[Any]) -> float:
    """Call ``fn(*args)`` with numpy inputs and return its loss as a float.

    Example:
        >>> loss_of(lambda x: (np.sum(x), "aux"), [np.ones(3)])
        3.0
    """
    return float(np.asarray(first_output(fn(*args)), dtype=np.float64))


def to_float64(leaf: Any) -> Any:
    """A float64 copy of a floating array (a copy of other arrays; other leaves as they are).

    Example:
        >>> to_float64(np.ones(2, np.float32)).dtype
        dtype('float64')
    """
    if is_float_array(leaf):
        return np.array(leaf, dtype=np.float64, copy=True)
    if isinstance(leaf, np.ndarray):
        return leaf.copy()
    return leaf


def finite_differences(
    fn: Callable[..., Any], vals: Sequence[Any], active: Sequence[bool], step: float = 2e-3
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Gradients of ``fn``'s loss by central differences with two Richardson steps.

    Args:
        fn: the function, called as ``fn(*vals)`` on numpy inputs.
        vals: the argument values (activity wrappers removed).
        active: per argument, whether to differentiate it.
        step: the base step (absolute: inputs in the catalogue are of moderate size).

    Returns:
        ``(grads, errors)``: per differentiable leaf path (``args[0]['W']``), the
        gradient at its first occurrence (float64 array, or float for a Python float)
        and an error estimate of the same shape. Later occurrences of a tied array
        are absent.

    Example:
        >>> import numpy as np
        >>> g, _ = finite_differences(lambda x: np.sum(x**3), [np.array([1.0, 2.0])], [True])
        >>> np.allclose(g["args[0]"], [3.0, 12.0])
        True
    """
    work = map_unique(to_float64, list(vals))
    grads: dict[str, Any] = {}
    errors: dict[str, Any] = {}
    seen: set[int] = set()
    for k, (path, leaf) in enumerate(leaves_with_paths(work, "args")):
        arg_index = int(path[5 : path.index("]")])
        if not active[arg_index] or not is_float_leaf(leaf):
            continue
        if isinstance(leaf, np.ndarray):
            if id(leaf) in seen:
                continue
            seen.add(id(leaf))
            grad = np.zeros(leaf.shape)
            err = np.zeros(leaf.shape)
            for j in range(leaf.size):
                index = np.unravel_index(j, leaf.shape)
                grad[index], err[index] = _partial(fn, work, k, index, step)
            grads[path], errors[path] = grad, err
        else:
            grads[path], errors[path] = _partial(fn, work, k, None, step)
    return grads, errors


def perturbed(work: list[Any], moves: Sequence[tuple[int, Any, float]]) -> list[Any]:
    """A deep copy of ``work`` with each ``(k, index, delta)`` added: to element ``index``
    of flat leaf ``k`` (an array; tied uses move together), or to leaf ``k`` itself when
    ``index`` is ``None`` (a Python float).

    Example:
        >>> perturbed([np.zeros(2), 1.0], [(0, (1,), 0.5), (1, None, 0.25)])
        [array([0. , 0.5]), 1.25]
    """
    trial = copy.deepcopy(work)
    flat = leaves(trial)
    floats = False
    for k, index, delta in moves:
        if index is not None:
            flat[k][index] += delta
        else:
            flat[k] = flat[k] + delta
            floats = True
    return _unflatten_like(trial, flat) if floats else trial


def richardson(d: Sequence[Any]) -> tuple[Any, Any]:
    """Two Richardson steps on central differences at steps ``h, h/2, h/4`` (any
    even-order error expansion): ``(estimate, error estimate)``.

    Example:
        >>> est, err = richardson([1.0 + 4e-4, 1.0 + 1e-4, 1.0 + 2.5e-5])
        >>> abs(est - 1.0) < 1e-12
        True
    """
    r1 = [(4 * d[1] - d[0]) / 3, (4 * d[2] - d[1]) / 3]
    r2 = (16 * r1[1] - r1[0]) / 15
    return r2, abs(r2 - r1[1])


def _partial(
    fn: Callable[..., Any], work: list[Any], k: int, index: Any, step: float
) -> tuple[float, float]:
    def at(delta: float) -> float:
        return loss_of(fn, perturbed(work, [(k, index, delta)]))

    h = step
    d = [(at(s) - at(-s)) / (2 * s) for s in (h, h / 2, h / 4)]
    value, error = richardson(d)
    return float(value), float(error)


@dataclass
class ArgExpect:
    """What one argument's gradient must be.

    Attributes:
        kind: ``"plain"``, ``"dup"`` or ``"const"``.
        grads: path -> expected gradient (float64 array or float), or ``None`` where
            the result must hold ``None`` (non-differentiable leaf, later tie).
        errors: path -> the reference's own error estimate (added to the tolerance).
        dtypes: path -> dtype name of the input leaf (picks the tolerance).
    """

    kind: str
    grads: dict[str, Any] = field(default_factory=dict)
    errors: dict[str, Any] = field(default_factory=dict)
    dtypes: dict[str, str] = field(default_factory=dict)


@dataclass
class Expected:
    """The reference outcome of one case on one set of arguments (engine-independent).

    Attributes:
        args: per argument, its :class:`ArgExpect`.
        output: what a plain call of the function returns.
        pre: deep copy of the argument values before the call.
        post: the argument values after a plain call (a mutating ``f`` changes them).
        tree: for ``jvp``, ``jacobian``, ``hessian``, ``derivative``: the result's tree
            with a :class:`~adswitch_conformance.dense.Ref` at each compared leaf.
        per_call: for ``vjp``: per cotangent, what each argument's entry must be.
    """

    args: list[ArgExpect]
    output: Any
    pre: list[Any]
    post: list[Any]
    tree: Any = None
    per_call: list[list[ArgExpect]] = field(default_factory=list)


def _dtype_name(leaf: Any) -> str:
    return leaf.dtype.name if isinstance(leaf, np.ndarray) else "float64"


def build_expected(case: Case, args: Sequence[Any]) -> Expected:
    """Compute the reference for ``case`` at ``args`` (which it does not modify).

    Args:
        case: the case (its ``ref_fn``, ``closed_form`` or ``fn`` give the reference).
        args: the arguments, activity wrappers included.

    Returns:
        The :class:`Expected` outcome.

    Example:
        >>> import numpy as np
        >>> case = Case("d.x", "basics", "x squared", lambda x: np.sum(x**2), lambda: ())
        >>> expected = build_expected(case, (np.array([1.0, -2.0]),))
        >>> np.round(expected.args[0].grads["args[0]"], 9)
        array([ 2., -4.])
    """
    kinds, vals = zip(*(unwrap(a) for a in args), strict=True) if args else ((), ())
    reference_fn = case.ref_fn or case.fn
    pre = copy.deepcopy(list(vals))
    post = copy.deepcopy(list(vals))
    output = reference_fn(*post)
    active = [kind in ("plain", "dup") for kind in kinds]
    if case.closed_form is not None:
        trees = case.closed_form(*copy.deepcopy(list(vals)))
        grads = {}
        for i, tree in enumerate(trees):
            for path, value in leaves_with_paths(tree, f"args[{i}]"):
                if value is not None:
                    grads[path] = value if type(value) is float else np.asarray(value, np.float64)
        errors: dict[str, Any] = {path: 0.0 for path in grads}
    elif case.check is not None:
        grads, errors = {}, {}
    else:
        grads, errors = finite_differences(reference_fn, vals, active)
    expects = []
    for i, (kind, val) in enumerate(zip(kinds, vals, strict=True)):
        expect = ArgExpect(kind)
        if kind != "const":
            for path, leaf in leaves_with_paths(val, f"args[{i}]"):
                expect.grads[path] = grads.get(path)
                expect.errors[path] = errors.get(path, 0.0)
                expect.dtypes[path] = _dtype_name(leaf)
        expects.append(expect)
    return Expected(expects, output, pre, post)
