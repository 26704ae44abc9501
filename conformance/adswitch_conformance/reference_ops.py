"""References for the operator entries, laid out as adswitch returns them.

From one dense matrix per case (:mod:`~adswitch_conformance.dense`): the Jacobian ``J`` of
the differentiated outputs for ``vjp`` (``J^T u``), ``jvp`` (``J v``), ``jacobian`` and
``derivative`` (a column); the Hessian ``H`` of the loss for ``hessian`` and ``hvp``
(``H v``). Each is then placed in the operator's layout with the suite's own tree walker:
gradient-like entries as per-argument :class:`ArgExpect` (ties at their first place,
``None`` at ``Const``), the others as a tree of :class:`Ref` leaves. A ``closed_form``
(``jacobian``, ``hessian``, ``derivative``) gives the values of the same tree instead.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import numpy as np

from .case import GRADIENT_ENTRIES, TREE_ENTRIES, Case
from .dense import Ref, Slot, dense_hessian, dense_jacobian, flat_values, input_slots, output_slots
from .reference import ArgExpect, Expected, build_expected, loss_of, unwrap
from .trees import leaves_with_paths, unflatten_like

__all__ = ["expected_for", "build_operator_expected", "y_part", "RESULT"]

RESULT = {"jvp": "tangent", "jacobian": "jacobian", "hessian": "hessian", "derivative": "dy/dx"}
"""The path prefix of each tree entry's result in messages."""


def y_part(case: Case, out: Any) -> Any:
    """The differentiated part of ``f``'s output: all of it, or ``y`` of ``(y, aux)``."""
    return out[0] if case.has_aux else out


def expected_for(case: Case, args: Sequence[Any]) -> Expected:
    """The reference for any entry (gradient entries: :func:`build_expected`)."""
    if case.entry in GRADIENT_ENTRIES:
        return build_expected(case, args)
    return build_operator_expected(case, args)


def _piece(matrix: Any, rows: slice, cols: slice, shape: tuple[int, ...]) -> Any:
    return np.asarray(matrix[rows, cols]).reshape(shape)


def _grad_expects(
    kinds: Sequence[str], vals: Sequence[Any], inputs: Sequence[Slot], vec: Any, err: Any
) -> list[ArgExpect]:
    """Per argument, the expectation for a gradient-shaped result ``vec`` over the inputs."""
    by_path = {slot.path: slot for slot in inputs}
    expects = []
    for i, (kind, val) in enumerate(zip(kinds, vals, strict=True)):
        expect = ArgExpect(kind)
        if kind != "const":
            for path, _ in leaves_with_paths(val, f"args[{i}]"):
                slot = by_path.get(path)
                value: Any = None
                error: Any = None
                if slot is not None:
                    value = np.asarray(vec[slot.span]).reshape(slot.shape)
                    error = np.asarray(err[slot.span]).reshape(slot.shape)
                    if slot.python_float:
                        value, error = float(value), float(error)
                expect.grads[path] = value
                expect.errors[path] = 0.0 if error is None else error
                expect.dtypes[path] = slot.dtype if slot is not None else "float64"
        expects.append(expect)
    return expects


def _accumulate(calls: list[list[ArgExpect]], zero: bool) -> list[list[ArgExpect]]:
    """A shadow ends holding the last call's result (``zero=True``) or the sum of all
    calls' (``zero=False``): every call's expectation for it is that final state."""
    if not calls:
        return calls
    final = []
    for i, last in enumerate(calls[-1]):
        if last.kind != "dup" or zero:
            final.append(last)
            continue
        total = ArgExpect("dup", dtypes=dict(last.dtypes))
        for path in last.grads:
            parts = [c[i].grads[path] for c in calls]
            total.grads[path] = None if parts[0] is None else sum(parts)
            total.errors[path] = sum(np.asarray(c[i].errors[path]) for c in calls)
        final.append(total)
    return [[final[i] if e.kind == "dup" else e for i, e in enumerate(c)] for c in calls]


def _tangent_tree(y: Any, outputs: Sequence[Slot], vec: Any, err: Any) -> Any:
    by_k = {slot.k: slot for slot in outputs}
    refs: list[Ref | None] = []
    for k, _ in enumerate(leaves_with_paths(y, "y")):
        slot = by_k.get(k)
        if slot is None:
            refs.append(None)
            continue
        refs.append(
            Ref(
                np.asarray(vec[slot.span]).reshape(slot.shape),
                np.asarray(err[slot.span]).reshape(slot.shape),
                slot.dtype,
                slot.python_float,
            )
        )
    return unflatten_like(y, refs)


def _per_argument(
    kinds: Sequence[str], vals: Sequence[Any], inputs: Sequence[Slot], block: Any
) -> tuple[Any, ...]:
    """A gradient-like tuple: per argument ``None`` (``Const``) or its tree with
    ``block(slot)`` at each input's first place and ``None`` at every other leaf."""
    by_path = {slot.path: slot for slot in inputs}
    out: list[Any] = []
    for i, (kind, val) in enumerate(zip(kinds, vals, strict=True)):
        if kind == "const":
            out.append(None)
            continue
        paths = [path for path, _ in leaves_with_paths(val, f"args[{i}]")]
        out.append(
            unflatten_like(val, [block(by_path[p]) if p in by_path else None for p in paths])
        )
    return tuple(out)


