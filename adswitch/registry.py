"""Finding engines: pluggy plugins loaded from the ``adswitch.backends`` entry points.

Plugins are loaded lazily (on the first call that needs an engine, never by ``import
adswitch``) and one by one, so that a broken third-party plugin shows up as
unavailable with its reason instead of breaking the others. Tests build a fresh
:class:`Registry` per test, as pluggy's own tests build a fresh ``PluginManager``.

Environment variables:
    ``ADSWITCH_BACKEND``: the engine used when neither ``backend=`` nor ``ad.use`` says.
    ``ADSWITCH_DISABLE_PLUGINS``: comma-separated entry-point names not to load.
"""

from __future__ import annotations

import difflib
import os
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import pluggy

from adswitch import spec, trees
from adswitch.errors import AdswitchError, BackendUnavailableError
from adswitch.spec import Backend, Capabilities

entry_points: Any = None  # importlib.metadata.entry_points, bound on first load (tests patch it)

__all__ = ["BackendInfo", "Registry", "default_registry", "set_default_registry"]


@dataclass(frozen=True)
class BackendInfo:
    """One engine as listed by :func:`adswitch.backends`.

    Attributes:
        name: the engine's name.
        available: whether it can be used now.
        version: the engine's version, or ``None`` when unavailable.
        reason: why it is unavailable (with the install command), else ``None``.
        capabilities: what the engine declares (``None`` for a plugin that failed to load).
        install_hint: the command that installs it.
    """

    name: str
    available: bool
    version: str | None
    reason: str | None
    capabilities: Capabilities | None
    install_hint: str


