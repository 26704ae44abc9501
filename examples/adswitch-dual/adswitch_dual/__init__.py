"""adswitch-dual: an example third-party adswitch engine (forward-mode dual numbers).

Installing this distribution registers the engine ``"dual"`` through the entry-point
group ``adswitch.backends``; nothing needs importing by hand::

    import adswitch as ad
    ad.gradient(f, x, backend="dual")     # from jvp alone: adswitch derives the rest
    ad.jacobian(f, x, backend="dual")     # one forward pass for the whole matrix

The engine implements one primitive, ``jvp``. Its modules, each importing only from the
ones above it in this list:

* :mod:`adswitch_dual.rules` -- the derivative formulas, on plain numpy values;
* :mod:`adswitch_dual.chain` -- the chain rule on ``(value, tangent)`` pairs;
* :mod:`adswitch_dual.dual` -- ``DualArray``, a value carrying a batch of tangents;
* :mod:`adswitch_dual.creation`, :mod:`adswitch_dual.reductions`,
  :mod:`adswitch_dual.shapes` -- parts of the Array API namespace;
* :mod:`adswitch_dual.namespace` -- the namespace ``ad.array_namespace`` returns in ``f``;
* :mod:`adswitch_dual.engine` -- ``jvp``: seed, run ``f`` once, read the tangents;
* :mod:`adswitch_dual.plugin` -- the pluggy hook adswitch finds (no engine import at
  the top).
"""

__version__ = "0.1.0"
