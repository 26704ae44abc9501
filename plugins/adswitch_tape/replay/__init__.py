"""Prepared calls, recorded once and replayed without Python: the entry points
(``prepared``), what a prepared call keeps and checks before a replay (``recordings``),
what one run of ``f`` did or why it cannot be replayed (``recorder``; ``sites``: which of
the tape's own lines read only shapes), what ``f`` reads besides its arguments
(``closure_guard``), the recorded operations as one numpy function (``program``), a
gradient as one function (``fused``, ``kernels``), the buffers a program owns (``arena``)
and the warning when a call cannot be replayed (``notices``: no numpy import, so
``from adswitch_tape.replay.notices import TapeReplayWarning`` stays cheap)."""
