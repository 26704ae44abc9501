"""The core layer: trace levels, the traced node and the sweeps (numpy only).

Modules, bottom up: ``trace`` (levels, tapes, locks), ``node`` (the bare
:class:`Tracer`, ``raw``, view syncing), ``sweep`` (the backward sweeps ``backward`` and
``backward_many``, the batch axes ``BATCH`` the rules read), ``forward`` (the forward
sweep, and ``DONATED``: the tangents it lets the running rule overwrite). Nothing here
knows a primitive or a rule: entries carry their primitive, and the sweeps call its rules.
"""

from .forward import DONATED, NoTangentRule, forward
from .node import Tracer, raw, sync, watch
from .sweep import BATCH, IN_PLACE_FROM, Rule, backward, backward_many
from .trace import FREE, Entry, Trace, escaped, role_text

__all__ = [
    "BATCH", "DONATED", "FREE", "IN_PLACE_FROM", "Entry", "NoTangentRule", "Rule", "Trace",
    "Tracer", "backward", "backward_many", "escaped", "forward", "raw", "role_text", "sync",
    "watch",
]  # fmt: skip
