"""Differential fuzzing (issue 5): random programs on every installed engine, checked
against float64 finite differences and against each other.

The CI profile is deterministic; ``ADSWITCH_FUZZ_PROFILE=long`` runs thousands of fresh
random programs per engine instead. A failure prints the program as a runnable script.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from adswitch_conformance import fuzz
from adswitch_conformance.fuzzgen import programs
from adswitch_conformance.fuzzprogram import Arg, Program
from adswitch_conformance.fuzzref import reference
from hypothesis import Phase, given, settings

import adswitch as ad
from adswitch import registry
from adswitch.spec import BackendBase, CallInfo, LossFn

BUILT_IN = ("tape", "torch", "jax", "autograd")


def _infos() -> dict[str, Any]:
    return {info.name: info for info in ad.backends()}


ENGINES = sorted({*BUILT_IN, *_infos()})


def _require(name: str) -> None:
    info = _infos().get(name)
    if info is None or not info.available:
        pytest.skip(f"engine {name!r} not available: {getattr(info, 'reason', 'not installed')}")


@pytest.fixture(autouse=True)
def _quiet() -> Iterator[None]:
    # Every fuzz program is a new function object, so the jax engine rightly warns that
    # it recompiles; that is the fuzzer's nature, not a finding.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


@pytest.mark.parametrize("backend", ENGINES)
def test_engine_matches_finite_differences(backend: str) -> None:
    """Each engine's gradients, values and result types on the profile's programs."""
    _require(backend)
    counts = fuzz.run_fuzz(backend)
    total = sum(counts.values())
    # A fuzz run that compared (almost) nothing is a failure, not a pass; "unsupported"
    # only counts nested or mutating programs on an engine that declares them missing.
    assert counts["pass"] >= 0.6 * total, dict(counts)
    assert counts["skipped"] <= 0.1 * total, dict(counts)


def test_engines_agree_with_each_other() -> None:
    """All available engines on the same programs: pairwise agreement far tighter than
    finite differences can check (rounding only), and each against the reference."""
    names = [name for name, info in _infos().items() if info.available]
    if len(names) < 2:
        pytest.skip("fewer than two engines available")
    compared = 0

    @settings(fuzz.fuzz_settings(fuzz.profile(), "jax"), max_examples=30)
    @given(programs(max_steps=fuzz.profile().max_steps))
    def one(program: Program) -> None:
        nonlocal compared
        outcomes = fuzz.check_program(program, names)
        for name, outcome in outcomes.items():
            if outcome.status in ("WRONG", "ERROR"):
                raise AssertionError(fuzz.report(program, name, outcome))
        compared += sum(o.status == "pass" for o in outcomes.values()) >= 2

    one()
    assert compared >= 20


# --- the fuzzer's own oracle: it must find planted bugs and trust only what it may ---


class _Scaled(BackendBase):
    """A finite-difference engine whose gradients are off by 1% -- a planted bug."""

    name = "planted"
    install_hint = "(defined in the tests)"

    def version(self) -> str:
        return "test"

    def value_and_grad(
        self, fn: LossFn, leaves: Any, active: Any, info: CallInfo
    ) -> tuple[list[Any], list[Any | None]]:
        out = fn(list(leaves))[1]
        grads: list[Any | None] = []
        for i, (leaf, on) in enumerate(zip(leaves, active, strict=True)):
            if not on:
                grads.append(None)
                continue
            grad = np.zeros(np.shape(leaf))
            for index in np.ndindex(*np.shape(leaf)):

                def at(delta: float, i: int = i, index: Any = index) -> float:
                    moved = [
                        np.array(v, dtype=float) if isinstance(v, np.ndarray) else v for v in leaves
                    ]
                    if isinstance(moved[i], float):
                        moved[i] += delta
                    else:
                        moved[i][index] += delta
                    return float(fn(moved)[0])

                grad[index] = (at(1e-6) - at(-1e-6)) / 2e-6 * 1.01
            grads.append(float(grad) if isinstance(leaf, float) else grad.astype(leaf.dtype))
        return [np.asarray(o) if isinstance(o, np.generic) else o for o in out], grads


def test_fuzzer_reports_a_planted_bug_with_a_runnable_program(
    fresh_registry: registry.Registry,
) -> None:
    fresh_registry.add(_Scaled())
    with pytest.raises(AssertionError) as failure:
        fuzz.run_fuzz("planted", fuzz.PROFILES["ci"], examples=20)
    message = str(failure.value)
    assert "WRONG on engine 'planted'" in message
    assert "max |got - expected|" in message
    script = message.split("--- reproduce (paste into a file and run) ---\n", 1)[1]
    assert "def f(" in script and "backend='planted'" in script
    # The script runs as printed (on the same engine) and reproduces the numbers.
    exec(compile(script, "<reported program>", "exec"), {"__name__": "reported"})


def _hand_program(
    lines: tuple[str, ...], loss: str, margins: tuple[tuple[int, str], ...] = ()
) -> Program:
    x = np.array([0.3, -0.8, 0.5])
    return Program(
        args=(Arg("x0", x), Arg("s1", 0.7), Arg("x2", x * 2, "const")),
        consts=(np.array([1.0, 2.0, -0.5]),),
        lines=lines,
        margins=margins,
        loss=loss,
    )


def test_reference_matches_closed_form() -> None:
    program = _hand_program(("v1 = xp.sin(x0) * s1", "v2 = v1 * x2"), "xp.sum(v2 * xp.asarray(c0))")
    ref = reference(program)
    x, s, c, w = (
        np.array([0.3, -0.8, 0.5]),
        0.7,
        np.array([0.6, -1.6, 1.0]),
        np.array([1.0, 2.0, -0.5]),
    )
    assert ref.reliable
    np.testing.assert_allclose(ref.grads[0], np.cos(x) * s * c * w, rtol=1e-10)
    assert math.isclose(ref.grads[1], float(np.sum(np.sin(x) * c * w)), rel_tol=1e-10)
    assert ref.grads[2] is None  # Const
    assert math.isclose(ref.loss, float(np.sum(np.sin(x) * s * c * w)), rel_tol=1e-12)


def test_inputs_near_a_kink_are_skipped_not_judged() -> None:
    near = _hand_program(
        ("v1 = xp.abs(x0 - 0.301)",), "xp.sum(v1)", ((0, "np.min(np.abs(x0 - 0.301))"),)
    )
    outcome = fuzz.check_program(near, ["no-such-engine"])["no-such-engine"]
    assert outcome.status == "skipped" and "kink" in outcome.detail
    far = _hand_program(
        ("v1 = xp.abs(x0 - 0.4)",), "xp.sum(v1)", ((0, "np.min(np.abs(x0 - 0.4))"),)
    )
    ref = reference(far)
    assert ref.reliable
    np.testing.assert_allclose(ref.grads[0], np.sign([0.3 - 0.4, -0.8 - 0.4, 0.5 - 0.4]), rtol=1e-9)


def test_ci_profile_is_deterministic() -> None:
    def sources() -> list[str]:
        seen: list[str] = []

        @settings(
            fuzz.fuzz_settings(fuzz.PROFILES["ci"], "x"), max_examples=15, phases=[Phase.generate]
        )
        @given(programs())
        def collect(program: Program) -> None:
            seen.append(program.source())

        collect()
        return seen

    first = sources()
    assert first == sources()
    assert len(set(first)) >= 10


def test_programs_cover_the_operation_families() -> None:
    seen: set[str] = set()

    @settings(
        fuzz.fuzz_settings(fuzz.PROFILES["ci"], "x"), max_examples=1200, phases=[Phase.generate]
    )
    @given(programs())
    def collect(program: Program) -> None:
        seen.update(program.ops)

    collect()
    families = {
        "elementwise": {"exp", "log", "sin", "tanh", "sqrt", "pow"},
        "arithmetic": {"add", "multiply", "divide", "rsub", "rmul", "rdiv"},
        "reductions": {"sum", "mean", "prod", "max", "var", "std"},
        "shapes": {"reshape", "permute_dims", "expand_dims", "broadcast_to", "matrix_transpose"},
        "joins": {"concat", "stack"},
        "indexing": {"slice", "int_index", "take", "ellipsis", "newaxis"},
        "kinks": {"abs", "maximum", "clip", "where"},
        "other": {"matmul", "cumulative_sum", "logaddexp"},
    }
    for family, ops in families.items():
        assert ops <= seen, f"{family}: never generated {sorted(ops - seen)}"


def test_profile_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ADSWITCH_FUZZ_PROFILE", "long")
    assert fuzz.profile().name == "long" and not fuzz.profile().derandomize
    monkeypatch.setenv("ADSWITCH_FUZZ_PROFILE", "nonsense")
    with pytest.raises(ValueError, match="ADSWITCH_FUZZ_PROFILE"):
        fuzz.profile()


def test_nested_reference_is_a_hessian_vector_product() -> None:
    """f = sum(w * grad h) with h = sum(c * sin(x) * x): the reference must be H w."""
    x, c, w = np.array([0.3, -0.8]), np.array([1.0, 2.0]), np.array([0.5, -1.5])
    program = Program(
        args=(Arg("x0", x),),
        consts=(c, w),
        lines=("v1 = xp.sin(x0) * x0",),
        loss="xp.sum(v1 * xp.asarray(c0))",
        nested=True,
        outer=("c1",),
    )
    assert "g = ad.gradient(h, x0)" in program.function_source()
    ref = reference(program)
    second = c * (2 * np.cos(x) - x * np.sin(x))  # d2/dx2 of c * x * sin(x), diagonal
    assert ref.reliable
    np.testing.assert_allclose(ref.grads[0], second * w, rtol=1e-7)


_VIEW_MAKERS = ("reshape", "permute", "expand_dims", "squeeze", "broadcast_to", "flip", ".T")
_INDEXED = re.compile(r"= \w+\[")


def test_mutating_programs_never_write_arguments_or_views() -> None:
    seen = 0

    @settings(
        fuzz.fuzz_settings(fuzz.PROFILES["ci"], "x"), max_examples=200, phases=[Phase.generate]
    )
    @given(programs(modes=("mutating",)))
    def collect(program: Program) -> None:
        nonlocal seen
        for k, line in enumerate(program.lines):
            if not any(op in line for op in ("] = ", " += ", " -= ", " *= ")):
                continue
            seen += 1
            target = line.split("[")[0].split(" ")[0]
            assert target.startswith("v"), line  # never an argument
            made = next(m for m in program.lines[:k] if m.startswith(f"{target} = "))
            assert not _INDEXED.search(made), made  # never a view
            assert not any(op in made for op in _VIEW_MAKERS), made
            later_views = [m for m in program.lines if f"{target}[" in m.split(" = ")[-1]]
            assert not any(program.lines.index(m) < k for m in later_views), line

    collect()
    assert seen > 100


def test_without_hypothesis_the_fuzzer_names_the_extra_to_install() -> None:
    # hypothesis is installed here: hide it from a child interpreter.
    import subprocess
    import sys

    hide = (
        "import sys, runpy\n"
        "class Hide:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'hypothesis':\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "sys.meta_path.insert(0, Hide())\n"
        "runpy.run_module('adswitch_conformance.fuzz', run_name='__main__')\n"
    )
    child = subprocess.run(
        [sys.executable, "-c", hide, "--backend", "tape"], capture_output=True, text=True
    )
    assert child.returncode != 0
    last = child.stderr.strip().splitlines()[-1]
    assert last.startswith("ModuleNotFoundError: adswitch's fuzzer")
    assert 'pip install "adswitch[fuzz]"' in last
