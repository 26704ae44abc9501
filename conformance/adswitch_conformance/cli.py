"""``adswitch conformance``: run the catalogue on engines, print the matrix, write reports."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

from .case import Case
from .cases import catalogue
from .report import matrix_markdown, summary_markdown, totals, write_json
from .runner import ERROR, WRONG, Record, run_suite

__all__ = ["main", "select_cases"]

_MARK = {"pass": ".", "unsupported": "u", "WRONG": "W", "ERROR": "E"}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="adswitch conformance",
        description="Run adswitch's conformance cases on engines. Outcomes: pass, "
        "unsupported (declared and refused with an AdswitchError), WRONG, ERROR. "
        "Exit status 1 on any WRONG or ERROR.",
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
    return parser


def select_cases(keyword: str | None) -> list[Case]:
    """The catalogue, filtered by a substring of the case id.

    Example:
        >>> all("seed003" in c.id for c in select_cases("seed003"))
        True
    """
    cases = catalogue()
    return [c for c in cases if keyword in c.id] if keyword else cases


def _engines(requested: Sequence[str]) -> tuple[list[str], dict[str, str], list[str]]:
    """(engines to run, versions, problems with the request)."""
    import adswitch as ad

    infos = {info.name: info for info in ad.backends()}
    if not requested:
        names = [name for name, info in infos.items() if info.available]
        return names, {n: infos[n].version or "" for n in names}, []
    problems = []
    for name in requested:
        if name not in infos:
            problems.append(f"unknown engine {name!r}; installed: {', '.join(sorted(infos))}")
        elif not infos[name].available:
            problems.append(f"engine {name!r} is unavailable: {infos[name].reason}")
    names = list(dict.fromkeys(requested))
    return names, {n: (infos[n].version or "") if n in infos else "" for n in names}, problems


def main(argv: list[str]) -> int:
    """Run the suite as the command line says; return the exit status.

    Args:
        argv: the arguments after ``adswitch conformance``.

    Returns:
        0 when no (engine, case) is WRONG or ERROR, 1 otherwise, 2 on a usage error.

    Example:
        >>> main(["--list", "-k", "seed003_log"])  # doctest: +ELLIPSIS
        mutation.seed003_log_then_fill ...
        0
    """
    args = _parser().parse_args(argv)
    cases = select_cases(args.keyword)
    if args.list:
        for case in cases:
            print(f"{case.id}  [{case.family}] {case.description}")
        return 0
    if not cases:
        print(f"no case id contains {args.keyword!r}", file=sys.stderr)
        return 2
    names, versions, problems = _engines(args.backend)
    for problem in problems:
        print(f"adswitch conformance: {problem}", file=sys.stderr)
    if not names:
        print("adswitch conformance: no engine available", file=sys.stderr)
        return 1
    started = time.perf_counter()
    current: list[str] = []

    def progress(record: Record) -> None:
        if not current or current[-1] != record.backend:
            if current:
                sys.stderr.write("\n")
            current.append(record.backend)
            sys.stderr.write(f"{record.backend:>10} ")
        sys.stderr.write(_MARK.get(record.outcome, "?"))
        sys.stderr.flush()

    records = run_suite(cases, names, progress=progress)
    sys.stderr.write(f"\n{len(records)} runs in {time.perf_counter() - started:.1f} s\n")
    for record in records:
        if record.outcome in (WRONG, ERROR):
            sys.stderr.write(
                f"  {record.outcome} {record.backend} {record.case}: {record.message}\n"
            )
    table = summary_markdown(records, cases) + "\n" + matrix_markdown(records, cases, versions)
    sys.stdout.write(table)
    if args.json:
        write_json(args.json, records, versions)
    if args.markdown:
        with open(args.markdown, "w") as handle:
            handle.write(table)
    bad = sum(totals(records, n)[WRONG] + totals(records, n)[ERROR] for n in names)
    return 1 if bad or problems else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
