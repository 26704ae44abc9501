"""adswitch's operators against the engines' own calls, side by side (issue 10, "Speed").

Run: ``python benchmarks/bench_operators.py [--engines tape,torch,jax,autograd]
[--workloads jac_square,jac_tall,jac_wide,hess,hvp_mlp,jvp_mlp] [--quick] [--details]``.

Workloads (``workloads.OPERATOR_WORKLOADS``, float64 everywhere): ``jac_square``
(Jacobian of ``tanh(W x + b)``, 64 -> 64), ``jac_tall`` (``tanh(W x)``, 8 -> 256),
``jac_wide`` (256 -> 8), ``hess`` (Hessian of ``sum(log1p(exp(A x))) + 0.5 |x|^2``, x in
R^50, A 100x50), ``hvp_mlp`` (H v of the 64-256-256-1 tanh mlp's mean-squared loss over
all its parameters), ``jvp_mlp`` (the mlp's output tangent along a tangent of all its
parameters).

One table per engine named in ``--engines``: adswitch on that engine (``backend=``) against
the engines' own calls (``operator_baselines``) -- the tape against torch.func and HIPS
autograd, each adapter against its own engine (jax: hand-jitted, repeated calls). Every
workload's contenders run in one interleaved measurement (``timing.compare``; the jax
table uses ``timing.compare_batches``, short batches for calls of tens of microseconds),
and each ratio is one of medians. adswitch's Jacobian is its faster mode of ``reverse``
and ``forward`` (the row ``auto`` is what a caller gets by default), a baseline is the
best of its engine's calls. Before timing, every contender's numbers must agree with
the workload's engine-free oracle (closed forms in numpy; for H v a central difference
of the hand-written gradient) and with each other (rtol 1e-9): a wrong answer stops the
run. A final compact table (best modes) is ready for the README.

BLAS, torch and XLA run on one thread (as in ``bench_tape.py``/``bench_torch.py``: on the
shared machine threads mostly add noise, and every contender runs the same kernels);
set ``OPENBLAS_NUM_THREADS``, ``BENCH_TORCH_THREADS`` or ``XLA_FLAGS`` to change that.
An engine that is not installed is skipped, with a line saying so.
"""

# ruff: noqa: E402  (thread counts are set before numpy or an engine loads)
from __future__ import annotations

import argparse
import functools
import importlib.metadata
import os
import sys
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
os.environ.setdefault(
    "XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
)

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from operator_baselines import (
    PACKAGES,
    Contender,
    baselines,
    engine_arrays,
    installed,
    load,
    numbers,
    synchronous,
)
from timing import compare, compare_batches, fmt_seconds, print_table, time_once
from workloads import OPERATOR_WORKLOADS, OperatorWorkload

import adswitch as ad

ENGINES = ("tape", "torch", "jax", "autograd")
# Per adswitch engine: the engines whose own calls it is measured against.
AGAINST = {
    "tape": ("torch", "autograd"),
    "torch": ("torch",),
    "jax": ("jax",),
    "autograd": ("autograd",),
}
TAPE_TARGETS = {
    ("jac_square", "torch"): 0.5,
    ("jac_tall", "torch"): 0.5,
    ("jac_wide", "torch"): 0.5,
    ("jac_square", "autograd"): 0.1,
    ("jac_tall", "autograd"): 0.1,
    ("hess", "torch"): 0.1,
    ("hvp_mlp", "torch"): 1.0,
}
ADAPTER_TARGET = 1.1  # every workload, against the engine's own best call
RTOL, ATOL = 1e-9, 1e-12  # between contenders (and closed forms): float64 round-off
MODES = ("reverse", "forward")


class Row(NamedTuple):
    workload: str
    ours: str
    ours_s: float
    against: str  # the baseline's engine
    theirs: str
    theirs_s: float
    target: float | None
    best: bool  # adswitch's best mode (the compact table's row), not "auto"
    prepared: bool = False  # through ad.prepare (prepared at the same point)


