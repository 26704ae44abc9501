"""Comparisons of an engine's results with the reference. Each raises :class:`Mismatch`
(the runner's WRONG) with a message naming the leaf by path, or returns how many
numbers it compared -- a check that compared nothing is itself a failure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .case import Tolerance
from .reference import ArgExpect, Expected
from .trees import containers_with_paths, leaves_with_paths

__all__ = [
    "Mismatch",
    "assert_close",
    "check_grads",
    "check_output",
    "check_state",
    "check_unchanged",
]


class Mismatch(AssertionError):
    """A result differs from the reference: the WRONG outcome."""


def _is_concrete_number(value: Any) -> bool:
    if isinstance(value, np.ndarray):
        return value.ndim == 0 and value.dtype.kind in "fiub"
    return isinstance(value, float | int | np.generic) and not isinstance(value, bool | np.bool_)


def assert_close(
    path: str, got: Any, ref: Any, tol: Tolerance, fd_error: Any = 0.0, what: str = ""
) -> None:
    """Raise :class:`Mismatch` unless ``got`` is within ``tol`` (and the reference's own
    error estimate) of ``ref``, elementwise. NaN never passes against a finite reference.

    Example:
        >>> assert_close("x", 1.0 + 1e-9, 1.0, (1e-6, 0.0))
    """
    got64 = np.asarray(got, dtype=np.float64)
    ref64 = np.asarray(ref, dtype=np.float64)
    if got64.shape != ref64.shape:
        raise Mismatch(f"{path}: shape {got64.shape}, expected {ref64.shape}{what}")
    rtol, atol = tol
    bound = atol + rtol * np.abs(ref64) + 4 * np.asarray(fd_error, dtype=np.float64)
    diff = np.abs(got64 - ref64)
    # (an infinite reference, e.g. sqrt'(0), passes only with the same infinity)
    bad = ~(diff <= bound) & ~(np.isnan(ref64) & np.isnan(got64)) & ~(got64 == ref64)
    if bad.any():
        index = tuple(int(i) for i in np.argwhere(bad)[0])
        at = f"[{','.join(map(str, index))}]" if index else ""
        raise Mismatch(
            f"{path}{at}: got {got64[index]!r}, expected {ref64[index]!r} "
            f"({int(bad.sum())} of {bad.size} values off; rtol={rtol:g}, atol={atol:g}){what}"
        )


def _tol(tols: Mapping[str, Tolerance], dtype: str) -> Tolerance:
    return tols.get(dtype, tols["float64"])


def _check_leaf(
    path: str, got: Any, ref: Any, expect: ArgExpect, tols: Mapping[str, Tolerance]
) -> int:
    if ref is None:
        if got is not None:
            raise Mismatch(
                f"{path}: expected None (not differentiable or a later tie), got "
                f"{type(got).__name__}"
            )
        return 0
    dtype = expect.dtypes[path]
    if isinstance(ref, np.ndarray):
        if not isinstance(got, np.ndarray):
            raise Mismatch(f"{path}: expected a numpy {dtype} array, got {type(got).__name__}")
        if got.dtype.name != dtype:
            raise Mismatch(f"{path}: gradient dtype {got.dtype.name}, the input is {dtype}")
    elif not isinstance(got, float):
        raise Mismatch(
            f"{path}: expected a Python float for a Python float, got {type(got).__name__}"
        )
    assert_close(path, got, ref, _tol(tols, dtype), expect.errors[path])
    return int(np.size(ref))


def check_grads(
    grads: Any,
    args: Sequence[Any],
    expected: Expected,
    tols: Mapping[str, Tolerance],
    dvals_before: Sequence[Any],
    zero: bool,
    calls: int,
) -> int:
    """Check one entry's gradients (rules 1, 2, 4, 6) and return how many numbers matched.

    Args:
        grads: the tuple ``ad.gradient`` returned.
        args: the arguments as passed (``Duplicated`` wrappers included).
        expected: the reference.
        tols: tolerances per dtype name.
        dvals_before: per argument, a deep copy of its shadow before the calls.
        zero: the ``zero=`` used; with ``False`` shadows accumulate over ``calls`` calls.
        calls: how many times the entry ran on these arguments.

    Returns:
        How many numbers were compared.

    Example:
        >>> import numpy as np
        >>> from adswitch_conformance.case import DEFAULT_TOL
        >>> from adswitch_conformance.reference import ArgExpect, Expected
        >>> expect = ArgExpect("plain", {"args[0]": np.array([2.0])}, {"args[0]": 0.0},
        ...                    {"args[0]": "float64"})
        >>> ref = Expected([expect], None, [], [])
        >>> check_grads((np.array([2.0]),), (np.array([1.0]),), ref, DEFAULT_TOL, [None],
        ...             True, 1)
        1
    """
    if not isinstance(grads, tuple) or len(grads) != len(args):
        raise Mismatch(
            f"expected a tuple of {len(args)} gradients, got {type(grads).__name__}"
            f" of length {len(grads) if isinstance(grads, tuple | list) else '?'}"
        )
    compared = 0
    for i, (arg, grad, expect, before) in enumerate(
        zip(args, grads, expected.args, dvals_before, strict=True)
    ):
        if expect.kind == "const":
            if grad is not None:
                raise Mismatch(f"args[{i}] is Const: its gradient must be None")
        elif expect.kind == "dup":
            if grad is not arg.dval:
                raise Mismatch(f"args[{i}] is Duplicated: g[{i}] must be dup.dval itself")
            compared += _check_shadow(i, arg.dval, before, expect, tols, zero, calls)
        else:
            compared += _check_plain(i, arg, grad, expect, tols)
    return compared


def _check_plain(
    i: int, val: Any, grad: Any, expect: ArgExpect, tols: Mapping[str, Tolerance]
) -> int:
    shape_in = list(containers_with_paths(val, f"args[{i}]"))
    shape_out = list(containers_with_paths(grad, f"args[{i}]"))
    if shape_in != shape_out:
        raise Mismatch(
            f"args[{i}]: gradient structure {shape_out} differs from the argument's {shape_in}"
        )
    got = dict(leaves_with_paths(grad, f"args[{i}]"))
    compared = 0
    for path, ref in expect.grads.items():
        if path not in got:
            raise Mismatch(f"{path}: missing from the gradient")
        compared += _check_leaf(path, got[path], ref, expect, tols)
    return compared


def _check_shadow(
    i: int,
    dval: Any,
    before: Any,
    expect: ArgExpect,
    tols: Mapping[str, Tolerance],
    zero: bool,
    calls: int,
) -> int:
    got = list(leaves_with_paths(dval, f"args[{i}]"))
    initial = dict(leaves_with_paths(before, f"args[{i}]"))
    seen: set[int] = set()
    compared = 0
    for path, leaf in got:
        ref = expect.grads.get(path)
        if not isinstance(leaf, np.ndarray) or ref is None or id(leaf) in seen:
            continue
        seen.add(id(leaf))
        total = np.asarray(ref) if zero else initial[path] + calls * np.asarray(ref)
        what = "" if zero else f" (shadow accumulated over {calls} call(s) with zero=False)"
        tol = _tol(tols, expect.dtypes[path])
        assert_close(
            path + " (shadow)", leaf, total, tol, calls * np.asarray(expect.errors[path]), what
        )
        compared += int(np.size(ref))
    return compared


def check_output(got: Any, ref: Any, tols: Mapping[str, Tolerance]) -> int:
    """Check ``withgradient(...).val`` against a plain call's output (rule 5): same
    containers, strings and other objects equal, arrays concrete numpy and close.

    Example:
        >>> import numpy as np
        >>> from adswitch_conformance.case import DEFAULT_TOL
        >>> check_output((1.0, "aux", np.ones(2)), (1.0, "aux", np.ones(2)), DEFAULT_TOL)
        3
    """
    shape_in = list(containers_with_paths(ref, "val"))
    shape_out = list(containers_with_paths(got, "val"))
    if shape_in != shape_out:
        raise Mismatch(f"val: structure {shape_out} differs from a plain call's {shape_in}")
    got_leaves = list(leaves_with_paths(got, "val"))
    compared = 0
    for (path, value), (_, want) in zip(got_leaves, leaves_with_paths(ref, "val"), strict=True):
        if isinstance(want, np.ndarray) and want.ndim > 0:
            if not isinstance(value, np.ndarray):
                raise Mismatch(f"{path}: expected a concrete numpy array, got {type(value)!r}")
            assert_close(path, value, want, _tol(tols, want.dtype.name))
            compared += want.size
        elif _is_concrete_number(want) and not isinstance(want, int | np.integer):
            if not _is_concrete_number(value):
                raise Mismatch(f"{path}: expected a concrete number, got {type(value)!r}")
            dtype = np.asarray(want).dtype.name
            assert_close(path, value, want, _tol(tols, dtype))
            compared += 1
        elif not (value is want or value == want):
            raise Mismatch(f"{path}: expected {want!r}, got {value!r}")
    return compared


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (
            isinstance(a, np.ndarray)
            and isinstance(b, np.ndarray)
            and a.dtype == b.dtype
            and a.shape == b.shape
            and bool(np.array_equal(a, b, equal_nan=a.dtype.kind == "f"))
        )
    if isinstance(a, int | float | complex | str | bytes | type(None)):
        return a is b or a == b
    # Other objects (callables, user classes) cannot be compared by value; their array
    # leaves, if any, are walked separately.
    return True


def check_state(vals: Sequence[Any], expected: Expected, mutation: bool) -> list[str]:
    """Check the caller's arrays after the call: untouched where a plain call leaves
    them untouched; equal to a plain call's result where ``f`` mutates them (only when the
    engine declares ``mutation``). Returns notes on mutated leaves not checked.

    Example:
        >>> import numpy as np
        >>> from adswitch_conformance.reference import Expected
        >>> x = np.ones(2)
        >>> check_state([x], Expected([], None, [x.copy()], [x.copy()]), mutation=False)
        []
    """
    notes: list[str] = []
    now = leaves_with_paths(list(vals), "args")
    pre = leaves_with_paths(expected.pre, "args")
    post = leaves_with_paths(expected.post, "args")
    for (path, current), (_, before), (_, after) in zip(now, pre, post, strict=True):
        if _same(before, after):
            if not _same(current, before):
                raise Mismatch(f"{path}: f does not modify it, but it changed during the call")
        elif mutation:
            if not _same(current, after):
                assert_close(
                    path + " (after the call)",
                    current,
                    after,
                    (1e-9, 1e-12),
                    what="; a plain call of f leaves this value",
                )
        else:
            notes.append(f"{path} (mutated by f) not compared: engine declares no mutation")
    return notes


def check_unchanged(
    label: str, now: Any, before: Any, why: str = "changed although the call raised: data lost"
) -> None:
    """Raise :class:`Mismatch` (``"<path> <why>"``) when ``now`` differs from the snapshot
    ``before``.

    Example:
        >>> import numpy as np
        >>> check_unchanged("dval", np.ones(2), np.ones(2))
    """
    for (path, current), (_, old) in zip(
        leaves_with_paths(now, label), leaves_with_paths(before, label), strict=True
    ):
        if not _same(current, old):
            raise Mismatch(f"{path} {why}")
