"""burn-onnx: ``burn.onnx``, ONNX export of captured burn models and import of ONNX models as
trainable ``burn.nn.Module``s (DESIGN §13).

Installed, it is found through the ``burn.plugins`` entry point ``onnx`` and appears as
``burn.onnx``:

    >>> import burn
    >>> import burn_onnx
    >>> assert burn.onnx is burn_onnx
"""
from __future__ import annotations

from burn.library import lazy_exports

__version__ = "0.1.0"
# imported on first use (burn.library.lazy_exports): discovery imports this package, and onnx
# takes about a second to import
__getattr__ = lazy_exports(__name__, {
    "export": "export",   # the package, callable: burn.onnx.export(model, args, path)
    "ExportContext": "export", "export_dynamic": "export", "export_rule": "export", "no_onnx_form": "export",
    "OnnxExportError": "errors", "OnnxImportError": "errors", "load": "importer"})

__all__: list = ["export", "export_dynamic", "export_rule", "no_onnx_form", "ExportContext", "OnnxExportError",
                 "load", "OnnxImportError"]
