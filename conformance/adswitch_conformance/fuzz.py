"""Differential fuzzing: random programs on every engine, against finite differences and
against each other.

Each program from :func:`~adswitch_conformance.fuzzgen.programs` runs through
``ad.withgradient`` on an engine; its gradients, value and result types are compared
with the float64 finite-difference reference of :mod:`.fuzzref`, and the engines'
gradients with one another (far tighter: engines agree up to rounding). Outcomes follow
the conformance suite:

* ``pass``;
* ``unsupported``: the program needs a capability the engine declares it lacks
  (``nested``, ``mutation``, ``fresh_buffer_writes``) and the engine raised the
  documented ``AdswitchError``;
* ``WRONG``: a number, type, shape or dtype differs;
* ``ERROR``: any other exception (including a refusal the capabilities do not excuse);
* ``skipped``: the inputs sit too near a kink for finite differences to be trusted.

A WRONG or ERROR is reported with the program printed as a runnable script.

Profiles: ``ci`` (deterministic, a few hundred programs per engine, fewer for jax, which
compiles each new program) and ``long`` (fresh random programs, thousands), chosen with
the environment variable ``ADSWITCH_FUZZ_PROFILE``. From the shell::

    python -m adswitch_conformance.fuzz --backend tape --examples 2000

Example:
    >>> from hypothesis import given, settings
    >>> @settings(max_examples=5, derandomize=True, database=None, deadline=None)
    ... @given(programs())
    ... def smoke(program):
    ...     assert check_program(program, ["dual"])["dual"].status != "WRONG"
    >>> smoke()
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import traceback
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from adswitch_conformance.requires import missing_hypothesis

try:
    from hypothesis import HealthCheck, Phase, given, settings
except ModuleNotFoundError as error:  # the fuzzer's one extra dependency
    raise missing_hypothesis(error) from error

from adswitch_conformance.fuzzgen import programs
from adswitch_conformance.fuzzprogram import Program
from adswitch_conformance.fuzzref import FD_TOLERANCE, Reference, kind, numpy_args, reference

__all__ = [
    "ENGINE_TOLERANCE",
    "PROFILES",
    "Outcome",
    "Profile",
    "check_program",
    "fuzz_settings",
    "profile",
    "programs",
    "report",
    "run_fuzz",
]

ENGINE_TOLERANCE = {"float64": (1e-8, 1e-9), "float32": (1e-3, 1e-4), "nested": (1e-8, 1e-9)}
"""``(rtol, atol per unit of magnitude)`` engine against engine: both exact up to rounding."""
SHADOW_START = 0.25
"""What ``Duplicated`` shadows hold before the call (``zero=False`` adds to it)."""


@dataclass(frozen=True)
class Profile:
    """How much fuzzing to do.

    Attributes:
        name: ``"ci"`` or ``"long"``.
        examples: programs per engine.
        per_backend: engine-specific counts (jax compiles every new program).
        max_steps: the most operations per program.
        derandomize: a fixed sequence of programs (CI) or fresh random ones.
    """

    name: str
    examples: int
    per_backend: dict[str, int] = field(default_factory=dict)
    max_steps: int = 6
    derandomize: bool = True

    def examples_for(self, backend: str) -> int:
        return self.per_backend.get(backend, self.examples)


PROFILES = {
    "ci": Profile("ci", examples=500, per_backend={"jax": 150}, max_steps=8, derandomize=True),
    "long": Profile("long", 3000, per_backend={"jax": 400}, max_steps=10, derandomize=False),
}


def profile() -> Profile:
    """The profile named by ``ADSWITCH_FUZZ_PROFILE`` (default ``ci``)."""
    name = os.environ.get("ADSWITCH_FUZZ_PROFILE", "ci")
    if name not in PROFILES:
        raise ValueError(f"ADSWITCH_FUZZ_PROFILE={name!r}: use one of {sorted(PROFILES)}")
    return PROFILES[name]


def fuzz_settings(prof: Profile, backend: str) -> settings:
    """Hypothesis settings for fuzzing ``backend`` under ``prof``."""
    return settings(
        max_examples=prof.examples_for(backend),
        derandomize=prof.derandomize,
        database=None,
        deadline=None,
        print_blob=not prof.derandomize,
        phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


@dataclass
class Outcome:
    """One program on one engine.

    Attributes:
        status: ``pass``, ``unsupported``, ``WRONG``, ``ERROR`` or ``skipped``.
        detail: what differed, or the exception.
        grads: the engine's gradients per argument, as float64 (``None`` where none).
    """

    status: str
    detail: str = ""
    grads: list[Any] = field(default_factory=list)


def _capabilities(backend: str) -> Any:
    import adswitch as ad

    return next((b.capabilities for b in ad.backends() if b.name == backend), None)


def _excused(program: Program, backend: str) -> str:
    """The capability ``program`` needs and ``backend`` declares missing, if any."""
    caps = _capabilities(backend)
    if caps is None:
        return ""
    if program.nested and not caps.nested:
        return "nested"
    if program.mutates and not caps.mutation:
        return "mutation"
    if program.fills_buffers and not caps.fresh_buffer_writes:
        return "fresh_buffer_writes"
    return ""


@dataclass
class _Call:
    """One engine call: its result and the arrays it was given."""

    result: Any
    args: list[Any]  # numpy views of the arguments (to see writes into them)
    shadows: list[Any]  # the shadow objects passed in Duplicated (identity checks)
    shadow_values: list[Any]  # numpy views of the shadows


def _run_engine(program: Program, backend: str) -> _Call:
    """Call ``ad.withgradient`` (or ``ad.gradient``) once."""
    import adswitch as ad

    args = numpy_args(program, program.dtype)
    convert: Callable[[Any], Any] = lambda array: array  # noqa: E731
    if program.native and backend == "torch":
        import torch

        convert = torch.from_numpy  # shares memory: writes stay visible in ``args``
    memo: dict[int, Any] = {}  # a tied argument stays one object
    call: list[Any] = []
    shadows: list[Any] = []
    shadow_values: list[Any] = []
    for arg, value in zip(program.args, args, strict=True):
        given = memo.setdefault(id(value), convert(value)) if arg.is_array else value
        shadow = np.full_like(value, SHADOW_START) if arg.activity == "dup" else None
        shadow_values.append(shadow)
        shadows.append(None if shadow is None else convert(shadow))
        if arg.activity == "dup":
            call.append(ad.Duplicated(given, shadows[-1]))
        elif arg.activity == "const":
            call.append(ad.Const(given))
        else:
            call.append(given)
    f = program.compile(ad, program.dtype)
    if program.entry == "gradient":
        grads = ad.gradient(f, *call, backend=backend, zero=program.zero)
        return _Call(ad.WithGradient(None, grads), args, shadows, shadow_values)
    result = ad.withgradient(f, *call, backend=backend, zero=program.zero)
    return _Call(result, args, shadows, shadow_values)


def _as_numpy(value: Any, native: bool) -> tuple[Any, str]:
    """``(numpy array, problem)``: the engine's array as numpy, and what is wrong with its
    kind (a torch tensor where numpy was passed, a graph-attached tensor...)."""
    module = type(value).__module__.partition(".")[0]
    if native:
        if module != "torch":
            return np.asarray(value), f"{type(value).__name__}, expected a torch tensor"
        if value.requires_grad:
            return value.detach().numpy(), "a tensor still attached to a graph"
        return value.numpy(), ""
    if not isinstance(value, np.ndarray):
        return np.asarray(value), f"{module}.{type(value).__name__}, expected a numpy array"
    return value, ""


def _compare(got: Any, want: Any, rtol: float, atol: float) -> str:
    """Empty when ``got`` matches ``want``, else what differs."""
    got_arr = np.asarray(got, dtype=np.float64)
    want_arr = np.asarray(want, dtype=np.float64)
    if got_arr.shape != want_arr.shape:
        return f"shape {got_arr.shape}, expected {want_arr.shape}"
    diff = np.abs(got_arr - want_arr)
    if np.all(diff <= atol + rtol * np.abs(want_arr)):  # NaN fails this too
        return ""
    worst = np.where(np.isnan(diff), np.inf, diff)
    at = tuple(int(k) for k in np.unravel_index(int(np.argmax(worst)), diff.shape))
    return (
        f"max |got - expected| = {float(np.max(worst)):.3e} at {at}\n"
        f"      got      {np.array2string(got_arr, precision=8)}\n"
        f"      expected {np.array2string(want_arr, precision=8)}"
    )


def _gradient_problems(program: Program, backend: str, call: _Call, ref: Reference) -> list[str]:
    rtol, atol = FD_TOLERANCE[kind(program)]
    native = program.native and backend == "torch"
    problems = []
    for i, arg in enumerate(program.args):
        got, want = call.result.grad[i], ref.grads[i]
        label = f"argument {arg.name} ({arg.activity})"
        if want is None:
            if got is not None:
                problems.append(f"{label}: gradient {type(got).__name__}, expected None")
            continue
        if not arg.is_array:
            if not isinstance(got, float):
                problems.append(f"{label}: gradient is {type(got).__name__}, expected a float")
            elif diff := _compare(got, want, rtol, atol * ref.scale):
                problems.append(f"{label}: {diff}")
            continue
        if arg.activity == "dup":
            if got is not call.shadows[i]:
                problems.append(f"{label}: result is not the Duplicated shadow object itself")
            got = call.shadow_values[i]
            want = want if program.zero else want + SHADOW_START
        else:
            got, problem = _as_numpy(got, native)
            if problem:
                problems.append(f"{label}: gradient is {problem}")
        if got.dtype != program.dtype:
            problems.append(f"{label}: gradient dtype {got.dtype}, expected {program.dtype}")
        elif diff := _compare(got, want, rtol, atol * ref.scale):
            problems.append(f"{label}: {diff}")
    return problems


def _judge(program: Program, backend: str, ref: Reference) -> Outcome:
    from adswitch.errors import MutationError, UnsupportedError

    try:
        call = _run_engine(program, backend)
    except (UnsupportedError, MutationError) as exc:
        missing = _excused(program, backend)
        message = f"{type(exc).__name__}: {exc}"
        if missing:
            return Outcome("unsupported", f"(capability {missing!r} declared missing) {message}")
        return Outcome("ERROR", f"{message}\n      (no declared capability excuses this refusal)")
    except Exception as exc:
        trace = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        tail = traceback.extract_tb(exc.__traceback__)[-1]
        return Outcome("ERROR", f"{trace}\n      (raised at {tail.filename}:{tail.lineno})")
    problems = _gradient_problems(program, backend, call, ref)
    if program.entry == "withgradient":
        rtol = FD_TOLERANCE[kind(program)][0]
        value, problem = _as_numpy(call.result.val, program.native and backend == "torch")
        if problem and not isinstance(call.result.val, float | np.floating):
            problems.append(f"value: {problem}")
        if diff := _compare(value, ref.loss, rtol, rtol * ref.scale):
            problems.append(f"value: {diff}")
    for arg, used in zip(program.args, call.args, strict=True):
        untouched = np.asarray(arg.value, dtype=program.dtype) if arg.is_array else None
        if arg.activity != "tie" and untouched is not None and not np.array_equal(used, untouched):
            problems.append(f"argument {arg.name} was modified by the call; f does not write it")
    native = program.native and backend == "torch"
    as_float = [
        None if g is None else np.array(_as_numpy(g, native)[0], dtype=np.float64)
        for g in call.result.grad
    ]
    if problems:
        return Outcome("WRONG", "\n    ".join(problems), as_float)
    return Outcome("pass", "", as_float)


def check_program(program: Program, backends: Sequence[str]) -> dict[str, Outcome]:
    """Run ``program`` on each engine; judge it against finite differences and, for
    engines that passed, against each other (a disagreement is WRONG on both).

    Args:
        program: the program.
        backends: engine names.

    Returns:
        One :class:`Outcome` per engine.
    """
    ref = reference(program)
    if not ref.reliable:
        return {b: Outcome("skipped", ref.why) for b in backends}
    outcomes = {b: _judge(program, b, ref) for b in backends}
    rtol, atol = ENGINE_TOLERANCE[kind(program)]
    passed = [b for b in backends if outcomes[b].status == "pass"]
    for k, first in enumerate(passed):
        for second in passed[k + 1 :]:
            pairs = zip(program.args, outcomes[first].grads, outcomes[second].grads, strict=True)
            for arg, g1, g2 in pairs:
                if g1 is None or g2 is None:
                    continue
                scale = 1.0 + float(np.max(np.abs(g1), initial=0.0))
                if diff := _compare(g1, g2, rtol, atol * scale):
                    for name, other in ((first, second), (second, first)):
                        detail = f"argument {arg.name}: disagrees with engine {other!r}: {diff}"
                        outcomes[name] = Outcome("WRONG", detail)
    return outcomes


def _without_line(program: Program, i: int) -> Program | None:
    """``program`` minus line ``i``, or ``None`` when a later line or the loss needs it."""
    line = program.lines[i]
    target = re.match(r"(v\d+) = ", line)
    if target is not None:
        name = re.compile(rf"\b{target.group(1)}\b")
        later = [*program.lines[i + 1 :], program.loss]
        if any(name.search(text) for text in later):
            return None
    margins = tuple((k - (k > i), m) for k, m in program.margins if k != i)
    return dataclasses.replace(
        program,
        lines=program.lines[:i] + program.lines[i + 1 :],
        margins=margins,
        ops=program.ops[:i] + program.ops[i + 1 :],
    )


def minimize(program: Program, backend: str, status: str) -> tuple[Program, Outcome]:
    """Delete lines and loss terms while the program still ends in ``status`` on
    ``backend``: Hypothesis's shrinker cannot always remove a step, because removing one
    shifts every later draw. Cheap: only run on a failure.

    Args:
        program: a failing program.
        backend: the engine it fails on.
        status: ``"WRONG"`` or ``"ERROR"``.

    Returns:
        The smallest program found and its outcome.
    """
    outcome = check_program(program, [backend])[backend]
    changed = True
    while changed:
        changed = False
        terms = program.loss.split(" + ")
        candidates: list[Program | None] = [
            dataclasses.replace(program, loss=" + ".join(terms[:k] + terms[k + 1 :]))
            for k in range(len(terms))
            if len(terms) > 1 and not program.nested
        ]
        candidates += [_without_line(program, i) for i in reversed(range(len(program.lines)))]
        for candidate in candidates:
            if candidate is None:
                continue
            result = check_program(candidate, [backend])[backend]
            if result.status == status:
                program, outcome, changed = candidate, result, True
                break
    return program, outcome


def report(program: Program, backend: str, outcome: Outcome) -> str:
    """A readable failure report: what differed, the operations, a runnable script."""
    return (
        f"{outcome.status} on engine {backend!r}:\n    {outcome.detail}\n"
        f"operations: {', '.join(program.ops)}\n"
        "--- reproduce (paste into a file and run) ---\n"
        f"{program.source(backend)}"
    )


def run_fuzz(
    backend: str,
    prof: Profile | None = None,
    examples: int | None = None,
    on_outcome: Callable[[Program, Outcome], None] | None = None,
) -> Counter[str]:
    """Fuzz one engine; raise ``AssertionError`` with a report on the first WRONG/ERROR
    (after Hypothesis has shrunk the program to a small one).

    Args:
        backend: the engine's name.
        prof: the profile (default: :func:`profile`).
        examples: overrides the profile's number of programs.
        on_outcome: called after every program (progress, statistics).

    Returns:
        How many programs ended with each status.
    """
    prof = prof or profile()
    counts: Counter[str] = Counter()
    chosen = fuzz_settings(prof, backend)
    if examples is not None:
        chosen = settings(chosen, max_examples=examples)

    @chosen
    @given(programs(max_steps=prof.max_steps))
    def one(program: Program) -> None:
        outcome = check_program(program, [backend])[backend]
        counts[outcome.status] += 1
        if on_outcome is not None:
            on_outcome(program, outcome)
        if outcome.status in ("WRONG", "ERROR"):
            small, small_outcome = minimize(program, backend, outcome.status)
            raise AssertionError(report(small, backend, small_outcome))

    one()
    return counts


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m adswitch_conformance.fuzz``: fuzz engines from the shell."""
    parser = argparse.ArgumentParser(description="Differential fuzzing of adswitch engines.")
    parser.add_argument("--backend", action="append", help="engine (repeatable; default: all)")
    parser.add_argument("--examples", type=int, default=None, help="programs per engine")
    parser.add_argument("--profile", choices=sorted(PROFILES), default=None)
    options = parser.parse_args(argv)
    import adswitch as ad

    prof = PROFILES[options.profile] if options.profile else profile()
    names = options.backend or [b.name for b in ad.backends() if b.available]
    status = 0
    for name in names:
        try:
            counts = run_fuzz(name, prof, options.examples)
        except AssertionError as exc:
            print(f"[{name}] FAILED\n{exc}")
            status = 1
            continue
        print(f"[{name}] " + ", ".join(f"{k}: {v}" for k, v in sorted(counts.items())))
    return status


if __name__ == "__main__":
    raise SystemExit(main())
