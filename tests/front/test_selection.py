"""Rules 9 and 10: which engine a call uses; nested calls stay on the enclosing engine."""

from __future__ import annotations

import asyncio
import sys
import threading
import types

import numpy as np
import pytest

import adswitch as ad
from adswitch.registry import Registry
from adswitch.spec import BackendBase
from tests.support.fd_engine import FiniteDifferenceBackend


class Named(FiniteDifferenceBackend):
    def __init__(self, name: str, modules: tuple[str, ...] = ()) -> None:
        super().__init__()
        self.name = name
        self.array_modules = modules


def square_sum(w):
    return float(np.sum(w**2))


@pytest.fixture
def engines(fresh_registry: Registry) -> dict[str, Named]:
    found = {"tape": Named("tape"), "other": Named("other"), "fake": Named("fake", ("fakearrays",))}
    for engine in found.values():
        fresh_registry.add(engine)
    return found


def test_default_is_tape(engines, monkeypatch) -> None:
    monkeypatch.delenv("ADSWITCH_BACKEND", raising=False)
    ad.gradient(square_sum, np.ones(2))
    assert len(engines["tape"].calls) == 1 and not engines["other"].calls


def test_precedence_keyword_over_use_over_env(engines, monkeypatch) -> None:
    monkeypatch.setenv("ADSWITCH_BACKEND", "other")
    ad.gradient(square_sum, np.ones(2))
    assert len(engines["other"].calls) == 1
    with ad.use("tape"):
        ad.gradient(square_sum, np.ones(2))
        assert len(engines["tape"].calls) == 1
        ad.gradient(square_sum, np.ones(2), backend="fake")
        assert len(engines["fake"].calls) == 1


def test_env_is_read_live_on_every_call(engines, monkeypatch) -> None:
    # the variable is read from os.environ's live mapping: every change is seen at once,
    # an empty value counts as unset (as with the public os.environ.get)
    counts = []
    for value in ("other", "fake", "", None, "other"):
        if value is None:
            monkeypatch.delenv("ADSWITCH_BACKEND", raising=False)
        else:
            monkeypatch.setenv("ADSWITCH_BACKEND", value)
        ad.gradient(square_sum, np.ones(2))
        counts.append(tuple(len(engines[n].calls) for n in ("tape", "other", "fake")))
    assert counts == [(0, 1, 0), (0, 1, 1), (1, 1, 1), (2, 1, 1), (2, 2, 1)]


def test_use_is_innermost_and_restored(engines, monkeypatch) -> None:
    monkeypatch.delenv("ADSWITCH_BACKEND", raising=False)
    with ad.use("other"):
        with ad.use("fake"):
            ad.gradient(square_sum, np.ones(2))
        ad.gradient(square_sum, np.ones(2))
    ad.gradient(square_sum, np.ones(2))
    assert [len(engines[n].calls) for n in ("fake", "other", "tape")] == [1, 1, 1]


def test_use_is_per_thread_and_per_task(engines, monkeypatch) -> None:
    monkeypatch.delenv("ADSWITCH_BACKEND", raising=False)
    barrier = threading.Barrier(2)
    seen: dict[str, str] = {}

    def worker(name: str) -> None:
        with ad.use(name):
            barrier.wait()
            from adswitch.selection import select

            seen[name] = select(None, [], ad.default_registry()).name

    threads = [threading.Thread(target=worker, args=(n,)) for n in ("other", "fake")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == {"other": "other", "fake": "fake"}

    async def task(name: str) -> str:
        with ad.use(name):
            await asyncio.sleep(0)
            from adswitch.selection import select

            return select(None, [], ad.default_registry()).name

    async def both() -> list[str]:
        return list(await asyncio.gather(task("other"), task("fake")))

    assert asyncio.run(both()) == ["other", "fake"]


def test_array_types_pick_the_engine_without_imports(engines, monkeypatch) -> None:
    monkeypatch.delenv("ADSWITCH_BACKEND", raising=False)
    module = types.ModuleType("fakearrays")

    class FakeArray(np.ndarray):
        pass

    FakeArray.__module__ = "fakearrays"
    module.FakeArray = FakeArray  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "fakearrays", module)
    x = np.ones(2).view(FakeArray)
    ad.gradient(lambda w: float(np.sum(np.asarray(w) ** 2)), x)
    assert len(engines["fake"].calls) == 1


def test_unknown_engine_lists_the_installed_ones(engines) -> None:
    with pytest.raises(ad.AdswitchError, match=r"unknown engine 'nope'.*'fake', 'other', 'tape'"):
        ad.gradient(square_sum, np.ones(2), backend="nope")
    with pytest.raises(ad.AdswitchError, match="unknown engine"), ad.use("nope"):
        pass


def test_nested_call_defaults_to_enclosing_engine_with_depth(engines, monkeypatch) -> None:
    monkeypatch.delenv("ADSWITCH_BACKEND", raising=False)
    outer = engines["other"]

    def f(w):
        with ad.use("tape"):  # ignored inside: the enclosing engine wins
            (g,) = ad.gradient(square_sum, w)
        return float(np.sum(g))

    ad.gradient(f, np.ones(2), backend="other")
    depths = [info.depth for info in outer.calls]
    assert 0 in depths and 1 in depths and not engines["tape"].calls


def test_mixing_engines_across_nesting_is_unsupported(engines) -> None:
    def f(w):
        return float(np.sum(ad.gradient(square_sum, w, backend="tape")[0]))

    with pytest.raises(ad.UnsupportedError, match="cannot differentiate through each other"):
        ad.gradient(f, np.ones(2), backend="other")


def test_duplicated_inside_a_differentiated_function_is_refused(engines) -> None:
    def f(w):
        return float(np.sum(ad.gradient(square_sum, ad.Duplicated(w))[0]))

    with pytest.raises(ad.ActivityError, match="Duplicated is not allowed inside"):
        ad.gradient(f, np.ones(2), backend="other")


def test_backend_object_is_accepted(fresh_registry) -> None:
    engine = Named("adhoc")
    ad.gradient(square_sum, np.ones(2), backend=engine)
    assert len(engine.calls) == 1
    with pytest.raises(ad.AdswitchError, match="neither an engine name nor a Backend"):
        ad.gradient(square_sum, np.ones(2), backend=42)  # type: ignore[arg-type]


def test_unavailable_engine_says_how_to_install(fresh_registry) -> None:
    class Missing(BackendBase):
        name = "missing"
        install_hint = 'pip install "adswitch[missing]"'

        def version(self) -> str:
            raise ad.BackendUnavailableError(
                f"engine 'missing' is not installed: {self.install_hint}"
            )

    fresh_registry.add(Missing())
    with pytest.raises(ad.BackendUnavailableError, match=r'pip install "adswitch\[missing\]"'):
        ad.gradient(square_sum, np.ones(2), backend="missing")
    (info,) = [b for b in fresh_registry.infos() if b.name == "missing"]
    assert not info.available and "pip install" in (info.reason or "")


def test_subclass_of_an_engine_array_selects_that_engine(engines, monkeypatch) -> None:
    monkeypatch.delenv("ADSWITCH_BACKEND", raising=False)
    module = types.ModuleType("fakearrays")

    class FakeArray(np.ndarray):
        pass

    FakeArray.__module__ = "fakearrays"
    monkeypatch.setitem(sys.modules, "fakearrays", module)

    class UserArray(FakeArray):  # defined in user code: its own module is this test's
        pass

    x = np.ones(2).view(UserArray)
    ad.gradient(lambda w: float(np.sum(np.asarray(w) ** 2)), x)
    assert len(engines["fake"].calls) == 1
