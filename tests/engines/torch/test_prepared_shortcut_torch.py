"""A prepared torch gradient's shortcut (``adswitch.shortcut``, torch's
``prepared_shortcut``: the full path's steps in a row, ``f`` run on every call) gives what
the full path gives, or steps aside: repeated calls with new values, dict parameters,
``Const`` arguments, a tie, another shape, a write into an argument, a non-scalar
output, a float conversion, a changed global tensor, ``torch.func.vmap``, ``no_grad``,
caller tensors that require grad and a gradient nested in ``f``. Oracles: torch's own
``torch.autograd.grad`` / ``loss.backward()`` on the same function at the same values,
``torch.func`` for vmap, closed forms for the errors' effects."""

from __future__ import annotations

from typing import Any

import pytest

import adswitch as ad
from adswitch.errors import MutationError, OutputError, PreparationError, UnsupportedError

torch = pytest.importorskip("torch")

SCALE = [torch.ones(4, dtype=torch.float64)]


def _loss(x: Any, c: Any) -> Any:
    xp = ad.array_namespace(x)
    return xp.sum(xp.sin(x) * x * c)


def _mlp(p: dict[str, Any], x: Any) -> Any:
    return ((torch.tanh(x @ p["W"] + p["b"]) @ p["v"]) ** 2).mean()


def _rand(*shape: int, seed: int = 0) -> Any:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g, dtype=torch.float64)


def _oracle(f: Any, *args: Any, wrt: tuple[int, ...] = (0,)) -> list[Any]:
    """``torch.autograd.grad`` of ``f`` at ``args`` for the arguments at ``wrt``."""
    fresh = [a.detach().clone().requires_grad_(i in wrt) for i, a in enumerate(args)]
    grads = torch.autograd.grad(f(*fresh), [fresh[i] for i in wrt], materialize_grads=True)
    return list(grads)


def _warm(prep: Any, *args: Any) -> None:
    for _ in range(3):
        prep(*args)
    assert prep._shortcut is not None  # the shortcut is taken from here on


def _close(a: Any, b: Any) -> None:
    torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)


def test_repeated_calls_with_new_values_match_autograd_grad() -> None:
    x, c = _rand(5), _rand(5, seed=1)
    prep = ad.prepare(ad.gradient, _loss, x, ad.Const(c), backend="torch")
    _warm(prep, x, ad.Const(c))
    for seed in range(5):
        x, c = _rand(5, seed=10 + seed), _rand(5, seed=20 + seed)
        got = prep(x, ad.Const(c))
        assert len(got) == 2 and got[1] is None
        assert type(got[0]) is torch.Tensor and not got[0].requires_grad
        assert got[0].data_ptr() != x.data_ptr()
        _close(got[0], _oracle(_loss, x, c)[0])
        assert x.grad is None and not x.requires_grad  # the caller's tensor untouched
    assert prep._shortcut is not None


def test_dict_parameters_match_loss_backward() -> None:
    p = {"W": _rand(4, 3), "b": _rand(3, seed=1), "v": _rand(3, seed=2)}
    x = _rand(6, 4, seed=3)
    prep = ad.prepare(ad.gradient, _mlp, p, ad.Const(x), backend="torch")
    _warm(prep, p, ad.Const(x))
    for seed in range(3):
        q = {k: _rand(*v.shape, seed=10 * seed + i) for i, (k, v) in enumerate(p.items())}
        x = _rand(6, 4, seed=50 + seed)
        got, none = prep(q, ad.Const(x))
        assert none is None and list(got) == ["W", "b", "v"]
        ref = {k: v.detach().clone().requires_grad_() for k, v in q.items()}
        _mlp(ref, x).backward()
        for k in q:
            _close(got[k], ref[k].grad)
        assert len({g.data_ptr() for g in got.values()}) == 3  # memory of their own
    assert prep._shortcut is not None


