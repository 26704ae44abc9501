"""User-defined derivatives (issue 20): ``ad.custom_vjp``, ``ad.custom_jvp`` and
``ad.stop_gradient`` through every operator, plain and prepared. Where the rule is the
function's derivative the reference is finite differences of the same code (a rule is its
plain function outside an adswitch call); where it differs on purpose (a clipped
cotangent, a straight-through estimator, a halved tangent) the reference is the RULE's
result in closed form -- the function's own derivative there would be a silent error.
``custom_vjp`` needs reverse mode: a forward-only engine (dual) refuses it, as declared
by ``Capabilities.custom_vjp``; an engine that honours no rule (finite differences:
``Capabilities.rules``) refuses every case. The rules themselves live in :mod:`.rule_functions`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import adswitch as ad
from adswitch.errors import AdswitchError, UnsupportedError, UsageError

from . import rule_functions as R
from .case import Case, arr

F = "rules"
VJP = ("custom_vjp",)
NESTED = ("nested",)
W = np.array([3.0, -0.5, -2.0, 0.25])


def _xp(*xs: Any) -> Any:
    return ad.array_namespace(*xs)


def _w(x: Any) -> Any:
    return _xp(x).asarray(W)


def _lse2(x: Any) -> Any:
    return R.logsumexp(x) * 2.0


def _lse_vec(x: Any, v: Any) -> Any:
    return R.logsumexp(x) * v


def _lse_inner(x: Any, target: Any) -> Any:
    g = ad.gradient(R.logsumexp, x)[0]  # the inner gradient runs the rule's bwd
    return _xp(x).sum((g - target) ** 2)


def _lse_inner_ref(x: Any, target: Any) -> Any:
    return np.sum((R.softmax(x) - target) ** 2)


def _lse_hessian(x: Any) -> tuple[Any, ...]:
    p = R.softmax(x)
    return ((np.diag(p) - np.outer(p, p),),)


def _big() -> tuple[Any, ...]:  # exp overflows here: only a stable rule gives numbers
    return (arr(700, 5, lo=797.0, hi=803.0),)


def _stop(x: Any) -> Any:
    xp = _xp(x)
    return x + ad.stop_gradient(xp.round(x) - x)  # straight-through without a rule


# stop_gradient in every operator: y = x * sg(x) + sin(x) (J = diag(x + cos x)) and
# loss = sum(x**2 sg(x)) (gradient 2 x^2, Hessian 2 diag(x)). Finite differences of the
# same function would differentiate the stopped x; the references freeze it instead.
_SG = arr(760, 4)


def _sg_vec(x: Any) -> Any:
    return x * ad.stop_gradient(x) + _xp(x).sin(x)


def _sg_loss(x: Any) -> Any:
    return _xp(x).sum(x**2 * ad.stop_gradient(x))


def _sg_path(t: Any, c: Any) -> Any:
    return (t * ad.stop_gradient(t) + _xp(c).sin(t)) * c


def _sg_tree(p: dict[str, Any]) -> Any:
    q = ad.stop_gradient(p)
    xp = _xp(p["a"])
    return xp.sum(q["a"] * p["a"]) + xp.sum(q["b"][0] * p["b"][0] ** 2) + float(q["b"][1])


def _sg_inner(x: Any) -> Any:
    g = ad.gradient(lambda z: _xp(z).sum(ad.stop_gradient(z) * z**2), x)[0]
    return _xp(x).sum(g * _w(x))  # g = 2 x sg(x): the outer derivative is 2 sg(x) W


def _sg_args() -> tuple[Any, ...]:
    return (_SG.copy(),)


def _sg_jac(x: Any) -> tuple[Any, ...]:
    return (np.diag(x + np.cos(x)),)


def _case(name: str, what: str, fn: Any, make: Any, **kw: Any) -> Case:
    # Every case uses a rule: an engine that honours none (finite differences) refuses.
    kw["requires"] = ("rules", *kw.get("requires", ()))
    return Case(f"rules.{name}", F, what, fn, make, **kw)


def _sig(x: Any) -> Any:
    return 1.0 / (1.0 + np.exp(-x))


def _tied(seed: int) -> tuple[Any, Any]:
    x = arr(seed, 4)
    return x, x


def _diag_of(v: Any) -> Any:
    return lambda *a: (np.diag(v(*a)),)


_A = lambda: (arr(720, 3, 3) + 3.0 * np.eye(3), arr(721, 3))  # noqa: E731
_FP = lambda: (arr(730, 4, lo=0.5, hi=1.0),)  # noqa: E731
_tree = lambda: ({"w": arr(740, 3), "b": arr(741, 3), "n": 2}, arr(742, 3))  # noqa: E731
_layer = lambda: ({"W": arr(750, 3, 4), "b": arr(751, 4), "name": "l1", "n": 4}, 0.7)  # noqa: E731

CASES = [
    # -- custom_vjp: a stable logsumexp
    _case("logsumexp_gradient", "custom_vjp logsumexp at x ~ 800 (exp overflows): its bwd's "
          "softmax, never nan", _lse2, _big, closed_form=lambda x: (2.0 * R.softmax(x),),
          requires=VJP),
    _case("logsumexp_withgradient", "withgradient of the stable logsumexp: value and softmax",
          _lse2, _big, entry="withgradient", closed_form=lambda x: (2.0 * R.softmax(x),),
          requires=VJP),
    _case("logsumexp_jacobian", "reverse jacobian of logsumexp(x) * v (Const v): each row's "
          "cotangent through bwd (batched where the engine batches)", _lse_vec,
          lambda: (arr(701, 4) * 3.0, ad.Const(arr(702, 3))), entry="jacobian", mode="reverse",
          closed_form=lambda x, v: (np.outer(v, R.softmax(x)), None), requires=VJP),
    _case("logsumexp_float32", "the stable logsumexp in float32: a float32 gradient",
          _lse2, lambda: (arr(703, 5, dtype=np.float32) * 4.0,),
          closed_form=lambda x: (2.0 * R.softmax(x.astype(np.float64)),),
          requires=(*VJP, "float32")),
    _case("logsumexp_duplicated", "Duplicated(x) through the rule: the shadow gets the softmax",
          _lse2, lambda: (ad.Duplicated(arr(704, 5) * 3.0, arr(705, 5)),),
          closed_form=lambda x: (2.0 * R.softmax(x),), requires=VJP),
    _case("logsumexp_hessian", "hessian through custom_vjp: bwd (exp(x - out) * ct) is "
          "differentiated, diag(p) - p p^T", R.logsumexp, lambda: (arr(706, 4) * 2.0,),
          entry="hessian", closed_form=_lse_hessian, requires=(*VJP, *NESTED)),
    _case("logsumexp_hvp", "hvp through custom_vjp's differentiable bwd", R.logsumexp,
          lambda: (arr(707, 4) * 2.0,), entry="hvp", seeds=lambda: (arr(708, 4),),
          requires=(*VJP, *NESTED)),
    _case("logsumexp_nested_gradient", "ad.gradient of the rule inside f, differentiated by "
          "the outer call (seed 000's second order through a rule)", _lse_inner,
          lambda: (arr(709, 4), arr(710, 4, lo=0.0, hi=0.5)), ref_fn=_lse_inner_ref,
          requires=(*VJP, *NESTED)),
    # -- custom_vjp whose rule is not the derivative: the rule wins
    _case("clip_gradient", "identity with a clipping bwd: clip(W, -1, 1), not W",
          lambda x: _xp(x).sum(R.clip_grad(x) * _w(x)), lambda: (arr(711, 4),),
          closed_form=lambda x: (np.clip(W, -1.0, 1.0),), requires=VJP),
    _case("clip_gradient_jacobian", "reverse jacobian through the clipping rule: "
          "diag(clip(W)) (each row's cotangent clipped)", lambda x: R.clip_grad(x) * _w(x),
          lambda: (arr(712, 4),), entry="jacobian", mode="reverse",
          closed_form=lambda x: (np.diag(np.clip(W, -1.0, 1.0)),), requires=VJP),
    _case("clip_gradient_jacobian_forward", "forward jacobian through the clipping rule: a "
          "vjp rule has no pushforward -- transposing bwd would give diag(W) unclipped, so "
          "UnsupportedError naming custom_jvp", lambda x: R.clip_grad(x) * _w(x),
          lambda: (arr(712, 4),), entry="jacobian", mode="forward", raises=UnsupportedError,
          requires=VJP),
    _case("clip_gradient_tied", "one array at two places, each through the clipping rule: "
          "the sum of both rules' results at the first, None at the second",
          lambda a, b: _xp(a).sum(R.clip_grad(a) * _w(a) + R.clip_grad(b) * _w(b) * 2.0),
          lambda: _tied(713),
          closed_form=lambda a, b: (np.clip(W, -1, 1) + np.clip(2 * W, -1, 1), None),
          requires=VJP),
    _case("straight_through", "round forward, identity backward: d/dx sum(st(x) x) = "
          "x + round(x)", lambda x: _xp(x).sum(R.straight_through(x) * x),
          lambda: (arr(714, 4, lo=-3.0, hi=3.0),), closed_form=lambda x: (x + np.round(x),),
          requires=VJP),
    # -- implicit differentiation
    _case("implicit_solve", "solve(A, b) with an implicit rule (two solves): A and b "
          "gradients", lambda A, b: _xp(A).sum(R.solve(A, b) * _xp(A).asarray(W[:3])), _A,
          requires=(*VJP, "linalg")),
    _case("implicit_solve_jacobian", "reverse jacobian of the implicit solve", R.solve, _A,
          entry="jacobian", mode="reverse", requires=(*VJP, "linalg")),
    _case("implicit_solve_hvp", "hvp of |solve(A, b)|^2 through the rule (bwd's solves "
          "differentiated)", lambda A, b: _xp(A).sum(R.solve(A, b) ** 2), _A, entry="hvp",
          seeds=lambda: (arr(722, 3, 3), arr(723, 3)), requires=(*VJP, *NESTED, "linalg")),
    _case("fixed_point", "x = cos(a x) by iteration (a nondiff iteration count), derivative "
          "by the implicit function theorem", lambda a: _xp(a).sum(R.fixed_point(a, 100) * _w(a)),
          _FP, closed_form=lambda a: (W * R.fixed_point_slope(a),), requires=VJP),
    _case("fixed_point_jacobian", "reverse jacobian of the fixed point: diag(dx/da)",
          lambda a: R.fixed_point(a, 100), _FP, entry="jacobian", mode="reverse",
          closed_form=_diag_of(R.fixed_point_slope), requires=VJP),
    # -- custom_vjp on trees, Python floats, ties inside one call
    _case("vjp_tree", "a dict argument (str and int leaves: None) and a Python float through "
          "one rule with a tuple/dict output", lambda p, s: (lambda o: _xp(o[0]).sum(o[0])
          + o[1]["sq"])(R.tanh_layer(p, s)), _layer, requires=VJP),
    _case("tie_inside_rule", "mul(x, x): both cotangents of one rule call summed (2 x W)",
          lambda x: _xp(x).sum(R.mul(x, x) * _w(x)), lambda: (arr(715, 4),),
          closed_form=lambda x: (2.0 * x * W,), requires=VJP),
    _case("vjp_duplicated_const", "mul(a, b) with Duplicated a and Const b: b into a's shadow",
          lambda a, b: _xp(a).sum(R.mul(a, b)),
          lambda: (ad.Duplicated(arr(716, 4), arr(717, 4)), ad.Const(arr(718, 4))),
          closed_form=lambda a, b: (b, None), requires=VJP),
    _case("custom_vjp_forward_mode", "jvp through a custom_vjp: bwd's numbers by some route, "
          "or UnsupportedError naming custom_jvp (jax's behaviour)", R.solve, _A, entry="jvp",
          seeds=lambda: (arr(724, 3, 3), arr(725, 3)), also_ok=(UnsupportedError,),
          requires=("linalg",)),
    # -- custom_jvp: forward with its rule, reverse by transposing it
    _case("softplus_jvp", "custom_jvp softplus in forward mode (the rule's sigmoid)",
          lambda x: R.softplus(x) * 2.0 - x, lambda: (arr(726, 4) * 3.0,), entry="jvp",
          seeds=lambda: (arr(727, 4),)),
    _case("softplus_gradient", "custom_jvp in reverse mode: the rule transposed (sigmoid)",
          lambda x: _xp(x).sum(R.softplus(x)), lambda: (arr(728, 4) * 3.0,),
          closed_form=lambda x: (_sig(x),)),
    _case("softplus_vjp", "vjp through custom_jvp (reverse of a linear rule)", R.softplus,
          lambda: (arr(729, 4) * 3.0,), entry="vjp", seeds=lambda: (arr(731, 4), arr(732, 4))),
    _case("softplus_jacobian_forward", "forward jacobian through custom_jvp: diag(sigmoid)",
          R.softplus, lambda: (arr(733, 4) * 3.0,), entry="jacobian", mode="forward",
          closed_form=_diag_of(_sig)),
    _case("softplus_hessian", "hessian through custom_jvp: the rule's tangent differentiated "
          "again, diag(s (1 - s))", lambda x: _xp(x).sum(R.softplus(x)),
          lambda: (arr(734, 4) * 3.0,), entry="hessian",
          closed_form=lambda x: ((np.diag(_sig(x) * (1 - _sig(x))),),), requires=NESTED),
    _case("half_tangent_forward", "identity whose jvp rule halves the tangent: the forward "
          "jacobian is diag(W / 2), the rule's", lambda x: R.half_tangent(x) * _w(x),
          lambda: (arr(735, 4),), entry="jacobian", mode="forward",
          closed_form=lambda x: (np.diag(W / 2.0),)),
    _case("half_tangent_reverse", "the halving jvp rule in reverse mode: W / 2",
          lambda x: _xp(x).sum(R.half_tangent(x) * _w(x)), lambda: (arr(736, 4),),
          closed_form=lambda x: (W / 2.0,)),
    _case("jvp_tree", "custom_jvp with a nondiff str, a dict (int leaf: no tangent) and a "
          "tuple output, forward", lambda p, x: R.affine("tag", p, x), _tree, entry="jvp",
          seeds=lambda: ({"w": arr(743, 3), "b": arr(744, 3), "n": None}, arr(745, 3))),
    _case("jvp_tree_gradient", "the tree custom_jvp in reverse mode",
          lambda p, x: (lambda o: _xp(x).sum(o[0]) + o[1])(R.affine("tag", p, x)), _tree),
    _case("jvp_int_argument", "custom_jvp x ** n with an int n (zero tangent, None gradient)",
          lambda x, n: _xp(x).sum(R.power(x, n)), lambda: (arr(737, 4), 3),
          closed_form=lambda x, n: (3.0 * x**2, None)),
    _case("jvp_tied", "one array at two places, each through the custom_jvp: summed",
          lambda a, b: _xp(a).sum(R.softplus(a) + R.softplus(b) * 3.0),
          lambda: _tied(738),
          closed_form=lambda a, b: (4.0 * _sig(a), None)),
    # -- stop_gradient in every operator, every order
    _case("stop_gradient_gradient", "loss sum(x^2 sg(x)): 2 x^2", _sg_loss, _sg_args,
          closed_form=lambda x: (2.0 * x**2,)),
    _case("stop_gradient_withgradient", "withgradient: the value, and 2 x^2", _sg_loss,
          _sg_args, entry="withgradient", closed_form=lambda x: (2.0 * x**2,)),
    _case("stop_gradient_jacobian", "reverse jacobian of x sg(x) + sin x: diag(x + cos x)",
          _sg_vec, _sg_args, entry="jacobian", mode="reverse", closed_form=_sg_jac),
    _case("stop_gradient_jacobian_forward", "forward jacobian: diag(x + cos x)", _sg_vec,
          _sg_args, entry="jacobian", mode="forward", closed_form=_sg_jac),
    _case("stop_gradient_jvp", "jvp of x sg(x) + sin x: (x + cos x) v", _sg_vec, _sg_args,
          entry="jvp", ref_fn=lambda x: x * _SG + np.sin(x), seeds=lambda: (arr(761, 4),)),
    _case("stop_gradient_vjp", "vjp of x sg(x) + sin x: (x + cos x) u", _sg_vec, _sg_args,
          entry="vjp", ref_fn=lambda x: x * _SG + np.sin(x),
          seeds=lambda: (arr(762, 4), arr(763, 4))),
    _case("stop_gradient_hessian", "hessian of sum(x^2 sg(x)): 2 diag(x)", _sg_loss, _sg_args,
          entry="hessian", closed_form=lambda x: ((2.0 * np.diag(x),),), requires=NESTED),
    _case("stop_gradient_hvp", "hvp of sum(x^2 sg(x)): 2 x v", _sg_loss, _sg_args, entry="hvp",
          ref_fn=lambda x: np.sum(x**2 * _SG), seeds=lambda: (arr(764, 4),), requires=NESTED),
    _case("stop_gradient_derivative", "derivative in t of (t sg(t) + sin t) c: (t + cos t) c",
          _sg_path, lambda: (0.7, ad.Const(arr(765, 3))), entry="derivative",
          closed_form=lambda t, c: (t + np.cos(t)) * c),
    _case("stop_gradient_tree", "stop_gradient of a dict/tuple tree with an int leaf: each "
          "float leaf constant, the int passed through", _sg_tree,
          lambda: ({"a": arr(766, 3), "b": (arr(767, 2), 3)},),
          closed_form=lambda p: ({"a": p["a"], "b": (2.0 * p["b"][0] ** 2, None)},)),
    _case("stop_gradient_inner_order", "stop_gradient inside an inner gradient stays "
          "constant for the outer one too: 2 x W", _sg_inner, lambda: (arr(768, 4),),
          closed_form=lambda x: (2.0 * x * W,), requires=NESTED),
    _case("straight_through_stop_gradient", "x + sg(round(x) - x): round's value, "
          "identity's derivative (x + round(x))", lambda x: _xp(x).sum(_stop(x) * x),
          lambda: (arr(769, 4, lo=-3.0, hi=3.0),), closed_form=lambda x: (x + np.round(x),)),
    _case("straight_through_stop_gradient_forward", "the same in a forward jacobian: diag(W)",
          lambda x: _stop(x) * _w(x), lambda: (arr(770, 4, lo=-3.0, hi=3.0),),
          entry="jacobian", mode="forward", closed_form=lambda x: (np.diag(W),)),
    # -- contract violations: an AdswitchError naming the fix, never a wrong number
    _case("error_cotangent_count", "bwd returns one cotangent for two arguments",
          lambda a, b: _xp(a).sum(R.bad_count(a, b)), lambda: (arr(771, 3), arr(772, 3)),
          raises=AdswitchError, requires=VJP),
    _case("error_cotangent_shape", "bwd returns a cotangent of shape (2,) for x of shape (3,)",
          R.bad_shape, lambda: (arr(773, 3),), raises=AdswitchError, requires=VJP),
    _case("error_fwd_structure", "fwd's out is a tuple where f returns an array",
          lambda x: _xp(x).sum(R.bad_fwd(x)), lambda: (arr(774, 3),), raises=AdswitchError,
          requires=VJP),
    _case("error_defvjp_missing", "a custom_vjp called without defvjp",
          lambda x: _xp(x).sum(R.undefined(x)), lambda: (arr(775, 3),), raises=AdswitchError),
    _case("error_jvp_rule_structure", "a jvp rule whose tangent is a tuple for an array out",
          lambda x: _xp(x).sum(R.bad_rule(x)), lambda: (arr(776, 3),), raises=AdswitchError),
    _case("error_wrapper_in_rule", "a rule called with an ad.Duplicated argument inside f: "
          "UsageError (wrappers mark an operator's arguments; pass the array)",
          lambda x: R.logsumexp(ad.Duplicated(x, x * 0.0)), lambda: (arr(778, 3),),
          raises=UsageError),
    _case("error_stop_gradient_string", "stop_gradient of a tree holding a str: UsageError "
          "naming its key path", lambda x: _xp(x).sum(ad.stop_gradient({"x": x, "t": "s"})["x"]),
          lambda: (arr(777, 3),), raises=UsageError),
]  # fmt: skip
