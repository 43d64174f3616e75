"""burn-dist's plugin module, the entry point ``dist``: it adds the namespace ``burn.dist`` (this
package, imported the first time it is touched).

Example:
    >>> import burn
    >>> assert burn.plugins.namespaces()["dist"] == "dist"
"""
from __future__ import annotations

__all__ = ["burn_register_namespaces", "burn_plugin_info"]


def burn_register_namespaces(registry):
    """Hook: ``burn.dist``, imported when first touched.

    Example:
        >>> import burn
        >>> from burn_dist import plugin
        >>> r = burn.dispatch.Registry()
        >>> plugin.burn_register_namespaces(r)
        >>> assert r.namespaces["dist"].target == "burn_dist"
    """
    registry.add_namespace("dist", "burn_dist")


def burn_plugin_info():
    """Hook: facts shown by ``burn info``.

    Example:
        >>> from burn_dist import plugin
        >>> assert plugin.burn_plugin_info()["namespace"] == "burn.dist"
    """
    return {"namespace": "burn.dist", "what": "data-parallel training on MPI (mpi4py) and NCCL (CuPy)"}
