"""Dispatch: the registry that maps (op, backend) to a kernel.

Backends and kernels arrive from plugins (see :mod:`burn.plugins`). Two
kernels for the same (op, backend) are resolved by declared priority; equal
priorities from different plugins are an error at registration that names
both. Lookups are cached, so the per-op cost of dispatch is one dict get.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Callable

from .backend import requested_num_threads
from .errors import PluginError, backend_unavailable as unavailable

__all__ = ["Registry", "registry", "KernelEntry", "LazyKernel", "NamespaceEntry"]


# (module, table function) -> the dict it built: a backend's kernel table is built once
_BUILT_TABLES: dict = {}


@dataclass(frozen=True)
class LazyKernel:
    """A kernel named by where it lives, imported the first time it is looked up.

    ``module`` is imported and the kernel is ``module.<table>[key]`` (``table=None``: the
    attribute ``module.<key>``; a callable ``table`` is called once and its dict kept, for a
    backend's ``all_kernels()``). Register one wherever a kernel function goes, so discovery
    does not import the module, nor what it wraps (scipy.signal, pyopencl...). If the module
    has a ``HOST_FALLBACK`` set holding ``key``, the kernel is listed as a host fallback.

    Example:
        >>> from burn.dispatch import LazyKernel, Registry
        >>> r = Registry()
        >>> r.register_kernel("doc::sqrt", "flex", LazyKernel("math", "sqrt", table=None), plugin="doc")
        >>> assert r.kernel("doc::sqrt", "flex")(9.0) == 3.0
    """
    module: str
    key: str
    table: str | None = "KERNELS"

    def load(self):
        """Import the module and return ``(kernel, is_host_fallback)``.

        Example:
            >>> from burn.dispatch import LazyKernel
            >>> fn, host = LazyKernel("math", "floor", table=None).load()
            >>> assert fn(2.5) == 2 and host is False
        """
        mod = importlib.import_module(self.module)
        if self.table is None:
            return getattr(mod, self.key), False
        table = getattr(mod, self.table)
        if callable(table):
            built = _BUILT_TABLES.get((self.module, self.table))
            if built is None:
                built = _BUILT_TABLES[(self.module, self.table)] = table()
            table = built
        return table[self.key], self.key in getattr(mod, "HOST_FALLBACK", ())

    def __repr__(self):
        where = self.key if self.table is None else f"{self.table}[{self.key!r}]"
        return f"LazyKernel({self.module}:{where})"


@dataclass
class NamespaceEntry:
    """A ``burn.<name>`` namespace and the plugin that adds it; ``target`` is a module or
    ``"package.module"`` / ``"package.module:attribute"``, imported on first use.

    Example:
        >>> from burn.dispatch import NamespaceEntry
        >>> e = NamespaceEntry("doc_json", "json", plugin="doc")
        >>> import json
        >>> assert e.resolve() is json
    """
    name: str
    target: object
    plugin: str = "burn"

    def resolve(self):
        """The namespace object (imports it the first time).

        Example:
            >>> from burn.dispatch import NamespaceEntry
            >>> import os.path
            >>> assert NamespaceEntry("doc_join", "os.path:join").resolve() is os.path.join
        """
        if isinstance(self.target, str):
            modname, _, attr = self.target.partition(":")
            mod = importlib.import_module(modname)
            self.target = getattr(mod, attr) if attr else mod
        return self.target


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
    fn: Callable                   # or a LazyKernel until first looked up
    priority: int = 0
    plugin: str = "burn"
    host_fallback: bool = False    # runs on host memory: listed as such by `burn info`

    def resolve(self) -> Callable:
        """The kernel function, importing a :class:`LazyKernel` the first time.

        A module that fails to import raises :class:`burn.PluginError` naming the op, the
        backend and the plugin (only now: the user asked for that kernel).

        Example:
            >>> from burn.dispatch import KernelEntry, LazyKernel
            >>> e = KernelEntry("doc::fabs", "flex", LazyKernel("math", "fabs", table=None))
            >>> assert e.resolve()(-2.0) == 2.0 and not isinstance(e.fn, LazyKernel)
        """
        fn = self.fn
        if isinstance(fn, LazyKernel):
            try:
                fn, host = fn.load()
            except Exception as e:
                raise PluginError(f"the kernel of op '{self.op}' on backend '{self.backend}' (plugin "
                                  f"'{self.plugin}', {fn!r}) failed to load: {type(e).__name__}: {e}") from e
            self.fn, self.host_fallback = fn, self.host_fallback or host
        return fn


@dataclass
class BackendEntry:
    name: str
    factory: Callable              # () -> Backend, called on first use
    plugin: str = "burn"
    instance: object = None
    error: BaseException | None = None
    default_priority: int = 0      # Device.default() tries accelerators in decreasing priority
    accelerator_probe: Callable | None = None   # () -> bool, cheap: False = no accelerator can be here


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
    namespaces: dict = field(default_factory=dict)     # name -> NamespaceEntry (burn.<name>)
    _winner: dict = field(default_factory=dict)        # (op, backend) -> fn cache
    current_plugin: str = "burn"                       # who is registering right now
    loader: Callable | None = None                     # discovery (burn.plugins.ensure_loaded), set by it
    why_missing: Callable | None = None                # kind -> why its plugin failed/is disabled, or None
    package_plugins: dict = field(default_factory=dict)  # top-level package -> its entry point's name
    _listeners: list = field(default_factory=list)     # fn() called when kernels change (on_invalidate)
    _resolved: dict = field(default_factory=dict)      # (kind, index) -> Backend

    # -- registration ---------------------------------------------------------
    def register_backend(self, name: str, factory, *, plugin: str | None = None,
                         default_priority: int = 0, accelerator_probe: Callable | None = None) -> None:
        """Make backend ``name`` available; ``factory()`` builds it on first use.

        Call it from the ``burn_register_backends`` hook. A name taken by
        another plugin raises :class:`PluginError`. ``Device.default()`` asks
        backends for an accelerator in decreasing ``default_priority`` (burn-cuda
        declares 20, burn-wgpu 10); ``accelerator_probe()``, if given, must answer
        cheaply (no driver started, no heavy import) whether an accelerator can be
        present at all: when it says False the backend is not started by ``default()``.

        Example:
            >>> import burn
            >>> from burn.dispatch import Registry
            >>> r = Registry()
            >>> r.register_backend("mine", burn.Backend, plugin="mine", default_priority=5,
            ...                    accelerator_probe=lambda: False)
            >>> assert r.backends["mine"].plugin == "mine" and r.backends["mine"].default_priority == 5
        """
        plugin = plugin or self.current_plugin
        old = self.backends.get(name)
        if old is not None and old.plugin != plugin:
            raise PluginError(
                f"backend '{name}' is registered by both plugin '{old.plugin}' and plugin "
                f"'{plugin}'; disable one with BURN_PLUGINS_DISABLE={plugin}")
        if accelerator_probe is not None and not callable(accelerator_probe):
            raise PluginError(f"register_backend('{name}'): accelerator_probe must be a callable () -> bool, "
                              f"got {accelerator_probe!r}")
        self.backends[name] = BackendEntry(name, factory, plugin, default_priority=int(default_priority),
                                           accelerator_probe=accelerator_probe)

    def add_namespace(self, name: str, module, *, plugin: str | None = None) -> None:
        """Add ``burn.<name>``: ``module`` is a module or its import path (``"pkg.mod"`` or
        ``"pkg.mod:attr"``), imported the first time ``burn.<name>`` is touched.

        Call it from the ``burn_register_namespaces`` hook. A name another plugin claimed,
        or one of burn's own attributes, raises :class:`PluginError` naming both owners.

        Example:
            >>> from burn.dispatch import Registry
            >>> r = Registry()
            >>> r.add_namespace("doc_json", "json", plugin="a")
            >>> try:
            ...     r.add_namespace("doc_json", "pickle", plugin="b")
            ... except Exception as e:
            ...     assert "'a' and plugin 'b'" in str(e)
        """
        plugin = plugin or self.current_plugin
        if not isinstance(name, str) or not name.isidentifier() or name.startswith("_"):
            raise PluginError(f"add_namespace: the name must be a public identifier (burn.<name>), got {name!r} "
                              f"from plugin '{plugin}'")
        if not isinstance(module, str) and not hasattr(module, "__dict__"):
            raise PluginError(f"add_namespace('{name}'): expected a module or an import path, got {module!r}")
        old = self.namespaces.get(name)
        if old is not None and old.plugin != plugin:
            raise PluginError(
                f"namespace burn.{name} is claimed by both plugin '{old.plugin}' and plugin '{plugin}'; "
                f"disable one with BURN_PLUGINS_DISABLE={plugin}")
        self.namespaces[name] = NamespaceEntry(name, module, plugin)

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
        # cached plans and compiled groups (burn.fusion, a layer above) hold kernel
        # functions: a new winner (e.g. a plugin loaded after some work ran) must not
        # be shadowed by them, so whoever caches kernels subscribes with on_invalidate
        if key is None:
            self._winner.clear()
        else:
            self._winner.pop(key, None)
        for fn in self._listeners:
            fn()

    def on_invalidate(self, fn: Callable[[], None]) -> Callable[[], None]:
        """Have ``fn()`` called whenever kernels change (a registration, a plugin forgotten
        or renamed): a layer that caches kernel functions drops its caches there.

        Example:
            >>> from burn.dispatch import Registry
            >>> r, seen = Registry(), []
            >>> _ = r.on_invalidate(lambda: seen.append("cleared"))
            >>> r.register_kernel("doc::op", "flex", abs, plugin="a")
            >>> assert seen == ["cleared"]
        """
        if fn not in self._listeners:
            self._listeners.append(fn)
        return fn

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
        for n in [n for n, e in self.namespaces.items() if e.plugin == name]:
            del self.namespaces[n]
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
        where = fn.module if isinstance(fn, LazyKernel) else getattr(fn, "__module__", None)
        top = (where or "burn").partition(".")[0]
        return "burn" if top in ("burn", "builtins", "__main__") else self.package_plugins.get(top, top)

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
        for n in self.namespaces.values():
            if n.plugin == old:
                n.plugin = new

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
        fn = entries[0].resolve() if entries else None
        if fn is not None:
            self._winner[(op, backend)] = fn
        return fn

    def resolve_all(self) -> None:
        """Import every lazily registered kernel (``burn info`` does, to list host fallbacks).

        Example:
            >>> from burn.dispatch import LazyKernel, Registry
            >>> r = Registry()
            >>> r.register_kernel("doc::ceil", "flex", LazyKernel("math", "ceil", table=None), plugin="doc")
            >>> r.resolve_all()
            >>> assert not isinstance(r.kernel_entries("doc::ceil", "flex")[0].fn, LazyKernel)
        """
        for entries in list(self.kernels.values()):
            for e in entries:
                e.resolve()

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

    def ensure_loaded(self) -> None:
        """Run plugin discovery once (the :attr:`loader` ``burn.plugins`` installs).

        Example:
            >>> from burn.dispatch import registry
            >>> registry.ensure_loaded()
            >>> assert "flex" in registry.backends
        """
        if self.loader is not None:
            self.loader()

    def backend_names(self) -> list[str]:
        """Names of the registered backends (loading plugins first).

        Example:
            >>> from burn.dispatch import registry
            >>> assert "flex" in registry.backend_names()
        """
        self.ensure_loaded()
        return list(self.backends)

    def accelerator_preference(self) -> list[str]:
        """Backend names to try for ``Device.default()``, highest declared
        ``default_priority`` first (ties: in registration order); never flex, burn's CPU fallback.

        Example:
            >>> from burn.dispatch import registry
            >>> assert "flex" not in registry.accelerator_preference()
        """
        names = [n for n in self.backend_names() if n != "flex"]
        return sorted(names, key=lambda n: -self.backends[n].default_priority)

    def may_have_accelerator(self, name: str) -> bool:
        """What backend ``name``'s ``accelerator_probe`` says (True without a probe); a probe
        that raises counts as True, so the backend itself is asked and reports the error.

        Example:
            >>> from burn.dispatch import Registry
            >>> r = Registry()
            >>> r.register_backend("nogpu", object, plugin="doc", accelerator_probe=lambda: False)
            >>> assert r.may_have_accelerator("nogpu") is False
        """
        entry = self.backends.get(name)
        if entry is None:
            return False
        if entry.accelerator_probe is None:
            return True
        try:
            return bool(entry.accelerator_probe())
        except Exception:  # let the backend itself say what is wrong
            return True

    def try_backend(self, name: str):
        """The backend instance, or None if it is missing or failed to start.

        Example:
            >>> import burn
            >>> from burn.dispatch import registry
            >>> assert isinstance(registry.try_backend("flex"), burn.Backend)
            >>> assert registry.try_backend("nosuch") is None
        """
        self.ensure_loaded()
        entry = self.backends.get(name)
        if entry is None:
            return None
        if entry.instance is None and entry.error is None:
            try:
                inst = entry.factory()
                n = requested_num_threads()
                if n is not None:      # burn.set_num_threads ran before this backend started
                    inst.set_num_threads(n)
                entry.instance = inst
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
        be = self.try_backend(device.kind)
        if be is None:
            entry = self.backends.get(device.kind)
            if entry is not None and entry.error is not None:
                raise unavailable(device.kind, f"{type(entry.error).__name__}: {entry.error}") from entry.error
            failure = self.why_missing(device.kind) if self.why_missing is not None else None
            if failure:
                raise unavailable(device.kind, failure)
            raise unavailable(device.kind)
        reason = be.unavailable_reason(device.index)
        if reason:
            raise unavailable(f"{device.kind}:{device.index}", reason)
        self._resolved[(device.kind, device.index)] = be
        return be


registry = Registry()
