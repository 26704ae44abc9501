"""DistributedDataParallel arguments give the gradient DDP's own backward gives (the average
over the process group; the local one inside ``no_sync``), in every form, and leave DDP
working; FSDP modules and DTensor parameters are refused. Oracle: DDP's own
``loss.backward()`` on the same data, in the same processes.

Two ranks run this file as a script (gloo on the loopback address), once for every test
here (a module fixture), each bounded by a timeout so that a hang fails instead of hanging.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

torch: Any = pytest.importorskip("torch")

import adswitch as ad  # noqa: E402

WORLD = 2
TIMEOUT_S = 120


# ---------------------------------------------------------------------------- the ranks
def _loss(model: Any, x: Any, y: Any) -> Any:
    return ((model(x) - y) ** 2).mean()


def _grads(model: Any) -> dict[str, list[Any]]:
    return {name: p.grad.tolist() for name, p in model.named_parameters()}


def _values(tree: Any) -> dict[str, list[Any]]:
    return {name: tree[name].tolist() for name in tree}


def _oracle(model: Any, x: Any, y: Any) -> dict[str, list[Any]]:
    """DDP's own gradient of ``_loss`` at (x, y)."""
    model.zero_grad(set_to_none=True)
    _loss(model, x, y).backward()
    found = _grads(model)
    model.zero_grad(set_to_none=True)
    return found


def _refusal(call: Any) -> str:
    try:
        call()
    except ad.AdswitchError as exc:
        return f"{type(exc).__name__}: {exc}"
    return "no error"


class _Holder(torch.nn.Module):  # type: ignore[misc]
    """A module holding a DDP module: DDP's average applies to the DDP's parameters."""

    def __init__(self, net: Any) -> None:
        super().__init__()
        self.net = net
        self.scale = torch.nn.Parameter(torch.tensor(1.5))

    def forward(self, x: Any) -> Any:
        return self.net(x) * self.scale


