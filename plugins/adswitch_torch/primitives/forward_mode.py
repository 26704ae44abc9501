"""Per thread: whether a jvp runs torch's forward AD (``forward``), and the tangent a
tensor carries in it. Read where values may carry tangents without requiring grad: the
guard's float conversions (``tensor_patches``), the exact ``**`` (``namespace``), the leaves of a
call nested inside such a jvp (``trace``)."""

from __future__ import annotations

import threading
from typing import Any

from .. import private_api

__all__ = ["forward", "tangent_of", "traced"]


class _Forward(threading.local):
    """How many forward-AD jvps this thread runs (the outermost holds torch's level)."""

    depth = 0


forward = _Forward()


def tangent_of(torch: Any, value: Any) -> Any:
    """The forward-AD tangent ``value`` carries (``None`` when none), read only while
    ``forward.depth`` says a forward-AD jvp runs in this thread."""
    return torch.autograd.forward_ad.unpack_dual(value).tangent


def traced(torch: Any, value: Any) -> bool:
    """Whether the tensor ``value`` belongs to an enclosing differentiation -- it requires
    grad, carries a forward-mode jvp's tangent, or is a value of a ``torch.func`` transform
    (whose jvp tangents no ``requires_grad`` shows, ``transforms``) -- and so must stay a
    tensor: converting it (to numpy, jax, a float) would drop that derivative."""
    if value.requires_grad:
        return True
    if forward.depth and tangent_of(torch, value) is not None:
        return True
    return bool(private_api.is_wrapped(torch)(value))
