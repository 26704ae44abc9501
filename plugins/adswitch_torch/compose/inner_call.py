"""What one primitive inside a ``torch.func`` transform runs ``f`` on (``transforms``):
the values and primals, ``f`` run under the guard with torch's refusals translated, and
the results in the caller's kinds."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from adswitch.errors import AdswitchError, MutationError, UnsupportedError

from .. import private_api
from ..integrations.jax_arrays import foreign_kind, from_jax, refuse, to_jax
from ..primitives.convert import numpy_of, tensor_from_numpy, to_caller_kind
from ..primitives.pull import translated_backward
from ..primitives.results import storage_of
from ..refusals.errors import mutated_argument, translate_forward, user_line
from ..refusals.tensor_patches import CallGuard

__all__ = ["FuncCall", "Split", "backward_error", "refuse_copy_saved", "shares", "transform_name"]

_NAMES = {
    "Grad": "torch.func.grad/vjp/jacrev",
    "Jvp": "torch.func.jvp/jacfwd",
    "Vmap": "torch.func.vmap",
    "Functionalize": "torch.func.functionalize",
}
# torch's refusal of an autograd.Function it cannot run under a transform
_FUNCTION_MARKERS = ("setup_context", "generate_vmap_rule", "autograd.Function")
# torch's refusal of a write into a tensor the transform holds constant (a Const)
_CAPTURED_MARKERS = ("mutate a captured Tensor", "vmap: inplace arithmetic")


def transform_name(torch: Any) -> str:
    """The innermost active transform, as the caller wrote it (asked before the call
    opens a level of its own)."""
    top = private_api.functorch_stack(torch)()
    name = getattr(top.key(), "name", str(top.key())) if top is not None else ""
    return _NAMES.get(name, "a torch.func transform")


class FuncCall:
    """The values ``f`` runs on, and the primals the transform differentiates.

    Attributes:
        values: per leaf, what ``f`` receives outside the primals' positions.
        primals: the tensors differentiated, one per active leaf, in leaf order.
        positions: the leaf index of each primal.
        kind: the caller's array kind for outputs (as ``trace.Trace.kind``).
    """

    __slots__ = ("kind", "positions", "primals", "strict", "torch", "transform", "values")

    def __init__(
        self,
        torch: Any,
        leaves: Sequence[Any],
        active: Sequence[bool],
        strict: bool,
        own: bool = False,
    ) -> None:
        self.torch = torch
        self.strict = strict
        self.transform = transform_name(torch)  # the caller's, for messages
        tensor_type = torch.Tensor
        self.values = list(leaves)
        self.primals: list[Any] = []
        self.positions: list[int] = []
        any_tensor = any_numpy = any_jax = False
        for i, leaf in enumerate(leaves):
            if isinstance(leaf, tensor_type):
                any_tensor = True
                value = leaf
            elif isinstance(leaf, np.ndarray):
                any_numpy = True
                # ``own``: a pullback outlives the call, and numpy writes bump no counter
                array = np.array(leaf, order="C", copy=True) if own else leaf
                value, _ = tensor_from_numpy(torch, array)
                if value is None:
                    if active[i]:
                        raise UnsupportedError(
                            f"torch: cannot differentiate a numpy array of dtype "
                            f"{leaf.dtype} (torch has no such dtype). Fix: convert it, "
                            f"e.g. x.astype(np.float64)."
                        )
                    continue
            elif isinstance(leaf, (float, np.generic)):
                if not active[i]:
                    continue
                if isinstance(leaf, np.generic):
                    value = torch.from_numpy(np.array(leaf))
                else:
                    value = torch.tensor(leaf, dtype=torch.float64)
            else:
                kind = foreign_kind(leaf)
                if kind is None:
                    continue  # not an array: reaches f as it is
                if kind != "jax":
                    raise refuse(kind, i)
                any_jax = True
                value = from_jax(torch, leaf, i)
            self.values[i] = value
            if active[i]:
                self.primals.append(value)
                self.positions.append(i)
        self.kind = "torch" if any_tensor else "jax" if any_jax and not any_numpy else "numpy"

    def run(self, fn: Callable[[Sequence[Any]], Any], primals: Sequence[Any]) -> Any:
        """``fn`` on the values with the transform's ``primals`` in place, under the
        guard, torch's errors translated; a write into a primal is a ``MutationError``."""
        torch = self.torch
        values = list(self.values)
        for k, i in enumerate(self.positions):
            values[i] = primals[k]
        versions = [p._version for p in primals]
        try:
            with CallGuard(torch, self.strict):
                result = fn(values)
        except (RuntimeError, TypeError, ValueError) as exc:
            translated = translate_forward(exc)
            if translated is None and not isinstance(exc, AdswitchError):  # (an inner call's)
                translated = _not_composable(self.transform, exc)
            if translated is None:
                raise
            raise translated from exc
        for k, p in enumerate(primals):
            if p._version != versions[k]:
                raise mutated_argument(self.positions[k], after=False)
        return result

    def grads(
        self,
        found: Sequence[Any],
        leaves: Sequence[Any],
        batch: int | None = None,
        given: Sequence[Any] = (),
    ) -> list[Any | None]:
        """Per leaf: ``None`` where inactive, else its gradient in the leaf's kind (a
        leading axis of ``batch`` rows when not ``None``), in memory of its own: never
        one of the ``given`` cotangents (handed back when an output is an input) nor
        another leaf's gradient."""
        torch = self.torch
        result: list[Any | None] = [None] * len(leaves)
        seen: list[Any] = list(given)
        for k, i in enumerate(self.positions):
            g = found[k]
            if g is None:
                p = self.primals[k]
                shape = p.shape if batch is None else (batch, *p.shape)
                g = torch.zeros(shape, dtype=p.dtype, device=p.device)
            elif g.layout is not torch.strided:
                g = g.to_dense()  # a sparse gradient (embedding(sparse=True)), like its leaf
            elif not self.traced(g) and g._is_zerotensor():
                g = torch.zeros(g.shape, dtype=g.dtype, device=g.device)  # storage-less zero
            elif shares(self, g, seen):
                g = g.clone()
            seen.append(g)
            leaf = leaves[i]
            if isinstance(leaf, torch.Tensor) or self.traced(g):
                result[i] = g
            elif batch is None:
                result[i] = self.in_kind(g, leaf)
            elif foreign_kind(leaf) == "jax":
                result[i] = to_jax(torch, g, None).astype(leaf.dtype)
            else:  # numpy arrays, and a batch of Python or numpy floats: numpy
                result[i] = numpy_of(torch, g)
        return result

    def traced(self, value: Any) -> bool:
        """Whether a tensor belongs to the caller's transform (wrapped) or to an
        enclosing differentiation: it stays a tensor, converting it would drop that."""
        return bool(private_api.is_wrapped(self.torch)(value) or value.requires_grad)

    def in_kind(self, value: Any, like: Any) -> Any:
        """A tensor as the caller's kind where it is concrete; a tensor of the caller's
        transform (wrapped, or one an enclosing call traces) stays a tensor."""
        torch = self.torch
        if self.traced(value):
            return value
        if self.kind == "jax" and like is None:
            return to_jax(torch, value, None)
        if like is None:
            return to_caller_kind(torch, value, None, self.kind == "numpy")
        if foreign_kind(like) == "jax":
            return to_jax(torch, value, like)
        return to_caller_kind(torch, value, like, False)

    def outputs(self, out: Sequence[Any], leaves: Sequence[Any]) -> list[Any]:
        """``f``'s output leaves for the caller (``f``'s own argument: the caller's)."""
        torch = self.torch
        result = []
        for o in out:
            if isinstance(o, torch.Tensor):
                o = next((leaf for v, leaf in zip(self.values, leaves) if o is v), o)
                if isinstance(o, torch.Tensor) and self.kind != "torch":
                    o = self.in_kind(o, None)
            result.append(o)
        return result


