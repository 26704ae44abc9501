"""What the suite's optional parts need, said as the fix when it is missing."""

from __future__ import annotations

__all__ = ["FUZZ_EXTRA", "missing_hypothesis"]

FUZZ_EXTRA = 'pip install "adswitch[fuzz]"'


def missing_hypothesis(error: ModuleNotFoundError) -> ModuleNotFoundError:
    """The error to raise when the fuzzer's hypothesis is not installed.

    Example:
        >>> print(missing_hypothesis(ModuleNotFoundError("No module named 'hypothesis'")))
        adswitch's fuzzer (adswitch_conformance.fuzz) needs hypothesis, which is not installed. Fix: pip install "adswitch[fuzz]" (or pip install hypothesis).
    """  # noqa: E501
    missing = ModuleNotFoundError(
        "adswitch's fuzzer (adswitch_conformance.fuzz) needs hypothesis, which is not "
        f"installed. Fix: {FUZZ_EXTRA} (or pip install hypothesis).",
        name="hypothesis",
    )
    missing.__cause__ = error
    return missing
