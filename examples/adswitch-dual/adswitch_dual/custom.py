"""User rules on dual numbers: ``Backend.custom_jvp``, ``Backend.stop_gradient`` and the
refusal of ``Backend.custom_vjp`` (see ``adswitch.spec.Backend``).

A dual number carries a batch of ``B`` tangent directions; a user's jvp rule is written
for one. So the rule runs once per direction, on plain numpy primals and that direction's
tangents, and the outputs' tangents are stacked back into the trailing axis. (An engine
whose rules could take a batch would call the rule once; ``B`` calls keep this example
short and are exact.)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from adswitch.errors import NoForwardRuleError
from adswitch_dual.dual import DualArray, width

__all__ = ["custom_jvp", "custom_vjp", "stop_gradient"]

NO_REVERSE_RULE = (
    "dual: custom_vjp has no forward-mode rule, and this engine is forward mode only "
    "(Capabilities.custom_vjp=False): its bwd has nothing to run in. Fix: define "
    "ad.custom_jvp for this function, or pick a reverse-mode engine with backend= "
    "('tape', 'torch', 'jax', 'autograd')."
)


def custom_jvp(
    fn: Callable[[list[Any]], list[Any]],
    rule: Callable[[list[Any], list[Any]], tuple[list[Any], list[Any]]],
    leaves: Sequence[Any],
    active: Sequence[bool],
) -> list[Any]:
    """The outputs of ``fn`` as dual numbers whose tangents are the rule's, per direction."""
    primals = [v.value if isinstance(v, DualArray) else v for v in leaves]
    outs: list[Any] = []
    per_direction: list[list[Any]] = []
    for j in range(max(width(), 1)):
        tangents = [v.tangent[..., j] if isinstance(v, DualArray) else None for v in leaves]
        outs, out_tangents = rule(primals, tangents)
        per_direction.append([np.asarray(t) for t in out_tangents])
    result: list[Any] = []
    for k, out in enumerate(outs):
        value = np.asarray(out)
        if not np.issubdtype(value.dtype, np.floating):
            result.append(out)  # an integer output carries no tangent
            continue
        stacked = np.stack([d[k].astype(value.dtype) for d in per_direction], axis=-1)
        result.append(DualArray(value, stacked))
    return result


def custom_vjp(
    fn: Callable[[list[Any]], list[Any]],
    fwd: Callable[[list[Any]], tuple[list[Any], Any]],
    bwd: Callable[[Any, list[Any]], list[Any]],
    leaves: Sequence[Any],
    active: Sequence[bool],
) -> list[Any]:
    """Refused: a tangent would pass through a rule this engine cannot run (the front end
    calls it only when some leaf carries one)."""
    raise NoForwardRuleError(NO_REVERSE_RULE)


def stop_gradient(value: Any) -> Any:
    """The value without its tangents: a plain numpy array, a constant."""
    return value.value if isinstance(value, DualArray) else value
