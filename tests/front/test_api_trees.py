"""Rules 1, 4, 6 and 7: tree types, leaf kinds, tied parameters, callable models."""

from __future__ import annotations

import dataclasses
from collections import OrderedDict, namedtuple
from typing import Any

import numpy as np
import pytest

import adswitch as ad
from adswitch.spec import BackendBase

TOL = dict(rtol=1e-6, atol=1e-6)
Point = namedtuple("Point", ["x", "y"])


@dataclasses.dataclass
class Layer:
    W: Any
    b: Any
    name: str = "layer"
    width: int = 2

    def __call__(self, x: Any) -> Any:
        return np.tanh(x @ self.W + self.b)


@dataclasses.dataclass(frozen=True)
class Frozen:
    a: Any
    b: Any


def test_result_keeps_container_types(fd) -> None:
    tree = {
        "t": (np.ones(2), [np.full(2, 2.0)]),
        "p": Point(np.ones(1), 3.0),
        "o": OrderedDict(z=np.ones(1)),
        "fr": Frozen(np.ones(1), "text"),
    }

    def f(t):
        return float(
            np.sum(t["t"][0] * t["t"][1][0])
            + np.sum(t["p"].x) * t["p"].y
            + np.sum(t["o"]["z"])
            + np.sum(t["fr"].a * 2)
        )

    (g,) = ad.gradient(f, tree, backend=fd)
    assert type(g) is dict and type(g["t"]) is tuple and type(g["t"][1]) is list
    assert type(g["p"]) is Point and type(g["o"]) is OrderedDict and type(g["fr"]) is Frozen
    np.testing.assert_allclose(g["t"][0], [2.0, 2.0], **TOL)
    np.testing.assert_allclose(g["t"][1][0], [1.0, 1.0], **TOL)
    np.testing.assert_allclose(g["p"].x, [3.0], **TOL)
    assert isinstance(g["p"].y, float) and g["p"].y == pytest.approx(1.0, rel=1e-6)
    np.testing.assert_allclose(g["fr"].a, [2.0], **TOL)
    assert g["fr"].b is None


def test_non_float_leaves_get_none_and_unused_floats_get_zeros(fd) -> None:
    tree = {
        "w": np.ones(2),
        "n": 3,
        "flag": True,
        "s": "x",
        "none": None,
        "f": len,
        "ints": np.arange(3),
        "unused": np.ones(4),
    }
    (g,) = ad.gradient(lambda t: float(np.sum(t["w"])) * t["n"], tree, backend=fd)
    for key in ("n", "flag", "s", "none", "f", "ints"):
        assert g[key] is None, key
    np.testing.assert_array_equal(g["unused"], np.zeros(4))
    np.testing.assert_allclose(g["w"], [3.0, 3.0], **TOL)


def test_tied_parameter_total_at_first_occurrence(fd) -> None:
    w = np.array([1.0, 2.0])
    model = {"a": w, "b": w, "c": np.array([3.0, 4.0])}
    (g,) = ad.gradient(lambda m: float(np.sum(m["a"] * m["b"] * m["c"])), model, backend=fd)
    np.testing.assert_allclose(g["a"], 2 * w * model["c"], **TOL)  # d/dw sum(w*w*c)
    assert g["b"] is None


def test_tied_across_arguments(fd) -> None:
    w = np.array([1.0, 2.0])
    g = ad.gradient(lambda a, b: float(np.sum(a * b)), w, w, backend=fd)
    np.testing.assert_allclose(g[0], 2 * w, **TOL)
    assert g[1] is None


def test_tied_parameter_in_duplicated_model_one_shadow_gets_total(fd) -> None:
    w = np.array([1.0, 2.0])
    dup = ad.Duplicated({"enc": w, "dec": w})
    assert dup.dval["enc"] is dup.dval["dec"]
    ad.gradient(lambda m: float(np.sum(m["enc"] * m["dec"])), dup, backend=fd)
    np.testing.assert_allclose(dup.dval["enc"], 2 * w, **TOL)


def test_untied_shadow_for_tied_value_is_refused(fd) -> None:
    w = np.ones(2)
    dup = ad.Duplicated({"a": w, "b": w}, {"a": np.zeros(2), "b": np.zeros(2)})
    with pytest.raises(ad.ActivityError, match="tied"):
        ad.gradient(lambda m: float(np.sum(m["a"])), dup, backend=fd)


def test_shadow_shared_between_distinct_parameters_is_refused(fd) -> None:
    s = np.zeros(2)
    dup = ad.Duplicated({"a": np.ones(2), "b": np.ones(2)}, {"a": s, "b": s})
    with pytest.raises(ad.AliasingError, match="two distinct parameters"):
        ad.gradient(lambda m: float(np.sum(m["a"])), dup, backend=fd)


