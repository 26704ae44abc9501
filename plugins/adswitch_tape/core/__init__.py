"""The core layer: trace levels, the traced node and the backward sweep (numpy only).

Modules, bottom up: ``trace`` (levels, tapes, locks), ``node`` (the bare
:class:`Tracer`, ``raw``, view syncing), ``sweep`` (``backward``, ``backward_many`` and
the batch axes ``BATCH`` the rules read). Nothing here knows a primitive or a rule:
entries carry their primitive, and the sweep calls its rules.
"""

from .node import Tracer, raw, sync
from .sweep import BATCH, IN_PLACE_FROM, Rule, backward, backward_many
from .trace import FREE, Entry, Trace, escaped, role_text

__all__ = [
    "BATCH", "FREE", "IN_PLACE_FROM", "Entry", "Rule", "Trace", "Tracer", "backward",
    "backward_many", "escaped", "raw", "role_text", "sync",
]  # fmt: skip
