"""What the numpy engines (the tape, autograd) need to lock a caller's array read-only
during a call and give it back as it was: whether numpy would make it writeable again,
and whether ``f`` changed one that had to be read through a copy instead.

Re-exported by :mod:`adswitch.spec`, so plugins reach it through the contract.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["restorable", "same_contents"]


def restorable(array: np.ndarray, released: Callable[[np.ndarray], bool] | None = None) -> bool:
    """Whether numpy would make ``array`` writeable again after it is made read-only, the
    arrays it views keeping their flags -- except those for which ``released(base)`` is
    true (a call's own locks, restored before their views). numpy's own rule
    (``_IsWriteable``, and numpy 2's refusal for an array with no base that does not own
    its memory), read off the flags so that nothing is changed to find out. A numpy view
    of a torch tensor (``t.numpy()``, a ``DataLoader`` batch) never is: its memory's
    owner exports no buffer.

    Example:
        >>> base = np.zeros(3)
        >>> restorable(base), restorable(base[1:])
        (True, True)
        >>> base.flags.writeable = False
        >>> restorable(base[1:])
        False
    """
    if array.flags.owndata:
        return True
    base = array.base
    if base is None:  # memory wrapped from C (scipy's MINPACK and ODEPACK hand these)
        return False
    while isinstance(base, np.ndarray):
        if base.flags.writeable or (released is not None and released(base)):
            return True
        if base.base is None or base.flags.owndata:
            return False
        base = base.base
    try:  # the memory's owner is not an array: numpy asks for a writable buffer
        with memoryview(base) as view:
            return not view.readonly
    except (TypeError, ValueError, BufferError):  # a torch tensor exports none
        return False


def same_contents(array: np.ndarray, copy: np.ndarray) -> bool:
    """Whether ``array`` still holds what ``copy`` was taken of (NaNs equal to NaNs).

    Example:
        >>> same_contents(np.array([np.nan, 1.0]), np.array([np.nan, 1.0]))
        True
    """
    # (``equal_nan`` costs some 30 times as much: only where NaNs may be why they differ)
    return bool(np.array_equal(array, copy)) or (
        copy.dtype.kind in "fc" and bool(np.array_equal(array, copy, equal_nan=True))
    )