class Schedule(NamedTuple):
    """How one workload's contenders are timed: ``timer`` runs ``rounds`` rounds of
    batches lasting about ``batch_s`` each; between ``fewest`` and ``most`` rounds, as many
    as fit in ``budget_s`` (today's derived paths can take a second a call)."""

    timer: Callable[..., dict[str, float]]
    batch_s: float
    most: int
    fewest: int
    budget_s: float


def schedule(engine: str, quick: bool) -> Schedule:
    if engine == "jax":
        if quick:
            return Schedule(compare_batches, 0.002, most=10, fewest=3, budget_s=5.0)
        return Schedule(compare_batches, 0.002, most=150, fewest=15, budget_s=60.0)
    rounds = 3 if quick else 15  # timing.compare's default: 15
    return Schedule(compare, 0.02, most=rounds, fewest=rounds, budget_s=0.0)


def rounds_for(runs: dict[str, Callable[[], Any]], plan: Schedule) -> int:
    if plan.most == plan.fewest:
        return plan.most
    per_round = sum(max(time_once(fn, 1), plan.batch_s) for fn in runs.values())
    return max(plan.fewest, min(plan.most, int(plan.budget_s / per_round)))


def target(engine: str, workload: str, against: str) -> float | None:
    return TAPE_TARGETS.get((workload, against)) if engine == "tape" else ADAPTER_TARGET


def adswitch_calls(
    engine: str, w: OperatorWorkload, args: tuple[Any, ...], v: Any
) -> dict[str, Contender]:
    """adswitch's operator for ``w`` on ``engine``, the Array-API form of the function."""
    f = w.build(None)
    first, consts = args[0], tuple(ad.Const(a) for a in args[1:])
    nones = (None,) * len(consts)
    calls: dict[str, Contender]
    if w.operator == "jacobian":
        calls = {
            f"ad.jacobian(mode={m!r})": Contender(
                functools.partial(ad.jacobian, f, first, *consts, backend=engine, mode=m),
                lambda r: r[0],
            )
            for m in (*MODES, "auto")
        }
        for m in MODES:
            prep = ad.prepare(ad.jacobian, f, first, *consts, backend=engine, mode=m)
            calls[f"{PREPARED} ad.jacobian(mode={m!r})"] = Contender(
                functools.partial(prep, first, *consts), lambda r: r[0]
            )
        return _synchronous(engine, calls)
    if w.operator == "hessian":
        op: Any = ad.hessian
        given: tuple[Any, ...] = (first, *consts)
        answer: Callable[[Any], Any] = lambda r: r[0][0]  # noqa: E731
    elif w.operator == "hvp":
        op, given, answer = ad.hvp, ((first, *consts), (v, *nones)), lambda r: r[0]
    else:
        op, given, answer = ad.jvp, ((first, *consts), (v, *nones)), lambda r: r[1]
    name = f"ad.{op.__name__}"
    prep = ad.prepare(op, f, *given, backend=engine)
    calls = {
        name: Contender(functools.partial(op, f, *given, backend=engine), answer),
        f"{PREPARED} {name}": Contender(functools.partial(prep, *given), answer),
    }
    return _synchronous(engine, calls)


PREPARED = "prepared"  # the label's first word for an ad.prepare'd call


def _synchronous(engine: str, calls: dict[str, Contender]) -> dict[str, Contender]:
    return {name: Contender(synchronous(engine, c.run), c.answer) for name, c in calls.items()}


