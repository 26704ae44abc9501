"""pytest plugin: run the conformance suite in a third-party engine's CI.

One line::

    pytest --pyargs adswitch_conformance --adswitch-backend NAME [--adswitch-backend OTHER]

Each (engine, case) is one test: **pass** passes, **unsupported** (the engine declared the
capability missing and raised the documented ``AdswitchError``) is an xfail, **WRONG**
and **ERROR** fail with the runner's message. ``-k`` selects cases as usual
(``-k seed003``). ``--adswitch-prepared`` runs every case through ``ad.prepare`` instead
(prepared at its arguments, called at others: ``adswitch conformance --prepared``);
``--adswitch-prepared both`` runs each case both ways (test ids ``NAME:CASE`` and
``NAME:prepared:CASE``).

The plugin is registered for every pytest run (entry point ``pytest11``), so it stays
inert unless ``--adswitch-backend`` is given: it only adds the option, imports nothing
heavy, and parametrizes nothing but the ``adswitch_case`` fixture of its own test module.
"""

from __future__ import annotations

from typing import Any

import pytest

OPTION = "--adswitch-backend"
PREPARED_OPTION = "--adswitch-prepared"


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
    group.addoption(
        PREPARED_OPTION,
        nargs="?",
        const="only",
        default=None,
        choices=("only", "both"),
        dest="adswitch_prepared",
        help="run the conformance cases through ad.prepare; 'both': plain and prepared",
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

    prepared = metafunc.config.getoption("adswitch_prepared")
    modes = {None: ("plain",), "only": ("prepared",), "both": ("plain", "prepared")}[prepared]
    params: list[Any] = [
        pytest.param(
            (backend, case, mode),
            id=f"{backend}:{case.id}" if mode == "plain" else f"{backend}:{mode}:{case.id}",
        )
        for backend in backends
        for mode in modes
        for case in catalogue()
    ]
    metafunc.parametrize("adswitch_case", params)
