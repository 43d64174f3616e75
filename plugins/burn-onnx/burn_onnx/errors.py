"""The errors burn-onnx raises: subclasses of :class:`burn.BurnError`, so ``except
burn.BurnError`` catches them too.

Example:
    >>> import burn
    >>> from burn_onnx.errors import OnnxExportError, OnnxImportError
    >>> assert issubclass(OnnxExportError, burn.BurnError) and issubclass(OnnxImportError, burn.BurnError)
"""
from __future__ import annotations

import burn

__all__ = ["OnnxExportError", "OnnxImportError"]


class OnnxExportError(burn.BurnError):
    """Export could not write a faithful ONNX file: an op with no ONNX form at the requested
    opset, a shape that cannot follow a dynamic axis, bad arguments. Raised at the
    :func:`burn.onnx.export` call, before anything is written; the message names the op,
    the opset and what to do.

    Example:
        >>> import burn
        >>> from burn_onnx.errors import OnnxExportError
        >>> try:
        ...     raise OnnxExportError("burn.onnx.export: op 'nextafter' has no ONNX form at opset 18")
        ... except burn.BurnError as e:
        ...     assert "nextafter" in str(e)
    """


class OnnxImportError(burn.BurnError):
    """An ONNX file that ``burn.onnx.load`` cannot turn into a Module: unreadable, malformed,
    truncated, or using operators (or attributes) it does not support. The message names the
    file, the node(s) and what to do.

    Example:
        >>> import burn
        >>> from burn_onnx.errors import OnnxImportError
        >>> try:
        ...     raise OnnxImportError("model.onnx: unsupported operators: Foo x2")
        ... except burn.BurnError as e:
        ...     assert "Foo x2" in str(e)
    """
