"""The ``adswitch`` command: ``adswitch backends``, ``adswitch --version``, and the
subcommands other distributions add (the conformance suite adds ``adswitch conformance``).

A distribution adds a subcommand ``adswitch NAME`` by declaring an entry point
``NAME = "package.module:main"`` in the group ``adswitch.commands``; ``main(argv)`` gets
the remaining arguments and returns the exit status. The front end imports nothing of
those packages until their command is run.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any

COMMAND_GROUP = "adswitch.commands"


def _backends() -> int:
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


def _commands() -> dict[str, Any]:
    """Subcommands declared by installed distributions, by name (not loaded)."""
    from importlib.metadata import entry_points

    return {ep.name: ep for ep in entry_points(group=COMMAND_GROUP)}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``adswitch`` console script."""
    args = list(sys.argv[1:] if argv is None else argv)
    extra = _commands()
    if args and args[0] in extra:
        command: Callable[[list[str]], int] = extra[args[0]].load()
        return int(command(args[1:]))
    from adswitch import __version__

    parser = argparse.ArgumentParser(
        prog="adswitch",
        description="adswitch: one API to differentiate numerical code with any "
        "automatic-differentiation engine.",
    )
    parser.add_argument("--version", action="version", version=f"adswitch {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    # Each subcommand has a description of its own (``adswitch backends --help`` shows it);
    # the ones other distributions add are described by their own parsers.
    commands.add_parser(
        "backends",
        help="list the engines with availability and versions",
        description="List every adswitch engine found (the built-in tape and the plugins "
        "installed under the 'adswitch.backends' entry point): whether it can be used "
        "now, its version, and what it declares (nested differentiation, mutation, "
        "compilation, devices) -- or, for an engine that cannot be used, why and the "
        "command that installs it.",
    )
    for name in sorted(extra):
        commands.add_parser(name, help=f"see: adswitch {name} --help")
    parsed = parser.parse_args(args)
    if parsed.command == "backends":
        return _backends()
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
