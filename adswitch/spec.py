"""The whole engine contract: what a plugin author implements, in one file.

An engine plugin is a module (or object) registered under the entry-point group
``adswitch.backends`` that implements the one hook :func:`adswitch_backend`, returning
an object that follows :class:`Backend`. Subclass :class:`BackendBase` to inherit the
defaults for numpy arrays. The plugin module must not import its engine at the top:
``import adswitch`` and ``adswitch.backends()`` load every plugin module, and an
engine that is not installed must only make its own backend *unavailable*
(:class:`EngineLoader` does the lazy import and the install hint for you).

What the front end does for you, once, before the engine sees anything:
    * unwraps ``Duplicated``/``Const``/plain arguments and flattens every argument
      tree into leaves, with one leaf per *unique* object (a tied array appears once);
    * marks which leaves are active (differentiable: floating arrays and Python
      floats of non-``Const`` arguments);
    * checks shadows against their values, overlapping memory, the output's shape;
    * writes results into ``Duplicated`` shadows only after the engine has
      succeeded (through :meth:`Backend.add_into`), so an error loses nothing;
    * builds every operator (gradient, vjp, jvp, jacobian, hessian, hvp, derivative)
      out of the primitives below, and places the results in the user's layout.

What the engine does: differentiate the front end's function ``fn`` at the leaves,
with at least **one** of these primitives (the front end derives the others from it,
more slowly; implement more of them for speed):

    * :meth:`Backend.vjp` -- reverse mode: run ``fn`` once, return the outputs and a
      reusable pullback ``cotangents -> one gradient per leaf``;
    * :meth:`Backend.jvp` -- forward mode: push one tangent per leaf through ``fn``;
    * :meth:`Backend.value_and_grad` -- the gradient of a scalar loss (the fast path of
      ``ad.gradient``; derived from the others when absent);
    * :meth:`Backend.vjp_apply` -- ``vjp`` and one call of its pullback fused, with the
      cotangents made from the outputs' shapes (lets a compiling engine build one
      program for a whole Jacobian).

Batching: with ``Capabilities.batching`` an engine accepts cotangents/tangents with a
leading batch axis (``CallInfo.batched``, ``Pullback(..., batched=True)``) and returns
results with the same leading axis; without it the front end loops. Nesting: an
operator called inside ``fn`` on the same engine arrives as a call with ``depth > 0``
whose leaves are the enclosing call's traced values; its results must stay traced.
:func:`implements` tells which primitives an engine has.

An engine that calls ``fn`` several times (finite differences, a retrace) must make its
*last* call on the caller's own leaves and every earlier one on copies, so that a
mutating ``f`` leaves the caller's arrays as one plain call would.

Example (a forward-difference engine with one primitive, runnable as it stands --
``tests/front/test_api_engine_contract.py`` runs it; ``plugins/adswitch_fd`` is the complete
order-4 version, with kinks detected, ``examples/adswitch-dual`` a true forward mode)::

    import copy

    from adswitch.spec import Backend, BackendBase, Capabilities, hookimpl

    class MyBackend(BackendBase):
        name = "mine"
        install_hint = 'pip install "adswitch-mine"'
        # approximate: say how much; no rule hooks (differences of f ignore a rule)
        capabilities = Capabilities(accuracy=1e-5, custom_vjp=False, rules=False)

        def version(self) -> str:
            return "1.0"

        def jvp(self, fn, leaves, active, tangents, info):
            h = 1e-7
            probe = [x + h * t if a else copy.copy(x)
                     for x, a, t in zip(leaves, active, tangents)]
            moved, _ = fn(probe)                 # on copies
            diffs, out = fn(list(leaves))        # the last call: the caller's arrays
            return out, [(m - d) / h for m, d in zip(moved, diffs)]

    @hookimpl
    def adswitch_backend() -> Backend:
        return MyBackend()

Every operator then works on it (``ad.gradient(f, x, backend=MyBackend())``, ``ad.vjp``,
``ad.jacobian``...): the front end derives them from ``jvp``. Second derivatives
(``ad.hessian``, ``ad.hvp``) also need ``Capabilities.nested``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

import numpy as np
import pluggy

# The adapter kit (lazy engine loading, the user's line for messages, warnings given once,
# numpy's dtype limits as the Array API states them, the linalg refusal messages),
# re-exported here: plugins import everything they use of adswitch from this module.
from adswitch.closures import (
    NOT_FOUND,
    ClosureWalk,
    ProbeKind,
    Unprovable,
    read_probe,
    walk_closures,
)
from adswitch.errors import UnsupportedError, UsageError
from adswitch.kit import EngineLoader, MissingMethodError, array_methods, user_line
from adswitch.leaves import leaf_kind
from adswitch.limits import FInfo, IInfo, numpy_finfo, numpy_iinfo
from adswitch.linalg_kit import (
    GAP_ULPS,
    any_beyond,
    beyond_rounding,
    close_pairs,
    equal_pairs,
    gap_factor,
    negligible,
    negligible_det,
    spread_extreme,
    tolerance,
    well_conditioned,
)
from adswitch.linalg_refusals import LINALG_REFUSALS, known_linalg_refusal, linalg_refusal
from adswitch.locking import restorable, same_contents
from adswitch.notices import OnceWarner
from adswitch.numpy_names import MissingFunctionError, missing_function
from adswitch.tie_runs import tied_runs

__all__ = [
    "PROJECT",
    "ENTRY_POINT_GROUP",
    "hookspec",
    "hookimpl",
    "Capabilities",
    "CallInfo",
    "Structure",
    "ClosureWalk",
    "NOT_FOUND",
    "ProbeKind",
    "Unprovable",
    "read_probe",
    "walk_closures",
    "LossFn",
    "OutputFn",
    "Pullback",
    "SECOND_ORDER",
    "SeedFn",
    "TreeNode",
    "Backend",
    "BackendBase",
    "EngineLoader",
    "FInfo",
    "GAP_ULPS",
    "IInfo",
    "LINALG_REFUSALS",
    "MissingFunctionError",
    "MissingMethodError",
    "OnceWarner",
    "PRIMITIVES",
    "adswitch_backend",
    "any_beyond",
    "array_methods",
    "beyond_rounding",
    "close_pairs",
    "equal_pairs",
    "gap_factor",
    "implements",
    "known_linalg_refusal",
    "leaf_kind",
    "linalg_refusal",
    "missing_function",
    "negligible",
    "negligible_det",
    "numpy_finfo",
    "numpy_iinfo",
    "restorable",
    "same_contents",
    "spread_extreme",
    "tied_runs",
    "tolerance",
    "user_line",
    "well_conditioned",
]

PROJECT = "adswitch"
ENTRY_POINT_GROUP = "adswitch.backends"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@dataclass(frozen=True)
class Capabilities:
    """What an engine declares it can do. The conformance runner reads these to tell
    "unsupported, as declared" (the engine raised the documented error for a case that
    needs a capability it lacks) from a failure.

    Attributes:
        nested: gradients of gradients to any depth (``gradient`` called inside ``f``).
        mutation: in-place writes on traced arrays (``x[i] = v``, ``x += y``) give the
            gradient finite differences give. Without it the engine must raise
            ``MutationError``/``UnsupportedError`` naming the operation -- never a wrong number.
        fresh_buffer_writes: writes of traced values into a buffer created inside ``f``
            (``buf = xp.zeros_like(x); buf[...] = s``) are differentiated.
        numpy_operands: numpy arrays mixed into traced expressions, on either side of an
            operator (``np_array * traced``, ``traced @ np_array``), act as constants.
        devices: device kinds the engine computes on (``"cpu"``, ``"cuda"``, ...).
        dtypes: floating dtypes the engine differentiates.
        array_kinds: kinds of input arrays it accepts (``"numpy"``, ``"torch"``, ``"jax"``).
        compiles: repeated calls reuse a compiled program (a cache keyed by
            ``CallInfo.structure``, which the front end then fills).
        forward: ``jvp`` is a true forward mode (one pass with the tangents, cheaper than
            a second reverse pass): ``jacobian(mode="auto")`` may then take forward mode,
            and ``second_order`` defaults to forward-over-reverse (else
            reverse-over-reverse, which needs ``nested``).
        batching: ``vjp``'s pullbacks, ``vjp_apply`` and ``jvp`` accept a leading batch
            axis of cotangents/tangents (one pass for a whole Jacobian or Hessian).
        extensions: the Array API extensions its namespace differentiates (``"linalg"``,
            ``"fft"``); a function of another extension is an ``UnsupportedError``.
        second_order: the one field that decides how the front end computes Hessians
            and Hessian-vector products: ``"forward-over-reverse"`` (a ``jvp`` of the
            gradient; taken only where the engine implements ``jvp``) or
            ``"reverse-over-reverse"`` (a pullback of it). Left out (``""``), it is set
            from ``forward`` when the object is made: forward-over-reverse for a true
            forward mode, else reverse-over-reverse. An engine whose forward mode is true
            but costs more than a second reverse pass over its own gradient -- torch's --
            says ``"reverse-over-reverse"``. Any other string is a ``UsageError``.
            (``dataclasses.replace(caps, forward=...)`` copies the resolved value: pass
            ``second_order=""`` with it to decide again by the new ``forward``.)
        accuracy: the relative accuracy an approximate engine promises for float64
            results (finite differences: ``1e-6``); ``None`` for exact AD (correct up to
            rounding). The conformance suite widens its tolerances to it, never below
            its exact-AD ones.
        kinks: at a kink, tie or jump (``abs`` at 0, ``maximum`` ties, ``sign``) the
            engine gives the documented convention; ``False`` (finite differences): it
            raises ``UnsupportedError`` there instead.
        custom_vjp: ``ad.custom_vjp`` rules are honoured (their ``bwd`` runs in reverse
            mode); ``False`` (a forward-only engine): such a rule is an ``UnsupportedError``.
        rules: ``ad.custom_jvp`` and ``ad.stop_gradient`` are honoured (the engine
            implements their hooks); ``False`` (finite differences, which only see
            ``f``'s values): they are an ``UnsupportedError``.
        under: the engine's own transforms an adswitch call on it composes with, called
            inside them (``"jit"``, ``"vmap"`` for jax's ``jax.jit`` and ``jax.vmap``);
            ``adswitch conformance --under`` runs the suite inside the ones declared.
        batched_rules: in a batched sweep (a reverse Jacobian, a batched pullback or
            pushforward) a user rule's ``bwd`` -- or jvp rule -- is called once on the
            whole batch of cotangents (``vmap``: jax, torch); ``False``: once per row,
            the rows stacked (the same numbers, one Python call per row).
    """

    nested: bool = False
    mutation: bool = False
    fresh_buffer_writes: bool = False
    numpy_operands: bool = False
    devices: tuple[str, ...] = ("cpu",)
    dtypes: tuple[str, ...] = ("float32", "float64")
    array_kinds: tuple[str, ...] = ("numpy",)
    compiles: bool = False
    forward: bool = False
    batching: bool = False
    second_order: str = ""
    extensions: tuple[str, ...] = ()
    accuracy: float | None = None
    kinks: bool = True
    custom_vjp: bool = True
    rules: bool = True
    under: tuple[str, ...] = ()
    batched_rules: bool = False

    def __post_init__(self) -> None:
        # Resolved here, once: the front end reads this one field (``forward`` also
        # steers Jacobian modes, but no longer the second-order strategy).
        if self.second_order == "":
            strategy = "forward-over-reverse" if self.forward else "reverse-over-reverse"
            object.__setattr__(self, "second_order", strategy)
        elif self.second_order not in SECOND_ORDER:
            raise UsageError(
                f"Capabilities(second_order={self.second_order!r}) is not a strategy: "
                f"say one of {SECOND_ORDER!r}, or leave it out to decide by forward."
            )


SECOND_ORDER = ("forward-over-reverse", "reverse-over-reverse")
"""The values of :attr:`Capabilities.second_order`."""


class Structure(NamedTuple):
    """What a call's derivative program is specialised to, besides the leaves' values,
    shapes and dtypes: made by the front end, built by keyword.

    Attributes:
        key: an opaque hashable, equal for two calls exactly when their arguments have the
            same tree structure, ties, activity and non-array (baked-in) leaf values, and
            the operator asks the same (``has_aux``, the mode...) -- everything except the
            function and the leaves' values, shapes and dtypes, which the engine adds
            itself. Compare it, never look inside it.
        func: the user's function. ``(func, key)`` identifies a program by the function
            object; an engine that identifies the function by what it is (its code, what
            it reads) keys by ``key`` alone, so that look-alike functions share a program.
        entry: the operator (as :attr:`CallInfo.entry`).
    """

    key: Hashable
    func: Callable[..., Any] | None = None
    entry: str = "withgradient"


class CallInfo(NamedTuple):
    """Facts about one differentiation call, passed to :meth:`Backend.value_and_grad`.

    Attributes:
        depth: how many differentiations on this same engine enclose this call
            (0 at top level). An engine that must build a differentiable backward pass
            for an outer call (torch's ``create_graph``) does so exactly when ``depth > 0``.
        cache_key: deprecated, read :attr:`structure`: equal for two calls exactly when
            their ``(structure.func, structure.key)`` are; filled while ``structure`` is
            set (kept for one release).
        entry: the operator being computed: ``"gradient"``, ``"withgradient"``,
            ``"vjp"``, ``"jvp"``, ``"jacobian"``, ``"hessian"``, ``"hvp"``,
            ``"derivative"``. The primitive called says what to do; for ``"gradient"``,
            ``"hessian"`` and ``"hvp"`` the caller discards the outputs, so an engine may
            skip making them concrete (and a compiler may drop what only they need).
        func: the user's function (for engines that guard what a compiled program baked
            in, and to name it in messages). Always set by the front end.
        batched: the tangents of ``jvp`` / the cotangents made by ``vjp_apply``'s seed
            carry a leading batch axis (only sent to engines that declare ``batching``).
        prepared: for a call of an ``ad.prepare``-d operator, the engine's slot of that
            prepared structure: what its :meth:`Backend.prepare_slot` hook returned for it,
            or -- an engine without the hook, or one that returned ``None`` -- a ``dict``
            owned by that prepared call. The engine keeps there what it derived for calls
            of this structure (a compiled program, a recorded trace...); the front end
            guarantees that every call passing the same slot has the same argument
            structure, ties, activity, leaf types, shapes, dtypes and devices (values, and
            the values of non-array leaves, may differ), and the same operator step
            (``extra``). Calls may come from several threads at once. ``None`` for other
            calls.
        structure_key: deprecated, read :attr:`structure`: ``structure.key``, filled while
            ``structure`` is set (kept for one release).
        wants_outputs: ``False`` when the caller uses only the outputs' shapes and dtypes,
            not their values (``ad.gradient``, a Jacobian without aux, ``ad.derivative``,
            Hessians and Hessian-vector products): an engine may then hand back any
            objects with the outputs' ``shape`` and ``dtype`` (the jax engine: a
            ``jax.ShapeDtypeStruct`` each, from programs that do not return the outputs),
            without making them concrete or converting them to the caller's kind.
        structure: for engines that declare ``compiles``, what a compiled program of this
            call is specialised to (:class:`Structure`); ``None`` when the call must not
            be cached (something unhashable among the arguments, or a call whose seed
            bakes values in) and for other engines.
    """

    depth: int = 0
    cache_key: Hashable | None = None
    entry: str = "withgradient"
    func: Callable[..., Any] | None = None
    batched: bool = False
    prepared: Any = None
    structure_key: Hashable | None = None
    wants_outputs: bool = True
    structure: Structure | None = None


class LossFn(Protocol):
    """``fn(leaves) -> (loss, out_leaves)``, built by the front end.

    Called with one value per leaf (traced values at the active positions, the leaves
    themselves -- or the engine's constant version of them -- elsewhere), it rebuilds the
    user's arguments (tied positions share one value), calls the user's function, checks
    the output and returns ``loss`` (the 0-d value to differentiate, possibly a Python
    float) and ``out_leaves`` (the flat leaves of the whole output, the loss among them;
    arrays, traced values, strings, anything). Exceptions raised by the user's function
    propagate unchanged; let them through.

    Each call also records how to rebuild the output from ``out_leaves``
    (:attr:`output_structure`, an opaque hashable). An engine that returns outputs
    *without* calling ``fn`` -- a compiled program reused from a cache -- must store
    ``fn.output_structure`` with its program after the call that traced it, and call
    ``fn.reuse(structure)`` with it when it skips ``fn`` later. Engines that always call
    ``fn`` need neither.
    """

    @property
    def output_structure(self) -> Hashable:
        """What the last call's output looked like (opaque)."""
        ...

    def __call__(self, values: Sequence[Any], /) -> tuple[Any, list[Any]]: ...

    def reuse(self, structure: Hashable, /) -> None:
        """Declare that this call's outputs have ``structure`` (``fn`` was not called)."""
        ...


TreeNode = tuple[Callable[[Any], tuple[Any, Hashable]], Callable[[Hashable, Any], Any]]
"""``(flatten, unflatten)``, as :func:`adswitch.register_tree` takes them."""


class OutputFn(Protocol):
    """``fn(leaves) -> (diff_leaves, out_leaves)``, built by the front end for ``vjp``,
    ``jvp`` and ``vjp_apply``.

    Like :class:`LossFn`, but what is differentiated is a list: ``diff_leaves`` are the
    floating leaves of the differentiated output (arrays, traced values or Python
    floats, in a fixed order), ``out_leaves`` every leaf of the whole output (aux
    outputs included; the ``diff_leaves`` are among them). Same ``output_structure`` /
    ``reuse`` handshake for engines that skip calling it.
    """

    @property
    def output_structure(self) -> Hashable:
        """What the last call's output looked like (opaque)."""
        ...

    def __call__(self, values: Sequence[Any], /) -> tuple[list[Any], list[Any]]: ...

    def reuse(self, structure: Hashable, /) -> None: ...


class Pullback(Protocol):
    """The reverse-mode linear map returned by :meth:`Backend.vjp`.

    ``pullback(cotangents, batched=False)`` takes one cotangent per differentiated
    output leaf (shaped like it; numpy arrays, Python floats or this engine's arrays, in
    the output's dtype) and returns, per leaf, ``None`` where inactive, else the
    gradient of ``sum_k <cotangents[k], diff_leaves[k]>`` with the leaf's type, shape,
    dtype and device (zeros where unused). With ``batched`` every cotangent has a leading
    axis of one length ``B``, and every gradient gets the same leading axis (a Python
    float leaf's gradients are then a 1-d numpy array). It may be called any number of
    times; the values it needs are its own (later writes into the caller's arrays do
    not change its results).
    """

    def __call__(self, cotangents: Sequence[Any], /, batched: bool = False) -> list[Any | None]: ...


SeedFn = Callable[[Sequence[Any]], list[Any]]
"""``seed(diff_leaves) -> cotangents`` for :meth:`Backend.vjp_apply`: made from the
differentiated outputs' shapes and dtypes only -- never their values, nor anything that
changes between calls with the same ``CallInfo.structure`` -- so a compiling engine may
call it while tracing and bake the result into its program (identity bases, a unit
seed). numpy arrays, with a leading batch axis when ``CallInfo.batched``. (Cotangents
that are values go through :meth:`Backend.vjp`'s pullback instead.)"""


class Backend(Protocol):
    """The object an engine plugin returns from :func:`adswitch_backend`.

    Attributes:
        name: the engine's name, used by ``backend=``, ``ad.use`` and ``ADSWITCH_BACKEND``.
        install_hint: the exact command that installs the engine,
            e.g. ``'pip install "adswitch[torch]"'``.
        capabilities: see :class:`Capabilities`.
        array_modules: top-level module names whose array types belong to this engine
            (``("torch",)``, ``("jax", "jaxlib")``); the front end uses them to pick the
            engine from the arguments' types without importing anything.

    Optional hooks for user rules (``ad.custom_vjp``, ``ad.custom_jvp``,
    ``ad.stop_gradient``; see ``adswitch.custom``). The front end looks them up with
    ``getattr(engine, name, None)``; an engine without one refuses the rule with an
    ``UnsupportedError`` naming the hook. Do not define them as raising stubs. The
    callables are *flat* (lists of leaves); the front end checks what the user returns,
    and calls ``custom_vjp``/``custom_jvp`` only when some leaf is active (else it runs
    ``fn`` itself).

    - ``custom_vjp(fn, fwd, bwd, leaves, active) -> list``: the output leaves.
      ``fn(leaves) -> out_leaves`` is f itself; ``fwd(leaves) -> (out_leaves, residuals)``;
      ``bwd(residuals, cotangents) -> list`` with one entry per *input* leaf (an array, or
      ``None`` for a zero), given one cotangent per *output* leaf (this engine's arrays,
      zeros for non-floating outputs). ``active[i]``: leaf ``i`` is an owned floating
      value; the others are constants. Reverse mode must call ``bwd`` on the engine's
      values (so nested derivatives differentiate it); prepared replays must call it
      again. Forward mode through it, where the engine cannot: ``UnsupportedError``
      saying "custom_vjp has no forward-mode rule; define ad.custom_jvp".
    - ``custom_jvp(fn, rule, leaves, active) -> list``: the output leaves.
      ``rule(leaves, tangents) -> (out_leaves, out_tangents)``, one tangent per input
      leaf (zeros for constants). Forward mode uses ``rule``; reverse mode transposes it
      (it is linear in the tangents) or refuses with an ``UnsupportedError`` naming
      ``custom_vjp``.
    - ``stop_gradient(value) -> value``: one owned floating leaf, held constant in every
      mode and order (detach).
    - ``is_traced(value) -> bool``: whether an owned value carries derivatives of a
      running call (a tracer with history, a tensor that requires grad). A rule whose
      ``nondiff_argnums`` argument is traced is refused (its derivative would be lost);
      without the hook every owned floating value there counts as traced. ``fn`` has
      an attribute ``nondiff_args`` (the non-differentiated arguments every callable
      closes over): a prepared replay of a rule is right only while they stay the same.

    Optional hook for compilers that trace the caller's Python (``torch.compile``; see
    ``adswitch.compilers``):

    - ``compiler_barrier() -> Callable | None``: while the engine's compiler is tracing
      the code that calls an adswitch operator, a function that makes a function opaque
      to it (``torch.compiler.disable``); ``None`` otherwise. Every public operator is then
      called through it, once made, and runs eagerly. It is asked on every call: look the
      engine up in ``sys.modules`` (never import it) and answer in well under 1 us.

    Optional hook for rematerialisation (``ad.checkpoint``; see ``adswitch.checkpointing``):

    - ``checkpoint(fn, leaves, active) -> list``: the output leaves of ``fn(leaves)``,
      computed so that the backward pass runs ``fn`` again at the saved *inputs* instead
      of keeping its intermediates (``jax.checkpoint``, ``torch.utils.checkpoint``).
      Every operator must give the numbers of ``fn`` itself: reverse, forward, batched,
      nested (when the backward pass is differentiated, the recomputation must be too),
      prepared calls. Unlike the rule hooks, an engine without it is not refused: the
      front end runs ``f`` plainly, since checkpointing only saves memory.

    Optional hooks for host rules (``ad.custom_vjp(f, host=True)``,
    ``ad.differentiate_with``; see ``adswitch.host_rules``):

    - ``to_host(value) -> np.ndarray | None``: an owned value as numpy (sharing memory
      where it can: torch CPU ``.detach().numpy()``); ``None`` when the value carries a
      live derivative trace (a graph being built, a forward-AD tangent, a box) --
      converting it would drop that derivative, and the front end refuses (a nested
      derivative through host code is an ``UnsupportedError``).
    - ``from_host(array, like) -> value``: host code's numpy result as this engine's
      value, placed like ``like`` (an owned leaf, or ``None``).
    - Engines that trace abstract values implement instead
      ``host_custom_vjp(fwd, bwd, leaves, active, specs)`` and
      ``host_custom_jvp(fn, rule, leaves, active, specs, reverse_fix)`` on flat numpy
      callables (``specs``: ``(shape, dtype)`` per output leaf; ``bwd(host_leaves,
      cotangents)`` runs the host ``fwd`` again itself): jax builds them on
      ``jax.pure_callback``. An engine with none of these works where its rule hooks
      hand the flat callables plain numpy (the dual example).

    Optional hook for the engine's own transforms (``adswitch.signatures.stands_in``):

    - ``stands_in(value, cls) -> bool``: whether ``value`` is a traced value of one of
      this engine's own transforms (jax: a ``Tracer`` under ``jax.jit``, ``vmap``,
      ``grad``) standing for an array of type ``cls`` (jax: ``jax.Array``). A prepared
      call prepared on a ``cls`` array then accepts ``value`` where its shape and dtype
      match, and runs without its prepared slot (``CallInfo.prepared`` is ``None``): the
      transform stages the call, so the engine should run it inline. Without the hook, a
      prepared call refuses such values (``PreparationError``).

    Optional hooks for prepared calls (``ad.prepare``; see ``adswitch.preparation`` and
    ``adswitch.shortcut``):

    - ``prepare_slot(structure) -> object | None``: the engine's own object for calls of
      one prepared structure (a :class:`Structure`: per prepared call, dict key order and
      operator step), asked once, on its first call; the front end keeps it and passes it
      back as ``CallInfo.prepared`` on every call of that structure (threads may share
      it: its thread safety is the engine's). ``None``, or no hook: a ``dict`` instead.

    - ``prepared_shortcut(slot, f, call, leaves, active, operator, loss) -> run | None``:
      asked after a full call of a prepared ``ad.gradient``, ``withgradient``, ``jacobian``
      or ``hessian`` (dense) at top level whose arguments are plain or ``Const`` arrays (or
      flat dicts of them), untied, with no Python scalars, and whose result is arrays
      (``None`` and tuples or dicts of them). ``slot`` is the prepared call's engine slots
      as that call left them, in a ``dict``: without ``prepare_slot``, the dict
      ``CallInfo.prepared`` was (the front end nests a dict per operator step in it); with
      the hook, its objects, one entry per operator step (those that are dicts copied as
      plain dicts, nested ones too), ``leaves`` that call's leaves, ``active`` which of them
      are differentiated, ``operator`` the operator's name, and ``call(leaves) -> list`` the
      whole prepared call on arguments rebuilt from any values of the leaves (an engine's
      tracers), giving the result's arrays flat. For ``"gradient"`` (those arrays are then
      the active leaves' gradients, in leaf order) ``loss(values)`` runs ``f`` as the full
      path's ``LossFn`` does, on one value per leaf (dicts rebuilt, ``Const`` unwrapped,
      inside the call: an adswitch call in ``f`` is nested), and gives its loss checked (a
      Python float or a 0-d real array; ``OutputError`` else); otherwise ``loss`` is
      ``None``. ``zero=`` plays no part (no ``Duplicated``). ``run(leaves) -> those arrays``
      is then called instead of the full path on later calls whose wrappers, dict keys and
      leaf types are the same and whose leaves are distinct objects (shapes, dtypes and
      devices are ``run``'s to check); it returns ``None`` wherever it cannot tell that the
      full path would give the same (something ``f`` reads changed, a transform is tracing,
      another shape): the full path then runs; an error of ``f`` it may raise as the full
      path would. The front end keeps a shortcut only if its first run gives the full call's
      result exactly (a sparse Jacobian's data to rounding: its seeds are constants of a
      traced ``call``, which a compiler may fold in; a sparse Hessian's seeds come as one
      more leaf after the others, ``adswitch.sparse.seeds``). jax implements it (``call``
      traced once under ``jax.jit``); torch runs its full path's steps in a row with
      ``loss`` (``f`` runs on every call).

    Optional hook for sparse results (``ad.jacobian``/``ad.hessian`` with ``sparsity=``;
    see ``adswitch.sparse.native``):

    - ``sparse_result(indptr, indices, data, shape, like) -> matrix``: one block of a
      sparse result as the engine's own 2-D sparse matrix (torch: a
      ``torch.sparse_csr_tensor``; jax: a ``jax.experimental.sparse.BCOO``). The arguments
      are a canonical CSR matrix in numpy (``indptr``: ``shape[0] + 1`` row pointers;
      ``indices``: sorted, unique columns within each row; ``data``: the values, in the
      result's dtype, explicit zeros kept) and ``like``, the block's differentiated input
      leaf (an owned, concrete array): put the matrix on its device. Copy, never alias
      the arrays. The front end calls it only when the engine owns ``like``; numpy inputs
      and engines without the hook get a ``scipy.sparse.csr_array``.
    - ``sparse_gather(part, take, indptr, indices, shape, like) -> matrix | None``: the
      same matrix decompressed where the engine computed it, with no trip through the
      host. ``part`` is the engine's own batched result of the colored seeds (the
      ``jvp``/``vjp_apply`` output for the one differentiated leaf, ``(colors, *shape)``);
      ``take`` (int64 numpy) gives, per stored entry of the canonical CSR ``indptr``/
      ``indices`` pattern, its place in ``part`` flattened in C order: the values are
      ``part.reshape(-1)[take]``. A prepared call passes the same ``take`` object on every
      call (the front end's own, made with the pattern, never handed out nor changed), so
      the engine may keep ``take`` and the coordinates on its device keyed by ``take``'s
      identity. Return ``None`` whenever unsure (a traced ``part``,
      several devices): the front end then takes the host path above, with its checks
      and errors. Used for one differentiated bare array and one output array, without
      ``check=True``.
    """

    name: str
    install_hint: str
    capabilities: Capabilities
    array_modules: tuple[str, ...]

    def version(self) -> str:
        """Return the engine's version. Raise ``BackendUnavailableError`` (carrying
        ``install_hint``) when the engine is missing. Must be cheap: prefer
        ``importlib.metadata`` to importing the engine."""
        ...

    def owns(self, value: Any) -> bool:
        """Whether ``value`` is an array or traced value of this engine. Never import the
        engine here: look its module up in ``sys.modules``. The answer must depend on
        ``type(value)`` alone (the front end caches it per type)."""
        ...

    def namespace(self, arrays: Sequence[Any]) -> Any:
        """The Array API namespace for ``arrays`` (some owned by this engine, the others
        numpy arrays or Python scalars)."""
        ...

    def value_and_grad(
        self, fn: LossFn, leaves: Sequence[Any], active: Sequence[bool], info: CallInfo
    ) -> tuple[list[Any], list[Any | None]]:
        """Differentiate ``fn``'s loss with respect to the active leaves (optional: the
        front end derives it from :meth:`vjp` when absent).

        Args:
            fn: the front end's closure, see :data:`LossFn`.
            leaves: one value per unique leaf of the arguments: numpy arrays, the
                engine's arrays, Python floats, and inactive leaves of any type.
            active: same length; ``True`` where a gradient is wanted. Active leaves are
                floating arrays or Python floats. Read-only (it may be a tuple shared by
                the calls of one argument structure).
            info: see :class:`CallInfo`.

        Returns:
            ``(out_leaves, grads)``. ``out_leaves``: ``fn``'s output leaves made concrete
            -- no traced values of this call -- arrays in the caller's array kind (numpy
            when no leaf was an array of this engine, else the engine's arrays, or the
            kind every array argument had when the engine converted foreign arrays);
            other objects unchanged.
            ``grads``: per leaf, ``None`` where inactive, else the gradient with the
            leaf's type, shape, dtype and device (a Python float for a Python float),
            zeros for a leaf ``fn`` did not use.

        Raises:
            Whatever ``fn`` raises, unchanged. ``MutationError``/``UnsupportedError``
            naming the engine, the operation and the fix (chaining the engine's own
            exception) for anything the engine cannot differentiate correctly.

        After the call, the caller's arrays must hold what a plain call of the user's
        function would have left in them (a mutating ``f`` mutates them; nothing else does).
        """
        ...

    def vjp(
        self, fn: OutputFn, leaves: Sequence[Any], active: Sequence[bool], info: CallInfo
    ) -> tuple[list[Any], Pullback]:
        """Reverse mode: run ``fn`` once on traced active leaves.

        Args:
            fn: see :class:`OutputFn`.
            leaves, active: as for :meth:`value_and_grad`.
            info: see :class:`CallInfo`.

        Returns:
            ``(out_leaves, pullback)``: the output leaves made concrete (as for
            :meth:`value_and_grad`) and a :class:`Pullback`. In a nested call
            (``info.depth > 0``) the pullback's results must stay differentiable by the
            enclosing call.

        Raises:
            As :meth:`value_and_grad`.
        """
        ...

    def vjp_apply(
        self,
        fn: OutputFn,
        leaves: Sequence[Any],
        active: Sequence[bool],
        seed: SeedFn,
        info: CallInfo,
    ) -> tuple[list[Any], list[Any | None]]:
        """``vjp`` and one call of its pullback, fused (optional).

        The cotangents are ``seed(diff_leaves)``, batched when ``info.batched``. Returns
        ``(out_leaves, grads)`` with ``grads`` as the pullback would return them.
        """
        ...

    def jvp(
        self,
        fn: OutputFn,
        leaves: Sequence[Any],
        active: Sequence[bool],
        tangents: Sequence[Any],
        info: CallInfo,
    ) -> tuple[list[Any], list[Any]]:
        """Forward mode: push ``tangents`` through ``fn`` (optional).

        Args:
            fn: see :class:`OutputFn`.
            leaves, active: as for :meth:`value_and_grad`.
            tangents: per leaf, ``None`` where inactive, else an array shaped like the
                leaf (numpy or this engine's kind, the leaf's dtype; a Python float for a
                Python float leaf), with a leading batch axis when ``info.batched``.
            info: see :class:`CallInfo`.

        Returns:
            ``(out_leaves, out_tangents)``: the concrete output leaves, and one tangent
            per differentiated output leaf (``J @ tangents``; batched like the input
            tangents), in the output's kind and dtype. Nested calls keep them traced.
        """
        ...

    def add_into(self, shadow: Any, grad: Any) -> None:
        """Add ``grad`` into the array ``shadow`` in place, on the shadow's device."""
        ...

    def zeros_like(self, value: Any) -> Any:
        """A zero array like ``value`` (same kind, shape, dtype, device) -- the default
        shadow of ``Duplicated(value)`` (``ad.make_zero``). An engine may hand out its own
        gradient buffer instead (torch: a parameter's ``.grad``), as long as writing into it
        with ``zero=True`` gives exactly the gradient."""
        ...

    def writable(self, value: Any) -> bool:
        """Whether ``add_into`` can write into the array ``value`` in place (checked for
        every shadow before ``f`` runs, so that nothing is half-written later). May raise
        ``ActivityError`` with a more precise reason; the front end adds the key path."""
        ...

    def may_alias(self, a: Any, b: Any) -> bool:
        """Whether two distinct arrays may share memory (a view and its base)."""
        ...

    def register_trees(self, register: Callable[..., None]) -> None:
        """Register container types of this engine with the tree walker
        (``register(cls, flatten, unflatten)``); called once, when the walker first meets
        an unknown type from one of ``array_modules``."""
        ...

    def tree_node(self, cls: type) -> TreeNode | None:
        """How to take apart ``cls``, a type the tree walker does not know, when this
        engine's own tree registry takes it for a container (jax: a class registered with
        ``jax.tree_util``, an equinox or flax module), as ``(flatten, unflatten)`` for
        :func:`adswitch.register_tree`; ``None`` leaves ``cls`` to the walker. Asked once
        per type, before the walker's namedtuple and dataclass rules, and only while one
        of ``array_modules`` is imported (no class can be registered with an engine that
        is not); must not import the engine."""
        ...


class BackendBase:
    """Defaults for a :class:`Backend`: numpy arrays, CPU, nothing to register.

    Subclasses set the class attributes and implement :meth:`version` and at least one
    primitive of :data:`PRIMITIVES` -- any one: the front end derives the others from it,
    more slowly (the module docstring's example implements ``jvp`` alone); they override
    the rest when their arrays are not numpy.
    """

    name: str = ""
    install_hint: str = ""
    capabilities: Capabilities = Capabilities()
    array_modules: tuple[str, ...] = ()

    def version(self) -> str:
        raise NotImplementedError

    # The primitives are placeholders here: an engine implements at least one (see the
    # module docstring), and :func:`implements` tells the front end which.
    def value_and_grad(
        self, fn: LossFn, leaves: Sequence[Any], active: Sequence[bool], info: CallInfo
    ) -> tuple[list[Any], list[Any | None]]:
        raise _missing(self, "value_and_grad")

    def vjp(
        self, fn: OutputFn, leaves: Sequence[Any], active: Sequence[bool], info: CallInfo
    ) -> tuple[list[Any], Pullback]:
        raise _missing(self, "vjp")

    def vjp_apply(
        self,
        fn: OutputFn,
        leaves: Sequence[Any],
        active: Sequence[bool],
        seed: SeedFn,
        info: CallInfo,
    ) -> tuple[list[Any], list[Any | None]]:
        raise _missing(self, "vjp_apply")

    def jvp(
        self,
        fn: OutputFn,
        leaves: Sequence[Any],
        active: Sequence[bool],
        tangents: Sequence[Any],
        info: CallInfo,
    ) -> tuple[list[Any], list[Any]]:
        raise _missing(self, "jvp")

    def owns(self, value: Any) -> bool:
        # Any class in the MRO counts: a user's subclass of torch.Tensor is torch's.
        for cls in type(value).__mro__[:-1]:
            module = cls.__module__.partition(".")[0]
            if module in self.array_modules and module in sys.modules:
                return True
        return False

    def namespace(self, arrays: Sequence[Any]) -> Any:
        for array in arrays:
            # hasattr on the type: a runtime-checkable Protocol check costs microseconds
            if hasattr(type(array), "__array_namespace__") and not isinstance(array, np.ndarray):
                return array.__array_namespace__()
        return np

    def add_into(self, shadow: Any, grad: Any) -> None:
        np.add(shadow, grad, out=shadow)

    def zeros_like(self, value: Any) -> Any:
        return np.zeros_like(value)

    def writable(self, value: Any) -> bool:
        if isinstance(value, np.ndarray):
            return bool(value.flags.writeable)
        return True

    def may_alias(self, a: Any, b: Any) -> bool:
        if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
            return bool(np.may_share_memory(a, b))
        return False

    def register_trees(self, register: Callable[..., None]) -> None:
        return None

    def tree_node(self, cls: type) -> TreeNode | None:
        return None

    def __repr__(self) -> str:
        return f"<adswitch backend {self.name!r}>"


PRIMITIVES = ("value_and_grad", "vjp", "vjp_apply", "jvp")
"""The differentiation primitives an engine may implement."""


def implements(backend: Any, primitive: str) -> bool:
    """Whether ``backend`` implements ``primitive`` (one of :data:`PRIMITIVES`) itself,
    rather than inheriting :class:`BackendBase`'s placeholder.

    Example:
        >>> class Forward(BackendBase):
        ...     def jvp(self, fn, leaves, active, tangents, info): ...
        >>> implements(Forward(), "jvp"), implements(Forward(), "vjp")
        (True, False)
    """
    method = getattr(type(backend), primitive, None)
    return method is not None and method is not getattr(BackendBase, primitive)


def _missing(backend: Any, primitive: str) -> Exception:
    return UnsupportedError(
        f"engine {getattr(backend, 'name', backend)!r} does not implement {primitive}; "
        "the front end derives it from the primitives the engine has (see adswitch.spec)."
    )


@hookspec(firstresult=True)
def adswitch_backend() -> Backend:  # type: ignore[empty-body]
    """Return this plugin's engine (a :class:`Backend`). Must not import the engine."""
