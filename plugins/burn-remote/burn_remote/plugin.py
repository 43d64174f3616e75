"""burn-remote's plugin module, the entry point ``remote``: it adds the namespace ``burn.remote`` (this
package, imported the first time it is touched).

Example:
    >>> import burn
    >>> assert burn.plugins.namespaces()["remote"] == "remote"
"""
from __future__ import annotations

__all__ = ["burn_register_namespaces", "burn_plugin_info"]


def burn_register_namespaces(registry):
    """Hook: ``burn.remote``, imported when first touched.

    Example:
        >>> import burn
        >>> from burn_remote import plugin
        >>> r = burn.dispatch.Registry()
        >>> plugin.burn_register_namespaces(r)
        >>> assert r.namespaces["remote"].target == "burn_remote"
    """
    registry.add_namespace("remote", "burn_remote")


def burn_plugin_info():
    """Hook: facts shown by ``burn info``.

    Example:
        >>> from burn_remote import plugin
        >>> assert plugin.burn_plugin_info()["namespace"] == "burn.remote"
    """
    return {"namespace": "burn.remote", "what": "remote devices over Iroh (authenticated, encrypted), with graphs sent once and replayed by id"}
