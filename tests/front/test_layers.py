"""The architecture, kept so: imports form layers, never cycles.

Every module's imports are read with ``ast`` -- top-level ones, and those inside
functions, methods and ``if TYPE_CHECKING:`` blocks alike (a cycle that only closes at
call time is still a cycle a reader has to untangle). The rules:

* no import cycle among the modules of ``adswitch/``, nor inside any plugin package
  (``plugins/adswitch_*``, the example engine ``adswitch_dual``), nor inside the
  conformance suite;
* ``adswitch/`` imports no engine and nothing of the suite or the plugins;
* a plugin imports of adswitch only the public package (``adswitch``), the engine
  contract (``adswitch.spec``) and the errors (``adswitch.errors``);
* no plugin defines its own degenerate-spectrum tolerance: where its linear algebra
  reads a dtype's ``eps``, it hands it straight to the kit's ``gap_factor`` /
  ``tolerance`` (``adswitch.linalg_kit``), and no plugin names a ``*ULPS*`` constant.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PLUGIN_ALLOWED = {"adswitch", "adswitch.spec", "adswitch.errors"}
ENGINES = ("torch", "jax", "jaxlib", "autograd")


def _packages() -> dict[str, Path]:
    """Every package whose internal imports must form layers, by import name."""
    found = {"adswitch": ROOT / "adswitch"}
    for folder in sorted((ROOT / "plugins").glob("adswitch_*")):
        found[folder.name] = folder
    found["adswitch_conformance"] = ROOT / "conformance" / "adswitch_conformance"
    found["adswitch_dual"] = ROOT / "examples" / "adswitch-dual" / "adswitch_dual"
    return {name: path for name, path in found.items() if (path / "__init__.py").exists()}


def _module_name(package: str, root: Path, file: Path) -> str:
    parts = [package, *file.relative_to(root).with_suffix("").parts]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(module: str, file: Path, is_package: bool) -> Iterator[tuple[str, int]]:
    """``(imported module, line)`` for every import statement in ``file``; ``from a import
    b`` yields ``a.b`` (a submodule, or a name of ``a``: the caller decides which)."""
    tree = ast.parse(file.read_text(), str(file))
    here = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = here.split(".")
                base_parts = base_parts[: len(base_parts) - (node.level - 1)]
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            yield base, node.lineno
            for alias in node.names:
                yield f"{base}.{alias.name}", node.lineno


def _graph(package: str, root: Path) -> tuple[dict[str, set[str]], dict[str, list[str]]]:
    """The import graph among the package's own modules, and every import (with its
    place) of each module, for the other rules."""
    files = {_module_name(package, root, f): f for f in sorted(root.rglob("*.py"))}
    edges: dict[str, set[str]] = {m: set() for m in files}
    seen: dict[str, list[str]] = {m: [] for m in files}
    for module, file in files.items():
        for target, line in _imports(module, file, file.name == "__init__.py"):
            seen[module].append(f"{target} (line {line})")
            # the longest prefix that is one of the package's modules
            parts = target.split(".")
            for n in range(len(parts), 0, -1):
                candidate = ".".join(parts[:n])
                if candidate in files:
                    if candidate != module and not _is_parent_package(candidate, module):
                        edges[module].add(candidate)
                    break
    return edges, seen


def _is_parent_package(candidate: str, module: str) -> bool:
    # ``from . import x`` names the package first; importing a package's __init__ from
    # inside it is how Python loads submodules, not a layer violation of its own.
    return module.startswith(candidate + ".")


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Every group of modules that import each other in a cycle (the strongly connected
    components of more than one module, Tarjan's algorithm), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return groups


PACKAGES = _packages()


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_no_import_cycle(package: str) -> None:
    edges, _ = _graph(package, PACKAGES[package])
    groups = _cycles(edges)
    assert not groups, f"modules of {package} that import each other in a cycle: " + "; ".join(
        ", ".join(group) for group in groups
    )


def test_front_end_imports_no_engine_no_plugin_no_suite() -> None:
    _, seen = _graph("adswitch", PACKAGES["adswitch"])
    forbidden = (*ENGINES, "adswitch_")
    bad = [
        f"{module}: {target}"
        for module, targets in seen.items()
        for target in targets
        if target.split(".")[0] in ENGINES or target.startswith(forbidden[-1])
    ]
    assert not bad, "adswitch/ imports an engine, a plugin or the suite:\n" + "\n".join(bad)


@pytest.mark.parametrize(
    "package", sorted(p for p in PACKAGES if p not in ("adswitch", "adswitch_conformance"))
)
def test_plugins_use_only_the_contract(package: str) -> None:
    _, seen = _graph(package, PACKAGES[package])
    bad = []
    for module, targets in seen.items():
        for entry in targets:
            target = entry.split(" ")[0]
            if target != "adswitch" and not target.startswith("adswitch."):
                continue
            # ``from adswitch import x`` yields both "adswitch" and "adswitch.x": the
            # public package's names are allowed, its private modules are not.
            if target in PLUGIN_ALLOWED or any(
                target.startswith(a + ".") for a in ("adswitch.spec", "adswitch.errors")
            ):
                continue
            if target.count(".") == 1 and not _is_front_end_module(target):
                continue  # a public name of the package, e.g. adswitch.gradient
            bad.append(f"{module}: {entry}")
    assert not bad, (
        f"{package} imports adswitch internals (only adswitch, adswitch.spec and "
        "adswitch.errors are allowed):\n" + "\n".join(bad)
    )


def _is_front_end_module(dotted: str) -> bool:
    name = dotted.split(".")[1]
    root = PACKAGES["adswitch"]
    return (root / f"{name}.py").exists() or (root / name / "__init__.py").exists()


# What a plugin may do with a dtype's ``eps`` in its linear algebra: pass it to the kit.
KIT_TOLERANCES = {"gap_factor", "tolerance"}


def _own_tolerances(file: Path) -> list[str]:
    """Where ``file`` makes a tolerance of its own: a name with ``ULPS`` assigned, or an
    ``.eps`` read that is not an argument of a kit tolerance function."""
    tree = ast.parse(file.read_text(), str(file))
    allowed: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in KIT_TOLERANCES:
                allowed.update(id(n) for arg in node.args for n in ast.walk(arg))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and "ULPS" in node.id:
            found.append(f"{file.name}:{node.lineno}: defines {node.id}")
        elif isinstance(node, ast.Attribute) and node.attr == "eps" and id(node) not in allowed:
            found.append(f"{file.name}:{node.lineno}: reads .eps outside the kit's tolerance")
    return found


@pytest.mark.parametrize("package", sorted(p for p in PACKAGES if p.startswith("adswitch_")))
def test_no_plugin_defines_its_own_spectrum_tolerance(package: str) -> None:
    root = PACKAGES[package]
    linalg = [f for f in sorted(root.rglob("*.py")) if "linalg" in f.relative_to(root).as_posix()]
    bad = [line for f in linalg for line in _own_tolerances(f)]
    assert not bad, (
        f"{package}'s linear algebra makes its own tolerance; use the kit's "
        "(adswitch.spec.tolerance / gap_factor / close_pairs / beyond_rounding):\n" + "\n".join(bad)
    )


def test_the_tolerance_checker_sees_an_own_tolerance(tmp_path: Path) -> None:
    """The test itself: an own ``sqrt(eps)`` bound and a ``_GAP_ULPS`` are found, an
    ``eps`` handed to ``gap_factor`` is not."""
    own = tmp_path / "own.py"
    own.write_text("_GAP_ULPS = 16\ntol = np.finfo(x.dtype).eps ** 0.5\n")
    assert len(_own_tolerances(own)) == 2
    kit = tmp_path / "kit.py"
    kit.write_text("tol = m * gap_factor(n, torch.finfo(v.dtype).eps)\n")
    assert _own_tolerances(kit) == []


def test_the_checker_sees_cycles_and_function_level_imports(tmp_path: Path) -> None:
    """The test itself: a cycle closed by an import inside a function is found."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "low.py").write_text("def f():\n    from pkg.high import g\n    return g\n")
    (pkg / "high.py").write_text("from . import low\n")
    edges, _ = _graph("pkg", pkg)
    assert _cycles(edges) == [["pkg.high", "pkg.low"]]
    (pkg / "low.py").write_text("X = 1\n")
    edges, _ = _graph("pkg", pkg)
    assert _cycles(edges) == []
