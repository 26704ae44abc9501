"""The namespace's functions by kind, composed of the primitives (see ``namespace``).

``axes`` (argument and result conventions), ``elementwise`` (the zero-derivative ones,
complex parts, ``clip``, ``where``), ``shapes``, ``indexing``, ``reductions``,
``searching``, ``creation``, ``dtypes``, and the extensions ``linalg`` and ``fft`` (the
sub-namespaces ``xp.linalg``, ``xp.fft``); ``adswitch_tape.namespace`` gathers them with
the primitives into the one Array API namespace module.
"""
