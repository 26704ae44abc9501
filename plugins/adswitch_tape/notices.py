"""The warning the tape gives, once per function, when a prepared call cannot be replayed.

No numpy import here, so ``from adswitch_tape.notices import TapeReplayWarning`` is cheap
(for ``warnings.filterwarnings`` or ``pytest.warns``).
"""

from __future__ import annotations

import sys
import threading
import warnings
from collections.abc import Hashable

__all__ = ["TapeReplayWarning", "reset_warnings", "warn_once"]


class TapeReplayWarning(UserWarning):
    """A prepared call on the tape traces ``f`` in Python on every call (slower) instead of
    replaying the operations it recorded once, because replaying could differ from a fresh
    trace (the message says why and what to change).

    Example:
        >>> import warnings
        >>> warnings.simplefilter("ignore", TapeReplayWarning)
    """


_warned: set[Hashable] = set()
_lock = threading.Lock()
_MAX_REMEMBERED = 4096


def _user_stacklevel() -> int:
    """The stack level of the first frame outside adswitch and its plugins."""
    level = 1
    frame = sys._getframe(1)
    while frame is not None:
        module = str(frame.f_globals.get("__name__", ""))
        if module.partition(".")[0] != "adswitch" and not module.startswith("adswitch_"):
            return level
        frame = frame.f_back  # type: ignore[assignment]
        level += 1
    return 1


def warn_once(key: Hashable, message: str) -> None:
    """Warn ``message`` with :class:`TapeReplayWarning` unless ``key`` was warned before.

    Args:
        key: what the warning is about (the user's function and the reason).
        message: the text, saying what happens and the fix.

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     warn_once("doc-example", "slow"); warn_once("doc-example", "slow")
        >>> len(caught)
        1
    """
    with _lock:
        try:
            if key in _warned:
                return
            if len(_warned) >= _MAX_REMEMBERED:
                _warned.clear()
            _warned.add(key)
        except TypeError:  # unhashable key: warn every time rather than never
            pass
    warnings.warn(message, TapeReplayWarning, stacklevel=_user_stacklevel())


def reset_warnings() -> None:
    """Forget which functions were warned about (for tests)."""
    with _lock:
        _warned.clear()
