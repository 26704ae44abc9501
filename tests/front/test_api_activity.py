"""Rules 1-3 and 8 of the core issue: activity wrappers, shadows, errors, nothing lost."""

from __future__ import annotations

import numpy as np
import pytest

import adswitch as ad
from tests.support.fd_engine import FiniteDifferenceBackend

TOL = dict(rtol=1e-6, atol=1e-6)


def quad(w, x):
    return float(np.sum(w * w * x))


def test_plain_argument_gets_a_new_array_of_the_same_kind(fd: FiniteDifferenceBackend) -> None:
    w = np.array([1.0, -2.0, 3.0])
    x = np.array([0.5, 1.0, 2.0])
    (gw, gx) = ad.gradient(quad, w, ad.Const(x), backend=fd)
    np.testing.assert_allclose(gw, 2 * w * x, **TOL)  # closed form
    assert gx is None
    assert isinstance(gw, np.ndarray) and gw.dtype == w.dtype and gw is not w


def test_float32_gradient_keeps_float32(fd: FiniteDifferenceBackend) -> None:
    w = np.array([1.0, 2.0], dtype=np.float32)
    (g,) = ad.gradient(lambda w: np.sum(w.astype(np.float64) ** 2), w, backend=fd)
    assert g.dtype == np.float32


def test_duplicated_adds_into_shadow_and_returns_it(fd: FiniteDifferenceBackend) -> None:
    w = np.array([1.0, 2.0])
    dup = ad.Duplicated(w, np.full(2, 100.0))
    g = ad.gradient(lambda w: float(np.sum(w**2)), dup, backend=fd)
    assert g[0] is dup.dval
    np.testing.assert_allclose(dup.dval, 2 * w, **TOL)  # zero=True: zeroed first


def test_zero_false_accumulates(fd: FiniteDifferenceBackend) -> None:
    w = np.array([1.0, 2.0])
    dup = ad.Duplicated(w)
    for _ in range(3):
        ad.gradient(lambda w: float(np.sum(w**2)), dup, backend=fd, zero=False)
    np.testing.assert_allclose(dup.dval, 3 * 2 * w, **TOL)


def test_duplicated_model_with_python_float_in_a_dict(fd: FiniteDifferenceBackend) -> None:
    model = {"w": np.array([1.0, 2.0]), "scale": 3.0}
    dup = ad.Duplicated(model)
    ad.gradient(lambda m: float(np.sum(m["w"])) * m["scale"], dup, backend=fd)
    np.testing.assert_allclose(dup.dval["w"], [3.0, 3.0], **TOL)
    assert dup.dval["scale"] == pytest.approx(3.0, rel=1e-6)


def test_python_float_in_immutable_container_of_duplicated_is_refused(fd) -> None:
    dup = ad.Duplicated((np.ones(2), 3.0))
    with pytest.raises(ad.ActivityError, match=r"args\[0\]\[1\].*immutable"):
        ad.gradient(lambda m: float(np.sum(m[0])) * m[1], dup, backend=fd)


def test_every_argument_const_is_an_error(fd: FiniteDifferenceBackend) -> None:
    with pytest.raises(ad.ActivityError, match="every argument is Const"):
        ad.gradient(quad, ad.Const(np.ones(2)), ad.Const(np.ones(2)), backend=fd)


def test_active_is_an_error_naming_the_argument(fd: FiniteDifferenceBackend) -> None:
    with pytest.raises(ad.ActivityError, match=r"args\[1\] is Active.*plain"):
        ad.gradient(quad, np.ones(2), ad.Active(np.ones(2)), backend=fd)


def test_duplicated_without_float_array_is_an_error(fd: FiniteDifferenceBackend) -> None:
    with pytest.raises(ad.ActivityError, match="no floating array"):
        ad.gradient(lambda s: s * 2.0, ad.Duplicated(4.0, 0.0), backend=fd)


