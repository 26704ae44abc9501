"""Host code with a rule: ``ad.custom_vjp(f, host=True)`` and ``ad.custom_jvp(g, host=True)``.

``f``, ``fwd``, ``bwd`` (and a jvp rule) receive and return numpy arrays whatever the
engine, so code no engine can trace (``scipy.integrate.solve_ivp``, a C library) works
inside any differentiation once the user gives its derivative. The user's functions run
outside every adswitch call (``enclosing()`` is ``None`` there), so host code may itself
call ``ad.vjp(..., backend=...)`` on any engine (``ad.differentiate_with`` does).

Two ways to reach an engine, both optional hooks (see :class:`adswitch.spec.Backend`):

* **Eager engines** (tape, torch, autograd) give ``to_host(value) -> np.ndarray | None``
  and ``from_host(array, like) -> value``. The flat callables handed to the engine's own
  ``custom_vjp``/``custom_jvp`` hook convert at their edges; the residuals of ``fwd`` stay
  host objects. ``to_host`` answers ``None`` for a value that carries a live derivative
  trace: converting it would drop that derivative (a nested derivative through host
  code, or reverse mode through a host jvp rule), so it is an ``UnsupportedError``.
* **Tracing engines** (jax: its leaves are abstract tracers) give
  ``host_custom_vjp(fwd, bwd, leaves, active, out_specs)`` and
  ``host_custom_jvp(fn, rule, leaves, active, out_specs)`` on flat numpy callables, built
  on ``jax.pure_callback``. The output shapes/dtypes come from ``out_shape=`` or from one
  call of ``f`` on concrete inputs; residuals cannot leave a compiled program, so there
  ``bwd`` is preceded by a fresh host ``fwd`` at the same inputs (one more solve).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from adswitch import selection, trees
from adswitch.errors import UnsupportedError, UsageError
from adswitch.leaves import describe
from adswitch.rule_args import RuleArgs, active_leaves, call_hook, engine_hook, zero_tangent
from adswitch.rule_base import RuleBase

__all__ = ["call_jvp", "call_vjp", "host_context"]

Spec = tuple[tuple[int, ...], np.dtype[Any]]


@contextlib.contextmanager
def host_context() -> Iterator[None]:
    """Run host code outside every adswitch call: it is plain numpy there (a rule met in
    it is its function), and it may start calls of its own on any engine."""
    token = selection.current_calls.set(())
    try:
        yield
    finally:
        selection.current_calls.reset(token)


def _hooks(engine: Any, name: str) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """The engine's conversions. An engine without them works where its rule hook hands
    the flat callables plain numpy (the dual example); an owned value reaching one then
    is the ``UnsupportedError`` naming the hooks."""
    to_host, from_host = getattr(engine, "to_host", None), getattr(engine, "from_host", None)

    def missing(value: Any) -> Any:
        raise UnsupportedError(
            f"{name} (host=True) inside a call on engine {engine.name!r}, which hands the "
            f"rule its own {describe(value)} but does not implement the optional hooks "
            "Backend.to_host/Backend.from_host (or Backend.host_custom_vjp/host_custom_jvp) "
            "that carry numpy values in and out; use the engines 'tape', 'torch', 'jax' or "
            "'autograd', or implement the hooks."
        )

    if to_host is None or from_host is None:
        return missing, lambda array, like: np.asarray(array)
    return to_host, from_host


def _host_leaves(
    engine: Any, to_host: Callable[..., Any], values: Sequence[Any], name: str, why: str
) -> list[Any]:
    """``values`` as numpy (numbers and foreign constants as they are)."""
    out = []
    for v in values:
        if v is None or not engine.owns(v):
            out.append(v)
            continue
        h = to_host(v)
        if h is None:
            raise UnsupportedError(f"{name} (host=True): {why}")
        out.append(h)
    return out


NESTED = (
    "its values cannot be handed to numpy: either a derivative of host code's derivative "
    "was asked (a Hessian, a nested derivative, or a forward mode built from the reverse "
    "one) -- host code is numpy, so its derivative is not differentiable again: take only "
    "first derivatives through a host rule, or write the rule's bwd with xp operations "
    "(host=False) -- or the call runs inside a batching transform (torch.func.vmap), "
    "whose batched values numpy cannot hold: call adswitch outside the transform and "
    "batch there."
)


def _out_specs(
    rule: RuleBase, split: RuleArgs, host: list[Any] | None, out_shape: Any
) -> tuple[list[Spec], trees.TreeDef]:
    """The output leaves' shapes/dtypes and f's output structure, from ``out_shape`` or
    one call of ``f`` on the concrete inputs ``host``."""
    if out_shape is not None:
        leaves, td = trees.flatten(out_shape)
    elif host is not None:
        with host_context():
            leaves, td = trees.flatten(rule.fun(*split.all_args(host)))
    else:
        raise UsageError(
            f"{rule._name()} (host=True) is traced with abstract values (inside a compiled "
            "program), so its output shapes are unknown: pass out_shape= -- a tree like f's "
            "output of objects with .shape and .dtype (np.empty(...), "
            "jax.ShapeDtypeStruct(...)), e.g. ad.custom_vjp(f, host=True, "
            "out_shape=np.empty(3))."
        )
    specs = []
    for i, leaf in enumerate(leaves):
        shape, dtype = getattr(leaf, "shape", None), getattr(leaf, "dtype", None)
        if shape is None or dtype is None:
            raise UsageError(
                f"{rule._name()}: out_shape's leaf at {trees.leaf_path(td, 'out', i)} is "
                f"{describe(leaf)}; give objects with .shape and .dtype (np.empty(shape))."
            )
        specs.append((tuple(shape), np.dtype(dtype)))
    return specs, td


def _concrete(engine: Any, to_host: Any, leaves: Sequence[Any]) -> list[Any] | None:
    got = [to_host(v) if v is not None and engine.owns(v) else v for v in leaves]
    return None if any(g is None and v is not None for g, v in zip(got, leaves)) else got


def _checked_out(
    rule: RuleBase, split: RuleArgs, host: list[Any], out: Any, who: str
) -> tuple[list[Any], trees.TreeDef]:
    with host_context():
        return rule._check_out(split, host, out, who)


def _as_spec(value: Any, spec: Spec, name: str) -> np.ndarray[Any, Any]:
    """A host output as the callback promised it (jax checks shapes only at run time)."""
    arr = np.asarray(value)
    if arr.shape != spec[0]:
        raise UsageError(
            f"{name} (host=True): the host code returned an output of shape {arr.shape} "
            f"where out_shape= (or f) says {spec[0]}; fix out_shape= or the function."
        )
    return arr.astype(spec[1], copy=False)


def call_vjp(rule: Any, engine: Any, args: tuple[Any, ...], out_shape: Any) -> Any:
    """``rule(*args)`` inside a call on ``engine``, its functions run on numpy."""

    name = rule._name()
    split = RuleArgs(args, rule.nondiff_argnums, name)
    split.refuse_traced_nondiff(engine, name)
    active = active_leaves(engine, split.leaves)
    user_fwd, user_bwd = rule.fwd, rule.bwd
    assert user_fwd is not None and user_bwd is not None
    out_td: list[trees.TreeDef] = []

    def host_fwd(host: list[Any]) -> tuple[list[Any], Any]:
        with host_context():
            pair = user_fwd(*split.all_args(host))
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise UsageError(
                f"{name}: fwd returned {describe(pair)}; it must return a pair (out, residuals)."
            )
        out_leaves, td = _checked_out(rule, split, host, pair[0], "fwd")
        out_td[:] = [td]
        return [np.asarray(o) for o in out_leaves], pair[1]

    def host_bwd(host: list[Any], residuals: Any, cts: list[Any]) -> list[Any]:
        ct = trees.unflatten(out_td[0], list(cts))
        with host_context():
            got = user_bwd(*split.nondiff_args, residuals, ct)
        flat = rule._check_cotangents(split, got)
        return [
            None if c is None else np.asarray(c, dtype=np.asarray(h).dtype)
            for c, h in zip(flat, host)
        ]

    tracing = getattr(engine, "host_custom_vjp", None)
    if tracing is not None:
        to_host = getattr(engine, "to_host", lambda v: None)
        specs, td = _out_specs(rule, split, _concrete(engine, to_host, split.leaves), out_shape)
        out_td[:] = [td]

        def checked_fwd(h: list[Any]) -> tuple[list[Any], Any]:
            outs, residuals = host_fwd(list(h))
            return [_as_spec(o, s, name) for o, s in zip(outs, specs)], residuals

        out = tracing(
            lambda h: checked_fwd(h)[0],
            lambda h, c: host_bwd(list(h), checked_fwd(h)[1], list(c)),
            split.leaves,
            active,
            specs,
        )
        return trees.unflatten(out_td[0], list(out))

    to_host, from_host = _hooks(engine, name)
    like = next((x for x, a in zip(split.leaves, active) if a), None)

    def fwd(leaves: list[Any]) -> tuple[list[Any], Any]:
        why = "its inputs carry a derivative trace here; " + NESTED
        host = _host_leaves(engine, to_host, leaves, name, why)
        outs, residuals = host_fwd(host)
        return [from_host(o, like) for o in outs], (host, residuals)

    def fn(leaves: list[Any]) -> list[Any]:
        return fwd(leaves)[0]

    def bwd(residuals: Any, cotangents: list[Any]) -> list[Any]:
        host, res = residuals
        cts = _host_leaves(engine, to_host, cotangents, name, NESTED)
        flat = host_bwd(host, res, cts)
        return [
            None if c is None or not a else from_host(c, leaf)
            for c, leaf, a in zip(flat, split.leaves, active)
        ]

    out = call_hook(engine_hook(engine, "custom_vjp", name), fn, (fwd, bwd), split.leaves, active)
    if not out_td:  # (the engine built the output without calling fn or fwd)
        out_td.append(
            _out_specs(rule, split, _concrete(engine, to_host, split.leaves), out_shape)[1]
        )
    return trees.unflatten(out_td[0], list(out))


REVERSE_FIX = (
    "Fix: for reverse mode give the adjoint with ad.custom_vjp(f, host=True), or use a "
    "forward-mode operator (ad.jvp, ad.derivative, jacobian mode='forward')."
)


def call_jvp(rule: Any, engine: Any, args: tuple[Any, ...], out_shape: Any) -> Any:
    """``rule(*args)`` of a host custom_jvp inside a call on ``engine``. The rule's
    ``host_reverse_fix`` attribute, if any, says what to do when reverse mode asks to
    transpose the (numpy) rule."""

    reverse_fix = getattr(rule, "host_reverse_fix", REVERSE_FIX)
    name = rule._name()
    split = RuleArgs(args, rule.nondiff_argnums, name)
    split.refuse_traced_nondiff(engine, name)
    active = active_leaves(engine, split.leaves)
    user_rule = rule.rule
    assert user_rule is not None
    out_td: list[trees.TreeDef] = []

    def host_fn(host: list[Any]) -> list[Any]:
        with host_context():
            out_leaves, td = trees.flatten(rule.fun(*split.all_args(host)))
        out_td[:] = [td]
        return [np.asarray(o) for o in out_leaves]

    def host_rule(host: list[Any], tangents: list[Any]) -> tuple[list[Any], list[Any]]:
        ts = [zero_tangent(x) if t is None else t for x, t in zip(host, tangents)]
        with host_context():
            got = user_rule(
                *split.nondiff_args, tuple(split.diff_args(host)), tuple(split.diff_args(ts))
            )
        if not isinstance(got, tuple) or len(got) != 2:
            raise UsageError(
                f"{name}: the jvp rule returned {describe(got)}; it must return a pair "
                "(out, tangent_out)."
            )
        out_leaves, td = _checked_out(rule, split, host, got[0], "the jvp rule")
        out_td[:] = [td]
        tans = rule._check_tangents(td, out_leaves, got[1])
        return [np.asarray(o) for o in out_leaves], [np.asarray(t) for t in tans]

    tracing = getattr(engine, "host_custom_jvp", None)
    if tracing is not None:
        to_host = getattr(engine, "to_host", lambda v: None)
        specs, td = _out_specs(rule, split, _concrete(engine, to_host, split.leaves), out_shape)
        out_td[:] = [td]

        def spec_rule(h: list[Any], t: list[Any]) -> tuple[list[Any], list[Any]]:
            outs, tans = host_rule(list(h), list(t))
            fix = [_as_spec(o, s, name) for o, s in zip(outs, specs)]
            return fix, [_as_spec(o, s, name) for o, s in zip(tans, specs)]

        out = tracing(
            lambda h: [_as_spec(o, s, name) for o, s in zip(host_fn(list(h)), specs)],
            spec_rule,
            split.leaves,
            active,
            specs,
            reverse_fix,
        )
        return trees.unflatten(out_td[0], list(out))

    to_host, from_host = _hooks(engine, name)
    like = next((x for x, a in zip(split.leaves, active) if a), None)
    transposed = (
        "reverse mode asks to transpose the jvp rule, but host code is numpy and cannot "
        f"be transposed (or it is a nested derivative). {reverse_fix}"
    )

    def fn(leaves: list[Any]) -> list[Any]:
        host = _host_leaves(engine, to_host, leaves, name, NESTED)
        return [from_host(o, like) for o in host_fn(host)]

    def flat_rule(leaves: list[Any], tangents: list[Any]) -> tuple[list[Any], list[Any]]:
        ts = _host_leaves(engine, to_host, tangents, name, transposed)
        host = _host_leaves(engine, to_host, leaves, name, transposed)
        outs, tans = host_rule(host, ts)
        return [from_host(o, like) for o in outs], [from_host(t, like) for t in tans]

    out = call_hook(engine_hook(engine, "custom_jvp", name), fn, (flat_rule,), split.leaves, active)
    if not out_td:  # (the engine built the output without calling fn or the rule)
        out_td.append(
            _out_specs(rule, split, _concrete(engine, to_host, split.leaves), out_shape)[1]
        )
    return trees.unflatten(out_td[0], list(out))
