"""burn-onnx's plugin module, the entry point ``onnx``: it adds the namespace ``burn.onnx`` (this
package, imported the first time it is touched, so ``import burn`` never imports ``onnx``).

Example:
    >>> import burn
    >>> assert burn.plugins.namespaces()["onnx"] == "onnx"
"""
from __future__ import annotations

__all__ = ["burn_register_namespaces", "burn_plugin_info"]


def burn_register_namespaces(registry):
    """Hook: ``burn.onnx``, imported when first touched.

    Example:
        >>> import burn
        >>> from burn_onnx import plugin
        >>> r = burn.dispatch.Registry()
        >>> plugin.burn_register_namespaces(r)
        >>> assert r.namespaces["onnx"].target == "burn_onnx"
    """
    registry.add_namespace("onnx", "burn_onnx")


def burn_plugin_info():
    """Hook: facts shown by ``burn info``.

    Example:
        >>> from burn_onnx import plugin
        >>> assert plugin.burn_plugin_info()["namespace"] == "burn.onnx"
    """
    return {"namespace": "burn.onnx", "what": "ONNX export (from burn.capture graphs) and import"}
