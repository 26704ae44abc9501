"""Which lines of the tape's own code read only the shape or dtype of a traced value.

``raw(t)`` hands out a tracer's concrete value. While a prepared call is recorded for
replay, every ``raw`` of one of its tracers is reported (``core.node.raw``) with the
caller's line: a read of the *value* means the trace may take another path when the
values change (a comparison, a ``bool``, a mask computed in numpy), so the call is not
replayed; a read of the shape or dtype (``np.shape(raw(x))``, ``raw(x).dtype``) is fine,
as shapes and dtypes are fixed for a prepared call. This module tells the two apart by
reading the source: a line is metadata-only when every ``raw(...)`` on it is the argument
of ``shape``/``ndim``/``size``/``result_type``/``iscomplexobj``/``isinstance``/``type``/
``len`` or has ``.shape``/``.dtype``/``.ndim``/``.size`` taken. Anything else -- a line not
found, code outside the tape, source that cannot be read -- counts as a value read, so a
new function in the namespace that reads values is never replayed by mistake.
"""

from __future__ import annotations

import ast
import threading
from pathlib import Path

__all__ = ["metadata_only"]

# the tape's package (this module sits in its replay/ layer): all its own code
_PACKAGE = Path(__file__).resolve().parent.parent
_META_ATTRIBUTES = frozenset(("shape", "dtype", "ndim", "size", "itemsize"))
_META_CALLS = frozenset(
    ("shape", "ndim", "size", "result_type", "iscomplexobj", "isrealobj", "isinstance", "type")
)
_lines: dict[str, frozenset[int]] = {}
_lock = threading.Lock()


def metadata_only(filename: str, line: int) -> bool:
    """Whether the ``raw`` calls on ``line`` of ``filename`` read only shapes or dtypes."""
    lines = _lines.get(filename)
    if lines is None:
        lines = _scan(filename)
        with _lock:
            _lines[filename] = lines
    return line in lines


def _scan(filename: str) -> frozenset[int]:
    path = Path(filename)
    try:
        if _PACKAGE not in path.resolve().parents:
            return frozenset()
        tree = ast.parse(path.read_text(), filename)
    except (OSError, SyntaxError, ValueError):
        return frozenset()
    parents: dict[ast.AST, ast.AST] = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[child] = node
    good: set[int] = set()
    bad: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _name(node.func) == "raw":
            (good if _metadata_use(node, parents) else bad).add(node.lineno)
    return frozenset(good - bad)


def _name(func: ast.AST) -> str:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def _metadata_use(call: ast.Call, parents: dict[ast.AST, ast.AST]) -> bool:
    node: ast.AST = call
    parent = parents.get(node)
    # through ``*(raw(a) for a in arrays)`` and ``[raw(a), raw(b)]`` to what takes them
    while isinstance(parent, (ast.GeneratorExp, ast.ListComp, ast.Starred, ast.Tuple, ast.List)):
        if isinstance(parent, (ast.GeneratorExp, ast.ListComp)) and node is not parent.elt:
            return False  # raw() in a comprehension's condition or iterable
        node, parent = parent, parents.get(parent)
    if isinstance(parent, ast.Attribute):
        return node is parent.value and parent.attr in _META_ATTRIBUTES
    if isinstance(parent, ast.Call):
        return node in parent.args and _name(parent.func) in _META_CALLS | {"len"}
    return False
