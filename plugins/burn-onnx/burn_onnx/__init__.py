"""burn-onnx: ``burn.onnx``, ONNX export of captured burn models and import of ONNX models as
trainable ``burn.nn.Module``s (DESIGN §13).

Installed, it is found through the ``burn.plugins`` entry point ``onnx`` and appears as
``burn.onnx``:

    >>> import burn
    >>> import burn_onnx
    >>> assert burn.onnx is burn_onnx
"""
from __future__ import annotations

from .errors import OnnxExportError, OnnxImportError
from . import export       # the package, callable: burn.onnx.export(model, args, path)
from .export import ExportContext, export_dynamic, export_rule, no_onnx_form

__version__ = "0.1.0"
from .importer import load  # noqa: E402

__all__: list = ["export", "export_dynamic", "export_rule", "no_onnx_form", "ExportContext", "OnnxExportError",
                 "load", "OnnxImportError"]
