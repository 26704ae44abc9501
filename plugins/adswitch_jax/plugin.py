"""The jax engine for adswitch (backend name ``"jax"``).

Registered through the ``adswitch.backends`` entry point. jax is imported only when the
engine is first used, so ``import adswitch`` stays light and a missing jax only makes this
engine unavailable (``BackendUnavailableError`` with ``pip install "adswitch[jax]"``).

What it does:
    * **Every primitive, native and compiled:** ``value_and_grad``, ``vjp`` (``jax.vjp``; its
      pullback is a compiled program too, reusable, holding its own residuals),
      ``vjp_apply`` (the seed baked into the program: a reverse Jacobian is one program,
      ``vmap`` of the pullback over an identity basis, as ``jax.jacrev``) and ``jvp``
      (``jax.jvp``, ``vmap`` for batches: a forward Jacobian is one program, a Hessian one
      program -- forward over the inner gradient, as ``jax.hessian``). An identity basis
      among a batch of tangents is baked in too (checked exactly), so XLA folds it away
      as under ``jax.jacfwd``. Capabilities: ``forward``, ``batching``, ``nested``.
    * **Compiles once and reuses.** One ``jax.jit`` program per primitive and cache key;
      later calls with the same function, argument structure, ties, activity, constant
      values, 64-bit mode and leaf shapes, dtypes, weak types and shardings reuse it. Any
      change compiles a new program; at most 256 programs are kept (least recently used
      dropped first). A prepared call (``ad.prepare``) keeps its program in its own slot
      and skips the key.
    * **Keyed on what a function is, not on the function object:** its code, and what it
      reads from its closure, defaults and globals (:mod:`adswitch_jax.closures.captures`). A
      lambda written inside a loop is a new object on every pass but the same code and
      captures: it reuses the first pass's program. **Floating arrays in the closure or
      defaults are inputs of the program**, not constants baked into it: a new captured
      array (the next batch) neither recompiles nor goes stale; only its shape and dtype
      are in the key. Captured numbers, strings and other objects are in the key by value
      or identity (each value its own program, like a ``Const`` leaf).
    * **Keeps nothing of yours alive:** a cached program holds none of the arguments of
      the call that compiled it, nor the function's closure; the functions and objects it
      was keyed on are held by weak reference where Python allows.
    * **float64 stays float64** without touching jax's global flag: when a leaf or a
      captured array is 64-bit (float64, int64, complex128, or a Python float leaf) the
      call (and a vjp's pullback) runs inside ``jax.enable_x64(True)``, and the 64-bit
      mode is part of the cache key.
    * **Falls back, and says so once** (:class:`~adswitch_jax.notices.JaxFallbackWarning`):
      a function ``jit`` cannot trace (Python ``if``/``while`` on array values) runs
      eagerly (the same jax transformations without ``jit``); a function returning
      non-array outputs (strings, numbers) gets its derivatives compiled and its outputs
      from one extra eager call. A Python number made from a value being differentiated
      (``float(loss)`` inside ``f``) is impossible even eagerly: ``UnsupportedError``.
    * **Nested calls** (any operator inside ``f``, or inside a jax transformation of your
      own) differentiate the enclosing call's traced values without ``jit``, so they are
      traced into the enclosing program: second order, Hessian-vector products and
      deeper work, compiled as one.
    * numpy in gives numpy out (writable copies); jax arrays in give jax arrays out, on
      their devices and with their shardings.
    * **jax pytrees are trees** (:meth:`JaxBackend.tree_node`): a class registered with
      ``jax.tree_util``, an equinox or flax ``nnx`` module, is taken apart as jax takes it
      apart -- children differentiated, static (aux) data kept, the gradient rebuilt by
      jax's unflatten (what ``jax.grad`` returns; ``eqx.apply_updates`` accepts it).

    * **Linear algebra right where jax's rules are not:** the namespace is ``jax.numpy``
      with its own ``linalg`` (``adswitch_jax.namespace``): ``eigh``/``eigvalsh`` and
      ``svd``/``svdvals``/the spectral ``matrix_norm`` have rules right at repeated
      eigenvalues and singular values (jax's give NaN, or drop the polar factor's term),
      and refuse their second derivatives there; ``slogdet`` at a singular matrix and
      ``qr`` of dependent columns are an ``UnsupportedError`` (jax's: ``inf``/NaN,
      ``1/eps``); ``vector_norm`` has the subgradient 0 at 0 (jax's: NaN). The refusals are
      decided inside the compiled program and raised from the host (``xp.linalg.checks``).
      ``jnp.linalg.*`` called directly keeps jax's rules: write ``xp.linalg.*``.

Limitations:
    * **Mutation:** jax arrays are immutable. ``x[i] = v`` inside ``f`` (on an argument or
      on a fresh ``xp.zeros_like`` buffer) raises ``MutationError`` with the fix
      ``x = x.at[i].set(v)``, jax's own exception chained. With numpy arrays in, an
      in-place operator (``y *= 3``) on an argument or on a slice (a view in numpy) raises
      ``MutationError`` too, since jax would silently rebind instead of writing through;
      on fresh arrays it works. With jax arrays in, ``f`` has jax's semantics (rebinding).
    * **What f reads from globals and objects is baked into the compiled program**, as
      under ``jax.jit``: global arrays, attributes of a bound method's object, the
      contents of dicts and objects it captures. A guard checks before each reuse that
      these are still the same objects (walking dicts, tuples, attributes and the
      functions found there, three levels deep, at most 512 objects) and that such numpy
      arrays hold the same values; a change recompiles, and a function whose baked state
      changes on every call ends up eager (warned once). Not guarded: lists (f's logs and
      counters) and anything beyond those bounds -- pass data that changes as an
      argument (``ad.Const(data)``) or capture it in a closure. Python side effects in
      ``f`` (printing, counters) run when it is compiled, not on every call.
    * **While a program is compiled**, the closure cells and defaults holding the arrays
      ``f`` captures hold jax's traced values instead (restored right after, whatever
      happens; other adswitch calls wait): code calling ``f`` directly from another thread
      at that moment would see them.
    * **Duplicated with a jax shadow** cannot be updated in place (jax arrays are
      immutable): ``add_into`` raises ``ActivityError``. Pass the argument plain and use
      the returned gradient, or pass numpy arrays with numpy shadows.
    * Constant (non-array) leaves are part of the cache key by value; an unhashable one
      makes the call eager (warned once).
    * **flax nnx state:** ``f`` gets a copy of each module rebuilt from its leaves (as under
      ``jax.grad``), so a write into an ``nnx`` Variable (BatchNorm statistics, an ``Rngs``
      counter) would be lost: ``MutationError``, unless ``f`` returns the value written
      (``nnx.state(m, nnx.Not(nnx.Param))`` among its outputs; ``nnx.update`` it back). An
      ``nnx`` module made with ``pytree=False`` is an ``ActivityError`` naming
      ``nnx.split``/``nnx.merge``.

Example:
    >>> import numpy as np, adswitch as ad
    >>> def f(x):
    ...     xp = ad.array_namespace(x)
    ...     return xp.sum(x ** 2)
    >>> ad.gradient(f, np.array([1.0, 2.0]), backend="jax")[0]
    array([2., 4.])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

from adswitch.errors import ActivityError
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
    Structure,
    hookimpl,
)
from adswitch_jax.integrations.pytrees import TreeNode
from adswitch_jax.integrations.pytrees import tree_node as _jax_tree_node

__all__ = ["JaxBackend", "adswitch_backend"]

_INSTALL_HINT = 'pip install "adswitch[jax]"'


# jax's differentiation tracers (by name: their module is private)
_AD_TRACERS = frozenset(("JVPTracer", "LinearizeTracer", "JaxprTracer"))


class JaxBackend(BackendBase):
    """The jax engine: compiled, cached programs of ``jax.vjp``, ``jax.jvp`` and
    ``jax.value_and_grad``.

    Example:
        >>> JaxBackend().name
        'jax'
    """

    name = "jax"
    install_hint = _INSTALL_HINT
    capabilities = Capabilities(
        nested=True,
        mutation=False,
        fresh_buffer_writes=False,
        numpy_operands=True,
        devices=("cpu", "cuda", "tpu"),
        dtypes=("float16", "float32", "float64"),
        array_kinds=("numpy", "jax"),
        compiles=True,
        forward=True,
        batching=True,
        extensions=("linalg", "fft"),
        under=("jit", "vmap"),
        batched_rules=True,
    )
    array_modules: tuple[str, ...] = ("jax", "jaxlib")

    def __init__(self) -> None:
        self._loader = EngineLoader(
            "jax", "adswitch_jax.primitives.engine", ("jax", "jaxlib"), _INSTALL_HINT
        )
        self._engine: ModuleType | None = None
        self._namespace: ModuleType | None = None

    def version(self) -> str:
        return self._loader.version()

    def _load(self) -> ModuleType:
        engine = self._engine
        if engine is None:
            engine = self._engine = self._loader.load()
        return engine

    def namespace(self, arrays: Sequence[Any]) -> Any:
        """``jax.numpy``, with adswitch's ``linalg`` (``adswitch_jax.namespace``)."""
        ns = self._namespace
        if ns is None:
            from adswitch_jax.namespace import jax_namespace

            ns = self._namespace = jax_namespace()
        return ns

    def value_and_grad(
        self, fn: LossFn, leaves: Sequence[Any], active: Sequence[bool], info: CallInfo
    ) -> tuple[list[Any], list[Any | None]]:
        result: tuple[list[Any], list[Any | None]] = self._load().value_and_grad(
            fn, leaves, active, info
        )
        return result

    def vjp(
        self, fn: OutputFn, leaves: Sequence[Any], active: Sequence[bool], info: CallInfo
    ) -> tuple[list[Any], Pullback]:
        result: tuple[list[Any], Pullback] = self._load().vjp(fn, leaves, active, info)
        return result

    def vjp_apply(
        self,
        fn: OutputFn,
        leaves: Sequence[Any],
        active: Sequence[bool],
        seed: SeedFn,
        info: CallInfo,
    ) -> tuple[list[Any], list[Any | None]]:
        result: tuple[list[Any], list[Any | None]] = self._load().vjp_apply(
            fn, leaves, active, seed, info
        )
        return result

    def jvp(
        self,
        fn: OutputFn,
        leaves: Sequence[Any],
        active: Sequence[bool],
        tangents: Sequence[Any],
        info: CallInfo,
    ) -> tuple[list[Any], list[Any]]:
        result: tuple[list[Any], list[Any]] = self._load().jvp(fn, leaves, active, tangents, info)
        return result

    def custom_vjp(
        self,
        fn: Callable[[list[Any]], list[Any]],
        fwd: Callable[[list[Any]], tuple[list[Any], Any]],
        bwd: Callable[[Any, list[Any]], list[Any]],
        leaves: Sequence[Any],
        active: Sequence[bool],
    ) -> list[Any]:
        """A user's vjp rule as a ``jax.custom_vjp`` over the leaves (``integrations.custom``)."""
        self._load()
        from adswitch_jax.integrations import custom as _custom

        return _custom.custom_vjp(fn, fwd, bwd, leaves, active)

    def custom_jvp(
        self,
        fn: Callable[[list[Any]], list[Any]],
        rule: Callable[[list[Any], list[Any]], tuple[list[Any], list[Any]]],
        leaves: Sequence[Any],
        active: Sequence[bool],
    ) -> list[Any]:
        """A user's jvp rule as a ``jax.custom_jvp`` over the leaves (``integrations.custom``)."""
        self._load()
        from adswitch_jax.integrations import custom as _custom

        return _custom.custom_jvp(fn, rule, leaves, active)

    def is_traced(self, value: Any) -> bool:
        """Whether ``value`` carries derivatives: a tracer of jax's differentiation
        (``jvp``/``linearize``/``vjp``); a ``jit`` or ``vmap`` tracer carries none."""
        for cls in type(value).__mro__:
            if cls.__name__ in _AD_TRACERS and cls.__module__.startswith("jax"):
                return True
        return False

    def stop_gradient(self, value: Any) -> Any:
        """``jax.lax.stop_gradient`` (``integrations.custom``)."""
        self._load()
        from adswitch_jax.integrations import custom as _custom

        return _custom.stop_gradient(value)

    def host_custom_vjp(
        self,
        fwd: Callable[[list[Any]], list[Any]],
        bwd: Callable[[list[Any], list[Any]], list[Any]],
        leaves: Sequence[Any],
        active: Sequence[bool],
        specs: Sequence[Any],
    ) -> list[Any]:
        """``custom_vjp(host=True)``: ``jax.pure_callback`` inside a ``jax.custom_vjp``."""
        import jax

        from adswitch_jax.integrations import host as _host

        return _host.host_custom_vjp(jax, fwd, bwd, leaves, active, specs)

    def host_custom_jvp(
        self,
        fn: Callable[[list[Any]], list[Any]],
        rule: Callable[[list[Any], list[Any]], tuple[list[Any], list[Any]]],
        leaves: Sequence[Any],
        active: Sequence[bool],
        specs: Sequence[Any],
        reverse_fix: str,
    ) -> list[Any]:
        """``custom_jvp(host=True)``: ``jax.pure_callback`` inside a ``jax.custom_jvp``."""
        import jax

        from adswitch_jax.integrations import host as _host

        return _host.host_custom_jvp(jax, fn, rule, leaves, active, specs, reverse_fix)

    def to_host(self, value: Any) -> Any:
        """A concrete jax array as numpy, ``None`` for a tracer (``integrations.host``)."""
        import jax

        from adswitch_jax.integrations import host as _host

        return _host.to_host(jax, value)

    def sparse_result(
        self, indptr: Any, indices: Any, data: Any, shape: tuple[int, int], like: Any
    ) -> Any:
        """A sparse result block as a ``jax.experimental.sparse.BCOO`` on ``like``'s
        device (``_sparse``)."""
        import jax

        from adswitch_jax._sparse import sparse_result

        return sparse_result(jax, indptr, indices, data, shape, like)

    def sparse_gather(
        self,
        part: Any,
        take: Any,
        indptr: Any,
        indices: Any,
        shape: tuple[int, int],
        like: Any,
    ) -> Any:
        """Compressed pushforwards decompressed on their device into a BCOO, or ``None``
        (``_sparse``)."""
        import jax

        from adswitch_jax._sparse import sparse_gather

        return sparse_gather(jax, part, take, indptr, indices, shape, like)

    def checkpoint(
        self, fn: Callable[[list[Any]], list[Any]], leaves: Sequence[Any], active: Sequence[bool]
    ) -> list[Any]:
        """``jax.checkpoint`` around ``fn`` (``integrations.checkpoint``)."""
        self._load()
        from adswitch_jax.integrations import checkpoint as _checkpoint

        return _checkpoint.checkpoint(fn, leaves, active)

    def prepare_slot(self, structure: Structure) -> Any:
        """A :class:`~adswitch_jax.programs.compiled.Slot` per prepared structure: the
        programs its calls ran, found again without the cache lookup."""
        self._load()
        from adswitch_jax.programs.compiled import Slot

        return Slot()

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
        """The whole prepared call traced once under ``jax.jit``, called with only the
        checks that could tell it stale (``programs.shortcut``)."""
        self._load()
        from adswitch_jax.programs.shortcut import shortcut

        return shortcut(slot, f, call, leaves, active, operator, loss)

    def stands_in(self, value: Any, cls: type) -> bool:
        """A jax tracer (``jax.jit``, ``vmap``, ``grad``) stands for a jax array, so a
        prepared call accepts it (``programs.traced``); never imports jax."""
        from adswitch_jax.programs.traced import stands_in

        return stands_in(value, cls)

    def writable(self, value: Any) -> bool:
        # jax arrays are immutable: a Duplicated shadow must be refused before f runs.
        return not self.owns(value) and super().writable(value)

    def add_into(self, shadow: Any, grad: Any) -> None:
        if not self.owns(shadow):
            super().add_into(shadow, grad)
            return
        raise ActivityError(
            "jax engine: a Duplicated argument's shadow is a jax array, which is immutable, "
            "so the gradient cannot be added into it in place. Fix: pass the argument plain "
            "and use the returned gradient (jax style: params = params - lr * grad), or pass "
            "numpy arrays with a numpy shadow."
        )

    def zeros_like(self, value: Any) -> Any:
        if self.owns(value):
            import jax.numpy as jnp

            return jnp.zeros_like(value)
        return super().zeros_like(value)

    def may_alias(self, a: Any, b: Any) -> bool:
        # jax arrays are immutable values: two of them never alias in a way that matters.
        return super().may_alias(a, b)

    def tree_node(self, cls: type) -> TreeNode | None:
        """How the tree walker takes ``cls`` apart when it is a jax pytree node (a class
        registered with ``jax.tree_util``, an equinox or flax ``nnx`` module), else ``None``.

        Its children are differentiated, its static (aux) data stays in the structure, and
        its gradient is rebuilt by jax's own unflatten, as ``jax.grad`` returns it. Needs
        no jax import: without jax imported no class can be registered with it.

        Example:
            >>> JaxBackend().tree_node(float) is None
            True
        """
        return _jax_tree_node(cls)


@hookimpl
def adswitch_backend() -> Backend:
    """The jax engine (jax is imported only when it is used)."""
    return JaxBackend()
