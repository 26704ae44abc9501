"""The Array API namespace adswitch hands out for jax arrays: ``jax.numpy`` itself, but for
``linalg`` (``xp.linalg``: derivative rules right, or refused, where jax's are silently
wrong at singular matrices and repeated eigenvalues and singular values) and ``abs``,
``sort``, ``pow`` (``xp.kinks``: adswitch's convention at kinks and ties).

Every other attribute is ``jax.numpy``'s own object (the module's dictionary copied once;
its lazy attributes reached through its ``__getattr__``), and the module is named
``jax.numpy``, so code that tells namespaces apart by name (``array_api_compat``'s
``is_jax_namespace``) sees jax's.
"""

from __future__ import annotations

import types

__all__ = ["jax_namespace"]

_NAMESPACE: types.ModuleType | None = None
_OWN = frozenset(
    {"__name__", "__doc__", "__package__", "__loader__", "__spec__", "__path__", "__file__",
     "__cached__", "__builtins__"}
)  # fmt: skip


def jax_namespace() -> types.ModuleType:
    """``jax.numpy`` with adswitch's ``linalg`` (built once, then cached).

    Returns:
        A module whose attributes are ``jax.numpy``'s, ``linalg`` excepted.

    Example:
        >>> import jax.numpy as jnp
        >>> xp = jax_namespace()
        >>> xp.sum is jnp.sum, xp.linalg is jnp.linalg
        (True, False)
    """
    global _NAMESPACE
    if _NAMESPACE is None:
        _NAMESPACE = _build()
    return _NAMESPACE


def _build() -> types.ModuleType:
    import jax.numpy as jnp

    from adswitch_jax.xp.kinks import kink_rules
    from adswitch_jax.xp.linalg.namespace import linalg_namespace

    ns = types.ModuleType("jax.numpy", jnp.__doc__)
    ns.__dict__.update((k, v) for k, v in vars(jnp).items() if k not in _OWN)
    ns.__dict__["linalg"] = linalg_namespace(jnp.linalg)
    ns.__dict__.update(kink_rules(jnp))  # abs, sort, pow at their kinks (xp.kinks)
    return ns
