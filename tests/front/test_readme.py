"""The README's examples run: every ```python block, in order, in one namespace (later
blocks use what earlier ones defined), as a reader would paste them."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_python_blocks_run() -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert blocks, "the README has no python example"
    namespace: dict[str, object] = {"__name__": "readme"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # engines' notices (e.g. jax's fallback warning)
        for i, code in enumerate(blocks):
            exec(compile(code, f"README.md block {i}", "exec"), namespace)
