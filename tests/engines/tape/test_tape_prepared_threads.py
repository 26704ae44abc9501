"""Threads replaying one prepared call at once share no mutable state: each gets exactly
the unprepared result for its own arguments (the mlp's program writes its temporaries
into buffers it owns: each running call has its own), also when they all start before
anything was recorded.

Oracle: the unprepared call on the same arguments, computed before the threads start."""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np
import pytest

import adswitch as ad
from tests.engines.tape.test_tape_prepared import (
    assert_identical,
    mlp,
    mlp_args,
    vector_args,
    vector_fn,
)

pytestmark = pytest.mark.filterwarnings("error::adswitch_tape.replay.notices.TapeReplayWarning")


def _race(work: Callable[[int], None], n: int) -> None:
    """``work(i)`` in ``n`` threads released together; their exceptions re-raised."""
    barrier = threading.Barrier(n)
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            barrier.wait()
            work(i)
        except BaseException as exc:  # pragma: no cover - re-raised below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


@pytest.mark.parametrize("record_first", [True, False])
def test_threads_replaying_one_prepared_gradient(record_first: bool) -> None:
    inputs = [mlp_args(seed) for seed in range(6)]
    wanted = [ad.gradient(mlp, *args) for args in inputs]
    prep = ad.prepare(ad.gradient, mlp, *mlp_args(99))
    if record_first:
        prep(*mlp_args(98))

    def work(i: int) -> None:
        for k in range(15):
            j = (i + k) % len(inputs)
            assert_identical(prep(*inputs[j]), wanted[j])

    _race(work, 6)


def test_threads_pulling_back_replayed_vjps() -> None:
    inputs = [vector_args(seed) for seed in range(4)]
    cotangent = np.linspace(-1.0, 1.0, 4)
    wanted = [ad.vjp(vector_fn, *args, has_aux=True) for args in inputs]
    wanted_pulled = [w[1](cotangent) for w in wanted]
    prep = ad.prepare(ad.vjp, vector_fn, *vector_args(99), has_aux=True)

    def work(i: int) -> None:
        for k in range(10):
            j = (i + k) % len(inputs)
            y, pullback, aux = prep(*inputs[j])
            assert_identical((y, aux), (wanted[j][0], wanted[j][2]))
            assert_identical(pullback(cotangent), wanted_pulled[j])

    _race(work, 4)
