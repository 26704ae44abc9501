"""What an engine declares (``adswitch.spec.Capabilities``), read by name."""

from __future__ import annotations

from typing import Any

__all__ = ["composes", "has_capability", "engine_capabilities"]


def has_capability(capabilities: Any, name: str) -> bool:
    """Whether declared ``capabilities`` include ``name`` (a boolean field, or a dtype,
    device, array-kind or Array API extension name).

    Example:
        >>> from adswitch.spec import Capabilities
        >>> has_capability(Capabilities(nested=True), "nested"), has_capability(
        ...     Capabilities(), "float32")
        (True, True)
    """
    value = getattr(capabilities, name, None)
    if isinstance(value, bool):
        return value
    groups = ("dtypes", "devices", "array_kinds", "extensions")
    return any(name in getattr(capabilities, group, ()) for group in groups)


def engine_capabilities(backend: str) -> Any:
    """The capabilities ``backend`` declares (from ``ad.backends()``).

    Example:
        >>> engine_capabilities("no-such-engine").nested  # nothing declared
        False
    """
    import adswitch as ad

    for info in ad.backends():
        if info.name == backend:
            return info.capabilities
    from adswitch.spec import Capabilities

    return Capabilities()


def composes(capabilities: Any, transform: str) -> bool:
    """Whether declared ``capabilities`` say an adswitch call on the engine runs inside
    its own ``transform`` (``"jit"``, ``"vmap"``: ``Capabilities.under``).

    Example:
        >>> from adswitch.spec import Capabilities
        >>> composes(Capabilities(under=("jit",)), "jit"), composes(Capabilities(), "jit")
        (True, False)
    """
    return transform in getattr(capabilities, "under", ())
