"""adswitch's built-in engine, ``backend="tape"``: reverse and forward mode over numpy,
batched, any order.

Layers, bottom up; a module imports only from layers below it (``tests/front/test_layers.py``):
    1. ``core/``      -- trace levels and tapes (``trace``), the bare traced node
       :class:`Tracer` with view syncing (``node``), the backward sweeps (``sweep``: one
       loss, or many outputs at once, batched, optionally keeping the tape) and the
       forward sweep (``forward``);
    2. ``recording``  -- how an operation on tracers is recorded: ``unary``/``binary``/
       ``nary`` primitives, ``defvjp`` and ``defjvp``;
    3. ``rules/``     -- the primitives with their numpy code (``primitives``), the rules'
       helpers (``helpers``: shapes, unbroadcasting, batch axes), the gradient tables
       (``elementwise``, ``shapes``, ``reductions``; non-smooth points documented
       there) and the tangent tables (``forward_elementwise``, ``forward_arrays``);
       ``rules/linalg/``: the matrix rules -- the products' (``products``), the ``linalg``
       factorizations and solvers with both kinds of rules (``primitives``, ``solvers``,
       ``factorizations``; ``spectra``: what is refused at repeated eigen- and singular
       values);
    4. ``array/``     -- the traced array: ``mutation`` -- in-place writes, recorded
       copy-on-write, and numpy-style views; ``conversions`` --
       ``int``/``float``/``np.asarray``/DLPack of a tracer: allowed where no gradient is
       dropped, refused with the fix where one would be; ``tracer`` -- attaches
       operators, indexing and conversions to the core's :class:`Tracer`; ``methods``
       -- ``x.sum()`` and the like; ``interop`` -- numpy's protocols and
       ``__array_namespace__``;
    5. ``xp/``        -- the namespace's functions by kind, with the ``linalg``,
       ``special`` and ``fft`` extensions; ``namespace`` -- the Array API namespace
       (``ad.array_namespace(traced)``), which attaches ``array.interop`` when imported;
    6. ``calls``      -- what every differentiation call does around ``f`` (trace, hand
       back, restore); ``ownership`` -- a reusable pullback's tape owns its values;
       ``engine`` -- ``value_and_grad``; ``operators`` -- ``vjp``, ``vjp_apply``, ``jvp``;
       ``custom`` -- ``ad.custom_vjp``/``ad.custom_jvp`` as tape entries (with
       ``custom_rows``: a user's rule row by row under a batched sweep);
    7. ``replay/``    -- prepared calls, recorded once and replayed without Python
       (``prepared``, over ``recordings`` -- what a prepared call keeps and checks before
       a replay; ``recorder`` -- what one run of ``f`` did, or why it cannot be replayed;
       ``sites`` -- which of the tape's own lines read only shapes; ``closure_guard`` --
       what ``f`` reads besides its arguments (the kit's ``adswitch.closures`` walk);
       ``program`` -- the recorded operations as one numpy function;
       ``fused``/``kernels`` -- a gradient as one function; ``arena`` -- buffers a
       program owns; ``notices`` -- the warning);
    8. ``plugin``     -- the ``adswitch.backends`` entry point (imports nothing heavy).

The array behaviour lives above the rules, yet rules use operators on tracers (``g * y``):
the class is completed when ``namespace`` is imported, which ``calls`` does before it
makes a tracer.

Example:
    >>> import numpy as np, adswitch as ad
    >>> def f(x):
    ...     xp = ad.array_namespace(x)
    ...     y = xp.log(x)
    ...     x[...] = 0.0          # recorded: y keeps the value it read
    ...     return xp.sum(y + x)
    >>> ad.gradient(f, np.array([1.0, 2.0, 4.0]), backend="tape")[0]
    array([1.  , 0.5 , 0.25])
    >>> ad.jacobian(lambda v: v * v, np.array([1.0, 3.0]), mode="forward", backend="tape")[0]
    array([[2., 0.],
           [0., 6.]])
"""