def _rank_main(rank: int, port: int) -> dict[str, Any]:
    import torch.distributed as dist
    from adswitch_torch import grad_shadow
    from torch.nn.parallel import DistributedDataParallel as DDP

    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=WORLD
    )
    out: dict[str, Any] = {}
    torch.manual_seed(0)  # the same initial weights on every rank (DDP broadcasts them too)
    model = DDP(torch.nn.Linear(4, 3))
    data = torch.Generator().manual_seed(100 + rank)  # different data per rank
    x, y = torch.randn(8, 4, generator=data), torch.randn(8, 3, generator=data)
    x2, y2 = torch.randn(8, 4, generator=data), torch.randn(8, 3, generator=data)
    c = (ad.Const(x), ad.Const(y))

    # Plain argument, then DDP's own forward/backward (which must still work).
    (g, _, _) = ad.gradient(_loss, model, *c, backend="torch")
    out["plain"] = _values(g)
    out["oracle"] = _oracle(model, x, y)

    # Duplicated with the default shadow (the parameters' .grad) and with grad_shadow.
    ad.gradient(_loss, ad.Duplicated(model), *c, backend="torch")
    out["duplicated"] = _grads(model)
    model.zero_grad(set_to_none=True)
    ad.gradient(_loss, ad.Duplicated(model, grad_shadow(model)), *c, backend="torch")
    out["grad_shadow"] = _grads(model)
    model.zero_grad(set_to_none=True)

    # Inside no_sync: the local gradient, as DDP's backward gives there.
    with model.no_sync():
        (g, _, _) = ad.gradient(_loss, model, *c, backend="torch")
        out["no_sync"] = _values(g)
        _loss(model, x, y).backward()
        out["no_sync_oracle"] = _grads(model)
    model.zero_grad(set_to_none=True)

    # Gradient accumulation: local under no_sync, then one synchronised call; DDP averages
    # the whole accumulated .grad.
    with model.no_sync():
        ad.gradient(_loss, ad.Duplicated(model), *c, backend="torch", zero=False)
    ad.gradient(
        _loss, ad.Duplicated(model), ad.Const(x2), ad.Const(y2), backend="torch", zero=False
    )
    out["accumulated"] = _grads(model)
    model.zero_grad(set_to_none=True)
    with model.no_sync():
        _loss(model, x, y).backward()
    _loss(model, x2, y2).backward()
    out["accumulated_oracle"] = _grads(model)
    model.zero_grad(set_to_none=True)

    # SGD steps through adswitch against the same steps through DDP's backward.
    twin = DDP(torch.nn.Linear(4, 3))
    twin.load_state_dict(model.state_dict())
    ours, theirs = (torch.optim.SGD(m.parameters(), lr=0.1) for m in (model, twin))
    for _ in range(3):
        ours.zero_grad()
        ad.gradient(_loss, ad.Duplicated(model), *c, backend="torch")
        ours.step()
        theirs.zero_grad()
        _loss(twin, x, y).backward()
        theirs.step()
    out["trained"] = {k: v.tolist() for k, v in model.module.state_dict().items()}
    out["trained_oracle"] = {k: v.tolist() for k, v in twin.module.state_dict().items()}

    # A module with buffers (DDP broadcasts them in its forward) and an ignored parameter.
    torch.manual_seed(1)
    inner = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3))
    DDP._set_params_and_buffers_to_ignore_for_model(inner, ["1.bias"])
    with_bn = DDP(inner)
    (g, _, _) = ad.gradient(_loss, with_bn, *c, backend="torch")
    out["buffers"] = _values(g)
    out["buffers_oracle"] = _oracle(with_bn, x, y)

    # An adswitch call between DDP's own forward and backward leaves DDP's reducer alone.
    torch.manual_seed(2)
    unused = DDP(torch.nn.Linear(4, 3), find_unused_parameters=True)
    expected = _oracle(unused, x, y)
    pending = _loss(unused, x, y)
    ad.gradient(_loss, unused, *c, backend="torch")
    pending.backward()
    out["interleaved"], out["interleaved_oracle"] = _grads(unused), expected

    # A DDP inside a module argument: averaged, and its reducer left alone too.
    holder = _Holder(unused)
    expected = _oracle(holder, x, y)
    pending = _loss(holder, x, y)
    (g, _, _) = ad.gradient(_loss, holder, *c, backend="torch")
    pending.backward()
    out["held"], out["held_oracle"] = _values(g), expected
    out["held_after"] = _grads(holder)

    # Refused: the average inside an enclosing differentiation, FSDP, DTensor.
    def penalty(m: Any) -> Any:
        (inner_g, _, _) = ad.gradient(_loss, m, *c)
        return (inner_g["module.weight"] ** 2).sum()

    out["nested"] = _refusal(lambda: ad.gradient(penalty, model, backend="torch"))
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

    hooked = DDP(torch.nn.Linear(4, 3))
    hooked.register_comm_hook(None, default_hooks.fp16_compress_hook)
    out["comm_hook"] = _refusal(lambda: ad.gradient(_loss, hooked, *c, backend="torch"))
    with hooked.no_sync():  # no reduction, so no hook: the local gradient
        (g, _, _) = ad.gradient(_loss, hooked, *c, backend="torch")
        out["comm_hook_local"] = _values(g)
        _loss(hooked, x, y).backward()
        out["comm_hook_local_oracle"] = _grads(hooked)
    from torch.distributed.fsdp import FullyShardedDataParallel, fully_shard
    from torch.distributed.tensor import DeviceMesh, Replicate, distribute_tensor

    sharded = torch.nn.Linear(4, 3)
    fully_shard(sharded)
    out["fsdp2"] = _refusal(lambda: ad.gradient(_loss, sharded, *c, backend="torch"))
    wrapped = FullyShardedDataParallel(torch.nn.Linear(4, 3), device_id=torch.device("cpu"))
    out["fsdp1"] = _refusal(lambda: ad.gradient(_loss, wrapped, *c, backend="torch"))
    mesh = DeviceMesh("cpu", list(range(WORLD)))
    w = distribute_tensor(torch.ones(4, 3), mesh, [Replicate()])
    out["dtensor"] = _refusal(lambda: ad.gradient(lambda w: (w * w).sum(), w, backend="torch"))

    # Operators other than gradients: refused while DDP synchronises (DDP defines only the
    # averaged gradient of a loss), this rank's local result inside no_sync.
    from adswitch_torch import functional_module

    def forward(m: Any, x: Any) -> Any:
        return m(x)

    names = [name for name, _ in model.named_parameters()]
    tangent = functional_module(model, {n: torch.ones_like(p) for n, p in model.named_parameters()})
    operators = {
        "vjp": lambda: ad.vjp(forward, model, ad.Const(x), backend="torch"),
        "jvp": lambda: ad.jvp(forward, (model, ad.Const(x)), (tangent, None), backend="torch"),
        "jacobian_reverse": lambda: ad.jacobian(
            forward, model, ad.Const(x), backend="torch", mode="reverse"
        ),
        "jacobian_forward": lambda: ad.jacobian(
            forward, model, ad.Const(x), backend="torch", mode="forward"
        ),
        "hessian": lambda: ad.hessian(_loss, model, *c, backend="torch"),
        "hvp": lambda: ad.hvp(_loss, (model, *c), (tangent, None, None), backend="torch"),
    }
    out["operators"] = {name: _refusal(call) for name, call in operators.items()}
    local = {n: p.detach() for n, p in model.module.named_parameters()}
    oracle = torch.func.jacrev(lambda p: torch.func.functional_call(model.module, p, (x,)))(local)
    with model.no_sync():
        for mode in ("reverse", "forward"):
            J = ad.jacobian(forward, model, ad.Const(x), backend="torch", mode=mode)[0]
            out[f"no_sync_jacobian_{mode}"] = {n: J[n].tolist() for n in names}
        _, t = ad.jvp(forward, (model, ad.Const(x)), (tangent, None), backend="torch")
        out["no_sync_jvp"] = t.tolist()
    out["no_sync_jacobian_oracle"] = {f"module.{n}": v.tolist() for n, v in oracle.items()}
    # the tangent is all ones: J t sums each block over its parameter axes
    out["no_sync_jvp_oracle"] = sum(v.flatten(2).sum(-1) for v in oracle.values()).tolist()

    # DDP still trains after all of it.
    out["after"] = _oracle(model, x, y)
    (g, _, _) = ad.gradient(_loss, model, *c, backend="torch")
    out["after_adswitch"] = _values(g)
    dist.destroy_process_group()
    return out


