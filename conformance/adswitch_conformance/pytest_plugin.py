"""pytest plugin: run the conformance suite in a third-party engine's CI.

One line::

    pytest --pyargs adswitch_conformance --adswitch-backend NAME [--adswitch-backend OTHER]

Each (engine, case) is one test: **pass** passes, **unsupported** (the engine declared the
capability missing and raised the documented ``AdswitchError``) is an xfail, **WRONG**
and **ERROR** fail with the runner's message. ``-k`` selects cases as usual
(``-k seed003``).

The plugin is registered for every pytest run (entry point ``pytest11``), so it stays
inert unless ``--adswitch-backend`` is given: it only adds the option, imports nothing
heavy, and parametrizes nothing but the ``adswitch_case`` fixture of its own test module.
"""

from __future__ import annotations

from typing import Any

import pytest

OPTION = "--adswitch-backend"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("adswitch", "adswitch conformance suite")
    group.addoption(
        OPTION,
        action="append",
        default=[],
        metavar="NAME",
        dest="adswitch_backend",
        help="run adswitch's conformance cases on this engine (repeatable); use with "
        "`pytest --pyargs adswitch_conformance`",
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "adswitch_case" not in metafunc.fixturenames:
        return
    backends: list[str] = metafunc.config.getoption("adswitch_backend") or []
    if not backends:
        skip = pytest.mark.skip(reason=f"pass {OPTION} NAME to run the conformance suite")
        metafunc.parametrize("adswitch_case", [pytest.param(None, marks=skip)], ids=["inert"])
        return
    from adswitch_conformance.cases import catalogue

    params: list[Any] = [
        pytest.param((backend, case), id=f"{backend}:{case.id}")
        for backend in backends
        for case in catalogue()
    ]
    metafunc.parametrize("adswitch_case", params)
