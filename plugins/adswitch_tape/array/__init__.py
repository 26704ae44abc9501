"""The traced array: the core's bare :class:`~adswitch_tape.core.node.Tracer` given the
behaviour of a numpy array -- operators, indexing and iteration (``tracer``), in-place
writes recorded copy-on-write and numpy-style views (``mutation``), what a tracer may
become outside the tape (``conversions``: Python numbers, numpy arrays, DLPack), the
array methods users reach for (``methods``) and numpy's and the Array API's protocols
(``interop``)."""
