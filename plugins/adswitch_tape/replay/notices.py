"""The warning the tape gives, once per function, when a prepared call cannot be replayed.

No numpy import here, so ``from adswitch_tape.replay.notices import TapeReplayWarning`` is cheap
(for ``warnings.filterwarnings`` or ``pytest.warns``).
"""

from __future__ import annotations

from adswitch.spec import OnceWarner

__all__ = ["TapeReplayWarning", "reset_warnings", "warn_once"]


class TapeReplayWarning(UserWarning):
    """A prepared call on the tape traces ``f`` in Python on every call (slower) instead of
    replaying the operations it recorded once, because replaying could differ from a fresh
    trace (the message says why and what to change).

    Example:
        >>> import warnings
        >>> warnings.simplefilter("ignore", TapeReplayWarning)
    """


_notices = OnceWarner(TapeReplayWarning)

# Warn once per key (the user's function and the reason), at the user's line.
warn_once = _notices.warn
reset_warnings = _notices.reset
