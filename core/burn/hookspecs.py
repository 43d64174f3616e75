"""Hook specifications of burn plugins (pluggy), all in one place.

A plugin is a module (or object) named by an entry point in the group
``burn.plugins``. It implements any of these hooks, marked with
``@burn.hookimpl`` (a module-level function named after a hook counts too, so
plain ``def burn_register_kernels(registry): ...`` works), and may also
register at import time (``@ext.kernel("flex")`` decorators). Core registers
its own primitives through the same hooks, as the built-in plugin ``burn``
(:mod:`burn.builtin`). The plugin manager (:data:`burn.plugins.plugin_manager`)
calls each plugin's hooks in its own try-block, so one failing plugin leaves
the others working (see docs/plugins.md).

Order at discovery: every ``burn_register_backends``, then every
``burn_register_kernels`` and ``burn_register_namespaces``, then
``burn_plugin_info``. ``burn_memory_cleanup`` runs on ``Device.memory_cleanup()``,
``burn_register_cli`` when the ``burn`` command builds its parser.
"""
from __future__ import annotations

import pluggy

__all__ = ["PROJECT", "hookspec", "hookimpl", "HOOK_NAMES"]

PROJECT = "burn"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def burn_register_backends(registry):
    """Called once, at discovery. Register backends with
    ``registry.register_backend(name, factory, default_priority=..., accelerator_probe=...)``;
    ``factory()`` is called the first time a device of that kind is used, so it may import heavy
    modules and raise (the error is shown when the user asks for that device). A backend that may
    provide the default device declares it here (``default_priority``; a cheap
    ``accelerator_probe()`` says without starting a driver whether one can be present).
    Returns nothing.

    Example (an implementation, in a plugin module):
        >>> import burn
        >>> from burn.dispatch import Registry
        >>> @burn.hookimpl
        ... def burn_register_backends(registry):
        ...     registry.register_backend("mine", burn.Backend, plugin="mine")
        >>> r = Registry()
        >>> burn_register_backends(r)
        >>> assert "mine" in r.backends
    """


@hookspec
def burn_register_kernels(registry):
    """Called once, after every plugin's backends are registered. Register
    kernels with ``registry.register_kernel(op, backend, fn, priority=0)``
    (for any op and any backend, including ones other plugins define). ``fn``
    may be a :class:`burn.dispatch.LazyKernel` naming a module and a key, so the
    module (and the library it wraps) is imported the first time the kernel runs.
    Returns nothing.

    Example (an implementation, in a plugin module):
        >>> import burn
        >>> from burn.dispatch import Registry
        >>> @burn.hookimpl
        ... def burn_register_kernels(registry):
        ...     registry.register_kernel("mine::double", "flex", lambda x: x * 2, plugin="mine")
        >>> r = Registry()
        >>> burn_register_kernels(r)
        >>> assert r.kernel("mine::double", "flex")(21) == 42
    """


@hookspec
def burn_register_namespaces(registry):
    """Called once, at discovery. Add ``burn.<name>`` namespaces with
    ``registry.add_namespace(name, module)``, where ``module`` is a module or its import
    path (imported the first time ``burn.<name>`` is touched). Two plugins claiming one name
    is an error naming both. Returns nothing.

    Example (an implementation, in a plugin module):
        >>> import burn
        >>> from burn.dispatch import Registry
        >>> @burn.hookimpl
        ... def burn_register_namespaces(registry):
        ...     registry.add_namespace("mine", "json", plugin="mine")
        >>> r = Registry()
        >>> burn_register_namespaces(r)
        >>> assert r.namespaces["mine"].plugin == "mine"
    """


@hookspec
def burn_memory_cleanup(device):
    """Called by ``device.memory_cleanup()`` (a :class:`burn.Device`), before the
    backend returns its cached memory to the system: drop what the plugin caches on
    that device (FFT tables, plans, constants). Returns nothing.

    Example (an implementation, in a plugin module):
        >>> import burn
        >>> tables = {"flex:0": "twiddles"}
        >>> @burn.hookimpl
        ... def burn_memory_cleanup(device):
        ...     tables.pop(str(device), None)
        >>> burn_memory_cleanup(burn.Device.flex())
        >>> assert tables == {}
    """


@hookspec
def burn_plugin_info():
    """Return a dict of extra facts shown by ``burn info`` for this plugin
    (e.g. ``{"devices": ..., "notes": ...}``), or None.

    Example (an implementation, in a plugin module):
        >>> import burn
        >>> @burn.hookimpl
        ... def burn_plugin_info():
        ...     return {"notes": "adds mine::double"}
        >>> assert burn_plugin_info()["notes"].startswith("adds")
    """


@hookspec
def burn_register_cli(subparsers):
    """Called by the ``burn`` command (``burn ...`` / ``python -m burn ...``) while it builds its
    argument parser, never at discovery. Add subcommands with ``subparsers.add_parser(name)``
    (an :mod:`argparse` subparsers object) and give each a handler with
    ``parser.set_defaults(burn_command=fn)``: ``fn(args)`` runs the command and returns the exit
    status. A name core or another plugin uses is an error naming both. Returns nothing.

    Example (an implementation, in a plugin module):
        >>> import argparse, burn
        >>> @burn.hookimpl
        ... def burn_register_cli(subparsers):
        ...     p = subparsers.add_parser("hello", help="say hello")
        ...     p.set_defaults(burn_command=lambda args: 0)
        >>> parser = argparse.ArgumentParser(prog="burn")
        >>> burn_register_cli(parser.add_subparsers(dest="cmd"))
        >>> assert parser.parse_args(["hello"]).burn_command(None) == 0
    """


#: every hook a plugin may implement
HOOK_NAMES = ("burn_register_backends", "burn_register_kernels", "burn_register_namespaces",
              "burn_memory_cleanup", "burn_plugin_info", "burn_register_cli")
