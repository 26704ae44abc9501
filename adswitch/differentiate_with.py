"""``ad.differentiate_with(fn, backend=name)``: a piece of ``f`` differentiated by another
engine (DifferentiationInterface.jl's ``DifferentiateWith``; the ``jax2torch`` bridges).

Built on host rules (:mod:`adswitch.host_rules`): the arrays cross as numpy, and the
enclosing engine sees one rule whose derivative is the other engine's.

* ``mode="reverse"`` (the default): a ``custom_vjp(host=True)`` whose ``fwd`` is
  ``ad.vjp(fn, *args, backend=name)`` (the pullback is the residual) and whose ``bwd``
  applies that pullback. Reverse-mode operators (``gradient``, ``vjp``, reverse
  ``jacobian``) of the enclosing engine go through it.
* ``mode="forward"``: a ``custom_jvp(host=True)`` whose rule is
  ``ad.jvp(fn, args, tangents, backend=name)``, for forward-mode operators (``jvp``,
  ``derivative``, forward ``jacobian``).

One rule per object, picked by ``mode=``, because a host rule cannot carry both: numpy
code can be neither transposed (a jvp rule used in reverse) nor pushed forward (a vjp
rule used in forward mode). The wrong mode is an ``UnsupportedError`` naming ``mode=``.
Inside a call on ``backend`` itself, ``fn`` is simply called (native, every order).
Otherwise first order only: a derivative of this derivative (a Hessian...) crosses numpy twice and
is an ``UnsupportedError``. On a compiling enclosing engine (jax) pass ``out_shape=``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from adswitch.custom import custom_jvp, custom_vjp
from adswitch.errors import NoForwardRuleError, UsageError
from adswitch.leaves import leaf_kind
from adswitch.selection import enclosing

__all__ = ["differentiate_with"]

_MODES = ("reverse", "forward")


class differentiate_with:
    """``fn`` run and differentiated on engine ``backend`` wherever it is called.

    Args:
        fn: a function of arrays (trees of them), written for engine ``backend``
            (``xp = ad.array_namespace(x)`` code, or that engine's own operations).
        backend: the engine that runs and differentiates ``fn`` ("jax", "torch"...).
        mode: ``"reverse"`` (default: the enclosing engine's reverse-mode operators) or
            ``"forward"`` (its forward-mode operators); see the module doc.
        out_shape: a tree like ``fn``'s output of objects with ``.shape``/``.dtype``
            (``np.empty(3)``); needed when the enclosing engine compiles (jax).

    Returns:
        A callable: outside any adswitch call it runs ``fn`` on ``backend`` and returns
        numpy; inside ``f`` differentiated on engine A it carries ``fn``'s derivatives,
        computed by ``backend``, back into A.

    Example:
        >>> import adswitch as ad, numpy as np
        >>> sq = ad.differentiate_with(lambda x: x * x, backend="tape")
        >>> def f(x):
        ...     return ad.array_namespace(x).sum(sq(x))
        >>> ad.gradient(f, np.array([3.0]), backend="autograd")
        (array([6.]),)
    """

    def __init__(
        self,
        fn: Callable[..., Any],
        backend: str,
        *,
        mode: str = "reverse",
        out_shape: Any = None,
    ) -> None:
        if not callable(fn):
            raise UsageError(
                f"ad.differentiate_with(fn, backend=...): fn must be callable, not {fn!r}."
            )
        if not isinstance(backend, str):
            raise UsageError(
                f"ad.differentiate_with: backend={backend!r}; give the engine's name, e.g. "
                "backend='jax'."
            )
        if mode not in _MODES:
            raise UsageError(
                f"ad.differentiate_with: mode={mode!r}; use mode='reverse' (gradient, vjp) "
                "or mode='forward' (jvp, derivative)."
            )
        self.fn, self.backend, self.mode = fn, backend, mode
        self.__name__ = getattr(fn, "__name__", "fn")
        self.__wrapped__ = fn
        self._rule = self._vjp_rule(out_shape) if mode == "reverse" else self._jvp_rule(out_shape)

    def _run(self, *args: Any) -> Any:
        from adswitch.reverse import vjp

        return vjp(self.fn, *args, backend=self.backend)[0]

    def _vjp_rule(self, out_shape: Any) -> custom_vjp:
        from adswitch.reverse import vjp

        rule = custom_vjp(self._run, host=True, out_shape=out_shape)
        rule.__name__ = f"differentiate_with({self.__name__}, backend={self.backend!r})"

        def fwd(*args: Any) -> tuple[Any, Any]:
            y, pullback = vjp(self.fn, *args, backend=self.backend)
            return y, pullback

        def bwd(pullback: Any, ct: Any) -> tuple[Any, ...]:
            return tuple(pullback(ct))

        rule.defvjp(fwd, bwd)
        return rule

    def _jvp_rule(self, out_shape: Any) -> custom_jvp:
        from adswitch.forward import jvp

        rule = custom_jvp(self._run, host=True, out_shape=out_shape)
        rule.__name__ = f"differentiate_with({self.__name__}, backend={self.backend!r})"
        rule.host_reverse_fix = (  # type: ignore[attr-defined]  # read by host_rules
            "Fix: for reverse-mode operators use ad.differentiate_with(fn, "
            f"backend={self.backend!r}, mode='reverse') (the default)."
        )

        def rule_fn(primals: tuple[Any, ...], tangents: tuple[Any, ...]) -> tuple[Any, Any]:
            ts = tuple(_tangent(p, t) for p, t in zip(primals, tangents))
            y, t = jvp(self.fn, primals, ts, backend=self.backend)
            return y, t

        rule.defjvp(rule_fn)
        return rule

    def __call__(self, *args: Any) -> Any:
        engine = enclosing()
        if engine is None:
            return self._run(*args)
        if engine.name == self.backend:
            # Already on that engine: fn differentiates natively, at every order (and a
            # host crossing would run fn inside the engine's own backward machinery).
            return self.fn(*args)
        try:
            return self._rule(*args)
        except NoForwardRuleError as e:
            raise NoForwardRuleError(
                f"ad.differentiate_with({self.__name__}, backend={self.backend!r}) was built "
                "with mode='reverse' and is pushed forward here (a forward-mode operator). "
                f"Fix: build it with mode='forward' for forward-mode operators. ({e})"
            ) from None


def _tangent(primal: Any, tangent: Any) -> Any:
    """The tangent ``ad.jvp`` takes: ``None`` for a non-floating leaf (the host rule gives
    zeros of any dtype there). Trees are passed as they are."""
    if isinstance(primal, (np.ndarray, np.generic, int, float, bool)) and leaf_kind(primal) != "f":
        return None
    return tangent
