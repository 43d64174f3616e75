"""Core's built-in plugin, named ``burn``: core registers its own ops through the same
hooks every plugin implements (pluggy's way: the host is a plugin of itself).

It is registered with the plugin manager before any entry point is loaded, so its
primitives are in the registry when kernel plugins register theirs.

Example:
    >>> import burn
    >>> rec = [r for r in burn.plugins.report() if r.name == "burn"][0]
    >>> assert rec.status == "loaded" and "add" in burn.dispatch.registry.ops
"""
from __future__ import annotations

from .hookspecs import hookimpl
from .primitives import PRIMITIVES

__all__ = ["burn_register_kernels", "burn_plugin_info"]


@hookimpl
def burn_register_kernels(registry):
    """Register every primitive core declares (``burn.primitives.PRIMITIVES``). Core ships no
    kernels: each backend plugin registers one per primitive.

    Example:
        >>> from burn.dispatch import Registry
        >>> from burn import builtin
        >>> r = Registry()
        >>> builtin.burn_register_kernels(r)
        >>> assert r.ops["matmul"].kind == "matmul"
    """
    for p in PRIMITIVES.values():
        registry.register_op(p)


@hookimpl
def burn_plugin_info():
    """What ``burn info`` shows for core.

    Example:
        >>> from burn import builtin
        >>> assert "primitives" in builtin.burn_plugin_info()
    """
    return {"primitives": f"{len(PRIMITIVES)} (kernels come from the backend plugins)"}
