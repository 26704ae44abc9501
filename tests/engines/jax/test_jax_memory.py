"""The jax engine's cache keeps none of the caller's arrays alive: neither the arguments of
the call that compiled a program, nor the arrays a function captured, nor (through a
pullback) the inputs of a vjp. Checked with ``weakref`` after ``gc.collect()``, the
cached programs still in the cache (and still giving the right numbers)."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

from adswitch_jax.primitives import engine as _engine  # noqa: E402

import adswitch as ad  # noqa: E402


@pytest.fixture(autouse=True)
def _fresh_cache() -> None:
    _engine.reset()


# Each function takes a constant second argument c (unused: it is an array argument of
# the compiling call like any other).
def cube_sum(x: Any, c: Any) -> Any:
    return ad.array_namespace(x).sum(x**3)


def cube(x: Any, c: Any) -> Any:
    return x**3


OPERATORS: dict[str, Callable[[Any, Any], Any]] = {
    "gradient": lambda x, c: ad.gradient(cube_sum, x, ad.Const(c), backend="jax"),
    "withgradient": lambda x, c: ad.withgradient(cube_sum, x, ad.Const(c), backend="jax"),
    "vjp": lambda x, c: ad.vjp(cube, x, ad.Const(c), backend="jax")[1](x),
    "jvp": lambda x, c: ad.jvp(cube, (x, ad.Const(c)), (x, None), backend="jax"),
    "jacobian_reverse": lambda x, c: ad.jacobian(
        cube, x, ad.Const(c), backend="jax", mode="reverse"
    ),
    "jacobian_forward": lambda x, c: ad.jacobian(
        cube, x, ad.Const(c), backend="jax", mode="forward"
    ),
    "hessian": lambda x, c: ad.hessian(cube_sum, x, ad.Const(c), backend="jax"),
    "hvp": lambda x, c: ad.hvp(cube_sum, (x, ad.Const(c)), (x, None), backend="jax"),
}


def freed(make: Callable[[], Any]) -> bool:
    """Whether the object ``make`` returns (held only by the weak reference) is freed."""
    ref = weakref.ref(make())
    gc.collect()
    return ref() is None


@pytest.mark.parametrize("kind", ["numpy", "jax"])
@pytest.mark.parametrize("name", sorted(OPERATORS))
def test_arguments_of_the_compiling_call_are_freed(name: str, kind: str) -> None:
    op = OPERATORS[name]
    refs = []

    def first_call() -> None:
        x, c = np.array([1.0, 2.0]), np.array([3.0, 4.0])
        if kind == "jax":
            x, c = jnp.asarray(x), jnp.asarray(c)
        op(x, c)  # compiles the programs
        refs.extend([weakref.ref(x), weakref.ref(c)])

    first_call()
    gc.collect()
    assert len(_engine.CACHE) >= 1  # the programs are still cached...
    assert all(ref() is None for ref in refs)  # ...without the arrays they were compiled for
    op(np.array([1.0, 2.0]), np.array([0.0, 0.0]))  # and still run


def scaled_by(weights: np.ndarray) -> Any:
    return lambda x: ad.array_namespace(x).sum(x * weights)


@pytest.mark.parametrize("operator", ["gradient", "vjp", "jvp", "hessian", "hvp"])
def test_captured_arrays_are_freed_with_their_function(operator: str) -> None:
    x = np.array([1.0, 2.0])
    calls = {
        "gradient": lambda f: ad.gradient(f, x, backend="jax"),
        "vjp": lambda f: ad.vjp(f, x, backend="jax")[1](1.0),
        "jvp": lambda f: ad.jvp(f, (x,), (x,), backend="jax"),
        "hessian": lambda f: ad.hessian(f, x, backend="jax"),
        "hvp": lambda f: ad.hvp(f, (x,), (x,), backend="jax"),
    }

    def captured() -> np.ndarray:
        weights = np.array([5.0, 6.0])
        calls[operator](scaled_by(weights))
        return weights

    assert freed(captured)
    assert len(_engine.CACHE) >= 1


class CubeOutputs:
    """The engine contract's ``OutputFn`` for ``x -> x**3`` (no front end: the front end's
    own ``ad.vjp`` pullback holds the call's plan, arguments included)."""

    output_structure = "one array"

    def __call__(self, values: Any) -> tuple[list[Any], list[Any]]:
        y = values[0] ** 3
        return [y], [y]

    def reuse(self, structure: Any) -> None:
        pass


@pytest.mark.filterwarnings("ignore::adswitch_jax.notices.JaxFallbackWarning")  # eager: unkeyed
@pytest.mark.parametrize("compiled", [True, False])
def test_the_engines_pullback_keeps_its_residuals_not_the_callers_arrays(compiled: bool) -> None:
    from adswitch_jax.plugin import JaxBackend

    from adswitch.spec import CallInfo, Structure

    structure = Structure(key=("cube", "one leaf"), func=cube, entry="vjp")
    info = CallInfo(structure=structure if compiled else None, entry="vjp", func=cube)
    keep: list[Any] = []

    def make() -> np.ndarray:
        x = np.array([1.0, 2.0])
        _, pullback = JaxBackend().vjp(CubeOutputs(), [x], [True], info)
        keep.append(pullback)
        return x

    assert freed(make)
    np.testing.assert_allclose(keep[0]([np.ones(2)])[0], [3.0, 12.0])  # its own values


def test_an_object_read_by_a_cached_function_is_not_kept() -> None:
    class Model:
        def __init__(self) -> None:
            self.power = 2
            self.table = np.arange(3.0)

        def loss(self, x: Any) -> Any:
            return ad.array_namespace(x).sum(x**self.power * self.table)

    def make() -> Model:
        model = Model()
        np.testing.assert_allclose(
            ad.gradient(model.loss, np.ones(3), backend="jax")[0], 2 * np.arange(3.0)
        )
        return model

    assert freed(make)


def test_a_rebound_closure_variable_frees_the_old_array() -> None:
    weights = np.array([1.0, 2.0])

    def f(x: Any) -> Any:
        return ad.array_namespace(x).sum(x * weights)

    x = np.ones(2)
    np.testing.assert_allclose(ad.gradient(f, x, backend="jax")[0], [1.0, 2.0])
    old = weakref.ref(weights)
    weights = np.array([3.0, 4.0])  # f stays alive; its old array must not
    gc.collect()
    assert old() is None
    np.testing.assert_allclose(ad.gradient(f, x, backend="jax")[0], [3.0, 4.0])
