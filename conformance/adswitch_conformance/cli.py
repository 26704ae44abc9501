"""``adswitch conformance``: run the catalogue on engines, print the matrix, write reports."""

from __future__ import annotations

import argparse
import difflib
import os
import sys
import time
from collections.abc import Sequence
from typing import TextIO

from .case import Case
from .cases import catalogue
from .report import column, differences, matrix_markdown, summary_markdown, totals, write_json
from .runner import ERROR, PASS, PLAIN, PREPARED, UNSUPPORTED, WRONG, Record, run_suite
from .under import SKIPPED, UNDER

__all__ = ["main", "select_cases"]

_MARK = {PASS: ".", UNSUPPORTED: "u", WRONG: "W", ERROR: "E", SKIPPED: "s"}
LEGEND = (
    "progress: . pass  u unsupported (declared, refused with an AdswitchError)  W WRONG  E ERROR"
)
UNDER_LEGEND = "          s skipped: the case cannot run under the transform (--under)"
USAGE_ERROR = 2

# argparse prints these as they are: plain text, no reStructuredText markup.
_DESCRIPTION = """\
Run adswitch's conformance cases on engines and print the matrix (Markdown) on
stdout; progress and failures go to stderr."""
_EPILOG = f"""outcomes:
  pass         the engine gave the reference result
  unsupported  the case needs a capability the engine declares it lacks, and the
               engine refused it with an AdswitchError
  WRONG        a result that differs from the reference
  ERROR        any other failure

prepared runs (--prepared): every case goes through ad.prepare, prepared at the
case's arguments and called at fresh or second ones, with the same checks and
outcomes; a case's expected error counts whether ad.prepare or the prepared call
raises it; hygiene cases whose second arguments change shapes, dtypes or activity
expect a PreparationError there. --prepared both runs each case both ways (a
column per engine and mode) and lists where the outcomes differ.

runs under a transform (--under jit|vmap): each case's call is made inside the
engine's own compiler (jax.jit), or vectorising map (jax.vmap, torch.func.vmap)
over two stacked copies of its array inputs (each row checked), on the engines that
declare it (Capabilities.under); a case that cannot run there (an expected error,
Duplicated or Python-scalar arguments, in-place writes, a sparse Jacobian, a
non-array result, Python branching on a traced input) is skipped, with the reason
in the report; a clear UnsupportedError raised only there counts as unsupported.

{LEGEND}

exit status: 0 when no run is WRONG or ERROR, 1 otherwise, 2 on a usage error
(an unknown or unavailable engine, no case matching -k: nothing is run).
"""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="adswitch conformance",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--backend",
        action="append",
        default=[],
        metavar="NAME",
        help="engine to run (repeatable; default: every available engine)",
    )
    parser.add_argument("--json", metavar="PATH", help="write the JSON report here")
    parser.add_argument("--markdown", metavar="PATH", help="write the Markdown matrix here")
    parser.add_argument(
        "-k", dest="keyword", metavar="SUBSTRING", help="only cases whose id contains SUBSTRING"
    )
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    parser.add_argument(
        "--prepared",
        nargs="?",
        const="only",
        choices=("only", "both"),
        help="run every case through ad.prepare (prepared at its arguments, called at "
        "others); 'both': plain and prepared, a column each",
    )
    parser.add_argument(
        "--under",
        choices=UNDER,
        help="make each call inside the engine's own transform (jax.jit; jax.vmap or "
        "torch.func.vmap over 2 stacked copies of the inputs); only engines declaring it "
        "(Capabilities.under)",
    )
    return parser