# ---------------------------------------------------------------------------- the tests
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def ranks() -> list[dict[str, Any]]:
    import adswitch_torch

    if not torch.distributed.is_available() or not torch.distributed.is_gloo_available():
        pytest.skip("torch without gloo")
    roots = {str(Path(m.__file__).resolve().parent.parent) for m in (ad, adswitch_torch)}
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([*roots, env.get("PYTHONPATH", "")])
    if sys.platform.startswith("linux"):
        env.setdefault("GLOO_SOCKET_IFNAME", "lo")
    env.setdefault("OMP_NUM_THREADS", "1")
    failures = []
    for _ in range(2):  # a second try, on a new port, if the first one's ranks broke down
        results, failure = _run_ranks(env)
        if results is not None:
            return results
        failures.append(failure)
    pytest.fail("the DDP ranks failed twice:\n" + "\n----\n".join(failures))


def _run_ranks(env: dict[str, str]) -> tuple[list[dict[str, Any]] | None, str]:
    """One run of the ranks: their results, or ``None`` and why not. A rank that printed
    its results and was then killed by a signal (gloo's teardown can abort with
    "terminate called without an active exception" on a loaded machine) counts as
    finished; the port is chosen free, but another process may take it before the ranks
    bind it -- that failure is retried by the caller."""
    port = _free_port()
    procs = [
        subprocess.Popen(
            [sys.executable, __file__, str(rank), str(port)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for rank in range(WORLD)
    ]
    results = []
    try:
        for proc in procs:
            stdout, stderr = proc.communicate(timeout=TIMEOUT_S)
            lines = stdout.strip().splitlines()
            finished = bool(lines) and lines[-1].startswith("{")
            if proc.returncode != 0 and not (finished and proc.returncode < 0):
                return None, f"rank exited with {proc.returncode}:\n{stderr[-4000:]}"
            if not finished:
                return None, f"rank printed no results:\n{stderr[-4000:]}"
            results.append(json.loads(lines[-1]))
    except subprocess.TimeoutExpired:
        return None, f"the DDP ranks did not finish within {TIMEOUT_S} s (a hang)"
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    return results, ""


def _close(a: dict[str, Any], b: dict[str, Any], rtol: float = 1e-6) -> None:
    assert a.keys() == b.keys()
    for name in a:
        assert torch.allclose(torch.tensor(a[name]), torch.tensor(b[name]), rtol=rtol, atol=1e-7)


def test_plain_ddp_argument_gets_ddps_average(ranks: list[dict[str, Any]]) -> None:
    for r in ranks:
        _close(r["plain"], r["oracle"])
    # the average is the same on every rank, and differs from the local gradient
    _close(ranks[0]["plain"], ranks[1]["plain"])
    assert ranks[0]["oracle"] != ranks[0]["no_sync_oracle"]


def test_duplicated_ddp_fills_grad_with_the_average(ranks: list[dict[str, Any]]) -> None:
    for r in ranks:
        _close(r["duplicated"], r["oracle"])
        _close(r["grad_shadow"], r["oracle"])


def test_no_sync_gives_the_local_gradient(ranks: list[dict[str, Any]]) -> None:
    for r in ranks:
        _close(r["no_sync"], r["no_sync_oracle"])
    assert ranks[0]["no_sync"] != ranks[1]["no_sync"]


def test_accumulation_under_no_sync_is_averaged_as_a_whole(ranks: list[dict[str, Any]]) -> None:
    for r in ranks:
        _close(r["accumulated"], r["accumulated_oracle"])


def test_sgd_steps_through_adswitch_match_ddp(ranks: list[dict[str, Any]]) -> None:
    for r in ranks:
        _close(r["trained"], r["trained_oracle"])
    _close(ranks[0]["trained"], ranks[1]["trained"])


def test_buffers_and_ignored_parameters_as_in_ddp(ranks: list[dict[str, Any]]) -> None:
    for r in ranks:
        _close(r["buffers"], r["buffers_oracle"])
    # the ignored parameter keeps its local gradient (it differs between the ranks)
    assert ranks[0]["buffers"]["module.1.bias"] != ranks[1]["buffers"]["module.1.bias"]


def test_ddp_keeps_working_afterwards(ranks: list[dict[str, Any]]) -> None:
    for r in ranks:
        _close(r["after_adswitch"], r["after"])


def test_a_call_between_ddps_forward_and_backward(ranks: list[dict[str, Any]]) -> None:
    for r in ranks:
        _close(r["interleaved"], r["interleaved_oracle"])


def test_no_sync_with_a_comm_hook_is_local(ranks: list[dict[str, Any]]) -> None:
    for r in ranks:
        _close(r["comm_hook_local"], r["comm_hook_local_oracle"])


def test_a_ddp_inside_a_module_argument(ranks: list[dict[str, Any]]) -> None:
    for r in ranks:
        _close(r["held"], r["held_oracle"])
        _close(r["held_after"], r["held_oracle"])
    # DDP's parameters averaged (equal on both ranks), the holder's own one local
    assert ranks[0]["held"]["net.module.weight"] == ranks[1]["held"]["net.module.weight"]
    assert ranks[0]["held"]["scale"] != ranks[1]["held"]["scale"]


def test_other_operators_are_refused_while_ddp_synchronises(ranks: list[dict[str, Any]]) -> None:
    for r in ranks:
        for name, message in r["operators"].items():
            assert message.startswith("UnsupportedError"), (name, message)
            assert "DistributedDataParallel" in message, (name, message)


def test_other_operators_give_the_local_result_inside_no_sync(
    ranks: list[dict[str, Any]],
) -> None:
    for r in ranks:
        for mode in ("reverse", "forward"):
            _close(r[f"no_sync_jacobian_{mode}"], r["no_sync_jacobian_oracle"], rtol=1e-5)
        torch.testing.assert_close(
            torch.tensor(r["no_sync_jvp"]),
            torch.tensor(r["no_sync_jvp_oracle"]),
            rtol=1e-5,
            atol=1e-6,
        )
    # local: the ranks' data differ, so do their Jacobians
    assert ranks[0]["no_sync_jvp"] != ranks[1]["no_sync_jvp"]


@pytest.mark.parametrize(
    ("case", "words"),
    [
        ("nested", "inside another ad.gradient"),
        ("comm_hook", "communication hook"),
        ("fsdp2", "FSDP modules"),
        ("fsdp1", "FSDP modules"),
        ("dtensor", "DTensor"),
    ],
)
def test_what_cannot_be_averaged_is_refused(
    ranks: list[dict[str, Any]], case: str, words: str
) -> None:
    for r in ranks:
        assert r[case].startswith("UnsupportedError") and words in r[case], r[case]


if __name__ == "__main__":
    sys.stdout.write(json.dumps(_rank_main(int(sys.argv[1]), int(sys.argv[2]))) + "\n")
