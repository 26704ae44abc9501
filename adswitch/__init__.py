"""adswitch: one API to differentiate numerical code with any automatic-differentiation engine.

Write ``f`` once against the Array API (``xp = ad.array_namespace(x)``), mark its
arguments plain / ``Duplicated`` / ``Const``, and call :func:`gradient` or
:func:`withgradient` on the engine of your choice -- the built-in numpy tape, torch,
jax, HIPS autograd, or a plugin. No engine is imported until a call needs it.

Example:
    >>> import adswitch as ad, numpy as np
    >>> def f(x):
    ...     xp = ad.array_namespace(x)
    ...     return xp.sum(xp.sin(x) * x)
    >>> ad.gradient(f, np.zeros(2))
    (array([0., 0.]),)
"""

from __future__ import annotations

from adswitch.activity import Active, Const, Duplicated
from adswitch.api import WithGradient, gradient, withgradient
from adswitch.checkpointing import checkpoint
from adswitch.custom import custom_jvp, custom_vjp, stop_gradient
from adswitch.destructure import destructure
from adswitch.differentiate_with import differentiate_with
from adswitch.errors import (
    ActivityError,
    AdswitchError,
    AliasingError,
    BackendUnavailableError,
    MutationError,
    OutputError,
    PreparationError,
    UnsupportedError,
    UsageError,
)
from adswitch.forward import derivative, jvp
from adswitch.jacobians import jacobian
from adswitch.namespace import array_namespace
from adswitch.preparation import Prepared, prepare
from adswitch.registry import BackendInfo, default_registry
from adswitch.reverse import Pullback, vjp
from adswitch.second_order import hessian, hvp
from adswitch.selection import use
from adswitch.sparse import sparsity
from adswitch.trees import register_tree
from adswitch.zeros import make_zero

__version__ = "0.1.0"

__all__ = [
    "ActivityError",
    "Active",
    "AdswitchError",
    "AliasingError",
    "BackendInfo",
    "BackendUnavailableError",
    "Const",
    "Duplicated",
    "MutationError",
    "OutputError",
    "PreparationError",
    "Prepared",
    "Pullback",
    "UnsupportedError",
    "UsageError",
    "WithGradient",
    "array_namespace",
    "custom_jvp",
    "custom_vjp",
    "backends",
    "checkpoint",
    "derivative",
    "destructure",
    "differentiate_with",
    "gradient",
    "hessian",
    "hvp",
    "jacobian",
    "jvp",
    "make_zero",
    "prepare",
    "register_tree",
    "sparsity",
    "stop_gradient",
    "use",
    "vjp",
    "withgradient",
]


def backends() -> list[BackendInfo]:
    """Every engine found, available or not, with its version or the reason it is not.

    Returns:
        A list of :class:`BackendInfo` (``.name``, ``.available``, ``.version``,
        ``.reason``, ``.capabilities``, ``.install_hint``), sorted by name.

    Example:
        >>> import adswitch as ad
        >>> "tape" in [b.name for b in ad.backends()]
        True
    """
    return default_registry().infos()
