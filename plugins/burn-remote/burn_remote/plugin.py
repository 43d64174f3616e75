"""burn-remote's plugin module, the entry point ``remote``: the backend ``remote`` (devices
``remote:N``), the namespace ``burn.remote`` and the command ``burn remote``.

Example:
    >>> import burn
    >>> assert burn.plugins.namespaces()["remote"] == "remote"
    >>> assert "remote" in burn.dispatch.registry.backends
"""
from __future__ import annotations

__all__ = ["burn_register_backends", "burn_register_namespaces", "burn_register_cli", "burn_plugin_info"]


def burn_register_backends(registry):
    """Hook: the backend ``remote`` (built on first use; never the default device).

    Example:
        >>> import burn
        >>> from burn_remote import plugin
        >>> r = burn.dispatch.Registry()
        >>> plugin.burn_register_backends(r)
        >>> assert r.backends["remote"].default_priority == 0
    """
    from .backend import backend
    registry.register_backend("remote", backend, accelerator_probe=lambda: False)


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


def burn_register_cli(subparsers):
    """Hook: ``burn remote serve|id`` (see :mod:`burn_remote.cli`).

    Example:
        >>> import argparse
        >>> from burn_remote import plugin
        >>> sub = argparse.ArgumentParser(prog="burn").add_subparsers(dest="cmd")
        >>> plugin.burn_register_cli(sub)
        >>> assert "remote" in sub.choices
    """
    from .cli import add_commands
    add_commands(subparsers)


def burn_plugin_info():
    """Hook: facts shown by ``burn info`` (the devices and servers themselves are listed under
    the backend ``remote``).

    Example:
        >>> from burn_remote import plugin
        >>> assert plugin.burn_plugin_info()["namespace"] == "burn.remote"
    """
    import iroh
    return {"namespace": "burn.remote", "transport": f"iroh {getattr(iroh, '__version__', '1.2')} (QUIC, "
            f"authenticated by endpoint id, encrypted)",
            "what": "remote devices over Iroh, with graphs sent once and replayed by id"}
