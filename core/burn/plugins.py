"""Plugin discovery: entry points in group ``burn.plugins``, loaded lazily, called
through one pluggy :data:`plugin_manager`.

``import burn`` imports no plugin. The first device resolution, extension lookup or
``burn.<namespace>`` access calls :func:`ensure_loaded`: core's built-in plugin
(:mod:`burn.builtin`) is registered first, then each entry point is imported and
registered with the plugin manager, and each plugin's hooks are called for that plugin
alone, inside its own try-block: a plugin that fails to import, to validate or to
register is recorded (see :func:`report` and ``burn info``), whatever it had registered
is removed again, and the others keep working. Its error is raised only when the user
asks for what it provides (its backend's devices, its namespace).
Phases: every ``burn_register_backends``, then every ``burn_register_kernels`` and
``burn_register_namespaces`` (so kernel plugins see all backends), then
``burn_plugin_info``. Kernels may be registered as :class:`burn.dispatch.LazyKernel`, so
discovery reads what a plugin provides without importing its kernel modules. See
docs/plugins.md.

``BURN_PLUGINS_DISABLE=name,...`` skips plugins by entry-point name;
``BURN_PLUGIN_AUTOLOAD=0`` skips discovery (register by hand with
:func:`register_plugin`).
"""
from __future__ import annotations

import inspect
import os
import threading
import traceback
import warnings
from dataclasses import dataclass, field

import pluggy

from . import builtin, hookspecs
from .dispatch import registry
from .errors import PluginError

__all__ = ["ensure_loaded", "report", "register_plugin", "register_cli", "PluginRecord", "plugin_manager", "namespaces",
           "namespace", "memory_cleanup"]

GROUP = "burn.plugins"


@dataclass
class PluginRecord:
    """What ``burn info`` shows for one plugin.

    ``status`` is loaded, failed or disabled; a failed plugin's ``error`` says why.

    Example:
        >>> import burn
        >>> flex = [r for r in burn.plugins.report() if r.name == "flex"][0]
        >>> assert flex.status == "loaded" and "flex" in flex.backends
    """
    name: str
    distribution: str = "?"
    version: str = "?"
    module: str = "?"
    status: str = "pending"     # loaded | failed | disabled
    error: str | None = None
    traceback: str | None = None
    backends: list = field(default_factory=list)
    info: dict = field(default_factory=dict)
    missing_module: str | None = None   # a failed import's ModuleNotFoundError.name
    info_collected: bool = False


_lock = threading.RLock()
_loaded = False
_records: dict[str, PluginRecord] = {}


class _PluginManager(pluggy.PluginManager):
    """pluggy's manager, also taking unmarked module functions named after a burn hook
    (as pytest takes ``pytest_*`` functions), so a plugin needs no pluggy import."""

    def parse_hookimpl_opts(self, plugin, name):
        opts = super().parse_hookimpl_opts(plugin, name)
        if opts is None and name in hookspecs.HOOK_NAMES and inspect.isroutine(getattr(plugin, name, None)):
            opts = {"wrapper": False, "hookwrapper": False, "optionalhook": False, "tryfirst": False,
                    "trylast": False, "specname": None}
        return opts


plugin_manager = _PluginManager(hookspecs.PROJECT)
plugin_manager.add_hookspecs(hookspecs)


def _entry_points():
    try:
        from importlib.metadata import entry_points
    except ImportError:  # pragma: no cover
        from importlib_metadata import entry_points
    return list(entry_points(group=GROUP))


def _disabled() -> set:
    return {s.strip() for s in os.environ.get("BURN_PLUGINS_DISABLE", "").split(",") if s.strip()}


_BACKEND_HOOKS = ("burn_register_backends",)
_LATE_HOOKS = ("burn_register_kernels", "burn_register_namespaces")


