"""Plugin discovery: entry points in group ``burn.plugins``, loaded lazily.

``import burn`` imports no plugin. The first device resolution or extension
lookup calls :func:`ensure_loaded`, which imports each entry point and calls
its hooks, each inside its own try-block: a plugin that fails to import or to
register is recorded (see :func:`report` and ``burn info``), whatever it had
registered is removed again, and the others keep working. Its error is raised
only when the user asks for what it provides (its backend's devices).
Registration has two phases (every ``burn_register_backends``, then every
``burn_register_kernels``) so kernel plugins see all backends. See
docs/plugins.md.

``BURN_PLUGINS_DISABLE=name,...`` skips plugins by entry-point name;
``BURN_PLUGIN_AUTOLOAD=0`` skips discovery (register by hand with
:func:`register_plugin`).
"""
from __future__ import annotations

import os
import sys
import threading
import traceback
from dataclasses import dataclass, field

import pluggy

from . import hookspecs
from .errors import PluginError

__all__ = ["ensure_loaded", "report", "register_plugin", "PluginRecord", "plugin_manager"]

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


_lock = threading.RLock()
_loaded = False
_records: dict[str, PluginRecord] = {}
plugin_manager = pluggy.PluginManager(hookspecs.PROJECT)
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
_KERNEL_HOOKS = ("burn_register_kernels",)


def _call_hooks(name: str, module, hooks) -> None:
    """Run some of one plugin's hooks, attributing registrations to it."""
    from .dispatch import registry
    rec = _records[name]
    before = set(registry.backends)
    prev = registry.current_plugin
    registry.current_plugin = name
    try:
        for hook in hooks:
            impl = getattr(module, hook, None)
            if impl is not None:
                impl(registry=registry)
    finally:
        registry.current_plugin = prev
        rec.backends = sorted(set(rec.backends) | (set(registry.backends) - before))


def _collect_info(rec: PluginRecord, module) -> None:
    info = getattr(module, "burn_plugin_info", None)
    if info is None:
        return
    try:
        rec.info = dict(info() or {})
    except Exception as e:  # informational only: never fails the plugin
        rec.info = {"burn_plugin_info failed": f"{type(e).__name__}: {e}"}


def _fail(rec: PluginRecord, stage: str, e: BaseException) -> None:
    from .dispatch import registry
    rec.status = "failed"
    rec.error = f"{stage}: {type(e).__name__}: {e}"
    rec.traceback = traceback.format_exc()
    registry.forget_plugin(rec.name)    # a half-registered plugin leaves nothing behind


def _call_registration(name: str, module) -> None:
    _call_hooks(name, module, _BACKEND_HOOKS + _KERNEL_HOOKS)
    _collect_info(_records[name], module)


def register_plugin(name: str, module, *, distribution: str = "?", version: str = "?") -> PluginRecord:
    """Register an already-imported plugin module by hand (used by tests and
    when ``BURN_PLUGIN_AUTOLOAD=0``).

    Example:
        >>> import types, burn
        >>> m = types.ModuleType("noop_plugin")
        >>> rec = burn.plugins.register_plugin("noop", m)
        >>> assert rec.status == "loaded"
    """
    with _lock:
        rec = _records[name] = PluginRecord(name, distribution, version, getattr(module, "__name__", "?"))
        from .dispatch import registry
        try:
            registry.rename_plugin(rec.module.partition(".")[0], name)
            _call_registration(name, module)
            plugin_manager.register(module, name=name) if plugin_manager.get_plugin(name) is None else None
            rec.status = "loaded"
        except Exception as e:
            _fail(rec, "registration failed", e)
        return rec


def _load_entry_point(ep):
    """Import one entry point and run its backend hook; the module, or None."""
    from .dispatch import registry
    name = ep.name
    dist = getattr(ep, "dist", None)
    rec = _records[name] = PluginRecord(
        name, getattr(dist, "name", "?") if dist else "?", getattr(dist, "version", "?") if dist else "?",
        ep.value)
    if name in _disabled():
        rec.status = "disabled"
        return None
    prev = registry.current_plugin
    registry.current_plugin = name     # decorators run at import are attributed to the plugin
    try:
        module = ep.load()
    except BaseException as e:  # noqa: BLE001 - a plugin must never break import burn
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        _fail(rec, "import failed", e)
        return None
    finally:
        registry.current_plugin = prev
    # the user may have imported the package before discovery (see Registry.owner)
    registry.rename_plugin(ep.value.partition(":")[0].partition(".")[0], name)
    try:
        _call_hooks(name, module, _BACKEND_HOOKS)
    except Exception as e:
        _fail(rec, "registration failed", e)
        return None
    return module


def ensure_loaded() -> None:
    """Discover and load plugins once (no-op after the first call).

    Two phases, so a kernel plugin sees every backend: import each plugin and
    call its ``burn_register_backends``, then every ``burn_register_kernels``.
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
        if os.environ.get("BURN_PLUGIN_AUTOLOAD", "1") == "0":
            return
        try:
            eps = _entry_points()
        except Exception as e:  # broken metadata must not break burn
            _records["<discovery>"] = PluginRecord("<discovery>", status="failed", error=repr(e))
            return
        seen = set()
        modules = []
        for ep in sorted(eps, key=lambda e: e.name):
            if ep.name in seen:
                continue
            seen.add(ep.name)
            module = _load_entry_point(ep)
            if module is not None:
                modules.append((ep.name, module))
        for name, module in modules:
            rec = _records[name]
            try:
                _call_hooks(name, module, _KERNEL_HOOKS)
            except Exception as e:
                _fail(rec, "registration failed", e)
                continue
            _collect_info(rec, module)
            rec.status = "loaded"


def report() -> list[PluginRecord]:
    """Every plugin discovered, with status and error (loads plugins if needed).

    Example:
        >>> import burn
        >>> names = [r.name for r in burn.plugins.report()]
        >>> assert "flex" in names
    """
    ensure_loaded()
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


def _reset_for_tests() -> None:
    """Forget discovery state (tests re-run discovery with other settings)."""
    global _loaded
    with _lock:
        _loaded = False
        _records.clear()
