"""The errors of ``burn.onnx``.

Example:
    >>> import burn
    >>> from burn_onnx.errors import OnnxImportError
    >>> assert issubclass(OnnxImportError, burn.BurnError)
"""
from __future__ import annotations

import burn

__all__ = ["OnnxImportError"]


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
