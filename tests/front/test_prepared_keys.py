"""Dicts are matched by key, not by insertion order (issue 19, item 5): a prepared call
given a dict with the prepared keys in another order (what ``jax.tree_util.tree_map`` and
optax hand back: sorted keys) runs, ``f`` sees the dict as given, and the gradient comes
back keyed in the given order; ``Duplicated`` shadows, tangents and cotangents are matched
by key the same way. Only another key set is an error. Oracles: closed forms."""

from __future__ import annotations

import collections
import contextlib
import io
import re
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import adswitch as ad

ENGINES = ["tape", "torch", "jax", "autograd", "dual"]
README = Path(__file__).resolve().parents[2] / "README.md"

RNG = np.random.default_rng(19)
X = RNG.standard_normal((5, 3))
PARAMS = {
    "W1": RNG.standard_normal((3, 4)),
    "b1": RNG.standard_normal(4),
    "W2": RNG.standard_normal(4),
    "b2": RNG.standard_normal(()),
}


def quadratic(p: dict[str, Any], x: Any) -> Any:
    """sum((x @ W1 + b1) @ W2 + b2)^2 / 2, whose gradient has a closed form."""
    xp = ad.array_namespace(p["W1"])
    r = (x @ p["W1"] + p["b1"]) @ p["W2"] + p["b2"]
    return xp.sum(r * r) / 2


def quadratic_gradient(p: dict[str, np.ndarray], x: np.ndarray) -> dict[str, np.ndarray]:
    h = x @ p["W1"] + p["b1"]
    r = h @ p["W2"] + p["b2"]
    return {
        "W1": x.T @ np.outer(r, p["W2"]),
        "b1": r.sum() * p["W2"],
        "W2": h.T @ r,
        "b2": r.sum(),
    }