def test_several_plain_and_const_arguments_and_an_unused_one() -> None:
    def f(a: Any, b: Any, c: Any, unused: Any) -> Any:
        return (a * b * c).sum() + (a**2).sum()

    a, b, c, u = _rand(3), _rand(3, seed=1), _rand(3, seed=2), _rand(2, seed=3)
    prep = ad.prepare(ad.gradient, f, a, ad.Const(b), c, u, backend="torch")
    _warm(prep, a, ad.Const(b), c, u)
    a, b, c = _rand(3, seed=4), _rand(3, seed=5), _rand(3, seed=6)
    got = prep(a, ad.Const(b), c, u)
    want = _oracle(f, a, b, c, u, wrt=(0, 2, 3))
    assert got[1] is None
    for mine, theirs in zip((got[0], got[2], got[3]), want):
        _close(mine, theirs)
    assert not got[3].any()  # unused: zeros, as torch's materialized gradient
    assert prep._shortcut is not None


def test_a_tie_takes_the_full_path() -> None:
    def two(a: Any, b: Any) -> Any:
        return (a * b).sum()

    a, b = _rand(3), _rand(3, seed=1)
    prep = ad.prepare(ad.gradient, two, a, b, backend="torch")
    _warm(prep, a, b)
    got = prep(a, b)
    _close(got[0], b)
    _close(got[1], a)
    with pytest.raises(PreparationError):  # a tie the preparation did not have
        prep(a, a)
    _close(prep(b, a)[0], a)


def test_another_shape_dtype_or_wrapper_is_refused_as_without_the_shortcut() -> None:
    x, c = _rand(5), _rand(5, seed=1)
    prep = ad.prepare(ad.gradient, _loss, x, ad.Const(c), backend="torch")
    _warm(prep, x, ad.Const(c))
    with pytest.raises(PreparationError, match="shape"):
        prep(_rand(6), ad.Const(_rand(6)))
    with pytest.raises(PreparationError, match="dtype"):
        prep(x.float(), ad.Const(c))
    with pytest.raises(PreparationError):
        prep(x, c)  # Const dropped: another activity
    _close(prep(x, ad.Const(c))[0], _oracle(_loss, x, c)[0])


def test_a_write_into_the_argument_is_refused_as_on_the_full_path() -> None:
    mode = [""]
    runs = [0]

    def f(x: Any) -> Any:
        runs[0] += 1
        if mode[0] == "no_grad":
            with torch.no_grad():
                x.add_(1.0)  # behind autograd's back
        elif mode[0] == "inplace":
            x.mul_(2.0)  # torch refuses it on a leaf that requires grad
        return (x * x).sum()

    x = _rand(4)
    prep = ad.prepare(ad.gradient, f, x, backend="torch")
    before = x.clone()
    for kind in ("no_grad", "inplace"):
        _warm(prep, x)
        mode[0], runs[0] = kind, 0
        with pytest.raises(MutationError):
            prep(x)
        mode[0] = ""
        assert runs[0] == 1  # f ran once, as on the full path
        # the caller's memory (shared with f's argument, as on the full path) holds the
        # one write behind autograd's back, and none of torch's refused one
        _close(x, before + 1.0)


def test_a_non_scalar_output_is_the_full_paths_output_error() -> None:
    vector = [False]

    def f(x: Any) -> Any:
        return x * x if vector[0] else (x * x).sum()

    x = _rand(4)
    prep = ad.prepare(ad.gradient, f, x, backend="torch")
    _warm(prep, x)
    vector[0] = True
    with pytest.raises(OutputError, match="scalar"):
        prep(x)
    vector[0] = False
    _close(prep(x)[0], 2 * x)


def test_a_loss_with_aux_matches_autograd_grad() -> None:
    def f(x: Any) -> Any:
        return (torch.sin(x) * x).sum(), {"aux": x * 3}

    x = _rand(4)
    prep = ad.prepare(ad.gradient, f, x, backend="torch")
    _warm(prep, x)
    x = _rand(4, seed=9)
    _close(prep(x)[0], _oracle(lambda y: f(y)[0], x)[0])


