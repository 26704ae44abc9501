"""Sparse Jacobian and Hessian cases (``ad.jacobian(..., sparsity=...)``,
``ad.hessian(..., sparsity=...)``): what a case asks for (:class:`Sparse`) and the check
of its result -- every block a 2-D sparse matrix of the inputs' kind
(``scipy.sparse.csr_array`` for numpy, ``torch.sparse_csr_tensor`` for torch, jax's
``BCOO`` for jax), densified into the dense ``ad.jacobian``'s layout and compared with
the dense reference (finite differences or a closed form: an entry the pattern dropped
shows there), and the colorings' sizes against their known optima. ``check=True`` in
the call compares with the engine's dense operator as well (adswitch raises where they
differ)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .case import Case
from .checks import Mismatch, check_output
from .dense import Ref
from .reference import Expected, unwrap
from .trees import children, leaves_with_paths, rebuild

__all__ = [
    "Sparse",
    "densified",
    "sparse_kind",
    "sparse_options",
    "sparse_under",
    "to_dense",
    "verify_sparse",
]


@dataclass(frozen=True)
class Sparse:
    """How a case calls the sparse ``ad.jacobian``, and the colorings it expects.

    Attributes:
        sparsity: ``"detect"``, a pattern, or a callable of the case's argument values
            giving one (built when the case runs: detection is not the harness's import).
        check: the ``check=`` keyword (the dense operator compared inside adswitch).
        columns: the number of column colors (``mode="forward"``; for a Hessian, its
            colors) the pattern needs, when known (checked against adswitch's coloring).
        rows: the number of row colors (``mode="reverse"``), when known.
    """

    sparsity: Any = "detect"
    check: bool = True
    columns: int | None = None
    rows: int | None = None


def sparse_options(case: Case, args: Sequence[Any] | None = None) -> dict[str, Any]:
    """The ``sparsity=`` and ``check=`` keywords of a sparse case (none for the others).

    Example:
        >>> from adswitch_conformance.case import Case
        >>> sparse_options(Case("s.x", "sparse", "x", abs, tuple, entry="jacobian",
        ...                     sparse=Sparse()))
        {'sparsity': 'detect', 'check': True}
    """
    spec = case.sparse
    if spec is None:
        return {}
    pattern = spec.sparsity
    if callable(pattern):
        pattern = pattern(*[unwrap(a)[1] for a in (args if args is not None else case.make_args())])
    return {"sparsity": pattern, "check": spec.check}


def sparse_under(case: Case, kind: str, caller: Any) -> tuple[str | None, Any]:
    """Whether a sparse case runs under the transform ``kind`` (``--under``), and its
    caller there: ``(reason to skip, None)``, or ``(None, the caller with check=False)``.

    adswitch serves a sparse ``ad.jacobian`` (``ad.hessian``) under ``jit`` for one
    differentiated bare array (the engine decompresses the traced pushforwards: jax's
    ``sparse_gather``);
    everything else builds its matrices on the host (refused there with a
    ``UsageError``, which ``tests/concerns/sparse/test_sparse_refusals.py`` checks). ``check=True``
    compares with the dense values, which a trace has not: inside the transform the
    case runs with ``check=False``, its result still checked against the reference here.
    """
    what = "Hessian" if case.entry == "hessian" else "Jacobian"
    if kind != "jit":
        return f"a sparse {what} under {kind}: the harness checks rows of arrays", None
    kinds = [unwrap(a) for a in case.make_args()]
    plain = [value for k, value in kinds if k != "const"]
    if len(plain) != 1 or not isinstance(plain[0], np.ndarray):
        return f"a sparse {what} of several arguments or a tree: built on the host", None

    def call(entry: str, fn: Any, args: Any, backend: str, zero: bool, **o: Any) -> Any:
        return caller(entry, fn, args, backend, zero, **{**o, "check": False})

    return None, call


def sparse_kind(x: Any) -> str | None:
    """``"scipy"``, ``"torch"`` or ``"jax"`` for a 2-D sparse matrix of that library (a
    ``csr_array``, a ``torch.sparse_csr_tensor``, a ``BCOO``), else ``None``; engines are
    looked up in ``sys.modules``, never imported.

    Example:
        >>> import numpy as np, scipy.sparse as sp
        >>> sparse_kind(sp.csr_array(np.eye(2))), sparse_kind(np.eye(2))
        ('scipy', None)
    """
    from scipy import sparse

    if isinstance(x, sparse.csr_array):
        return "scipy"
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor) and x.layout == torch.sparse_csr:
        return "torch"
    jsparse = sys.modules.get("jax.experimental.sparse")
    if jsparse is not None and isinstance(x, jsparse.BCOO):
        return "jax"
    return None


def _is_csr(x: Any) -> bool:
    return sparse_kind(x) is not None


def to_dense(x: Any) -> np.ndarray:
    """A sparse block of :func:`sparse_kind` as a dense numpy matrix (off the device)."""
    kind = sparse_kind(x)
    if kind == "scipy":
        return np.asarray(x.toarray())
    if kind == "torch":
        return np.asarray(x.to_dense().cpu().numpy())
    if isinstance(x.data, np.ndarray) and x.n_batch == 0 and x.n_dense == 0:
        # (a BCOO that left jax.jit with numpy leaves: densified in numpy, in its dtype --
        # jax's todense outside 64-bit mode would give float32)
        out = np.zeros(x.shape, dtype=x.data.dtype)
        np.add.at(out, tuple(np.asarray(x.indices).T), x.data)
        return out
    return np.asarray(x.todense())


def _kind_of_input(value: Any) -> str:
    """The sparse kind a block whose input is ``value`` should have: the input array's
    library (scipy for numpy and Python floats)."""
    module = type(value).__module__.partition(".")[0]
    return {"torch": "torch", "jax": "jax", "jaxlib": "jax"}.get(module, "scipy")


def densified(got: Any, want: Any, n_args: int, single: int | None, hessian: bool) -> Any:
    """``got`` with each sparse block (:func:`sparse_kind`) as a dense array of its
    reference's shape; a bare sparse matrix (one plain argument, one array output) first
    put at argument ``single`` of the dense layout's per-argument tuple (for a Hessian,
    its row's too). Other leaves stay (and fail the type check there)."""
    if _is_csr(got) and single is not None and isinstance(want, tuple):
        row = tuple(got if i == single else None for i in range(n_args))
        got = tuple(row if i == single else None for i in range(n_args)) if hessian else row
    return _dense(got, want)


def _dense(got: Any, want: Any) -> Any:
    if _is_csr(got):
        shape = np.shape(want.value) if isinstance(want, Ref) else None
        if shape is None or got.shape[0] * got.shape[1] != int(np.prod(shape)):
            return got  # (the wrong block: the tree check names it)
        return to_dense(got).reshape(shape)
    kids, want_kids = children(got), children(want)
    if kids is None or want_kids is None or len(kids) != len(want_kids):
        return got
    return rebuild(got, [_dense(k, w) for (_, k), (_, w) in zip(kids, want_kids)])


def verify_sparse(
    case: Case,
    args: Sequence[Any],
    result: Any,
    expected: Expected,
    check_tree: Callable[[str, Any, Any, Any], int],
    label: str = "jacobian",
) -> int:
    """Check a sparse case's result (``label``: ``"jacobian"`` or ``"hessian"``; with
    ``has_aux``, the pair ``(sparse result, aux)``, aux against ``f``'s own); returns how
    many numbers were compared."""
    aux_compared = 0
    if case.has_aux:
        if not isinstance(result, tuple) or len(result) != 2:
            got = type(result).__name__
            raise Mismatch(f"{label}: expected the pair (sparse {label}, aux), got a {got}")
        result, aux = result
        aux_compared = check_output(aux, expected.output[1], case.tol)
    blocks = [leaf for _, leaf in leaves_with_paths(result, label) if leaf is not None]
    if not blocks or not all(_is_csr(b) for b in blocks):
        kinds = sorted({type(b).__name__ for b in blocks})
        raise Mismatch(f"{label}: expected 2-D sparse matrix blocks, got {kinds}")
    _check_kinds(blocks, args)
    kinds = [unwrap(a)[0] for a in args]
    plain = [i for i, k in enumerate(kinds) if k != "const"]
    single = plain[0] if len(plain) == 1 else None
    dense = densified(result, expected.tree, len(args), single, label == "hessian")
    compared = check_tree(label, dense, expected.tree, case.tol)
    _check_colors(case, args)
    return compared + aux_compared


def _check_kinds(blocks: Sequence[Any], args: Sequence[Any]) -> None:
    """Each block is of its inputs' kind: numpy inputs give scipy whatever the engine;
    torch (jax) inputs their engine's sparse type, or scipy (the engine hook that builds
    it is optional)."""
    inputs = [
        leaf
        for kind, value in map(unwrap, args)
        if kind != "const"
        for _, leaf in leaves_with_paths(value, "")
    ]
    allowed = {_kind_of_input(v) for v in inputs} | {"scipy"}
    got = {sparse_kind(b) for b in blocks}
    if all(sparse_kind(b) == "jax" and isinstance(b.data, np.ndarray) for b in blocks):
        # (a BCOO that left jax.jit, its leaves made numpy by the harness: the inputs
        # adswitch saw were jax's tracers, not the case's numpy arrays)
        allowed.add("jax")
    if not got <= allowed:
        raise Mismatch(
            f"sparse blocks of kind {sorted(str(k) for k in got)} for inputs of kind "
            f"{sorted(allowed)} (numpy inputs give scipy.sparse.csr_array)"
        )


def _check_colors(case: Case, args: Sequence[Any]) -> None:
    """The colors adswitch's coloring gives the case's pattern (read from a call prepared
    on the tape: the coloring is the front end's, the same for every engine) against the
    known optima."""
    import adswitch as ad

    spec, sparsity = case.sparse, sparse_options(case, args)["sparsity"]
    sides: list[tuple[str, int | None, dict[str, Any]]]
    if case.entry == "hessian":
        sides = [("Hessian", spec.columns, {})]
        operator = ad.hessian
    else:
        aux = {"has_aux": case.has_aux}
        sides = [("column", spec.columns, {"mode": "forward", **aux})]
        sides.append(("row", spec.rows, {"mode": "reverse", **aux}))
        operator = ad.jacobian
    for side, want, mode in sides:
        if want is None:
            continue
        prepared = ad.prepare(operator, case.fn, *args, backend="tape", sparsity=sparsity, **mode)
        got = int(np.max(prepared.colors, initial=-1)) + 1
        if got != want:
            raise Mismatch(f"{side} coloring: {got} colors, the known optimum is {want}")