def check(
    name: str,
    w: OperatorWorkload,
    np_args: tuple[Any, ...],
    np_v: Any,
    contenders: dict[str, Contender],
) -> list[str]:
    """Every contender's numbers against the workload's oracle (at its tolerance) and
    against the first contender (``RTOL``, ``ATOL``); a disagreement stops the run. Returns the
    warnings they raised as notes (an engine falling back to a slow path says so)."""
    oracle = numbers(w.oracle(np_args, np_v))
    first: tuple[str, list[np.ndarray]] | None = None
    notes: list[str] = []
    for label, c in contenders.items():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = numbers(c.answer(c.run()))
        notes += [
            f"{name}, {label}: {m.category.__name__}: {m.message}"
            for m in caught
            if not issubclass(m.category, (DeprecationWarning, FutureWarning))
        ]
        first = first or (label, got)
        references = (("the oracle", oracle, w.oracle_tol), (first[0], first[1], (RTOL, ATOL)))
        for reference, expected, (rtol, atol) in references:
            if len(got) != len(expected):
                raise AssertionError(
                    f"{name}: {label} gave {len(got)} arrays, {reference} {len(expected)}"
                )
            message = f"{name}: {label} disagrees with {reference}"
            for e, g in zip(expected, got, strict=True):
                np.testing.assert_allclose(g, e, rtol=rtol, atol=atol, err_msg=message)
    return list(dict.fromkeys(notes))


