"""The engine's primitives and how one call runs: the ``Backend`` primitives (``engine``),
the way each call goes -- compiled, eager or nested (``dispatch``) --, the call as the
contract hands it over, and its eager run finished (``request``), ``f`` run inside a jax
transformation with the checks around it (``calls``), the transformations without ``jit``
(``eager``), the results in the caller's kinds (``results``) and the pullback ``vjp``
returns (``pullback``). The compiled way is in :mod:`adswitch_jax.programs`."""
