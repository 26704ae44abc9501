"""The core layer: trace levels, the traced node and the backward sweep (numpy only).

Modules, bottom up: ``trace`` (levels, tapes, locks), ``node`` (the bare
:class:`Tracer`, ``raw``, view syncing), ``sweep`` (``backward``). Nothing here knows
a primitive or a rule: entries carry their primitive, and the sweep calls its rules.
"""

from .node import Tracer, raw, sync
from .sweep import IN_PLACE_FROM, Rule, backward
from .trace import FREE, Entry, Trace, escaped, role_text

__all__ = [
    "FREE", "IN_PLACE_FROM", "Entry", "Rule", "Trace", "Tracer", "backward", "escaped", "raw",
    "role_text", "sync",
]  # fmt: skip
