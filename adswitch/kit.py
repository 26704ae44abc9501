"""The adapter kit: what every engine adapter needs, written once.

Plugins import these from :mod:`adswitch.spec` (the one module of adswitch, with
``adswitch.errors``, that plugins may import).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import linecache
import os
import sys
import threading
from collections.abc import Sequence
from types import FrameType, ModuleType, TracebackType

from adswitch.errors import BackendUnavailableError

__all__ = ["EngineLoader", "user_line"]


class EngineLoader:
    """Imports an adapter's heavy module (the one that imports the engine) on first use.

    A plugin module must not import its engine when it is loaded; it creates one loader
    and calls :meth:`load` when a call needs the engine, and :meth:`version` for
    ``Backend.version``. A missing engine becomes a ``BackendUnavailableError`` that says
    the install command (without the import machinery's chained traceback).

    Args:
        engine: the engine's name, for messages.
        module: the adapter module to import, e.g. ``"adswitch_torch._call"``.
        distributions: the packages the engine needs (their versions come from package
            metadata, without importing them); the first one's version is the engine's.
        install_hint: the command that installs them.

    Example:
        >>> loader = EngineLoader("nosuch", "nosuch_adapter", ("nosuch-pkg",), "pip install x")
        >>> try:
        ...     loader.version()
        ... except BackendUnavailableError as exc:
        ...     print(exc)
        engine 'nosuch' needs nosuch-pkg, which is not installed. Fix: pip install x
    """

    def __init__(
        self, engine: str, module: str, distributions: Sequence[str], install_hint: str
    ) -> None:
        self.engine = engine
        self.module_name = module
        self.distributions = tuple(distributions)
        self.install_hint = install_hint
        self._module: ModuleType | None = None
        self._lock = threading.Lock()

    def version(self) -> str:
        """The first distribution's version; every distribution must be installed."""
        versions = []
        for dist in self.distributions:
            try:
                versions.append(importlib.metadata.version(dist))
            except importlib.metadata.PackageNotFoundError:
                raise BackendUnavailableError(
                    f"engine {self.engine!r} needs {', '.join(self.distributions)}, which is "
                    f"not installed. Fix: {self.install_hint}"
                ) from None
        return versions[0] if versions else "0"

    def load(self) -> ModuleType:
        """The adapter module, imported once (thread-safe)."""
        module = self._module
        if module is None:
            with self._lock:
                if self._module is None:
                    try:
                        self._module = importlib.import_module(self.module_name)
                    except ImportError as exc:
                        raise BackendUnavailableError(
                            f"engine {self.engine!r} could not import its engine "
                            f"({type(exc).__name__}: {exc}). Fix: {self.install_hint}"
                        ) from None
                module = self._module
        return module


def user_line(tb: TracebackType | None = None, *, skip: Sequence[str] = ()) -> str:
    """``" at file.py:12: `source`"`` for the innermost frame of the user's own code.

    Frames of adswitch's front end and of the packages in ``skip`` (top-level module
    names: the adapter's own package, the engine's) are bookkeeping, not the line the
    user wants to see in an error message.

    Args:
        tb: a traceback to search (an exception's ``__traceback__``); ``None`` searches
            the current call stack instead.
        skip: top-level package names whose frames are not the user's.

    Returns:
        The text, ready to append to a message, or ``""`` when no user frame is found.

    Example:
        >>> user_line(skip=("doctest",)).startswith(" at ")
        True
    """
    internal = {"adswitch", *skip}
    found = ""
    if tb is not None:
        while tb is not None:
            if not _is_internal(tb.tb_frame, internal):
                found = _where(tb.tb_frame.f_code.co_filename, tb.tb_lineno)
            tb = tb.tb_next
        return found
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        if not _is_internal(frame, internal):
            return _where(frame.f_code.co_filename, frame.f_lineno)
        frame = frame.f_back
    return found


def _is_internal(frame: FrameType, internal: set[str]) -> bool:
    module = str(frame.f_globals.get("__name__", ""))
    return module.partition(".")[0] in internal


def _where(filename: str, lineno: int) -> str:
    source = linecache.getline(filename, lineno).strip()
    found = f" at {os.path.basename(filename)}:{lineno}"
    return found + f": `{source}`" if source else found
