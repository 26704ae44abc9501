"""A WRONG result's message tells it apart from the reference: every digit, the gap."""

from __future__ import annotations

import numpy as np
from adswitch_conformance.cases import catalogue
from adswitch_conformance.describe import got_expected


def test_values_that_print_alike_in_numpy_are_told_apart() -> None:
    got, expected = np.array([-1.0, 2.0 + 4e-9]), np.array([-1.0, 2.0])
    assert str(got) == str(expected)  # what the report printed before
    text = got_expected(got, expected)
    assert "2.000000004" in text and "largest difference 4e-09 at [1]" in text


def test_the_kink_case_reports_a_wrong_gradient_with_its_digits() -> None:
    case = next(c for c in catalogue() if c.id == "basics.kinks")
    assert case.check is not None
    x = np.asarray(case.make_args()[0], dtype=np.float64)
    smooth = x != 0
    wrong = np.sign(x) + (x > 0) + np.where(smooth, 1e-9, 0.0)
    message = case.check((wrong,), x)
    assert message is not None and "largest difference 1e-09" in message
    assert "1.000000001" in message or "2.000000001" in message