def _not_composable(transform: str, exc: BaseException) -> Exception | None:
    """The adswitch error for what torch refuses to run inside a transform."""
    text = str(exc)
    if isinstance(exc, RuntimeError) and any(m in text for m in _CAPTURED_MARKERS):
        return MutationError(
            f"torch: f writes in place{user_line(exc.__traceback__)} into a tensor it does "
            f"not differentiate (a Const argument, or a tensor f closes over) inside "
            f"{transform}; torch.func cannot differentiate or batch such a write (torch says: "
            f"{text.splitlines()[0]}). Fix: write into a copy (c = xp.asarray(c, "
            f"copy=True)) or a fresh buffer, or call adswitch outside the transform."
        )
    if isinstance(exc, RuntimeError) and any(m in text for m in _FUNCTION_MARKERS):
        return UnsupportedError(
            f"torch: a torch.autograd.Function in f (an ad.custom_vjp/custom_jvp rule, an "
            f"ad.host_rules function, or a library's) cannot run inside {transform} (torch "
            f"says: {text.splitlines()[0]}). Fix: call adswitch outside the torch.func "
            f"transform; a Function of your own composes once it defines setup_context and "
            f"generate_vmap_rule = True."
        )
    return None


def refuse_copy_saved(torch: Any) -> UnsupportedError:
    """``TorchBackend(copy_saved=True)`` inside a transform."""
    return UnsupportedError(
        f"torch: TorchBackend(copy_saved=True) cannot run inside {transform_name(torch)}: its "
        f"saved-tensor hooks and copies of the arguments do not compose with functorch's "
        f"levels. Fix: use backend='torch' (writes into fresh buffers are then "
        f"differentiated or refused), or call adswitch outside the transform."
    )


class Split:
    """``f``'s output leaves split into tensors (which functorch's ``has_aux`` carries
    to the caller's level) and the rest (kept here)."""

    __slots__ = ("others", "where")

    def __init__(self) -> None:
        self.where: list[bool] = []
        self.others: list[Any] = []

    def tensors(self, torch: Any, out: Sequence[Any]) -> tuple[Any, ...]:
        self.where = [isinstance(o, torch.Tensor) for o in out]
        self.others = [o for o, w in zip(out, self.where) if not w]
        return tuple(o for o, w in zip(out, self.where) if w)

    def join(self, tensors: Sequence[Any]) -> list[Any]:
        ts, others = iter(tensors), iter(self.others)
        return [next(ts) if w else next(others) for w in self.where]


def backward_error(exc: RuntimeError, after: bool) -> Exception:
    """torch's error in a backward pass, translated where adswitch knows it."""
    translated = translated_backward(exc, after)
    return exc if translated is None else translated


def shares(c: FuncCall, value: Any, given: Sequence[Any]) -> bool:
    """Whether ``value`` is, or (when concrete) shares memory with, one of ``given``."""
    if any(value is g for g in given):
        return True
    if c.traced(value) or value.layout is not c.torch.strided:
        return False
    ptr = storage_of(value)
    return any(not c.traced(g) and storage_of(g) == ptr for g in given)