class _Stream:
    """stdout or stderr that survives its reader going away (``... | head``): once the pipe
    is broken, further output is dropped and the run goes on (reports still get written,
    the exit status still tells)."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.broken = False

    def write(self, text: str) -> None:
        if self.broken:
            return
        try:
            self.stream.write(text)
            self.stream.flush()
        except BrokenPipeError:
            self.broken = True
            _silence(self.stream)


def _silence(stream: TextIO) -> None:
    # What is left in the stream's buffer would fail again when Python flushes it at
    # exit, printing a traceback: point the descriptor at os.devnull instead.
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):  # not a file (captured by a test)
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


def select_cases(keyword: str | None) -> list[Case]:
    """The catalogue, filtered by a substring of the case id.

    Example:
        >>> all("seed003" in c.id for c in select_cases("seed003"))
        True
    """
    cases = catalogue()
    return [c for c in cases if keyword in c.id] if keyword else cases


def _engines(requested: Sequence[str]) -> tuple[list[str], dict[str, str], list[str]]:
    """(engines to run, their versions, why the request cannot be run)."""
    import adswitch as ad

    infos = {info.name: info for info in ad.backends()}
    available = sorted(name for name, info in infos.items() if info.available)
    if not requested:
        return available, {n: infos[n].version or "" for n in available}, []
    problems = []
    for name in dict.fromkeys(requested):
        if name not in infos:
            problems.append(f"unknown engine {name!r}{_near_miss(name, sorted(infos))}")
        elif not infos[name].available:
            problems.append(f"engine {name!r} is unavailable: {infos[name].reason}")
    if problems:
        listing = "installed engines: " + (", ".join(map(repr, available)) or "none")
        missing = sorted(set(infos) - set(available))
        if missing:
            listing += f" (found but not installed: {', '.join(map(repr, missing))})"
        return [], {}, [*problems, listing]
    names = list(dict.fromkeys(requested))
    return names, {n: infos[n].version or "" for n in names}, []


def _composing(names: list[str], under: str, err: _Stream) -> tuple[list[str], list[str]]:
    """The engines among ``names`` that declare ``under``; the others are left out (said
    on stderr), and none left is a usage error."""
    from .capabilities import composes, engine_capabilities

    kept = [n for n in names if composes(engine_capabilities(n), under)]
    left = [n for n in names if n not in kept]
    if left:
        err.write(
            f"adswitch conformance: --under {under}: left out {', '.join(left)} "
            f"(no under={under!r} in their Capabilities)\n"
        )
    if not kept:
        return [], [f"no engine among {', '.join(names)} declares under={under!r}"]
    return kept, []


def _near_miss(name: str, names: Sequence[str]) -> str:
    close = difflib.get_close_matches(name.lower(), [n.lower() for n in names], n=1)
    if not close:
        return ""
    return f" (did you mean {next(n for n in names if n.lower() == close[0])!r}?)"


def _verdict(records: Sequence[Record], elapsed: float, *, compare_modes: bool) -> str:
    """The run's summary: counts per engine and mode, every non-pass by name, mode changes."""
    lines = [f"{len(records)} runs in {elapsed:.1f} s"]
    for label in dict.fromkeys(column(r) for r in records):
        mine = [r for r in records if column(r) == label]
        counts = totals(mine, mine[0].backend, mine[0].mode)
        shown = (PASS, UNSUPPORTED, WRONG, ERROR, *((SKIPPED,) if counts[SKIPPED] else ()))
        lines.append(f"{label}: " + ", ".join(f"{counts[o]} {o}" for o in shown))
    for outcome in (UNSUPPORTED, WRONG, ERROR):
        for record in records:
            if record.outcome == outcome:
                tail = f": {record.message}" if outcome != UNSUPPORTED else ""
                lines.append(f"  {outcome} {column(record)} {record.case}{tail}")
    if compare_modes:
        changed = differences(records)
        lines.append(f"prepared vs plain: {len(changed)} case(s) with another outcome")
        lines += [f"  {b} {c}: {p} plain, {q} prepared" for b, c, p, q in changed]
    bad = sum(r.outcome in (WRONG, ERROR) for r in records)
    lines.append(f"verdict: {'FAIL' if bad else 'ok'} ({bad} WRONG or ERROR)")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    """Run the suite as the command line says; return the exit status.

    Args:
        argv: the arguments after ``adswitch conformance``.

    Returns:
        0 when no (engine, case) is WRONG or ERROR, 1 otherwise, 2 on a usage error
        (an unknown or unavailable engine, or no case matching ``-k``; nothing is run).

    Example:
        >>> main(["--list", "-k", "seed003_log"])  # doctest: +ELLIPSIS
        mutation.seed003_log_then_fill ...
        0
    """
    args = _parser().parse_args(argv)
    out, err = _Stream(sys.stdout), _Stream(sys.stderr)
    cases = select_cases(args.keyword)
    if args.list:
        for case in cases:
            out.write(f"{case.id}  [{case.family}] {case.description}\n")
        return 0
    if not cases:
        err.write(f"adswitch conformance: no case id contains {args.keyword!r}\n")
        return USAGE_ERROR
    names, versions, problems = _engines(args.backend)
    if args.under and not problems:
        names, problems = _composing(names, args.under, err)
    for problem in problems:
        err.write(f"adswitch conformance: {problem}\n")
    if problems:
        return USAGE_ERROR
    if not names:
        err.write("adswitch conformance: no engine available\n")
        return 1
    started = time.perf_counter()
    current: list[str] = []
    err.write(LEGEND + "\n" + (UNDER_LEGEND + "\n" if args.under else ""))

    def progress(record: Record) -> None:
        label = column(record)
        if not current or current[-1] != label:
            if current:
                err.write("\n")
            current.append(label)
            err.write(f"{label:>10} ")
        err.write(_MARK.get(record.outcome, "?"))

    modes = {None: (PLAIN,), "only": (PREPARED,), "both": (PLAIN, PREPARED)}[args.prepared]
    if args.under:  # (the calls inside the transform are plain calls)
        modes = (PLAIN,)
    records = run_suite(cases, names, progress=progress, modes=modes, under=args.under)
    elapsed = time.perf_counter() - started
    err.write("\n")
    table = summary_markdown(records, cases) + "\n" + matrix_markdown(records, cases, versions)
    if args.json:
        write_json(args.json, records, versions)
    if args.markdown:
        with open(args.markdown, "w") as handle:
            handle.write(table)
    out.write(table)
    # The verdict comes last, where a reader of a long run looks: counts, then every
    # run that did not pass, by name.
    err.write(_verdict(records, elapsed, compare_modes=len(modes) > 1))
    bad = sum(r.outcome in (WRONG, ERROR) for r in records)
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