@pytest.mark.parametrize(
    ("dval", "pattern"),
    [
        ({"layers": [{"W": np.zeros(3)}]}, r"args\[0\]\['layers'\]\[0\]\['W'\] has shape \(3,\)"),
        ({"layers": [{"W": np.zeros(2, np.float32)}]}, r"\['W'\] has dtype float32"),
        ({"layers": [{"V": np.zeros(2)}]}, r"does not have val's structure"),
        ({"layers": [{"W": [0.0, 0.0]}]}, r"does not have val's structure"),
    ],
)
def test_dval_mismatch_names_the_leaf(fd, dval, pattern) -> None:
    val = {"layers": [{"W": np.ones(2)}]}
    with pytest.raises(ad.ActivityError, match=pattern):
        ad.gradient(
            lambda m: float(np.sum(m["layers"][0]["W"])), ad.Duplicated(val, dval), backend=fd
        )


def test_read_only_shadow_is_refused_before_running(fd: FiniteDifferenceBackend) -> None:
    shadow = np.zeros(2)
    shadow.flags.writeable = False
    with pytest.raises(ad.ActivityError, match="read-only"):
        ad.gradient(lambda w: float(np.sum(w)), ad.Duplicated(np.ones(2), shadow), backend=fd)
    assert fd.calls == []


def test_shadow_that_is_the_value_itself_is_refused(fd: FiniteDifferenceBackend) -> None:
    w = np.ones(2)
    with pytest.raises(ad.ActivityError, match="overwrite parameters"):
        ad.gradient(lambda w: float(np.sum(w)), ad.Duplicated(w, w), backend=fd)


class Boom(Exception):
    pass


def test_user_exception_leaves_shadows_untouched(fd: FiniteDifferenceBackend) -> None:
    dup1 = ad.Duplicated(np.ones(2), np.array([5.0, 6.0]))
    dup2 = ad.Duplicated({"a": np.ones(3)}, {"a": np.array([7.0, 8.0, 9.0])})

    def f(a, b):
        raise Boom("from f")

    with pytest.raises(Boom, match="from f"):
        ad.gradient(f, dup1, dup2, backend=fd)
    np.testing.assert_array_equal(dup1.dval, [5.0, 6.0])
    np.testing.assert_array_equal(dup2.dval["a"], [7.0, 8.0, 9.0])


def test_output_error_leaves_shadows_untouched(fd: FiniteDifferenceBackend) -> None:
    dup = ad.Duplicated(np.ones(2), np.array([5.0, 6.0]))
    with pytest.raises(ad.OutputError):
        ad.gradient(lambda w: w * 2, dup, backend=fd)
    np.testing.assert_array_equal(dup.dval, [5.0, 6.0])


def test_engine_failure_leaves_shadows_untouched() -> None:
    class Failing(FiniteDifferenceBackend):
        name = "failing"

        def value_and_grad(self, fn, leaves, active, info):
            fn(leaves)
            raise ad.UnsupportedError("engine refuses")

    dup = ad.Duplicated(np.ones(2), np.array([5.0, 6.0]))
    with pytest.raises(ad.UnsupportedError, match="engine refuses"):
        ad.gradient(lambda w: float(np.sum(w)), dup, backend=Failing())
    np.testing.assert_array_equal(dup.dval, [5.0, 6.0])


def test_nested_wrappers_are_refused() -> None:
    with pytest.raises(ad.ActivityError, match="wrap the plain value once"):
        ad.Duplicated(ad.Const(np.ones(2)))
    with pytest.raises(ad.ActivityError):
        ad.Const(ad.Duplicated(np.ones(2)))


def test_same_array_const_and_plain_is_refused(fd: FiniteDifferenceBackend) -> None:
    w = np.ones(2)
    with pytest.raises(ad.ActivityError, match=r"Const at args\[0\] and as plain at args\[1\]"):
        ad.gradient(quad, ad.Const(w), w, backend=fd)


def test_first_argument_must_be_callable() -> None:
    with pytest.raises(ad.ActivityError, match="function to differentiate must come first"):
        ad.gradient(np.ones(2), np.ones(2))  # type: ignore[arg-type]
