"""The exceptions adswitch raises. Every message says what went wrong *and* the fix.

Each class also derives from the builtin exception a Python user would expect
(``TypeError`` for a wrong argument kind, ``ValueError`` for a wrong value...), so
``except ValueError`` keeps working in code that does not know adswitch.
"""

from __future__ import annotations

__all__ = [
    "AdswitchError",
    "ActivityError",
    "OutputError",
    "MutationError",
    "AliasingError",
    "BackendUnavailableError",
    "UnsupportedError",
    "UsageError",
    "PreparationError",
]


class AdswitchError(Exception):
    """Base class of every error adswitch raises on purpose."""


class ActivityError(AdswitchError, TypeError):
    """An argument's activity (``Duplicated``/``Const``/plain/``Active``) cannot be honoured."""


class OutputError(AdswitchError, ValueError):
    """The differentiated function returned something that is not a real scalar loss."""


class MutationError(AdswitchError, RuntimeError):
    """An in-place write would make a recorded gradient wrong."""


class AliasingError(AdswitchError, ValueError):
    """Two distinct differentiable leaves share memory, so their gradients are ambiguous."""


class BackendUnavailableError(AdswitchError, ImportError):
    """The selected engine is not installed or failed to load.

    The message carries the exact install command."""


class UnsupportedError(AdswitchError, NotImplementedError):
    """The engine does not support this operation or case (and declared so)."""


class NoForwardRuleError(UnsupportedError):
    """Forward mode met an ``ad.custom_vjp`` rule, which defines no pushforward (define
    ``ad.custom_jvp``). ``hessian``/``hvp`` catch it and go reverse-over-reverse."""


class UsageError(AdswitchError, ValueError):
    """A keyword argument of an adswitch call has a value it cannot take (the message
    lists the values it can)."""


class PreparationError(AdswitchError, ValueError):
    """A prepared call (``ad.prepare``) got arguments whose structure, wrappers, leaf types,
    shapes, dtypes, devices or ties differ from the prepared ones; the message lists every
    difference by key path. Prepare again for the new structure."""