def test_a_float_conversion_is_refused_in_a_strict_call() -> None:
    convert = [False]

    def f(x: Any) -> Any:
        s = (x * x).sum()
        return s * float(s) if convert[0] else s

    x = _rand(4)
    prep = ad.prepare(ad.gradient, f, x, backend="torch")
    _warm(prep, x)
    convert[0] = True
    with pytest.raises(UnsupportedError, match="float"):
        prep(x)


def test_a_changed_global_tensor_is_read_live() -> None:
    def f(x: Any) -> Any:
        return (x * SCALE[0]).pow(2).sum()

    x = _rand(4)
    prep = ad.prepare(ad.gradient, f, x, backend="torch")
    _warm(prep, x)
    SCALE[0].mul_(3.0)  # in place
    try:
        _close(prep(x)[0], 2 * x * 9.0)
        SCALE[0] = torch.full((4,), 0.5, dtype=torch.float64)  # rebound
        _close(prep(x)[0], 2 * x * 0.25)
        _close(prep(x)[0], _oracle(f, x)[0])
    finally:
        SCALE[0] = torch.ones(4, dtype=torch.float64)


def test_under_no_grad_and_inference_mode_the_gradient_is_still_right() -> None:
    x, c = _rand(5), _rand(5, seed=1)
    prep = ad.prepare(ad.gradient, _loss, x, ad.Const(c), backend="torch")
    _warm(prep, x, ad.Const(c))
    want = _oracle(_loss, x, c)[0]
    with torch.no_grad():
        _close(prep(x, ad.Const(c))[0], want)
    with torch.inference_mode():
        _close(prep(x, ad.Const(c))[0], want)
    _close(prep(x, ad.Const(c))[0], want)


def test_caller_tensors_that_require_grad_are_left_as_they_are() -> None:
    x, c = _rand(5).requires_grad_(), _rand(5, seed=1)
    prep = ad.prepare(ad.gradient, _loss, x, ad.Const(c), backend="torch")
    _warm(prep, x, ad.Const(c))
    got = prep(x, ad.Const(c))[0]
    _close(got, _oracle(_loss, x, c)[0])
    assert not got.requires_grad and x.grad is None and x.requires_grad


def test_inside_torch_func_vmap_matches_torch_func() -> None:
    x, c = _rand(5), _rand(5, seed=1)
    prep = ad.prepare(ad.gradient, _loss, x, ad.Const(c), backend="torch")
    _warm(prep, x, ad.Const(c))
    batch = _rand(3, 5, seed=2)
    got = torch.func.vmap(lambda xb: prep(xb, ad.Const(c))[0])(batch)
    want = torch.func.vmap(torch.func.grad(lambda xb: _loss(xb, c)))(batch)
    _close(got, want)
    _close(prep(x, ad.Const(c))[0], _oracle(_loss, x, c)[0])


def test_a_gradient_nested_in_f_matches_autograd_grad_with_create_graph() -> None:
    def inner(w: Any, x: Any) -> Any:
        return torch.tanh(x @ w).sum()

    def f(w: Any, x: Any) -> Any:
        (dx,) = ad.gradient(lambda x_: inner(w, x_), x)
        return (dx**2).sum()

    def raw(w: Any, x: Any) -> Any:
        xg = x.detach().requires_grad_()
        (dx,) = torch.autograd.grad(inner(w, xg), xg, create_graph=True)
        return (dx**2).sum()

    w, x = _rand(4, 3), _rand(2, 4, seed=1)
    prep = ad.prepare(ad.gradient, f, w, ad.Const(x), backend="torch")
    _warm(prep, w, ad.Const(x))
    w = _rand(4, 3, seed=5)
    _close(prep(w, ad.Const(x))[0], _oracle(raw, w, x)[0])
