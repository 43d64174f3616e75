"""Hook specifications of burn plugins (pluggy), all in one place.

A plugin is a module (or object) named by an entry point in the group
``burn.plugins``. It may register things at import time (e.g. with
``@ext.kernel("flex")`` decorators) or implement any of these hooks with
``@burn.hookimpl``. Core registers its own defaults through the same hooks.
"""
from __future__ import annotations

import pluggy

PROJECT = "burn"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def burn_register_backends(registry):
    """Called once, at discovery. Register backends with
    ``registry.register_backend(name, factory)``; ``factory()`` is called the
    first time a device of that kind is used, so it may import heavy modules
    and raise (the error is shown when the user asks for that device).
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
    (for any op and any backend, including ones other plugins define).
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
