"""The warning the jax engine gives, once per function, when it cannot use a compiled program.

No jax import here, so ``from adswitch_jax.notices import JaxFallbackWarning`` is cheap
(for ``warnings.filterwarnings`` or ``pytest.warns``).
"""

from __future__ import annotations

from adswitch.spec import OnceWarner

__all__ = ["JaxFallbackWarning", "warn_once", "reset_warnings"]


class JaxFallbackWarning(UserWarning):
    """The jax engine runs a function eagerly (slower) instead of as a compiled program.

    Example:
        >>> import warnings
        >>> warnings.simplefilter("ignore", JaxFallbackWarning)
    """


_notices = OnceWarner(JaxFallbackWarning)

# Warn once per key (the user's function and the reason), at the user's line.
warn_once = _notices.warn
reset_warnings = _notices.reset
