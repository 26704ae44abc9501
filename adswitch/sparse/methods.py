"""The sparsity tracer's methods and operators (``x.T``, ``x[i]``, ``x + y``...), attached
to :class:`~adswitch.sparse.tracer.Tracer` here, above the rules they call -- so the
tracer module stays below its rules and namespace (no import cycle), as the tape's
``methods`` completes its tracer.
"""

from __future__ import annotations

from typing import Any

from adswitch.sparse import rules, rules_structure
from adswitch.sparse.namespace import NAMESPACE
from adswitch.sparse.tracer import Tracer

__all__: list[str] = []


def _T(self: Tracer) -> Any:
    return rules_structure.permute_dims(self, tuple(reversed(range(self.ndim))))


def _mT(self: Tracer) -> Any:
    return rules_structure.matrix_transpose(self)


def _array_namespace(self: Tracer, api_version: str | None = None) -> Any:
    return NAMESPACE


def _getitem(self: Tracer, key: Any) -> Tracer:
    return rules_structure.getitem(self, key)


def _setitem(self: Tracer, key: Any, value: Any) -> None:
    rules_structure.setitem(self, key, value)


def _binary(name: str, reflected: bool = False) -> Any:
    def op(self: Tracer, other: Any) -> Any:
        a, b = (other, self) if reflected else (self, other)
        return rules.BINARY[name](a, b)

    op.__name__ = f"__{'r' if reflected else ''}{name}__"
    return op


def _unary(name: str) -> Any:
    def op(self: Tracer) -> Any:
        return rules.UNARY[name](self)

    return op


_METHODS: dict[str, Any] = {
    "T": property(_T),
    "mT": property(_mT),
    "__array_namespace__": _array_namespace,
    "__getitem__": _getitem,
    "__setitem__": _setitem,
}
for _attr, _value in _METHODS.items():
    setattr(Tracer, _attr, _value)

for _name in ("add", "sub", "mul", "truediv", "pow", "matmul", "floordiv", "mod"):
    setattr(Tracer, f"__{_name}__", _binary(_name))
    setattr(Tracer, f"__r{_name}__", _binary(_name, reflected=True))
for _name in ("lt", "le", "gt", "ge", "eq", "ne"):
    setattr(Tracer, f"__{_name}__", _binary(_name))
for _name in ("and", "or", "xor"):
    setattr(Tracer, f"__{_name}__", _binary(_name))
    setattr(Tracer, f"__r{_name}__", _binary(_name, reflected=True))
for _dunder, _name in (
    ("neg", "negative"),
    ("pos", "positive"),
    ("abs", "abs"),
    ("invert", "logical_not"),
):
    setattr(Tracer, f"__{_dunder}__", _unary(_name))
Tracer.__hash__ = object.__hash__  # type: ignore[method-assign]
