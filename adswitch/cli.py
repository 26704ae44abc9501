"""The ``adswitch`` command: ``adswitch backends`` and ``adswitch conformance``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


def _backends(_: argparse.Namespace) -> int:
    from adswitch import backends

    rows = [("engine", "available", "version", "capabilities / reason")]
    for info in backends():
        if info.available and info.capabilities is not None:
            caps = info.capabilities
            names = ("nested", "mutation", "fresh_buffer_writes", "numpy_operands", "compiles")
            flags = [n for n in names if getattr(caps, n)]
            detail = ", ".join(flags) + f"; devices: {'/'.join(caps.devices)}"
        else:
            detail = info.reason or ""
        rows.append((info.name, "yes" if info.available else "no", info.version or "-", detail))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row[:3], widths)) + "  " + row[3])
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``adswitch`` console script."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "conformance":
        from adswitch_conformance.cli import main as conformance_main

        return int(conformance_main(args[1:]))
    parser = argparse.ArgumentParser(prog="adswitch", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("backends", help="list the engines with availability and versions")
    commands.add_parser("conformance", help="run the conformance suite (see --help there)")
    parsed = parser.parse_args(args)
    if parsed.command == "backends":
        return _backends(parsed)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
