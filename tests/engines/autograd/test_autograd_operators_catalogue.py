"""The autograd engine's operator primitives on the whole conformance catalogue.

Every case that expects numbers (not an error, not a kink's subgradient set) is run
through the native primitives instead of ``ad.gradient``, and checked against the
catalogue's own independent references (Richardson finite differences, closed forms):

* ``vjp``: the loss's pullback of ``1`` is the gradient -- through the conformance
  runner, so shadows, the caller's arrays after a mutating ``f``, outputs and a second
  run on fresh arguments are all checked as for ``ad.gradient``;
* ``vjp_apply`` (``ad.jacobian(mode="reverse")``) and the batched ``jvp``
  (``ad.jacobian(mode="forward")``, one tangent per input element) of the scalar loss:
  the gradient again;
* the single ``jvp``: the directional derivative along a random tangent is the
  reference gradient's inner product with it.

Mutation cases are included: writes inside ``f`` must be differentiated by every
primitive as ``value_and_grad`` differentiates them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import pytest

pytest.importorskip("autograd")

import adswitch_autograd.namespace as autograd_namespace
from adswitch_conformance.capabilities import engine_capabilities
from adswitch_conformance.cases import catalogue
from adswitch_conformance.reference import build_expected, first_output, unwrap
from adswitch_conformance.runner import PASS, run_case
from adswitch_conformance.trees import is_float_leaf, leaves_with_paths, map_unique

import adswitch as ad
from adswitch.errors import AdswitchError

B = "autograd"


class Result(NamedTuple):
    """What ``ad.withgradient`` returns, for the runner."""

    val: Any
    grad: Any


def _numeric(case: Any, duplicated_ok: bool = True) -> bool:
    if case.raises is not None or case.check is not None:
        return False
    if duplicated_ok:
        return True
    return not any(isinstance(a, ad.Duplicated) for a in case.make_args())


# The gradient cases (the operators family runs through the runner's own callers); the
# linalg family once autograd's namespace has ``xp.linalg`` (until then each case is an
# AttributeError: an ERROR of `adswitch conformance`, not of the primitives here).
_FAMILIES_OUT = set() if hasattr(autograd_namespace, "linalg") else {"linalg"}
# Cases needing a dtype autograd does not declare (float16) are refused before f runs,
# as declared: nothing for its primitives to compute.
_DECLARED = set(engine_capabilities("autograd").dtypes)
GRADIENT_CASES = [
    c
    for c in catalogue()
    if c.entry in ("gradient", "withgradient")
    and c.family not in _FAMILIES_OUT
    and not any(r.startswith("float") and r not in _DECLARED for r in c.requires)
]
CASES = [c for c in GRADIENT_CASES if _numeric(c)]
CASES_PLAIN = [c for c in GRADIENT_CASES if _numeric(c, duplicated_ok=False)]
# Repeated eigenvalues / singular values: autograd's forward mode refuses a direction that
# would split them (UnsupportedError, documented in its linalg rules) -- a clear error,
# which the forward-mode tests below would count as a failure. (The trace at the identity:
# a forward-mode Jacobian pushes the unit directions E_ij, which split the eigenvalues.)
_FORWARD_REFUSED = ("_repeated", ".degenerate_eigvalsh_trace")
# The README's known limit: in forward mode an infinite tangent (sqrt at 0) times a zero
# constant downstream is nan; reverse mode (the cases' own entry) is right.
_FORWARD_LIMIT = ("kinks.sqrt_zero_weight", "kinks.sqrt_zero_weight_float32")
CASES_FORWARD = [
    c for c in CASES_PLAIN if not c.id.endswith(_FORWARD_REFUSED) and c.id not in _FORWARD_LIMIT
]


def _mixed_float_dtypes(case: Any) -> bool:
    """Inputs of two float dtypes: a Jacobian comes in the output's dtype (adswitch's
    convention), not per input as a gradient does, so it is not compared as one."""
    dtypes = {
        np.dtype(v.dtype)
        for a in case.make_args()
        for _, v in leaves_with_paths(unwrap(a)[1], "")
        if is_float_leaf(v) and hasattr(v, "dtype")
    }
    return len(dtypes) > 1


CASES_JACOBIAN = [c for c in CASES_PLAIN if not _mixed_float_dtypes(c)]


def _forward_refused(case: Any, run: Callable[[], Any]) -> bool:
    """A case through an ``ad.custom_vjp`` (a reverse rule: no pushforward) may refuse
    forward mode with the documented error naming the fix; True when it did."""
    if "custom_vjp" not in case.requires:
        return False
    try:
        run()
    except ad.UnsupportedError as exc:
        assert "custom_jvp" in str(exc) or "mode=" in str(exc), str(exc)
        return True
    return False


def _loss_and_all(fn: Callable[..., Any]) -> Callable[..., Any]:
    def f(*args: Any) -> Any:
        out = fn(*args)
        return first_output(out), out

    return f


def _unit(y: Any) -> Any:
    return 1.0 if isinstance(y, float) else np.ones((), dtype=y.dtype)


def _vjp_caller(entry: str, fn: Callable[..., Any], args: tuple[Any, ...], backend: str,
                zero: bool) -> Any:  # fmt: skip
    y, pullback, out = ad.vjp(_loss_and_all(fn), *args, backend=backend, has_aux=True, zero=zero)
    grads = pullback(_unit(y))
    return grads if entry == "gradient" else Result(out, grads)


def _jacobian_caller(mode: str) -> Callable[..., Any]:
    def caller(entry: str, fn: Callable[..., Any], args: tuple[Any, ...], backend: str,
               zero: bool) -> Any:  # fmt: skip
        jac, out = ad.jacobian(_loss_and_all(fn), *args, backend=backend, mode=mode, has_aux=True)
        return jac if entry == "gradient" else Result(out, jac)

    return caller


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_vjp_pullback_gives_the_reference_gradient(case: Any) -> None:
    record = run_case(case, B, caller=_vjp_caller)
    assert record.outcome == PASS, record.message


@pytest.mark.parametrize(
    ("case", "mode"),
    [
        pytest.param(c, m, id=f"{c.id}-{m}")
        for c in CASES_JACOBIAN
        for m in ("reverse", "forward")
        if not (m == "forward" and c.id in _FORWARD_LIMIT)  # the known limit above
    ],
)
def test_jacobian_of_the_loss_gives_the_reference_gradient(case: Any, mode: str) -> None:
    if mode == "forward" and case not in CASES_FORWARD:
        with pytest.raises(ad.UnsupportedError, match="repeated"):
            ad.jacobian(
                _loss_and_all(case.fn), *case.make_args(), backend=B, mode=mode, has_aux=True
            )
        return
    if mode == "forward" and _forward_refused(
        case,
        lambda: ad.jacobian(
            _loss_and_all(case.fn), *case.make_args(), backend=B, mode=mode, has_aux=True
        ),
    ):
        return
    record = run_case(case, B, caller=_jacobian_caller(mode))
    assert record.outcome == PASS, record.message


def _random_tangents(vals: list[Any], kinds: list[str], seed: int) -> list[Any]:
    rng = np.random.default_rng(seed)

    def tangent(leaf: Any) -> Any:
        if not is_float_leaf(leaf):
            return None
        if isinstance(leaf, float):
            return float(rng.standard_normal())
        return rng.standard_normal(leaf.shape).astype(leaf.dtype)

    tangents = map_unique(tangent, vals)  # one tangent per object: ties stay tied
    return [None if kind == "const" else t for kind, t in zip(kinds, tangents, strict=True)]


@pytest.mark.parametrize("case", CASES_FORWARD, ids=lambda c: c.id)
def test_jvp_gives_the_reference_directional_derivative(case: Any) -> None:
    args = case.make_args()
    expected = build_expected(case, args)
    kinds, vals = (list(t) for t in zip(*(unwrap(a) for a in args), strict=True))
    # A plain argument without a floating leaf (a bare int) has no tangent ad.jvp takes
    # (None reads as "no tangent tree"): pass it as the constant it is.
    for i, val in enumerate(vals):
        if kinds[i] == "plain" and not any(is_float_leaf(v) for _, v in leaves_with_paths(val, "")):
            kinds[i], args = "const", (*args[:i], ad.Const(val), *args[i + 1 :])
    tangents = _random_tangents(vals, kinds, seed=len(case.id))
    along = dict(leaves_with_paths(tangents, "args"))
    want, slack = 0.0, 0.0
    for expect in expected.args:
        for path, ref in expect.grads.items():
            if ref is not None:
                want += float(np.sum(np.asarray(ref) * np.asarray(along[path], np.float64)))
                slack += float(np.sum(np.abs(expect.errors[path]) * np.abs(along[path])))
    if _forward_refused(
        case,
        lambda: ad.jvp(
            lambda *a: first_output(case.fn(*a)), tuple(args), tuple(tangents), backend=B
        ),
    ):
        return
    try:
        y, dy = ad.jvp(
            lambda *a: first_output(case.fn(*a)), tuple(args), tuple(tangents), backend=B
        )
    except case.also_ok as exc:  # the case accepts this documented refusal
        assert isinstance(exc, AdswitchError)
        return
    float32 = any(getattr(v, "dtype", None) == np.float32 for v in [y, *vals])
    rtol, atol = (2e-3, 2e-4) if float32 else (1e-7, 1e-9)
    assert float(dy) == pytest.approx(want, rel=rtol, abs=atol + slack)
