"""Checks of the operator entries' results against their references (each raises
:class:`~adswitch_conformance.checks.Mismatch` naming the leaf, or returns how many numbers
it compared)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .case import Case, Tolerance
from .checks import Mismatch, assert_close, check_grads, check_output
from .checks_sparse import verify_sparse
from .dense import Ref
from .entries import Got
from .reference import Expected
from .reference_ops import RESULT
from .trees import containers_with_paths, leaves_with_paths

__all__ = ["check_tree", "verify_operator"]


def _tol(tols: Mapping[str, Tolerance], dtype: str) -> Tolerance:
    return tols.get(dtype, tols["float64"])


def _check_ref(path: str, got: Any, ref: Ref, tols: Mapping[str, Tolerance]) -> int:
    value = np.asarray(ref.value)
    if ref.python_float:
        if type(got) is not float:
            raise Mismatch(f"{path}: expected a Python float, got {type(got).__name__}")
    elif value.ndim == 0 and isinstance(got, np.floating | float) and not isinstance(got, bool):
        # A 0-d result may come back as a numpy scalar (or a float for float64).
        dtype = "float64" if type(got) is float else np.asarray(got).dtype.name
        if dtype != ref.dtype:
            raise Mismatch(f"{path}: dtype {dtype}, expected {ref.dtype}")
    elif not isinstance(got, np.ndarray):
        raise Mismatch(f"{path}: expected a numpy {ref.dtype} array, got {type(got).__name__}")
    elif got.dtype.name != ref.dtype:
        raise Mismatch(f"{path}: dtype {got.dtype.name}, expected {ref.dtype}")
    assert_close(path, got, value, _tol(tols, ref.dtype), ref.error)
    return int(value.size)


def check_tree(label: str, got: Any, want: Any, tols: Mapping[str, Tolerance]) -> int:
    """Check a result tree against a tree of :class:`Ref` (and ``None``) leaves: the
    same containers, ``None`` exactly where expected, numbers close in the right dtype.

    Example:
        >>> from adswitch_conformance.case import DEFAULT_TOL
        >>> want = (Ref(np.ones(2), 0.0, "float64"), None)
        >>> check_tree("jacobian", (np.ones(2), None), want, DEFAULT_TOL)
        2
    """
    shape_want = list(containers_with_paths(want, label))
    shape_got = list(containers_with_paths(got, label))
    if shape_got != shape_want:
        raise Mismatch(f"{label}: structure {shape_got} differs from the expected {shape_want}")
    got_leaves = dict(leaves_with_paths(got, label))
    compared = 0
    for path, ref in leaves_with_paths(want, label):
        value = got_leaves[path]
        if ref is None:
            if value is not None:
                raise Mismatch(
                    f"{path}: expected None (Const, not floating, or a later tie), got "
                    f"{type(value).__name__}"
                )
            continue
        compared += _check_ref(path, value, ref, tols)
    return compared


def _parts(result: Any, n: int, what: str) -> tuple[Any, ...]:
    if not isinstance(result, tuple) or len(result) != n:
        got = f"{type(result).__name__}" + (
            f" of length {len(result)}" if isinstance(result, tuple | list) else ""
        )
        raise Mismatch(f"expected {what}, got {got}")
    return result


def _outputs(case: Case, y: Any, aux: Any, expected: Expected, tols: Any) -> int:
    if case.has_aux:
        ref_y, ref_aux = _parts(expected.output, 2, "f to return (y, aux)")
        return check_output(y, ref_y, tols) + check_output(aux, ref_aux, tols)
    return check_output(y, expected.output, tols)


def verify_operator(
    case: Case,
    args: Sequence[Any],
    got: Got,
    expected: Expected,
    dvals_before: Sequence[Any],
) -> int:
    """Check one operator case's result (and outputs) against the reference.

    Returns:
        How many numbers were compared.
    """
    entry, tols = case.entry, case.tol
    aux_n = 1 if case.has_aux else 0
    if entry == "vjp":
        parts = _parts(got.result, 2 + aux_n, "(y, pullback" + (", aux)" if aux_n else ")"))
        compared = _outputs(case, parts[0], parts[2] if aux_n else None, expected, tols)
        if len(got.pulled) != len(expected.per_call):
            raise Mismatch(f"{len(got.pulled)} pullback results for {len(expected.per_call)}")
        for pulled, expects in zip(got.pulled, expected.per_call, strict=True):
            ref = Expected(expects, expected.output, expected.pre, expected.post)
            compared += check_grads(pulled, args, ref, tols, dvals_before, case.zero, 1)
        return compared
    if entry == "hvp":
        return check_grads(
            got.result, args, expected, tols, dvals_before, case.zero, case.repeat_same
        )
    label = RESULT[entry]
    if entry == "jvp":
        parts = _parts(got.result, 2 + aux_n, "(y, tangent" + (", aux)" if aux_n else ")"))
        compared = _outputs(case, parts[0], parts[2] if aux_n else None, expected, tols)
        return compared + check_tree(label, parts[1], expected.tree, tols)
    if case.sparse is not None:  # (csr_array blocks, densified: adswitch_conformance.checks_sparse)
        return verify_sparse(case, args, got.result, expected, check_tree, label)
    if entry == "jacobian" and case.has_aux:
        jac, aux = _parts(got.result, 2, "(jacobian, aux)")
        return check_tree(label, jac, expected.tree, tols) + check_output(
            aux, _parts(expected.output, 2, "f to return (y, aux)")[1], tols
        )
    return check_tree(label, got.result, expected.tree, tols)
