"""The torch engine: ``backend="torch"``, registered under ``adswitch.backends``.

How a call runs (``TorchBackend.value_and_grad``):
    * numpy leaves become tensors sharing their memory (``torch.from_numpy``, dtype
      kept: never torch's float32 default); Python floats become 0-d float64 tensors;
      torch tensors are used as they are.
    * Each active leaf is differentiated through a fresh tensor made for this call: at
      top level ``leaf.detach().requires_grad_()`` (the user's own tensors and their
      ``.grad`` are never touched); in a nested call, where the leaf is a value traced by
      the enclosing call, a fresh view ``leaf.view_as(leaf)`` that stays attached to
      the outer graph. Only uses through the view count, so a function that also
      closes over the outer value is not confused with its argument.
    * ``torch.autograd.grad(loss, inputs, create_graph=depth > 0, allow_unused=True)``
      (through the function it ends in, see ``backward``); unused leaves get zeros.
      A graph for second derivatives is built only when an enclosing call will
      differentiate the gradient.
    * Gradients come back in the leaf's kind, dtype and device (numpy in, numpy out, jax
      in, jax out); outputs come back detached, as numpy when no leaf was a tensor (as
      jax when every array leaf was a jax array). In a nested call a value still
      attached to the enclosing graph stays a tensor.
    * jax arrays are copied in through DLPack (``jax_arrays``); any other array kind, and
      jax tracers, are an ``UnsupportedError`` naming the kind before ``f`` runs.

The other primitives trace the leaves the same way (``trace``), so every rule here holds
for them too:
    * ``vjp`` (``reverse``): ``f`` runs once; the pullback is one backward pass with the
      cotangents as ``grad_outputs`` on the kept graph, as often as it is called; a batch
      of cotangents is one pass under ``torch.func.vmap`` (a loop if torch cannot batch an
      operation's backward). The pullback owns what it needs: numpy leaves are copied
      into the graph, numpy outputs are handed out as copies, and a later in-place write
      into a tensor the graph saved (an argument, a ``Const``, an output) is a
      ``MutationError`` when the pullback runs (torch's version counter), never a changed
      result. Known limit: a
      numpy array ``f`` wraps itself (``xp.asarray(c)`` of a captured array) shares its
      memory with the graph; writing into it before calling the pullback changes the
      pullback's result -- pass such data as an argument (``ad.Const(c)``).
    * ``vjp_apply``: the same, fused, along the front end's seed (a Jacobian's identity
      basis, batched); in a prepared call the seed's tensors are made once
      (``CallInfo.prepared``).
    * ``jvp`` (``forward``): one tangent per leaf runs torch's forward AD on the traced
      leaves, made dual tensors carrying copies of the tangents (at top level they do
      not require grad: no reverse graph is recorded; ``float(x)``, ``x.numpy()`` and the
      exact ``**`` are guarded for values carrying a tangent as for values that require
      grad, and a call nested in the jvp keeps its leaves' tangents, its results tensors);
      a batch of tangents (``jacobian(mode="forward")``), a jvp nested in another
      forward-AD jvp, or one while another thread holds torch's single forward-AD level,
      runs as the derivative of the pullback ``u -> J^T u``
      (reverse mode, batched under vmap). Same numbers either way -- with one known
      limit: ``torch.no_grad()`` inside ``f`` holds values constant for reverse mode
      (every operator but an unbatched ``jvp``), while torch's forward AD ignores it (as
      ``torch.func.jvp`` does), so ``ad.jvp``/``ad.derivative`` differentiate through such
      a block. Hold a value constant in every mode with ``x.detach()``.

Capabilities: ``batching=True`` (one pass for a whole Jacobian or Hessian),
``forward=True`` (so ``jacobian(mode="auto")`` takes forward mode when there are fewer
inputs than outputs: measured 0.70-0.82x torch.func's best on the tall Jacobian, against
1.01-1.17x in reverse mode) and ``second_order="reverse-over-reverse"``: the front end
would otherwise compute Hessian-vector products and Hessians forward-over-reverse, and on
torch that is the slower choice -- measured against reverse-over-reverse, 1.4x for the mlp
workload's ``H v`` and 3.3x for a 50 x 50 Hessian (a batch of tangents has no forward AD
of its own in torch). ``under=("vmap",)``: an adswitch call runs inside the caller's
``torch.func.vmap`` (``adswitch conformance --under vmap`` checks it); ``torch.compile``
is not declared (the suite does not run it: each case would compile anew).

Modules (``modules``): parameters are leaves. A trainable parameter's default
``Duplicated`` shadow is its ``.grad`` (``grad_shadows``), so ``ad.Duplicated(model)`` feeds
``torch.optim``. A ``DistributedDataParallel`` module gets what DDP's backward gives, the
average over its process group (the local gradient inside ``no_sync``), and DDP's reducer
is left alone (``ddp``); FSDP modules and DTensor parameters are an
``UnsupportedError``.

numpy functions applied to the tensors ``f`` receives work where numpy only calls a tensor
method torch has (``np.squeeze``); otherwise torch's or numpy's error becomes an
``UnsupportedError`` naming the numpy function, the ``xp`` function to use and the line
(``errors``).

Mutation, default mode: writes into a differentiated argument raise ``MutationError``
(torch refuses them; the message names the line and the fix); writes into fresh
buffers and copies are differentiated by torch, except that a write into a tensor
(or any view of its storage) after torch saved part of it for the backward pass raises
``MutationError`` chaining torch's version-counter error -- e.g. ``buf[2] = buf[0] *
buf[1]`` (torch versions whole storages). Hence ``fresh_buffer_writes=False`` and
``mutation=False`` are declared: every such case is an error, never a wrong number.

``TorchBackend(copy_saved=True)`` (pass it as ``backend=``) copies every value torch
saves and hands ``f`` copies of its differentiated arguments (the caller's arrays get
the writes after success): every in-place write at top level is differentiated, at the
cost of one copy per saved tensor. It declares ``mutation`` and ``fresh_buffer_writes``.
Writes into the argument of a nested call still raise ``MutationError``.

Mutation in the other primitives: ``vjp``, ``vjp_apply`` and a batched ``jvp`` behave as
``value_and_grad`` in both modes (a write into a saved value surfaces when the backward
pass runs: in ``vjp``'s case when the pullback is first called). An unbatched ``jvp`` in
the default mode refuses writes into its differentiated arguments too, but after ``f``
(torch's forward AD lets them through: the caller's array then holds the write, as a
plain call of ``f`` leaves it; the caller's tangent is never written); writes into fresh
buffers, which forward AD differentiates as they are, give finite differences' numbers
there. With ``copy_saved=True`` it differentiates every top-level write.

Data-parallel models and the operators: ``value_and_grad`` gives DDP's average (above);
every other primitive -- ``ad.vjp``, ``ad.jvp``, ``ad.jacobian``, ``ad.hessian``,
``ad.hvp`` -- is an ``UnsupportedError`` while a DDP argument synchronises (DDP defines
no average of a Jacobian or a tangent, and averaging by mode would make reverse and
forward Jacobians differ), and gives this rank's local result inside ``model.no_sync()``
(``ddp.refuse_synchronised``).

``float(x)``/``x.item()``/``x.tolist()`` on a traced tensor would yield a Python number that
torch treats as a constant (plain torch only warns): while ``f`` runs they raise
``UnsupportedError`` instead (see ``tensor_patches``; ``TorchBackend(strict=False)`` turns it off).

Powers with a differentiated exponent: torch's own ``pow`` rule makes nested derivatives
with respect to the exponent silently wrong at ``e == 0`` (``namespace`` doc). ``xp.pow``
and, while ``f`` runs, the ``**``/``**=`` operators and ``Tensor.pow``/``pow_`` use an exact
rule (``tensor_patches``). Known limit: the module functions ``torch.pow(b, e)`` and
``torch.float_power(b, e)`` keep torch's rule -- replacing them would change a builtin
that TorchScript and ``torch.compile`` resolve by identity, for every torch user, and a
``TorchFunctionMode`` would tax every operation. Write ``xp.pow(b, e)`` or ``b ** e``.

Linear algebra: torch's own derivatives are silently wrong at some degenerate points --
``det``'s gradient is 0 at a singular matrix where LU meets an exact zero pivot,
``eigh``'s divides roundoff by roundoff at a repeated eigenvalue, ``svd``'s is NaN at
repeated singular values (the polar factor of an orthogonal matrix), ``slogdet``'s and
``qr``'s are ``inf``/NaN or of size ``1/eps`` at singular matrices. ``xp.linalg`` takes
rules that are right there or raise an ``UnsupportedError`` with the fix
(``adswitch_torch.xp.linalg``). Known limit: ``torch.linalg.det(x)`` and the other
``torch.linalg`` functions called directly keep torch's rules (for the reason above):
write ``xp.linalg.det(x)``.

Two off switches, read from the environment when the engine is first imported:
``ADSWITCH_TORCH_PRIVATE_API=0`` takes torch's public API (``torch.autograd.grad``,
``torch.func.vmap``, ``Function.apply``) where the engine would call private torch
functions for speed -- the same results, slower (``private_api`` lists them all); and
``ADSWITCH_TORCH_TENSOR_PATCHES=0`` leaves ``torch.Tensor`` unpatched, losing the float
conversion and ``numpy()`` refusals and the exact rule of ``**`` above
(``refusals.tensor_patches`` says exactly what is lost).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from adswitch.errors import BackendUnavailableError, UnsupportedError
from adswitch.spec import (
    Backend,
    BackendBase,
    CallInfo,
    Capabilities,
    EngineLoader,
    LossFn,
    OutputFn,
    Pullback,
    SeedFn,
    hookimpl,
)

from . import private_api
from .integrations import custom
from .integrations.custom_eager import eager_vjp
from .integrations.ddp import BATCH
from .integrations.grad_shadows import attach, check_still_grad, grad_of
from .integrations.jax_arrays import KINDS
from .primitives import forward, reverse
from .primitives.backward import Passes, make_passes
from .primitives.call import differentiate
from .primitives.convert import byte_range
from .primitives.forward_mode import traced
from .primitives.grad_mode import recording

__all__ = ["TorchBackend", "adswitch_backend"]

_INSTALL_HINT = 'pip install "adswitch[torch]"'


def _never() -> bool:
    """No ``torch.func`` transform runs before torch is loaded."""
    return False


class TorchBackend(BackendBase):
    """adswitch's engine over ``torch.autograd``.

    Example:
        >>> import numpy as np
        >>> from adswitch.spec import CallInfo
        >>> backend = TorchBackend()
        >>> def fn(leaves):
        ...     xp = backend.namespace(leaves)
        ...     loss = xp.sum(leaves[0] ** 2)
        ...     return loss, [loss]
        >>> out, grads = backend.value_and_grad(fn, [np.array([1.0, 2.0])], [True], CallInfo())
        >>> grads[0]
        array([2., 4.])
    """

    name = "torch"
    install_hint = _INSTALL_HINT
    capabilities = Capabilities(
        nested=True,
        mutation=False,
        fresh_buffer_writes=False,
        devices=("cpu", "cuda", "mps", "xpu"),
        dtypes=("float16", "bfloat16", "float32", "float64"),
        array_kinds=KINDS,
        compiles=False,
        forward=True,
        batching=True,
        second_order="reverse-over-reverse",
        extensions=("linalg", "fft"),
        batched_rules=True,
        under=("vmap",),
    )
    array_modules: tuple[str, ...] = ("torch",)

    def __init__(self, copy_saved: bool = False, strict: bool = True) -> None:
        """Create the engine (torch itself is imported on first use).

        Args:
            copy_saved: copy every value torch saves for the backward pass, and the
                differentiated arguments, so that in-place writes anywhere in ``f`` get
                the right gradient (see the module doc). Costs one copy per saved tensor.
            strict: refuse ``float(x)``/``x.item()``/``x.tolist()`` on values being
                differentiated (torch would silently treat the number as a constant)
                with ``UnsupportedError``. Costs ~25 µs per call (``tensor_patches``).
        """
        self._loader = EngineLoader("torch", "torch", ("torch",), _INSTALL_HINT)
        self._copy_saved = copy_saved
        self._strict = strict
        if copy_saved:
            self.capabilities = replace(self.capabilities, mutation=True, fresh_buffer_writes=True)
        self._torch: Any = None
        self._transforms_active: Callable[[], bool] = _never  # (set with ``_torch``)
        self._passes: Passes | None = None
        self._namespace: Any = None
        self._trees_registered = False

    def compiler_barrier(self) -> Callable[[Callable[..., Any]], Callable[..., Any]] | None:
        """``torch.compiler.disable`` while ``torch.compile`` traces the caller (an
        adswitch operator then runs as one opaque call: one graph break; see
        ``adswitch.compilers``), else ``None``. Looks torch up in ``sys.modules``: a
        process that never imported torch is not compiling."""
        compiler = getattr(sys.modules.get("torch"), "compiler", None)
        if compiler is None or not compiler.is_compiling():
            return None
        return compiler.disable  # type: ignore[no-any-return]

    def _engine(self) -> Any:
        torch = self._torch
        if torch is None:
            torch = self._loader.load()
            self._passes = make_passes(torch)
            self._transforms_active = private_api.transforms_active(torch)
            self._torch = torch
        return torch

    def version(self) -> str:
        """torch's version, read from package metadata (torch is not imported)."""
        return self._loader.version()

    def namespace(self, arrays: Sequence[Any]) -> Any:
        """``array_api_compat.torch`` with float64 creation defaults (see ``namespace``)."""
        ns = self._namespace
        if ns is None:
            self._engine()
            try:
                from .xp.namespace import float64_namespace

                ns = self._namespace = float64_namespace()
            except ImportError as exc:
                raise BackendUnavailableError(
                    f"torch: ad.array_namespace needs array-api-compat ({exc}). "
                    f"Fix: {self.install_hint}"
                ) from None
        return ns

    def value_and_grad(
        self, fn: LossFn, leaves: Sequence[Any], active: Sequence[bool], info: CallInfo
    ) -> tuple[list[Any], list[Any | None]]:
        """Differentiate ``fn``'s loss with respect to the active leaves (see module doc)."""
        torch = self._torch or self._engine()
        passes = self._passes
        assert passes is not None  # set together with self._torch
        with recording(torch, leaves, active):
            return differentiate(
                torch, passes.grad, fn, leaves, active, info, self._copy_saved, self._strict
            )

    def vjp(
        self, fn: OutputFn, leaves: Sequence[Any], active: Sequence[bool], info: CallInfo
    ) -> tuple[list[Any], Pullback]:
        """Run ``fn`` once and return its outputs and a reusable pullback (``reverse``)."""
        torch = self._torch or self._engine()
        passes = self._passes
        assert passes is not None
        with recording(torch, leaves, active):
            return reverse.vjp(
                torch, passes, fn, leaves, active, info, self._copy_saved, self._strict
            )

    def vjp_apply(
        self,
        fn: OutputFn,
        leaves: Sequence[Any],
        active: Sequence[bool],
        seed: SeedFn,
        info: CallInfo,
    ) -> tuple[list[Any], list[Any | None]]:
        """One run of ``fn`` and one (batched) backward pass along the seed (``reverse``)."""
        torch = self._torch or self._engine()
        passes = self._passes
        assert passes is not None
        with recording(torch, leaves, active):
            return reverse.vjp_apply(
                torch, passes, fn, leaves, active, seed, info, self._copy_saved, self._strict
            )

    def jvp(
        self,
        fn: OutputFn,
        leaves: Sequence[Any],
        active: Sequence[bool],
        tangents: Sequence[Any],
        info: CallInfo,
    ) -> tuple[list[Any], list[Any]]:
        """Push ``tangents`` through ``fn``: forward AD, or reverse mode for batches
        (``forward``)."""
        torch = self._torch or self._engine()
        passes = self._passes
        assert passes is not None
        with recording(torch, leaves, active):
            return forward.jvp(
                torch, passes, fn, leaves, active, tangents, info, self._copy_saved, self._strict
            )

    def custom_vjp(
        self,
        fn: Callable[[list[Any]], list[Any]],
        fwd: Callable[[list[Any]], tuple[list[Any], Any]],
        bwd: Callable[[Any, list[Any]], list[Any]],
        leaves: Sequence[Any],
        active: Sequence[bool],
    ) -> list[Any]:
        """A user's vjp rule as a ``torch.autograd.Function`` (``integrations.custom``;
        outside ``torch.func`` the old-style one of ``integrations.custom_eager``, called
        from here: a tiny rule's budget is a few microseconds)."""
        torch = self._torch or self._engine()
        if self._transforms_active():
            return custom.custom_vjp_transformed(torch, fn, fwd, bwd, leaves)
        return eager_vjp(torch, fwd, bwd, leaves)

    def custom_jvp(
        self,
        fn: Callable[[list[Any]], list[Any]],
        rule: Callable[[list[Any], list[Any]], tuple[list[Any], list[Any]]],
        leaves: Sequence[Any],
        active: Sequence[bool],
    ) -> list[Any]:
        """A user's jvp rule as a ``torch.autograd.Function`` (``custom``)."""
        return custom.custom_jvp(self._torch or self._engine(), fn, rule, leaves, active)

    def is_traced(self, value: Any) -> bool:
        """Whether ``value`` carries derivatives: a graph (``requires_grad``), a
        ``torch.func`` grad level, or a forward-mode tangent."""
        torch = self._torch or self._engine()
        if not isinstance(value, torch.Tensor):
            return False
        if value.requires_grad or private_api.is_gradtracking(torch)(value):
            return True
        return torch.autograd.forward_ad.unpack_dual(value).tangent is not None

    def stop_gradient(self, value: Any) -> Any:
        """``value.detach()`` (``custom``)."""
        return custom.stop_gradient(self._torch or self._engine(), value)

    def to_host(self, value: Any) -> Any:
        """A tensor as numpy for host code (``adswitch.host_rules``): shares a CPU tensor's
        memory; ``None`` when it carries a live trace (a graph being built, a
        forward-AD tangent) that the conversion would drop."""
        torch = self._torch or self._engine()
        if torch.is_grad_enabled() and value.requires_grad:
            return None
        if private_api.is_wrapped(torch)(value):
            return None  # a torch.func level's value (batched or traced): no host array
        if torch.autograd.forward_ad.unpack_dual(value).tangent is not None:
            return None
        return value.detach().cpu().resolve_conj().resolve_neg().numpy()

    def from_host(self, array: Any, like: Any) -> Any:
        """Host code's numpy result as a tensor on ``like``'s device (``host_rules``)."""
        torch = self._torch or self._engine()
        arr = np.asarray(array)
        tensor = torch.from_numpy(arr if arr.flags.writeable else arr.copy())
        return tensor if like is None else tensor.to(like.device)

    def sparse_result(
        self,
        indptr: np.ndarray,
        indices: np.ndarray,
        data: np.ndarray,
        shape: tuple[int, int],
        like: Any,
    ) -> Any:
        """A sparse result block as a ``torch.sparse_csr_tensor`` on ``like``'s device
        (``sparse``)."""
        from .primitives.sparse import sparse_result

        return sparse_result(self._torch or self._engine(), indptr, indices, data, shape, like)

    def sparse_gather(
        self,
        part: Any,
        take: np.ndarray,
        indptr: np.ndarray,
        indices: np.ndarray,
        shape: tuple[int, int],
        like: Any,
    ) -> Any:
        """Compressed results decompressed on their device into a
        ``torch.sparse_csr_tensor``, or ``None`` (``sparse``)."""
        from .primitives.sparse import sparse_gather

        torch = self._torch or self._engine()
        return sparse_gather(torch, part, take, indptr, indices, shape, like)

    def checkpoint(
        self, fn: Callable[[list[Any]], list[Any]], leaves: Sequence[Any], active: Sequence[bool]
    ) -> list[Any]:
        """``torch.utils.checkpoint.checkpoint`` (non-reentrant) around ``fn`` (``checkpoint``)."""
        from .integrations import checkpoint

        return checkpoint.checkpoint(self._torch or self._engine(), fn, leaves, active)

    def add_into(self, shadow: Any, grad: Any) -> None:
        """``shadow += grad`` in place, on the shadow's device (never through the host)."""
        torch = self._torch
        if torch is not None and isinstance(grad, torch.Tensor) and traced(torch, grad):
            # Only a nested call's gradient is attached; the front end refuses Duplicated
            # there. Writing it into a shadow would silently drop the outer derivative.
            raise UnsupportedError(
                "torch: a gradient that an enclosing ad.gradient differentiates cannot be "
                "added into a Duplicated shadow. Fix: pass that argument plain and use the "
                "returned gradient."
            )
        if torch is None or not isinstance(shadow, torch.Tensor):
            if torch is not None and isinstance(grad, torch.Tensor):
                grad = grad.numpy(force=True)
            np.add(shadow, grad, out=shadow)
            return
        if not isinstance(grad, torch.Tensor):
            grad = torch.as_tensor(grad, dtype=shadow.dtype, device=shadow.device)
        if shadow.requires_grad:
            with torch.no_grad():
                shadow.add_(grad)
        else:
            shadow.add_(grad)
        attach(shadow)  # a parameter's shadow made while it had no .grad becomes .grad
        batch = getattr(grad, BATCH, None)
        if batch is not None:  # a DDP gradient: the accumulated shadows are averaged too
            batch.added(torch, shadow)

    def zeros_like(self, value: Any) -> Any:
        """Zeros of the same kind, shape, dtype and device (never requiring grad); for a
        trainable ``torch.nn.Parameter``, its ``.grad`` (see ``grad_shadows``): the default
        shadow of ``ad.Duplicated(model)`` is what ``torch.optim`` reads."""
        # Asked only of values this engine owns (torch is imported): load the adapter.
        torch = self._torch or self._engine()
        if isinstance(value, torch.Tensor):
            if isinstance(value, torch.nn.Parameter) and value.requires_grad:
                return grad_of(torch, value)
            return torch.zeros_like(value, requires_grad=False)
        return np.zeros_like(value)

    def prepared_shortcut(
        self,
        slot: dict[Any, Any],
        f: Any,
        call: Callable[[Sequence[Any]], list[Any]],
        leaves: Sequence[Any],
        active: Sequence[bool],
        operator: str,
        loss: Callable[[Sequence[Any]], Any] | None,
    ) -> Callable[[list[Any]], Sequence[Any] | None] | None:
        """A prepared top-level gradient of plain tensors: the full path's steps in a row,
        without the layers between them (``shortcut``); ``f`` runs on every call."""
        torch = self._torch
        if torch is None or self._copy_saved:
            return None
        passes = self._passes
        assert passes is not None
        from .primitives.shortcut import shortcut

        return shortcut(torch, passes.grad, leaves, active, operator, loss, self._strict)

    def writable(self, value: Any) -> bool:
        """Tensors and writable numpy arrays; a shadow made from a parameter's ``.grad``
        that has since been replaced is an ``ActivityError`` (``grad_shadows``)."""
        torch = self._torch or self._engine()
        if isinstance(value, torch.Tensor):
            check_still_grad(value)
            return True
        return super().writable(value)

    def may_alias(self, a: Any, b: Any) -> bool:
        """Whether the byte ranges of two arrays (tensors or numpy) overlap."""
        torch = self._torch
        if torch is None:
            return super().may_alias(a, b)
        ra, rb = byte_range(torch, a), byte_range(torch, b)
        if ra is None or rb is None or ra[0] != rb[0]:
            return False
        return ra[1] < rb[2] and rb[1] < ra[2]

    def register_trees(self, register: Callable[..., None]) -> None:
        """Register ``torch.nn.Module`` (see ``adswitch_torch.integrations.modules``)."""
        if self._trees_registered:
            return
        self._engine()
        from .integrations.modules import register_module_trees

        register_module_trees(register)
        self._trees_registered = True


@hookimpl
def adswitch_backend() -> Backend:
    """The torch engine; torch itself is imported on first use."""
    return TorchBackend()
