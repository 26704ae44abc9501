"""Messages that say where a thing came from and the fix (issue 19): a prepared call or
a pullback given another structure speaks of what was prepared and what is given (not
of ``val``/``dval``); a prepared call called inside an ``ad.use`` of another engine is
refused (unless its engine was pinned with ``backend=``); an unknown engine name says
where the name came from; every ``adswitch`` subcommand has a description."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import adswitch as ad
from adswitch.cli import main


def _sum_squares(x: Any) -> Any:
    return ad.array_namespace(x).sum(x * x)


def test_prepared_call_given_a_list_speaks_of_prepared_and_given() -> None:
    prep = ad.prepare(ad.gradient, _sum_squares, np.ones(2))
    with pytest.raises(ad.PreparationError) as info:
        prep([1.0, 2.0])
    text = str(info.value)
    assert "args[0]: a leaf was prepared, a list with children [0], [1] is given" in text
    assert "val" not in text


def test_pullback_given_a_list_speaks_of_output_and_cotangent() -> None:
    _, pullback = ad.vjp(lambda x: 2 * x, np.ones(2))
    with pytest.raises(ad.ActivityError) as info:
        pullback([np.ones(2)])
    text = str(info.value)
    assert "a leaf in the output, a list with children [0] in the cotangent" in text
    assert "val" not in text


def test_prepared_call_refuses_an_ad_use_of_another_engine() -> None:
    with ad.use("tape"):
        prep = ad.prepare(ad.gradient, _sum_squares, np.ones(2))
    with ad.use("autograd"), pytest.raises(ad.PreparationError) as info:
        prep(np.ones(2))
    text = str(info.value)
    assert "prepared on engine 'tape'" in text and "ad.use('autograd')" in text
    assert "prepare it again" in text and "backend='tape'" in text
    with ad.use("tape"):  # the same engine: fine
        np.testing.assert_array_equal(prep(np.array([1.0, 3.0]))[0], [2.0, 6.0])


def test_a_pinned_prepared_call_keeps_its_engine_under_ad_use() -> None:
    seen: list[str] = []

    def f(x: Any) -> Any:
        seen.append(type(x).__module__.partition(".")[0])
        return ad.array_namespace(x).sum(x * x)

    prep = ad.prepare(ad.gradient, f, np.ones(2), backend="torch")
    with ad.use("autograd"):
        (g,) = prep(np.array([1.0, 3.0]))
    np.testing.assert_array_equal(g, [2.0, 6.0])
    assert seen[-1] == "torch"


@pytest.mark.parametrize(
    ("how", "source"),
    [
        ("env", "named by the ADSWITCH_BACKEND environment variable"),
        ("backend", "named by backend='pytorch'"),
        ("use", "named by ad.use('pytorch')"),
    ],
)
def test_unknown_engine_says_where_the_name_came_from(
    how: str, source: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    x = np.ones(2)
    with pytest.raises(ad.AdswitchError) as info:
        if how == "env":
            monkeypatch.setenv("ADSWITCH_BACKEND", "pytorch")
            ad.gradient(_sum_squares, x)
        elif how == "backend":
            ad.gradient(_sum_squares, x, backend="pytorch")
        else:
            with ad.use("pytorch"):
                pass
    text = str(info.value)
    assert f"unknown engine 'pytorch', {source} (did you mean 'torch'?)" in text
    assert ("unset it" in text) == (how == "env")


def test_backends_subcommand_has_a_description(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["backends", "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert "List every adswitch engine found" in out