def _call_hooks(name: str, hooks) -> None:
    """Run some hooks of plugin ``name`` alone, attributing what it registers to it."""
    rec = _records[name]
    before = set(registry.backends)
    prev = registry.current_plugin
    registry.current_plugin = name
    others = [p for n, p in plugin_manager.list_name_plugin() if n != name]
    try:
        for hook in hooks:
            plugin_manager.subset_hook_caller(hook, remove_plugins=others)(registry=registry)
    finally:
        registry.current_plugin = prev
        rec.backends = sorted(set(rec.backends) | (set(registry.backends) - before))


def _collect_info(rec: PluginRecord) -> None:
    # asked for by report(), not at discovery: a plugin's facts may import what it wraps
    rec.info_collected = True
    others = [p for n, p in plugin_manager.list_name_plugin() if n != rec.name]
    try:
        results = plugin_manager.subset_hook_caller("burn_plugin_info", remove_plugins=others)()
        info = {}
        for r in results:
            info.update(r or {})
        rec.info = info
    except Exception as e:  # informational only: never fails the plugin
        rec.info = {"burn_plugin_info failed": f"{type(e).__name__}: {e}"}


def _fail(rec: PluginRecord, stage: str, e: BaseException) -> None:
    rec.status = "failed"
    rec.error = f"{stage}: {type(e).__name__}: {e}"
    rec.missing_module = e.name if isinstance(e, ModuleNotFoundError) else None
    rec.traceback = traceback.format_exc()
    registry.forget_plugin(rec.name)    # a half-registered plugin leaves nothing behind
    if plugin_manager.get_plugin(rec.name) is not None:
        plugin_manager.unregister(name=rec.name)


def _add_to_manager(name: str, module) -> None:
    old = plugin_manager.get_plugin(name)
    if old is not None:                 # registered again by hand (tests): the new module wins
        plugin_manager.unregister(name=name)
    plugin_manager.register(module, name=name)


def register_plugin(name: str, module, *, distribution: str = "?", version: str = "?") -> PluginRecord:
    """Register an already-imported plugin module by hand (used by tests and
    when ``BURN_PLUGIN_AUTOLOAD=0``): all its hooks run now.

    Example:
        >>> import types, burn
        >>> m = types.ModuleType("noop_plugin")
        >>> rec = burn.plugins.register_plugin("noop", m)
        >>> assert rec.status == "loaded"
    """
    with _lock:
        _register_builtin()
        rec = _records[name] = PluginRecord(name, distribution, version, getattr(module, "__name__", "?"))
        try:
            registry.rename_plugin(rec.module.partition(".")[0], name)
            _add_to_manager(name, module)
            _call_hooks(name, _BACKEND_HOOKS + _LATE_HOOKS)
            rec.status = "loaded"
        except Exception as e:
            _fail(rec, "registration failed", e)
        return rec


def _load_entry_point(ep) -> bool:
    """Import one entry point, register it with the manager and run its backend hook."""
    name = ep.name
    dist = getattr(ep, "dist", None)
    rec = _records[name] = PluginRecord(
        name, getattr(dist, "name", "?") if dist else "?", getattr(dist, "version", "?") if dist else "?",
        ep.value)
    if name in _disabled():
        rec.status = "disabled"
        return False
    prev = registry.current_plugin
    registry.current_plugin = name     # decorators run at import are attributed to the plugin
    try:
        module = ep.load()
    except BaseException as e:  # noqa: BLE001 - a plugin must never break import burn
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        _fail(rec, "import failed", e)
        return False
    finally:
        registry.current_plugin = prev
    # the user may have imported the package before discovery, or imports it later (a lazy
    # namespace): either way what it registers is named by the entry point (Registry.owner)
    top = ep.value.partition(":")[0].partition(".")[0]
    registry.package_plugins[top] = name
    registry.rename_plugin(top, name)
    try:
        _add_to_manager(name, module)
        _call_hooks(name, _BACKEND_HOOKS)
    except Exception as e:
        _fail(rec, "registration failed", e)
        return False
    return True


