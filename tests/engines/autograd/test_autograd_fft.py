"""The autograd engine's ``fft`` extension: gradients and forward-mode derivatives of the
transforms it differentiates, every normalisation, padded and cropped lengths, against
finite differences of numpy's ``fft``; the inverse real transforms refused."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import adswitch as ad
from adswitch.errors import UnsupportedError
from tests.support.fd_oracle import central_fd

pytest.importorskip("autograd")

B = "autograd"
VECTOR = np.random.default_rng(0).standard_normal(8)
MATRIX = np.random.default_rng(3).standard_normal((4, 6))
WEIGHTS = np.random.default_rng(1).standard_normal(64)

Body = Callable[[Any, Any], Any]
CASES: list[tuple[str, Body, np.ndarray]] = []
for _name in ("fft", "ifft", "rfft"):
    for _norm in ("backward", "ortho", "forward"):
        for _n in (None, 6, 11):
            CASES.append((
                f"{_name}-{_norm}-{_n}",
                lambda xp, v, f=_name, norm=_norm, n=_n: getattr(xp.fft, f)(v, n=n, norm=norm),
                VECTOR,
            ))  # fmt: skip
for _name in ("fftn", "ifftn", "rfftn"):
    for _s, _axes in ((None, None), ((3, 5), (0, 1)), ((5,), (0,)), (None, (1, 0))):
        CASES.append((
            f"{_name}-{_s}-{_axes}",
            lambda xp, v, f=_name, s=_s, axes=_axes: getattr(xp.fft, f)(v, s=s, axes=axes),
            MATRIX,
        ))  # fmt: skip
CASES.append(("fftshift", lambda xp, v: xp.fft.fftshift(xp.fft.fft(v), axes=0), VECTOR))


def _project(xp: Any, y: Any) -> Any:
    """A real loss of a complex result, every element weighted."""
    y = xp.reshape(y, (-1,))
    m = y.shape[0]
    return xp.sum(xp.real(y) * WEIGHTS[:m] + 2.0 * xp.imag(y) * WEIGHTS[::-1][:m])


@pytest.mark.parametrize(("name", "body", "x"), CASES, ids=[c[0] for c in CASES])
def test_gradient_and_jvp_match_finite_differences(name: str, body: Body, x: np.ndarray) -> None:
    from adswitch_autograd import namespace

    def loss(v: Any) -> Any:
        return _project(ad.array_namespace(v), body(ad.array_namespace(v), v))

    (g,) = ad.gradient(loss, x.copy(), backend=B)
    np.testing.assert_allclose(g, central_fd(lambda v: _project(np, body(np, v)), x), atol=1e-7)
    t = np.random.default_rng(2).uniform(-1.0, 1.0, x.shape)
    _, dy = ad.jvp(loss, (x.copy(),), (t,), backend=B)
    assert float(dy) == pytest.approx(float(np.sum(g * t)), rel=1e-9, abs=1e-12)
    np.testing.assert_allclose(body(namespace, x), body(np, x), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", ["irfft", "irfftn", "hfft", "ihfft"])
def test_transforms_without_a_right_rule_refuse_traced_arrays(name: str) -> None:
    from adswitch_autograd import namespace

    np.testing.assert_allclose(getattr(namespace.fft, name)(VECTOR), getattr(np.fft, name)(VECTOR))

    def loss(v: Any) -> Any:
        xp = ad.array_namespace(v)
        return xp.sum(xp.real(getattr(xp.fft, name)(v)))

    with pytest.raises(UnsupportedError, match=rf"{name}.*Fix:"):
        ad.gradient(loss, VECTOR.copy(), backend=B)
