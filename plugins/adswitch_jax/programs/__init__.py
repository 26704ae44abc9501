"""The compiled programs: one ``jax.jit`` function per primitive (``program``), looked up or
compiled, run and settled (``compiled``), keyed by the call's argument structure and
leaves' signature (``keys``), kept in a thread-safe LRU cache (``cache``) whose entries and
per-function compile counts are booked in ``entries``; an identity basis of tangents baked
in as a constant (``basis``); and the two hooks of prepared calls -- a prepared gradient's
shortcut to its last program (``shortcut``) and jax's tracers standing in for the prepared
arrays (``traced``). What ``f`` reads besides its arguments, the rest of a program's key,
is in :mod:`adswitch_jax.closures`."""