def _register_builtin() -> None:
    if "burn" in _records:
        return
    rec = _records["burn"] = PluginRecord("burn", "burn-core", _core_version(), "burn.builtin")
    _add_to_manager("burn", builtin)
    _call_hooks("burn", _BACKEND_HOOKS + _LATE_HOOKS)
    rec.status = "loaded"


def _core_version() -> str:
    try:
        from importlib.metadata import version
        return version("burn-core")
    except Exception:  # running from a source tree
        return "?"


def ensure_loaded() -> None:
    """Discover and load plugins once (no-op after the first call).

    Core's built-in plugin first; then each entry point is imported and its
    ``burn_register_backends`` called; then every ``burn_register_kernels`` and
    ``burn_register_namespaces``, so a kernel plugin sees every backend.
    Ops call it for you; call it to inspect the registry first.

    Example:
        >>> import burn
        >>> burn.plugins.ensure_loaded()
        >>> assert "flex" in burn.dispatch.registry.backends
    """
    global _loaded
    if _loaded:
        return
    with _lock:
        if _loaded:
            return
        _loaded = True
        _register_builtin()
        if os.environ.get("BURN_PLUGIN_AUTOLOAD", "1") == "0":
            return
        try:
            eps = _entry_points()
        except Exception as e:  # broken metadata must not break burn
            _records["<discovery>"] = PluginRecord("<discovery>", status="failed", error=repr(e))
            return
        seen, loaded = set(), []
        for ep in sorted(eps, key=lambda e: e.name):
            if ep.name in seen:
                continue
            seen.add(ep.name)
            if _load_entry_point(ep):
                loaded.append(ep.name)
        for name in loaded:
            rec = _records[name]
            try:
                _call_hooks(name, _LATE_HOOKS)
            except Exception as e:
                _fail(rec, "registration failed", e)
                continue
            rec.status = "loaded"


def report() -> list[PluginRecord]:
    """Every plugin discovered, with status and error (loads plugins if needed).

    Example:
        >>> import burn
        >>> names = [r.name for r in burn.plugins.report()]
        >>> assert "flex" in names
    """
    ensure_loaded()
    with _lock:
        for rec in _records.values():
            if rec.status == "loaded" and not rec.info_collected and plugin_manager.get_plugin(rec.name) is not None:
                _collect_info(rec)
    return list(_records.values())


def failure_for_backend(kind: str) -> str | None:
    """If a failed or disabled plugin provides backend ``kind``, why it is missing.

    A failed plugin registers nothing, so it is matched by name: the entry
    point is named after the backend, or the distribution is ``burn-<kind>``.
    """
    for rec in _records.values():
        provides = rec.name == kind or rec.distribution.lower() == f"burn-{kind}"
        if not provides:
            continue
        if rec.status == "failed":
            return f"plugin '{rec.name}' failed to load ({rec.error})"
        if rec.status == "disabled":
            return f"plugin '{rec.name}' is disabled by BURN_PLUGINS_DISABLE"
    return None


# which distribution provides each first-party namespace, for "pip install ..." errors
KNOWN_NAMESPACE_PACKAGES = {"linalg": "burn-linalg", "signal": "burn-signal", "fft": "burn-signal",
                            "onnx": "burn-onnx", "remote": "burn-remote", "dist": "burn-dist"}


def namespaces() -> dict:
    """Each ``burn.<name>`` namespace added by a plugin, mapped to that plugin's name.

    Example:
        >>> import burn
        >>> ns = burn.plugins.namespaces()
        >>> assert ns.get("linalg", "linalg") == "linalg"     # burn-linalg adds burn.linalg when installed
    """
    ensure_loaded()
    return {name: e.plugin for name, e in sorted(registry.namespaces.items())}


