"""Dispatch: the registry that maps (op, backend) to a kernel.

Backends and kernels arrive from plugins (see :mod:`burn.plugins`). Two
kernels for the same (op, backend) are resolved by declared priority; equal
priorities from different plugins are an error at registration that names
both. Lookups are cached, so the per-op cost of dispatch is one dict get.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from .errors import PluginError

__all__ = ["Registry", "registry", "KernelEntry"]


@dataclass
class KernelEntry:
    """One registered kernel: which op, backend and plugin, and its priority.

    Example:
        >>> import burn
        >>> from burn.dispatch import registry
        >>> burn.plugins.ensure_loaded()       # plugins register lazily
        >>> [entry] = registry.kernel_entries("add", "flex")[:1]
        >>> assert entry.op == "add" and entry.backend == "flex" and callable(entry.fn)
    """
    op: str
    backend: str
    fn: Callable
    priority: int = 0
    plugin: str = "burn"
    host_fallback: bool = False    # runs on host memory: listed as such by `burn info`


@dataclass
class BackendEntry:
    name: str
    factory: Callable              # () -> Backend, called on first use
    plugin: str = "burn"
    instance: object = None
    error: BaseException | None = None


@dataclass
class Registry:
    """The process-wide registry of backends, ops and kernels.

    Example:
        >>> import burn
        >>> from burn.dispatch import registry
        >>> burn.plugins.ensure_loaded()       # plugins register lazily
        >>> assert registry.kernel("add", "flex") is not None
    """

    backends: dict = field(default_factory=dict)       # name -> BackendEntry
    kernels: dict = field(default_factory=dict)        # (op, backend) -> [KernelEntry]
    ops: dict = field(default_factory=dict)            # name -> Primitive / Extension
    _winner: dict = field(default_factory=dict)        # (op, backend) -> fn cache
    current_plugin: str = "burn"                       # who is registering right now
    _resolved: dict = field(default_factory=dict)      # (kind, index) -> Backend

    # -- registration ---------------------------------------------------------
    def register_backend(self, name: str, factory, *, plugin: str | None = None) -> None:
        """Make backend ``name`` available; ``factory()`` builds it on first use.

        Call it from the ``burn_register_backends`` hook. A name taken by
        another plugin raises :class:`PluginError`.

        Example:
            >>> import burn
            >>> from burn.dispatch import Registry
            >>> r = Registry()
            >>> r.register_backend("mine", burn.Backend, plugin="mine")
            >>> assert r.backends["mine"].plugin == "mine"
        """
        plugin = plugin or self.current_plugin
        old = self.backends.get(name)
        if old is not None and old.plugin != plugin:
            raise PluginError(
                f"backend '{name}' is registered by both plugin '{old.plugin}' and plugin "
                f"'{plugin}'; disable one with BURN_PLUGINS_DISABLE={plugin}")
        self.backends[name] = BackendEntry(name, factory, plugin)

    def register_kernel(self, op: str, backend: str, fn: Callable, *, priority: int = 0,
                        plugin: str | None = None, host_fallback: bool = False) -> None:
        """Register ``fn`` as the kernel of ``op`` on ``backend``.

        Example:
            >>> from burn.dispatch import Registry
            >>> r = Registry()
            >>> r.register_kernel("my::op", "flex", lambda x: x, plugin="a")
            >>> r.register_kernel("my::op", "flex", lambda x: x + 1, plugin="b", priority=1)
            >>> assert r.kernel("my::op", "flex")(1) == 2
        """
        plugin = self.owner(fn, plugin)
        entries = self.kernels.setdefault((op, backend), [])
        for e in entries:
            if e.priority == priority and e.plugin != plugin:
                raise PluginError(
                    f"kernel tie for op '{op}' on backend '{backend}': plugins '{e.plugin}' and "
                    f"'{plugin}' both declare priority {priority}; give one a higher priority "
                    f"or disable one with BURN_PLUGINS_DISABLE")
        entries[:] = [e for e in entries if not (e.plugin == plugin and e.priority == priority)]
        entries.append(KernelEntry(op, backend, fn, priority, plugin, host_fallback))
        entries.sort(key=lambda e: -e.priority)
        self._invalidate((op, backend))

    def _invalidate(self, key=None) -> None:
        # cached plans and compiled groups hold kernel functions: a new winner
        # (e.g. a plugin loaded after some work ran) must not be shadowed by them
        if key is None:
            self._winner.clear()
        else:
            self._winner.pop(key, None)
        from . import fusion
        fusion.clear_plan_cache()

    def forget_plugin(self, name: str) -> None:
        """Remove every kernel, backend and op registered by plugin ``name``
        (a plugin whose registration failed half-way leaves nothing behind).

        Example:
            >>> from burn.dispatch import Registry
            >>> r = Registry()
            >>> r.register_kernel("doc::op", "flex", abs, plugin="broken")
            >>> r.forget_plugin("broken")
            >>> assert r.kernel("doc::op", "flex") is None
        """
        for key in list(self.kernels):
            entries = [e for e in self.kernels[key] if e.plugin != name]
            if entries:
                self.kernels[key] = entries
            else:
                del self.kernels[key]
        for b in [b for b, e in self.backends.items() if e.plugin == name]:
            del self.backends[b]
        for o in [o for o, op in self.ops.items() if getattr(op, "plugin", None) == name]:
            del self.ops[o]
        self._resolved.clear()
        self._invalidate()

    def owner(self, fn, plugin: str | None = None) -> str:
        """Who registers ``fn``: ``plugin`` if given, else the plugin being loaded.

        Outside discovery (a user imported a plugin's package before burn loaded
        plugins, so its decorators ran early) it is the top-level package of
        ``fn``; discovery then renames it to the entry point name
        (:meth:`rename_plugin`), so ``burn info`` and tie errors name the plugin.

        Example:
            >>> from burn.dispatch import Registry
            >>> r = Registry()
            >>> assert r.owner(abs, "mine") == "mine" and r.owner(abs) == "burn"
        """
        if plugin:
            return plugin
        if self.current_plugin != "burn":
            return self.current_plugin
        top = (getattr(fn, "__module__", None) or "burn").partition(".")[0]
        return "burn" if top in ("burn", "builtins", "__main__") else top

    def rename_plugin(self, old: str, new: str) -> None:
        """Attribute everything registered under ``old`` to ``new``.

        Example:
            >>> from burn.dispatch import Registry
            >>> r = Registry()
            >>> r.register_kernel("doc::op", "flex", abs, plugin="pkg_name")
            >>> r.rename_plugin("pkg_name", "entry_point_name")
            >>> assert r.kernel_entries("doc::op", "flex")[0].plugin == "entry_point_name"
        """
        if old == new or old in ("burn", "?"):
            return
        for entries in self.kernels.values():
            if not any(e.plugin == old for e in entries):
                continue
            for e in entries:
                if e.plugin == old:
                    e.plugin = new
            # registered both early (import) and by a hook: keep the later one
            keep = {}
            for e in entries:
                keep[(e.plugin, e.priority)] = e
            entries[:] = sorted(keep.values(), key=lambda e: -e.priority)
        self._invalidate()
        for op in self.ops.values():
            if getattr(op, "plugin", None) == old:
                op.plugin = new
        for b in self.backends.values():
            if b.plugin == old:
                b.plugin = new

    def register_op(self, op) -> None:
        """Declare a primitive or extension op by its unique name.

        ``burn.backend_extension`` calls it; a second, different op of the same
        name raises :class:`PluginError`.

        Example:
            >>> from types import SimpleNamespace
            >>> from burn.dispatch import Registry
            >>> r = Registry()
            >>> op = SimpleNamespace(name="doc::op")
            >>> r.register_op(op)
            >>> assert r.ops["doc::op"] is op
        """
        old = self.ops.get(op.name)
        if old is not None and old is not op:
            raise PluginError(f"op '{op.name}' is already defined (by {getattr(old, 'plugin', 'burn')}); "
                              f"op names are unique, use a 'namespace::name' of your own")
        self.ops[op.name] = op

    # -- lookup ---------------------------------------------------------------
    def kernel(self, op: str, backend: str):
        """The winning kernel of ``op`` on ``backend``, or None.

        Example:
            >>> import burn
            >>> from burn.dispatch import registry
            >>> burn.plugins.ensure_loaded()       # plugins register lazily
            >>> assert callable(registry.kernel("add", "flex"))
            >>> assert registry.kernel("no::such_op", "flex") is None
        """
        try:
            return self._winner[(op, backend)]
        except KeyError:
            pass
        entries = self.kernels.get((op, backend))
        fn = entries[0].fn if entries else None
        if fn is not None:
            self._winner[(op, backend)] = fn
        return fn

    def kernel_entries(self, op: str, backend: str) -> list[KernelEntry]:
        """Every kernel registered for ``op`` on ``backend``, winner first.

        Example:
            >>> from burn.dispatch import Registry
            >>> r = Registry()
            >>> r.register_kernel("doc::op", "flex", abs, plugin="a")
            >>> r.register_kernel("doc::op", "flex", round, plugin="b", priority=5)
            >>> assert [e.plugin for e in r.kernel_entries("doc::op", "flex")] == ["b", "a"]
        """
        return list(self.kernels.get((op, backend), ()))

    def backend_names(self) -> list[str]:
        """Names of the registered backends (loading plugins first).

        Example:
            >>> from burn.dispatch import registry
            >>> assert "flex" in registry.backend_names()
        """
        from . import plugins
        plugins.ensure_loaded()
        return list(self.backends)

    def accelerator_preference(self) -> list[str]:
        """Backend names to try for ``Device.default()``: cuda, wgpu, then others; never flex.

        Example:
            >>> from burn.dispatch import registry
            >>> assert "flex" not in registry.accelerator_preference()
        """
        names = self.backend_names()
        first = [n for n in ("cuda", "wgpu") if n in names]
        return first + [n for n in names if n not in first and n != "flex"]

    def try_backend(self, name: str):
        """The backend instance, or None if it is missing or failed to start.

        Example:
            >>> import burn
            >>> from burn.dispatch import registry
            >>> assert isinstance(registry.try_backend("flex"), burn.Backend)
            >>> assert registry.try_backend("nosuch") is None
        """
        from . import plugins
        plugins.ensure_loaded()
        entry = self.backends.get(name)
        if entry is None:
            return None
        if entry.instance is None and entry.error is None:
            try:
                entry.instance = entry.factory()
            except Exception as e:  # isolated: reported when the device is used
                entry.error = e
        return entry.instance

    def backend_for(self, device):
        """The backend serving ``device``, or raise BackendUnavailable.

        Example:
            >>> import burn
            >>> from burn.dispatch import registry
            >>> assert registry.backend_for(burn.Device.flex()).name == "flex"
        """
        be = self._resolved.get((device.kind, device.index))
        if be is not None:
            return be
        from .device import unavailable
        from . import plugins
        be = self.try_backend(device.kind)
        if be is None:
            entry = self.backends.get(device.kind)
            if entry is not None and entry.error is not None:
                raise unavailable(device.kind, f"{type(entry.error).__name__}: {entry.error}") from entry.error
            failure = plugins.failure_for_backend(device.kind)
            if failure:
                raise unavailable(device.kind, failure)
            raise unavailable(device.kind)
        reason = be.unavailable_reason(device.index)
        if reason:
            raise unavailable(f"{device.kind}:{device.index}", reason)
        self._resolved[(device.kind, device.index)] = be
        return be


registry = Registry()
