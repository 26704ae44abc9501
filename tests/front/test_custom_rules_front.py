"""What the front end of ``adswitch.custom`` adds to every engine's rule hooks: a rule
called from its own ``fwd`` or jvp rule is its plain function (as in jax's examples),
second derivatives through a ``custom_vjp`` go reverse-over-reverse where forward mode
meets the rule, and a transposed ``bwd`` is never taken for a pushforward.

Oracles: closed forms (softmax, ``diag(p) - p p^T``, the clipping rule's own numbers).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import adswitch as ad
from adswitch.errors import NoForwardRuleError, UnsupportedError

ENGINES = [
    pytest.param(
        "torch",
        marks=pytest.mark.skipif(
            __import__("importlib").util.find_spec("torch") is None, reason="torch"
        ),
    ),
    pytest.param(
        "autograd",
        marks=pytest.mark.skipif(
            __import__("importlib").util.find_spec("autograd") is None, reason="autograd"
        ),
    ),
]
X = np.array([0.3, -1.2, 2.0, 0.5])
CALLS: list[str] = []


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max())
    return e / e.sum()


@ad.custom_vjp
def lse(x: Any) -> Any:
    xp = ad.array_namespace(x)
    CALLS.append("f")
    m = xp.max(x)
    return m + xp.log(xp.sum(xp.exp(x - m)))


def _lse_fwd(x: Any) -> tuple[Any, Any]:
    out = lse(x)  # the rule called from its own fwd: its plain function
    return out, (x, out)


def _lse_bwd(res: Any, ct: Any) -> tuple[Any]:
    x, out = res
    return (ad.array_namespace(x).exp(x - out) * ct,)


lse.defvjp(_lse_fwd, _lse_bwd)


@ad.custom_vjp
def clip_grad(x: Any) -> Any:
    return x * 1.0


clip_grad.defvjp(
    lambda x: (clip_grad(x), None),
    lambda _, ct: (ad.array_namespace(ct).clip(ct, -0.5, 0.5),),
)


@ad.custom_jvp
def softplus(x: Any) -> Any:
    xp = ad.array_namespace(x)
    return xp.log(1.0 + xp.exp(x))


@softplus.defjvp
def _softplus_rule(primals: tuple[Any], tangents: tuple[Any]) -> tuple[Any, Any]:
    (x,), (t,) = primals, tangents
    xp = ad.array_namespace(x)
    return softplus(x), t / (1.0 + xp.exp(-x))  # the rule calls the function too


@pytest.mark.parametrize("engine", ENGINES)
def test_fwd_calling_its_rule_is_the_plain_function(engine: str) -> None:
    (g,) = ad.gradient(lse, X, backend=engine)
    np.testing.assert_allclose(np.asarray(g), _softmax(X), rtol=1e-12)


@pytest.mark.parametrize("engine", ENGINES)
def test_jvp_rule_calling_its_function(engine: str) -> None:
    t = np.array([1.0, 2.0, -1.0, 0.5])
    _, tangent = ad.jvp(softplus, (X,), (t,), backend=engine)
    np.testing.assert_allclose(np.asarray(tangent), t / (1 + np.exp(-X)), rtol=1e-12)
    (g,) = ad.gradient(lambda x: ad.array_namespace(x).sum(softplus(x)), X, backend=engine)
    np.testing.assert_allclose(np.asarray(g), 1 / (1 + np.exp(-X)), rtol=1e-12)


@pytest.mark.parametrize("engine", ENGINES)
def test_hessian_and_hvp_through_a_vjp_rule(engine: str) -> None:
    p = _softmax(X)
    want = np.diag(p) - np.outer(p, p)
    ((h,),) = ad.hessian(lse, X, backend=engine)
    np.testing.assert_allclose(np.asarray(h), want, rtol=1e-10, atol=1e-12)
    v = np.array([0.5, -1.0, 2.0, 0.0])
    (hv,) = ad.hvp(lse, (X,), (v,), backend=engine)
    np.testing.assert_allclose(np.asarray(hv), want @ v, rtol=1e-10, atol=1e-12)


def test_reverse_over_reverse_is_remembered() -> None:
    pytest.importorskip("autograd")  # prefers forward-over-reverse: it meets the rule

    def loss(x: Any) -> Any:
        return lse(x) * 2.0

    CALLS.clear()
    ad.hvp(loss, (X,), (X,), backend="autograd")
    first = len(CALLS)  # a forward-over-reverse attempt, then reverse-over-reverse
    CALLS.clear()
    (hv,) = ad.hvp(loss, (X,), (X,), backend="autograd")
    p = _softmax(X)
    np.testing.assert_allclose(np.asarray(hv), 2 * (np.diag(p) - np.outer(p, p)) @ X, rtol=1e-10)
    assert 0 < len(CALLS) < first  # straight to reverse-over-reverse


@pytest.mark.parametrize("engine", ENGINES)
def test_clipping_rule_reverse_is_the_rules(engine: str) -> None:
    (jac,) = ad.jacobian(clip_grad, np.array([2.0, 3.0]), backend=engine, mode="reverse")
    np.testing.assert_allclose(np.asarray(jac), 0.5 * np.eye(2))


@pytest.mark.parametrize("engine", ENGINES)
def test_forward_jacobian_through_a_vjp_rule_is_refused(engine: str) -> None:
    # torch computes forward-mode Jacobians as the transpose of a pullback: the clipped
    # bwd transposed would be the identity (unclipped), a silently wrong number.
    with pytest.raises(NoForwardRuleError, match="custom_jvp"):
        ad.jacobian(clip_grad, np.array([2.0, 3.0]), backend=engine, mode="forward")
    with pytest.raises(UnsupportedError, match="custom_jvp"):
        ad.jvp(clip_grad, (np.array([2.0, 3.0]),), (np.ones(2),), backend=engine)


def test_dual_rules() -> None:
    pytest.importorskip("adswitch_dual")
    (jac,) = ad.jacobian(softplus, X, backend="dual", mode="forward")
    np.testing.assert_allclose(np.asarray(jac), np.diag(1 / (1 + np.exp(-X))), rtol=1e-12)

    def f(x: Any) -> Any:
        return x * ad.stop_gradient(x) + ad.array_namespace(x).sin(x)

    (jac,) = ad.jacobian(f, X, backend="dual", mode="forward")
    np.testing.assert_allclose(np.asarray(jac), np.diag(X + np.cos(X)), rtol=1e-12)
    with pytest.raises(NoForwardRuleError, match="custom_jvp"):
        ad.gradient(lse, X, backend="dual")


@pytest.mark.parametrize("engine", ENGINES)
def test_activity_wrapper_passed_to_a_rule_is_refused(engine: str) -> None:
    from adswitch.errors import UsageError

    def f(x: Any) -> Any:
        return lse(ad.Duplicated(x, x * 0.0))

    with pytest.raises(UsageError, match=r"args\[0\] is an ad.Duplicated wrapper.*pass the array"):
        ad.gradient(f, X, backend=engine)

    @ad.custom_jvp
    def tree_rule(p: Any) -> Any:
        return p["w"] * 1.0

    tree_rule.defjvp(lambda primals, tangents: (primals[0]["w"] * 1.0, tangents[0]["w"]))
    with pytest.raises(UsageError, match=r"args\[0\]\['w'\] is an ad.Const wrapper"):
        ad.gradient(
            lambda x: ad.array_namespace(x).sum(tree_rule({"w": ad.Const(x)})), X, backend=engine
        )
