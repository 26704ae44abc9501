"""numpy's names on the namespaces that follow the Array API (tape, autograd): a missing
attribute is an AdswitchError that is also an AttributeError, naming the standard's
equivalent (issue 19: ``xp.linalg.norm`` raised a raw AttributeError), and the methods
traced arrays lack name a fix that exists (``x.tolist()`` said "use xp.tolist(x)")."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

import adswitch as ad
from adswitch.errors import AdswitchError
from adswitch.numpy_names import LINALG_NAMES, NUMPY_NAMES

ENGINES = ["tape", "autograd"]


def _namespace(engine: str) -> Any:
    """The namespace f sees for a traced argument on ``engine``."""
    found = []

    def f(x: Any) -> Any:
        xp = ad.array_namespace(x)
        found.append(xp)
        return xp.sum(x * x)

    ad.gradient(f, np.ones(2), backend=engine)
    return found[0]


def _error_of(engine: str, body: Any) -> BaseException:
    x = np.array([3.0, 4.0])
    with pytest.raises(AttributeError) as info:
        ad.gradient(lambda v: body(ad.array_namespace(v), v), x, backend=engine)
    assert np.array_equal(x, [3.0, 4.0]) and x.flags.writeable  # the caller's array as it was
    return info.value


@pytest.mark.parametrize("engine", ENGINES)
def test_linalg_norm_names_vector_norm_and_matrix_norm(engine: str) -> None:
    error = _error_of(engine, lambda xp, v: xp.linalg.norm(v))
    assert isinstance(error, AdswitchError)
    message = str(error)
    assert "xp.linalg.norm" in message and "numpy's name" in message
    assert "xp.linalg.vector_norm" in message and "xp.linalg.matrix_norm" in message
    # and the fix it names gives the right gradient: d|v| = v/|v| (closed form)
    x = np.array([3.0, 4.0])
    g = ad.gradient(lambda v: ad.array_namespace(v).linalg.vector_norm(v), x, backend=engine)
    np.testing.assert_allclose(g[0], x / 5.0)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", ["concatenate", "absolute", "power", "arctan2", "transpose"])
def test_numpy_spellings_work_or_name_the_standard(engine: str, name: str) -> None:
    xp = _namespace(engine)
    if hasattr(xp, name):  # the tape keeps some numpy spellings as aliases
        return
    with pytest.raises(AdswitchError) as info:
        getattr(xp, name)
    assert isinstance(info.value, AttributeError)
    assert NUMPY_NAMES[name] in str(info.value)
    assert getattr(xp, name, None) is None


def test_autograd_arccos_says_acos() -> None:
    error = _error_of("autograd", lambda xp, v: xp.sum(xp.arccos(v / 5.0)))
    assert isinstance(error, AdswitchError)
    assert "`xp.arccos` is numpy's name" in str(error) and "xp.acos" in str(error)


@pytest.mark.parametrize("engine", ENGINES)
def test_unknown_names_and_private_probes(engine: str) -> None:
    xp = _namespace(engine)
    with pytest.raises(AdswitchError, match=r"no function `xp.not_a_function`"):
        xp.not_a_function  # noqa: B018
    with pytest.raises(AdswitchError, match=r"no function `xp.linalg.eig`"):
        xp.linalg.eig  # noqa: B018
    # protocols probed by numpy, pickle and doctest stay plain AttributeErrors
    with pytest.raises(AttributeError) as info:
        xp.__wrapped__  # noqa: B018
    assert not isinstance(info.value, AdswitchError)
    assert not hasattr(xp.linalg, "norm")


def _named(hint: str) -> list[str]:
    return re.findall(r"xp\.((?:linalg\.)?[a-z_0-9]+)", hint)


@pytest.mark.parametrize(
    ("name", "hint"), [*NUMPY_NAMES.items(), *(("linalg." + k, v) for k, v in LINALG_NAMES.items())]
)
def test_every_named_equivalent_exists_in_the_standard(name: str, hint: str) -> None:
    """Oracle: numpy 2's own namespace, which has the standard's names."""
    named = _named(hint)
    assert named, hint
    for target in named:
        owner: Any = np
        for part in target.split("."):
            owner = getattr(owner, part)
        assert callable(owner), target


@pytest.mark.parametrize("engine", ENGINES)
def test_tolist_names_a_fix_that_exists(engine: str) -> None:
    x = np.array([1.0, 2.0])
    with pytest.raises(AdswitchError) as info:
        ad.gradient(lambda v: sum(v.tolist()), x, backend=engine)
    message = str(info.value)
    assert "xp.tolist" not in message
    assert "xp.sum(x)" in message and "sum(x.tolist())" in message
    assert np.array_equal(x, [1.0, 2.0]) and x.flags.writeable
    # the fix: xp.sum gives d sum = 1 (closed form)
    g = ad.gradient(lambda v: ad.array_namespace(v).sum(v), x, backend=engine)
    np.testing.assert_allclose(g[0], [1.0, 1.0])


@pytest.mark.parametrize("engine", ENGINES)
def test_a_missing_method_names_the_namespace_function(engine: str) -> None:
    if engine == "tape":  # (autograd's boxes have a cumprod method of their own)
        with pytest.raises(AdswitchError) as info:
            ad.gradient(lambda v: v.cumprod().sum(), np.ones(2), backend=engine)
        assert "xp.cumulative_prod" in str(info.value)
    with pytest.raises(AdswitchError) as info:
        ad.gradient(lambda v: v.exp().sum(), np.ones(2), backend=engine)
    assert "xp.exp(x)" in str(info.value)  # a function the namespace has