@pytest.mark.parametrize("engine", ENGINES)
def test_prepared_gradient_takes_sorted_keys(engine: str) -> None:
    prep = ad.prepare(ad.gradient, quadratic, PARAMS, ad.Const(X), backend=engine)
    sorted_params = dict(sorted(PARAMS.items()))
    assert list(sorted_params) != list(PARAMS)
    expected = quadratic_gradient(PARAMS, X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(3):  # (a replayed or compiled call after the first, too)
            (g, _) = prep(sorted_params, ad.Const(X))
            assert list(g) == list(sorted_params)  # keyed in the order given
            for k in PARAMS:
                np.testing.assert_allclose(g[k], expected[k], rtol=1e-10, atol=1e-12)
        (g, _) = prep(PARAMS, ad.Const(X))  # and the prepared order still works
        assert list(g) == list(PARAMS)


@pytest.mark.parametrize("engine", ["tape", "jax", "torch"])
def test_f_sees_the_given_order(engine: str) -> None:
    """f that depends on the dict's order: a prepared call on another order is f on that
    order, not a replay (or compiled program) of f on the prepared one."""

    def f(p: dict[str, Any]) -> Any:
        xp = ad.array_namespace(p["a"])
        v = xp.concat([xp.reshape(t, (-1,)) for t in p.values()])
        return xp.sum(v * xp.asarray(np.array([1.0, 2.0, 3.0]), dtype=v.dtype))

    a, b = np.array([10.0]), np.array([20.0, 30.0])
    prep = ad.prepare(ad.withgradient, f, {"a": a, "b": b}, backend=engine)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        first = prep({"a": a, "b": b})
        for _ in range(2):
            out = prep({"b": b, "a": a})
            # values [20, 30, 10] weighted 1, 2, 3: 20 + 60 + 30
            assert float(out.val) == 110.0
            np.testing.assert_array_equal(out.grad[0]["b"], [1.0, 2.0])
            np.testing.assert_array_equal(out.grad[0]["a"], [3.0])
    assert float(first.val) == 10.0 + 40.0 + 90.0
    np.testing.assert_array_equal(first.grad[0]["a"], [1.0])


def test_nested_dicts_and_ties_follow_the_given_order() -> None:
    shared = np.array([1.0, 2.0])
    other = np.array([3.0, -1.0])

    def f(p: dict[str, Any]) -> Any:
        xp = ad.array_namespace(p["outer"]["x"])
        return xp.sum(p["outer"]["x"] * p["outer"]["y"]) + xp.sum(p["z"] * p["z"])

    prep = ad.prepare(ad.gradient, f, {"outer": {"x": shared, "y": shared}, "z": other})
    given = {"z": other, "outer": {"y": shared, "x": shared}}
    (g,) = prep(given)
    assert list(g) == ["z", "outer"] and list(g["outer"]) == ["y", "x"]
    np.testing.assert_array_equal(g["z"], 2 * other)
    # the tied array's total gradient at its first place in the given order, as an
    # unprepared call puts it
    np.testing.assert_array_equal(g["outer"]["y"], 2 * shared)
    assert g["outer"]["x"] is None
    (plain,) = ad.gradient(f, given)
    assert plain["outer"]["x"] is None
    np.testing.assert_array_equal(plain["outer"]["y"], g["outer"]["y"])


@pytest.mark.parametrize("engine", ["tape", "torch", "autograd"])
def test_duplicated_shadow_in_another_key_order(engine: str) -> None:
    a, b = np.array([1.0, 2.0]), np.array([3.0])

    def f(p: dict[str, Any]) -> Any:
        xp = ad.array_namespace(p["a"])
        return xp.sum(p["a"] ** 2) + 3 * xp.sum(p["b"]) * p["s"]

    shadow = {"s": 0.0, "b": np.zeros(1), "a": np.zeros(2)}
    (out,) = ad.gradient(f, ad.Duplicated({"a": a, "b": b, "s": 2.0}, shadow), backend=engine)
    assert out is shadow
    np.testing.assert_array_equal(shadow["a"], [2.0, 4.0])
    np.testing.assert_array_equal(shadow["b"], [6.0])
    assert shadow["s"] == 9.0
    # prepared, with the value's keys in yet another order
    prep = ad.prepare(
        ad.gradient, f, ad.Duplicated({"a": a, "b": b, "s": 2.0}, shadow), backend=engine
    )
    prep(ad.Duplicated({"s": 1.0, "a": a, "b": b}, shadow))
    np.testing.assert_array_equal(shadow["a"], [2.0, 4.0])
    np.testing.assert_array_equal(shadow["b"], [3.0])
    assert shadow["s"] == 9.0


def test_tangent_and_cotangent_in_another_key_order() -> None:
    a, b = np.array([1.0, 2.0]), np.array([3.0])

    def f(p: dict[str, Any]) -> Any:
        xp = ad.array_namespace(p["a"])
        return xp.sum(p["a"] ** 2) + 3 * xp.sum(p["b"])

    _, t = ad.jvp(f, ({"a": a, "b": b},), ({"b": np.ones(1), "a": np.array([1.0, 0.0])},))
    assert float(t) == 2.0 + 3.0
    _, pullback = ad.vjp(lambda x: {"u": 2 * x, "v": 3 * x}, a)
    (g,) = pullback({"v": np.ones(2), "u": np.zeros(2)})
    np.testing.assert_array_equal(g, [3.0, 3.0])


def test_another_key_set_is_still_an_error() -> None:
    prep = ad.prepare(ad.gradient, quadratic, PARAMS, ad.Const(X))
    wrong = {**{k: v for k, v in PARAMS.items() if k != "b2"}, "c2": PARAMS["b2"]}
    with pytest.raises(ad.PreparationError) as info:
        prep(dict(sorted(wrong.items())), ad.Const(X))
    text = str(info.value)
    assert "only was prepared: ['b2']; only is given: ['c2']" in text
    assert "dval" not in text


def test_ordered_dict_order_is_part_of_its_structure() -> None:
    f = lambda p: ad.array_namespace(p["a"]).sum(p["a"] * p["b"])  # noqa: E731
    a, b = np.ones(2), np.full(2, 2.0)
    prep = ad.prepare(ad.gradient, f, collections.OrderedDict(a=a, b=b))
    with pytest.raises(ad.PreparationError, match="another structure"):
        prep(collections.OrderedDict(b=b, a=a))


def test_readme_preparation_error_text_is_the_real_message() -> None:
    """The README's printed PreparationError is what the code prints (issue 19)."""
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    namespace: dict[str, object] = {"__name__": "readme"}
    found = False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i, code in enumerate(blocks):
            printed = io.StringIO()
            with contextlib.redirect_stdout(printed):
                exec(compile(code, f"README.md block {i}", "exec"), namespace)
            if "except ad.PreparationError" not in code:
                continue
            found = True
            shown = code.split("print(e)\n", 1)[1]
            expected = "\n".join(line[2:] for line in shown.splitlines() if line.startswith("# "))
            assert printed.getvalue().strip() == expected.strip()
    assert found, "the README has no PreparationError example"