def test_distinct_parameters_with_identical_gradients_stay_distinct() -> None:
    class SameObject(BackendBase):
        name = "same"

        def version(self):
            return "test"

        def value_and_grad(self, fn, leaves, active, info):
            _, out = fn(leaves)
            shared = np.ones(2)  # one gradient object for both, as f(p + q) can produce
            return out, [shared if a else None for a in active]

    p, q = np.zeros(2), np.zeros(2)
    dup = ad.Duplicated({"p": p, "q": q})
    ad.gradient(lambda m: float(np.sum(m["p"] + m["q"])), dup, backend=SameObject())
    assert dup.dval["p"] is not dup.dval["q"]
    np.testing.assert_array_equal(dup.dval["p"], [1.0, 1.0])
    np.testing.assert_array_equal(dup.dval["q"], [1.0, 1.0])


def test_view_and_base_is_an_aliasing_error(fd) -> None:
    base = np.ones(4)
    with pytest.raises(ad.AliasingError, match=r"args\[0\]\['v'\] and args\[0\]\['b'\]"):
        ad.gradient(lambda t: float(np.sum(t["v"])), {"v": base[:2], "b": base}, backend=fd)


def test_disjoint_views_are_fine(fd) -> None:
    base = np.arange(4.0)
    g = ad.gradient(lambda a, b: float(np.sum(a * b)), base[:2], base[2:], backend=fd)
    np.testing.assert_allclose(g[0], base[2:], **TOL)
    np.testing.assert_allclose(g[1], base[:2], **TOL)


def test_callable_dataclass_model_plain_and_duplicated(fd) -> None:
    rng = np.random.default_rng(0)
    layer = Layer(rng.standard_normal((3, 2)), rng.standard_normal(2))
    x = rng.standard_normal((4, 3))

    def loss(model, x):
        return float(np.sum(model(x)))

    (g, gx) = ad.gradient(loss, layer, ad.Const(x), backend=fd)
    assert type(g) is Layer and g.name is None and g.width is None and gx is None
    pre = x @ layer.W + layer.b
    dpre = 1 - np.tanh(pre) ** 2
    np.testing.assert_allclose(g.W, x.T @ dpre, rtol=1e-5, atol=1e-6)  # closed form
    np.testing.assert_allclose(g.b, dpre.sum(0), rtol=1e-5, atol=1e-6)

    dup = ad.Duplicated(layer)
    result = ad.gradient(loss, dup, ad.Const(x), backend=fd)
    assert result[0] is dup.dval and type(dup.dval) is Layer
    np.testing.assert_allclose(dup.dval.W, x.T @ dpre, rtol=1e-5, atol=1e-6)


def test_register_tree_with_named_children(fd) -> None:
    class Pair:
        def __init__(self, a: Any, b: Any) -> None:
            self.a, self.b = a, b

    ad.register_tree(
        Pair, lambda p: ({"a": p.a, "b": p.b}, None), lambda aux, c: Pair(c["a"], c["b"])
    )
    (g,) = ad.gradient(
        lambda p: float(np.sum(p.a * p.b)), Pair(np.ones(2), np.full(2, 3.0)), backend=fd
    )
    assert isinstance(g, Pair)
    np.testing.assert_allclose(g.a, [3.0, 3.0], **TOL)
    bad = ad.Duplicated(Pair(np.ones(2), np.ones(2)), Pair(np.ones(3), np.ones(2)))
    with pytest.raises(ad.ActivityError, match=r"args\[0\]\.a has shape"):
        ad.gradient(lambda p: float(np.sum(p.a)), bad, backend=fd)


def test_complex_plain_argument_is_unsupported(fd) -> None:
    with pytest.raises(ad.UnsupportedError, match="complex"):
        ad.gradient(lambda z: 0.0, np.ones(2, dtype=complex), backend=fd)


def test_make_zero_preserves_structure_types_and_ties() -> None:
    w = np.ones((2, 2), dtype=np.float32)
    tree = {"a": w, "b": [w, 2.0, 3], "p": Point(np.ones(1), "s")}
    z = ad.make_zero(tree)
    assert z["a"] is z["b"][0] and z["a"] is not w and z["a"].dtype == np.float32
    assert not z["a"].any() and z["b"][1] == 0.0 and z["b"][2] == 3 and type(z["p"]) is Point
    assert z["p"].y == "s"


def test_scalar_leaves_get_their_own_type_back(fd) -> None:
    args = (np.float32(2.0), np.float64(3.0), 4.0)
    grads = ad.gradient(lambda a, b, c: float(a) * float(b) * c, *args, backend=fd)
    assert [type(g) for g in grads] == [np.float32, np.float64, float]
    np.testing.assert_allclose([float(g) for g in grads], [12.0, 8.0, 6.0], rtol=1e-5)