class Registry:
    """The engines known to this process, keyed by name."""

    def __init__(self, load_entry_points: bool = True) -> None:
        self.plugin_manager = pluggy.PluginManager(spec.PROJECT)
        self.plugin_manager.add_hookspecs(spec)
        self._backends: dict[str, Backend] = {}
        self._broken: dict[str, str] = {}
        self._versions: dict[str, str | BackendUnavailableError] = {}
        self._module_owner: dict[str, Backend] = {}
        self._owner_of_type: dict[type, Backend | None] = {}
        self._trees_registered: set[str] = set()
        self._barrier: Callable[[], Any] | None = None
        self._load_pending = load_entry_points
        self._lock = threading.RLock()

    # -- loading ---------------------------------------------------------------------
    def _ensure_loaded(self) -> None:
        if self._load_pending:
            with self._lock:
                if self._load_pending:
                    self._load_entry_points()
                    self._load_pending = False

    def _load_entry_points(self) -> None:
        global entry_points
        if entry_points is None:  # imported here: importlib.metadata costs ~15 ms at import
            from importlib.metadata import entry_points
        disabled = {
            n.strip() for n in os.environ.get("ADSWITCH_DISABLE_PLUGINS", "").split(",") if n
        }
        for ep in entry_points(group=spec.ENTRY_POINT_GROUP):
            if ep.name in disabled or ep.name in self._backends:
                continue
            try:
                plugin = ep.load()
                self.register_plugin(plugin, name=ep.name)
            except Exception as exc:  # a broken plugin must not break the others
                self._broken[ep.name] = (
                    f"plugin {ep.value!r} failed to load: {type(exc).__name__}: {exc}"
                )

    def register_plugin(self, plugin: Any, name: str | None = None) -> Backend:
        """Register a pluggy plugin (a module or object implementing ``adswitch_backend``)."""
        self.plugin_manager.register(plugin, name=name)
        impls = [
            impl
            for impl in self.plugin_manager.hook.adswitch_backend.get_hookimpls()
            if impl.plugin is plugin
        ]
        if not impls:
            self.plugin_manager.unregister(plugin)
            raise AdswitchError(f"plugin {name or plugin!r} implements no adswitch_backend hook")
        backend: Backend = cast(Backend, impls[0].function())
        self.add(backend)
        return backend

    def add(self, backend: Backend) -> None:
        """Add an engine object directly (tests, or engines defined at run time)."""
        if not getattr(backend, "name", ""):
            raise AdswitchError(f"backend {backend!r} has no name")
        with self._lock:
            self._backends[backend.name] = backend
            self._broken.pop(backend.name, None)
            self._versions.pop(backend.name, None)
            for module in backend.array_modules:
                self._module_owner[module] = backend
            self._owner_of_type.clear()
            self._barrier = None

    def compiler_barrier(self) -> Callable[[], Any]:
        """The engines' ``compiler_barrier`` hooks as one (``adswitch.compilers``): what
        the first hook that answers returns (a maker of opaque functions), or ``None``."""
        barrier = self._barrier
        if barrier is None:
            self._ensure_loaded()
            with self._lock:
                hooks = tuple(
                    hook
                    for backend in self._backends.values()
                    if (hook := getattr(backend, "compiler_barrier", None)) is not None
                )
                barrier = self._barrier = _combined(hooks)
        return barrier

    # -- queries ---------------------------------------------------------------------
    def names(self) -> list[str]:
        """Every engine found, available or not."""
        self._ensure_loaded()
        return sorted({*self._backends, *self._broken})

    def available(self) -> list[str]:
        """The engines that can be used now (installed and loadable)."""
        found = []
        for name in self.names():
            backend = self._backends.get(name)
            if backend is None:
                continue
            try:
                self.version(backend)
            except BackendUnavailableError:
                continue
            found.append(name)
        return found

    def listing(self) -> str:
        """``"installed engines: 'a', 'b'"`` (and the ones found but not usable)."""
        usable = self.available()
        text = "installed engines: " + (", ".join(repr(n) for n in usable) or "none")
        missing = [n for n in self.names() if n not in usable]
        if missing:
            text += f" (found but not installed: {', '.join(repr(n) for n in missing)})"
        return text

    def version(self, backend: Backend) -> str:
        """The engine's version (cached); raises ``BackendUnavailableError``."""
        cached = self._versions.get(backend.name)
        if cached is None:
            try:
                cached = backend.version()
            except BackendUnavailableError as exc:
                cached = exc
            except Exception as exc:
                cached = BackendUnavailableError(
                    f"engine {backend.name!r} is unavailable: {type(exc).__name__}: {exc}. "
                    f"Install it with: {backend.install_hint}"
                )
                cached.__cause__ = exc
            self._versions[backend.name] = cached
        if isinstance(cached, BackendUnavailableError):
            raise cached
        return cached

    def get(self, name: str, source: str | None = None) -> Backend:
        """The available engine called ``name``, else a clear error; ``source`` says
        where the name came from (``"backend='x'"``, ``"ad.use('x')"``, the environment
        variable), for the message."""
        backend = self._backends.get(name)
        if backend is None:
            self._ensure_loaded()
            backend = self._backends.get(name)
        if backend is None:
            if name in self._broken:
                raise BackendUnavailableError(
                    f"engine {name!r} is unavailable: {self._broken[name]}"
                )
            named = f", named by {source}" if source else ""
            fix = (
                " Set ADSWITCH_BACKEND to one of them, or unset it."
                if source is not None and "ADSWITCH_BACKEND" in source
                else ""
            )
            raise AdswitchError(
                f"unknown engine {name!r}{named}{did_you_mean(name, self.names())}; "
                f"{self.listing()}.{fix} "
                "Third-party engines register under the 'adswitch.backends' entry point."
            )
        self.version(backend)
        return backend

    def infos(self) -> list[BackendInfo]:
        self._ensure_loaded()
        out: list[BackendInfo] = []
        for name in self.names():
            backend = self._backends.get(name)
            if backend is None:
                out.append(BackendInfo(name, False, None, self._broken[name], None, ""))
                continue
            try:
                version: str | None = self.version(backend)
                reason = None
            except BackendUnavailableError as exc:
                version, reason = None, str(exc)
            out.append(
                BackendInfo(
                    name,
                    reason is None,
                    version,
                    reason,
                    backend.capabilities,
                    backend.install_hint,
                )
            )
        return out

    def owner(self, value: Any) -> Backend | None:
        """The engine whose array or traced value ``value`` is (looked up by module)."""
        cls = type(value)
        cached: Backend | None = self._owner_of_type.get(cls, _UNKNOWN)
        if cached is not _UNKNOWN:  # (no ``typing.cast``: a Python call per array_namespace)
            return cached
        found = self._find_owner(value)
        if found is not None or cls.__module__.partition(".")[0] in ("numpy", "builtins"):
            # Only positive answers (and numpy's) are cached: an engine may be added later.
            self._owner_of_type[cls] = found
        return found

    def _find_owner(self, value: Any) -> Backend | None:
        mro = type(value).__mro__[:-1]
        if mro[0].__module__.partition(".")[0] in ("numpy", "builtins"):
            return None
        self._ensure_loaded()
        for cls in mro:  # a user's subclass of an engine's array belongs to that engine
            backend = self._module_owner.get(cls.__module__.partition(".")[0])
            if backend is not None and backend.owns(value):
                return backend
        for candidate in self._backends.values():
            if candidate.owns(value):
                return candidate
        return None

    def register_engine_trees(self, cls: type) -> bool:
        """Tree hook: let the engine owning ``cls``'s module register its containers."""
        registered = False
        for base in cls.__mro__:
            module = base.__module__.partition(".")[0]
            if module in ("builtins", "numpy"):
                continue
            self._ensure_loaded()
            backend = self._module_owner.get(module)
            if backend is not None and backend.name not in self._trees_registered:
                self._trees_registered.add(backend.name)
                backend.register_trees(trees.register_tree)
                registered = True
        if registered:
            return True
        self._ensure_loaded()
        for backend in list(self._backends.values()):
            # Only engines already imported: no class can be registered with another.
            if any(module in sys.modules for module in backend.array_modules):
                node = getattr(backend, "tree_node", _no_tree_node)(cls)
                if node is not None:
                    trees.register_tree(cls, *node)
                    return True
        return False


