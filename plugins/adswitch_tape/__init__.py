"""adswitch's built-in engine, ``backend="tape"``: reverse mode over numpy, any order.

How it is built (one concern per module):
    * ``tracer``   -- :class:`Tracer`, the traced array users' functions receive;
    * ``core``     -- trace levels, the tape and the backward sweep;
    * ``primitive`` -- how an operation on tracers is recorded, and ``defvjp``;
    * ``prims``    -- the differentiable primitives and their numpy code;
    * ``vjps``     -- the gradient rules, one flat table (non-smooth points documented there);
    * ``mutation`` -- in-place writes, recorded copy-on-write, and numpy-style views;
    * ``namespace``/``shapes`` -- the Array API namespace (``ad.array_namespace(traced)``);
    * ``interop``  -- what numpy does when it meets a tracer;
    * ``engine``   -- one differentiation call: trace, sweep, hand back, restore;
    * ``plugin``   -- the ``adswitch.backends`` entry point (imports nothing heavy).

Example:
    >>> import numpy as np, adswitch as ad
    >>> def f(x):
    ...     xp = ad.array_namespace(x)
    ...     y = xp.log(x)
    ...     x[...] = 0.0          # recorded: y keeps the value it read
    ...     return xp.sum(y + x)
    >>> ad.gradient(f, np.array([1.0, 2.0, 4.0]), backend="tape")[0]
    array([1.  , 0.5 , 0.25])
"""