def namespace(name: str):
    """The object behind ``burn.<name>`` (imported on first use), or AttributeError saying
    why there is none: not installed (and which package adds it), disabled, or failed.

    Example:
        >>> import burn
        >>> try:
        ...     burn.plugins.namespace("no_such_namespace")
        ... except AttributeError as e:
        ...     assert "no_such_namespace" in str(e)
    """
    ensure_loaded()
    entry = registry.namespaces.get(name)
    if entry is not None:
        try:
            return entry.resolve()
        except ImportError as e:
            raise AttributeError(f"burn.{name} (plugin '{entry.plugin}') failed to import: "
                                 f"{type(e).__name__}: {e}") from e
    pkg = KNOWN_NAMESPACE_PACKAGES.get(name)
    for rec in _records.values():
        if pkg is None or rec.distribution.lower() != pkg:
            continue
        if rec.status == "disabled":
            raise AttributeError(f"burn.{name} is disabled: its plugin '{rec.name}' is listed in "
                                 f"BURN_PLUGINS_DISABLE")
        if rec.status == "failed" and (rec.missing_module or "").partition(".")[0] == \
                rec.module.partition(":")[0].partition(".")[0]:
            break       # its entry point is left but its package is gone: not installed
        if rec.status == "failed":
            raise AttributeError(f"burn.{name} is unavailable: its plugin '{rec.name}' failed ({rec.error}); "
                                 f"`burn info` shows the traceback")
    if pkg:
        raise AttributeError(f"burn.{name} is provided by a plugin: pip install {pkg}")
    raise AttributeError(f"module 'burn' has no attribute {name!r} (no installed plugin adds a namespace "
                         f"of that name; `burn info` lists them)")


def memory_cleanup(device) -> None:
    """Call every plugin's ``burn_memory_cleanup(device)`` (``Device.memory_cleanup()`` does,
    before the backend returns its cached memory).

    Example:
        >>> import burn
        >>> burn.plugins.memory_cleanup(burn.Device.flex())
    """
    ensure_loaded()
    plugin_manager.hook.burn_memory_cleanup(device=device)


def register_cli(subparsers) -> dict:
    """Let every loaded plugin add its subcommands to the ``burn`` command (the hook
    ``burn_register_cli``), each in its own try-block: a plugin whose hook fails is named in a
    warning and the others' commands still work. Returns ``{command: plugin}``. A command name
    taken twice raises :class:`burn.PluginError` naming both owners.

    Example:
        >>> import argparse, burn
        >>> sub = argparse.ArgumentParser(prog="burn").add_subparsers(dest="cmd")
        >>> owners = burn.plugins.register_cli(sub)
        >>> assert all(isinstance(p, str) for p in owners.values())
    """
    ensure_loaded()
    owners = {name: "burn" for name in subparsers.choices}
    for name, plugin in plugin_manager.list_name_plugin():
        caller = plugin_manager.subset_hook_caller(
            "burn_register_cli", remove_plugins=[p for n, p in plugin_manager.list_name_plugin() if n != name])
        before = set(subparsers.choices)
        try:
            caller(subparsers=subparsers)
        except Exception as e:
            cmd = next((c for c in owners if f"conflicting subparser: {c}" in str(e)), None)
            if cmd is not None:
                raise PluginError(f"the burn command '{cmd}' is added by both {owners[cmd]!r} and plugin "
                                  f"{name!r}; disable one with BURN_PLUGINS_DISABLE={name}") from e
            warnings.warn(f"plugin {name!r}: burn_register_cli failed ({type(e).__name__}: {e}); its commands "
                          f"are missing", stacklevel=2)
            continue
        for cmd in set(subparsers.choices) - before:
            owners[cmd] = name
    return owners


def _reset_for_tests() -> None:
    """Forget discovery state (tests re-run discovery with other settings)."""
    global _loaded
    with _lock:
        _loaded = False
        _records.clear()
        for name, _ in plugin_manager.list_name_plugin():
            plugin_manager.unregister(name=name)


# dispatch calls discovery lazily and asks why a backend is missing, without importing this module
registry.loader = ensure_loaded
registry.why_missing = failure_for_backend