# Other names users reach for, by the engine they mean.
_ALIASES = {"pytorch": "torch", "jaxlib": "jax", "hips": "autograd", "numpy": "tape"}


def _no_barrier() -> None:
    return None


def _combined(hooks: tuple[Callable[[], Any], ...]) -> Callable[[], Any]:
    if not hooks:
        return _no_barrier
    if len(hooks) == 1:
        return hooks[0]

    def first() -> Any:
        for hook in hooks:
            made = hook()
            if made is not None:
                return made
        return None

    return first


def did_you_mean(name: str, names: list[str]) -> str:
    """``" (did you mean 'torch'?)"`` for a near miss of one of ``names``, else ``""``.

    Example:
        >>> did_you_mean("Torch", ["jax", "tape", "torch"]), did_you_mean("zzz", ["jax"])
        (" (did you mean 'torch'?)", '')
    """
    lowered = name.lower()
    if lowered in names and lowered != name:
        return f" (did you mean {lowered!r}?)"
    alias = _ALIASES.get(lowered)
    if alias in names:
        return f" (did you mean {alias!r}?)"
    close = difflib.get_close_matches(lowered, names, n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _no_tree_node(cls: type) -> None:
    return None  # an engine written before Backend.tree_node existed


_UNKNOWN: Any = object()  # (typed Any: a cache hit is returned as it is)
_default: Registry | None = None
_default_lock = threading.Lock()


def default_registry() -> Registry:
    """The process-wide registry, created (not loaded) on first use."""
    global _default
    if _default is None:
        with _default_lock:
            if _default is None:
                _default = Registry()
    return _default


def set_default_registry(registry: Registry | None) -> Registry | None:
    """Replace the process-wide registry (for tests); returns the previous one."""
    global _default
    previous, _default = _default, registry
    return previous


def _tree_hook(cls: type) -> bool:
    return default_registry().register_engine_trees(cls)


trees.UNKNOWN_TYPE_HOOKS.append(_tree_hook)
