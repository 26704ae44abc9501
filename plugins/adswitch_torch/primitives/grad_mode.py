"""torch's grad mode around every differentiation: a call made under ``torch.no_grad()``
(an evaluation loop, an optimizer step) must still record ``f``'s operations -- without
it every gradient is silently zero -- and one made under ``torch.inference_mode()``
leaves it for the call's duration (its tensors could not be recorded at all).

A tensor made *inside* inference mode can never be recorded; such an argument is refused
with the fix (clone it outside inference mode), not torch's "Inference tensors cannot be
saved for backward".
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

from adswitch.errors import UnsupportedError

__all__ = ["recording"]


@contextlib.contextmanager
def recording(torch: Any, leaves: Sequence[Any], active: Sequence[bool]) -> Iterator[None]:
    """Grad mode on (and inference mode off) for one differentiation call."""
    for k, (leaf, on) in enumerate(zip(leaves, active)):
        if on and isinstance(leaf, torch.Tensor) and leaf.is_inference():
            raise UnsupportedError(
                f"torch: differentiated leaf {k} is an inference tensor (made under "
                "torch.inference_mode()), which autograd can never record. Fix: make it "
                "outside inference mode, or pass x.clone() taken under "
                "torch.inference_mode(False)."
            )
    if torch.is_grad_enabled() and not torch.is_inference_mode_enabled():
        yield  # the common case: nothing to switch
        return
    with torch.inference_mode(False), torch.enable_grad():
        yield
