"""The import half of ``burn.onnx``: :func:`load` turns an ONNX model into a trainable
:class:`burn.nn.Module` (:class:`OnnxModel`).

Layout: :mod:`.api` (reading and validation), :mod:`.structure` and :mod:`.module` (which
initializers become layers, parameters, buffers), :mod:`.plan` (per-signature plans),
:mod:`.folding` (constant folding), :mod:`.registry` and the rule modules ``ops_*``.

Example:
    >>> from burn_onnx import importer
    >>> assert "Gemm" in importer.supported_ops()
"""
from __future__ import annotations

from .api import load
from .module import OnnxModel
from .registry import supported_ops

__all__ = ["load", "OnnxModel", "supported_ops"]