def measure(
    engine: str, name: str, plan: Schedule
) -> tuple[list[Row], dict[str, float], list[str]]:
    """One interleaved run of adswitch on ``engine`` and the baselines for workload ``name``."""
    w = OPERATOR_WORKLOADS[name]
    rng = np.random.default_rng(0)
    np_args = w.make_args(rng)
    np_v = w.make_tangent(rng) if w.make_tangent else None
    ours = adswitch_calls(engine, w, engine_arrays(engine, np_args), engine_arrays(engine, np_v))
    against = [b for b in AGAINST[engine] if installed(b)]
    theirs = {
        b: baselines(b, w, engine_arrays(b, np_args), engine_arrays(b, np_v)) for b in against
    }
    contenders = {**ours, **{label: c for calls in theirs.values() for label, c in calls.items()}}
    notes = check(name, w, np_args, np_v, contenders)
    runs = {label: c.run for label, c in contenders.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # already noted by the check
        rounds = rounds_for(runs, plan)
        medians = plan.timer(runs, rounds=rounds)
    if rounds < plan.most:
        notes.append(f"{name}: {rounds} rounds (not {plan.most}: the calls are slow)")
    if w.operator == "jacobian":
        best = min((f"ad.jacobian(mode={m!r})" for m in MODES), key=medians.__getitem__)
        best_prepared = min(
            (f"{PREPARED} ad.jacobian(mode={m!r})" for m in MODES), key=medians.__getitem__
        )
        mine = [(best, True), ("ad.jacobian(mode='auto')", False), (best_prepared, True)]
    else:
        mine = [(label, True) for label in ours]
    rows = []
    for label, is_best in mine:
        for b in against:
            base = min(theirs[b], key=medians.__getitem__)
            rows.append(
                Row(
                    name,
                    label,
                    medians[label],
                    b,
                    base,
                    medians[base],
                    target(engine, name, b),
                    is_best,
                    label.startswith(PREPARED),
                )
            )
    return rows, medians, notes


def ratio_cell(row: Row) -> tuple[str, str, str]:
    ratio = row.ours_s / row.theirs_s
    if row.target is None:
        return f"{ratio:.2f}x", "-", "-"
    return f"{ratio:.2f}x", f"≤ {row.target}x", "yes" if ratio <= row.target else "no"


def engine_table(engine: str, rows: Sequence[Row]) -> None:
    against = " and ".join(AGAINST[engine])
    print(f"\n### adswitch on {engine} against {against}'s own calls\n")
    table = []
    for row in rows:
        ratio, goal, met = ratio_cell(row)
        table.append(
            [
                row.workload,
                row.ours,
                fmt_seconds(row.ours_s),
                row.theirs,
                fmt_seconds(row.theirs_s),
                ratio,
                goal,
                met,
            ]
        )
    print_table(
        ["workload", "adswitch", "median", "against", "median", "ratio", "target", "met?"], table
    )


def compact_table(results: dict[str, list[Row]]) -> None:
    """Ratios of the best modes, one column per (engine, baseline), one row per workload."""
    columns = [
        (e, b) for e, rows in results.items() for b in dict.fromkeys(r.against for r in rows)
    ]
    workloads = list(dict.fromkeys(r.workload for rows in results.values() for r in rows))
    cells: dict[tuple[str, str, str, bool], str] = {}
    for engine, rows in results.items():
        for row in rows:
            if row.best:
                ratio, goal, met = ratio_cell(row)
                verdict = (
                    "" if row.target is None else f" ({goal} {'ok' if met == 'yes' else 'over'})"
                )
                cells[(engine, row.against, row.workload, row.prepared)] = ratio + verdict
    print(
        "\n### Summary (adswitch / the engine's own best call; Jacobians: adswitch's best mode;"
        " plain calls and ad.prepare'd ones)\n"
    )
    headers = [
        f"adswitch({e}){' prepared' if p else ''} / best {b}"
        for e, b in columns
        for p in (False, True)
    ]
    print_table(
        ["workload", *headers],
        [
            [wl, *(cells.get((e, b, wl, p), "-") for e, b in columns for p in (False, True))]
            for wl in workloads
        ],
    )


def environment(engines: Sequence[str]) -> str:
    parts = [f"numpy {np.__version__}", f"BLAS threads {os.environ['OPENBLAS_NUM_THREADS']}"]
    for e in ("torch", "jax", "autograd"):
        if installed(e) and (e in engines or any(e in AGAINST[x] for x in engines)):
            module = load(e)
            extra = f", {module.get_num_threads()} threads" if e == "torch" else ""
            parts.append(f"{e} {importlib.metadata.version(e)}{extra}")
    return "float64; " + "; ".join(parts)


def parse(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument(
        "--engines",
        default=",".join(ENGINES),
        help="comma-separated adswitch engines, one table each",
    )
    parser.add_argument(
        "--workloads", default=",".join(OPERATOR_WORKLOADS), help="comma-separated workloads"
    )
    parser.add_argument("--quick", action="store_true", help="a smoke run: few rounds")
    parser.add_argument(
        "--details", action="store_true", help="also print every contender's median"
    )
    options = parser.parse_args(argv)
    for flag, known in (("engines", ENGINES), ("workloads", tuple(OPERATOR_WORKLOADS))):
        names = [n for n in getattr(options, flag).split(",") if n]
        unknown = [n for n in names if n not in known]
        if unknown:
            parser.error(f"--{flag}: unknown {', '.join(unknown)}; choose from {', '.join(known)}")
        setattr(options, flag, names)
    return options


def main(argv: Sequence[str]) -> None:
    options = parse(argv)
    found = {b.name: b for b in ad.backends()}
    engines = []
    for engine in options.engines:
        info = found.get(engine)
        if info is not None and info.available and installed(engine):
            engines.append(engine)
        else:
            reason = info.reason if info is not None and info.reason else "not installed"
            print(f"skipped {engine}: {reason}")
    for engine in engines:
        for b in AGAINST[engine]:
            if not installed(b):
                print(f"{engine}: no {b} baseline ({PACKAGES[b]} is not installed)")
    print(
        environment(engines)
        + (", --quick (few rounds: smoke run, not a measurement)" if options.quick else "")
    )
    results: dict[str, list[Row]] = {}
    for engine in engines:
        plan = schedule(engine, options.quick)
        rows: list[Row] = []
        notes: list[str] = []
        details: list[list[str]] = []
        for name in options.workloads:
            got, medians, more = measure(engine, name, plan)
            rows += got
            notes += more
            details += [[name, label, fmt_seconds(s)] for label, s in medians.items()]
        results[engine] = rows
        engine_table(engine, rows)
        if notes:
            print()
        for note in notes:
            print(f"note: {note}")
        if options.details:
            print()
            print_table(["workload", "contender", "median"], details)
    if results:
        compact_table(results)


if __name__ == "__main__":
    main(sys.argv[1:])
