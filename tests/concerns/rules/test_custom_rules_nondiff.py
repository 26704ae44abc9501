"""A rule's non-differentiated argument that is traced by the enclosing call is refused on
every engine (its derivative would be dropped silently); ``ad.stop_gradient`` of it is
the way to say the derivative is meant to be dropped. Oracle: closed forms."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import adswitch as ad

ENGINES = ["tape", "torch", "jax", "autograd"]
X = np.array([0.7, -1.3, 2.1, 0.4])


def _engine(name: str) -> str:
    if name != "tape":
        pytest.importorskip(name)
    return name


scale_vjp = ad.custom_vjp(lambda x, k: x * k, nondiff_argnums=(1,))
scale_vjp.defvjp(lambda x, k: (x * k, None), lambda k, _, ct: (ct * k,))
scale_jvp = ad.custom_jvp(lambda x, k: x * k, nondiff_argnums=(1,))
scale_jvp.defjvp(lambda k, primals, tangents: (primals[0] * k, tangents[0] * k))
RULES: dict[str, Any] = {"custom_vjp": scale_vjp, "custom_jvp": scale_jvp}


def _sum(x: Any) -> Any:
    return ad.array_namespace(x).sum(x)


@pytest.mark.parametrize("kind", list(RULES))
@pytest.mark.parametrize("engine", ENGINES)
def test_traced_nondiff_argument_is_refused(engine: str, kind: str) -> None:
    rule = RULES[kind]
    with pytest.raises(ad.UsageError, match=r"args\[1\] is in nondiff_argnums.*stop_gradient"):
        ad.gradient(lambda x: _sum(rule(x, x[0] ** 2)), X, backend=_engine(engine))


@pytest.mark.parametrize("kind", list(RULES))
@pytest.mark.parametrize("engine", ENGINES)
def test_stopped_nondiff_argument_drops_its_derivative(engine: str, kind: str) -> None:
    rule = RULES[kind]
    (g,) = ad.gradient(
        lambda x: _sum(rule(x, ad.stop_gradient(x[0] ** 2))), X, backend=_engine(engine)
    )
    assert isinstance(g, np.ndarray)  # (a plain array: no tracer of the call leaks out)
    np.testing.assert_allclose(g, np.full(4, X[0] ** 2), rtol=1e-12)


@pytest.mark.parametrize("engine", ENGINES)
def test_constant_nondiff_argument_of_a_const_input(engine: str) -> None:
    # a Const argument carries no derivative: passing it nondiff is fine
    (g, _) = ad.gradient(
        lambda x, c: _sum(scale_vjp(x, c)), X, ad.Const(np.float64(3.0)), backend=_engine(engine)
    )
    np.testing.assert_allclose(g, np.full(4, 3.0))
