"""The namespace's functions by kind, composed of the primitives (see ``namespace``).

``axes`` (argument conventions), ``shapes``, ``indexing``, ``reductions``, ``creation``;
``adswitch_tape.namespace`` gathers them with the elementwise functions into the one
Array API namespace module.
"""
