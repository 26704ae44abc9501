"""adswitch-dual: an example third-party adswitch engine (forward-mode dual numbers).

Installing this distribution registers the engine ``"dual"`` through the entry-point
group ``adswitch.backends``; nothing needs importing by hand::

    import adswitch as ad
    ad.gradient(f, x, backend="dual")

Modules: :mod:`adswitch_dual.dual` (the ``DualArray`` type), :mod:`adswitch_dual.namespace`
(its Array API namespace), :mod:`adswitch_dual.engine` (one forward pass per gradient)
and :mod:`adswitch_dual.plugin` (the pluggy hook adswitch finds).
"""

__version__ = "0.1.0"