def _promote(a: str, b: str) -> str:
    return str(np.result_type(np.dtype(a), np.dtype(b)).name)


def _jacobian_tree(
    y: Any,
    outputs: Sequence[Slot],
    kinds: Sequence[str],
    vals: Sequence[Any],
    inputs: Sequence[Slot],
    J: Any,
    err: Any,
) -> Any:
    by_k = {slot.k: slot for slot in outputs}

    def entry(o: Slot) -> tuple[Any, ...]:
        def block(s: Slot) -> Ref:
            shape = o.shape + s.shape
            return Ref(
                _piece(J, o.span, s.span, shape),
                _piece(err, o.span, s.span, shape),
                _promote(o.dtype, s.dtype),
                s.python_float and o.shape == (),
            )

        return _per_argument(kinds, vals, inputs, block)

    leaves = [
        entry(by_k[k]) if k in by_k else None for k, _ in enumerate(leaves_with_paths(y, "y"))
    ]
    return unflatten_like(y, leaves)


def _hessian_tree(
    kinds: Sequence[str], vals: Sequence[Any], inputs: Sequence[Slot], H: Any, err: Any
) -> Any:
    def row(a: Slot) -> tuple[Any, ...]:
        def block(b: Slot) -> Ref:
            shape = a.shape + b.shape
            return Ref(
                _piece(H, a.span, b.span, shape),
                _piece(err, a.span, b.span, shape),
                _promote(a.dtype, b.dtype),
                a.python_float and b.python_float,
            )

        return _per_argument(kinds, vals, inputs, block)

    return _per_argument(kinds, vals, inputs, row)


def _fill_closed_form(case: Case, tree: Any, vals: Sequence[Any]) -> None:
    """Replace the values of ``tree``'s :class:`Ref` leaves by the closed form's."""
    assert case.closed_form is not None
    prefix = RESULT[case.entry]
    closed = dict(leaves_with_paths(case.closed_form(*copy.deepcopy(list(vals))), prefix))
    for path, ref in leaves_with_paths(tree, prefix):
        if isinstance(ref, Ref):
            if closed.get(path) is None:
                raise ValueError(f"{case.id}: the closed form has no value at {path}")
            value = closed[path]
            ref.value = float(value) if ref.python_float else np.asarray(value, np.float64)
            ref.error = 0.0


def build_operator_expected(case: Case, args: Sequence[Any]) -> Expected:
    """The reference of an operator case at ``args`` (which it does not modify).

    Example:
        >>> import numpy as np
        >>> case = Case("o.x", "operators", "x cubed", lambda x: x**3, lambda: (),
        ...             entry="jvp", seeds=lambda: (np.ones(2),))
        >>> ref = build_operator_expected(case, (np.array([1.0, 2.0]),))
        >>> np.round(ref.tree.value, 8).tolist()
        [3.0, 12.0]
    """
    kinds, vals = zip(*(unwrap(a) for a in args), strict=True) if args else ((), ())
    fn = case.ref_fn or case.fn
    pre, post = copy.deepcopy(list(vals)), copy.deepcopy(list(vals))
    output = fn(*post)
    expected = Expected([], output, pre, post)
    active = [kind in ("plain", "dup") for kind in kinds]
    if case.entry == "derivative":
        active = [i == 0 for i in range(len(kinds))]
    seeds = case.seeds() if case.seeds is not None else ()
    inputs = input_slots(vals, active)
    closed = case.closed_form is not None and case.entry in TREE_ENTRIES
    if case.entry in ("hessian", "hvp"):
        n = sum(s.size for s in inputs)
        if closed:
            H, H_err = np.zeros((n, n)), np.zeros((n, n))
        else:
            H, H_err, _ = dense_hessian(lambda a: loss_of(fn, a), vals, active)
        if case.entry == "hessian":
            expected.tree = _hessian_tree(kinds, vals, inputs, H, H_err)
        else:
            v = flat_values(list(seeds), inputs, "args")
            expected.args = _grad_expects(kinds, vals, inputs, H @ v, H_err @ np.abs(v))
    else:
        y = y_part(case, output)
        outputs = output_slots(y)
        if closed:
            m, n = sum(s.size for s in outputs), sum(s.size for s in inputs)
            J, J_err = np.zeros((m, n)), np.zeros((m, n))
        else:
            J, J_err, _, _ = dense_jacobian(lambda a: y_part(case, fn(*a)), vals, active)
        if case.entry == "vjp":
            calls = []
            for u in seeds:
                flat_u = flat_values(u, outputs, "y")
                calls.append(
                    _grad_expects(kinds, vals, inputs, J.T @ flat_u, J_err.T @ np.abs(flat_u))
                )
            expected.per_call = _accumulate(calls, case.zero)
            expected.args = expected.per_call[-1] if calls else []
        elif case.entry == "jvp":
            v = flat_values(list(seeds), inputs, "args")
            expected.tree = _tangent_tree(y, outputs, J @ v, J_err @ np.abs(v))
        elif case.entry == "derivative":
            expected.tree = _tangent_tree(y, outputs, J[:, 0], J_err[:, 0])
        else:
            expected.tree = _jacobian_tree(y, outputs, kinds, vals, inputs, J, J_err)
    if closed:
        _fill_closed_form(case, expected.tree, vals)
    return expected
