"""The conformance catalogue on both torch modes: every case passes, or is unsupported
as declared (the documented AdswitchError for a capability the engine lacks). The
references are the suite's own (finite differences, closed forms)."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from adswitch_conformance.cases import catalogue
from adswitch_conformance.runner import PASS, UNSUPPORTED, WRONG, run_case
from adswitch_torch import TorchBackend

# Numpy operands in traced expressions: torch refuses `ndarray * tensor` for tensors
# that require grad, so both modes raise UnsupportedError with the xp.asarray fix.
ALWAYS_UNSUPPORTED = {"basics.numpy_constants"}

# Wrong numbers torch gives, kept strict (every WRONG must be listed, every listed case
# WRONG): none. The linalg family's degenerate points, where torch's own rules are
# silently wrong, take adswitch_torch.linalg's rules through xp.linalg.
KNOWN_WRONG: dict[str, str] = {}


@pytest.mark.parametrize("copy_saved", [False, True], ids=["default", "copy_saved"])
def test_catalogue(copy_saved: bool) -> None:
    backend = TorchBackend(copy_saved=copy_saved) if copy_saved else "torch"
    caps = TorchBackend(copy_saved=copy_saved).capabilities
    records = [run_case(case, backend, caps=caps) for case in catalogue()]
    bad = [
        f"{r.case}: {r.outcome}: {r.message}"
        for r in records
        if r.outcome not in (PASS, UNSUPPORTED) and r.case not in KNOWN_WRONG
    ]
    assert not bad, "\n".join(bad)
    assert {r.case for r in records if r.outcome == WRONG} == set(KNOWN_WRONG)
    unsupported = {r.case for r in records if r.outcome == UNSUPPORTED}
    if copy_saved:
        assert unsupported == ALWAYS_UNSUPPORTED
    else:
        # Only mutation cases (declared missing) and numpy operands.
        assert all(
            c.startswith("mutation.") or (c.startswith("operators.") and c.endswith("_mutation"))
            for c in unsupported - ALWAYS_UNSUPPORTED
        )
    assert sum(r.outcome == PASS for r in records) >= 90
