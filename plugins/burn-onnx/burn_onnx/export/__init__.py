"""The export half of burn-onnx: :func:`export`, :func:`export_dynamic`, and the rule table
third parties extend with :func:`export_rule` (see docs/onnx.md and docs/plugins.md).

Example:
    >>> import burn_onnx
    >>> assert callable(burn_onnx.export) and "matmul" in burn_onnx.export.registry.RULES
"""
from __future__ import annotations

import sys
import types

from . import registry
from .api import export, export_dynamic
from .context import ExportContext, Node, Sym, Value
from .registry import COMPLEX, RULES, complex_rule, export_rule, no_onnx_form

__all__ = ["export", "export_dynamic", "export_rule", "no_onnx_form", "complex_rule", "ExportContext", "Node", "Value", "Sym", "COMPLEX",
           "RULES", "registry"]


class _ExportModule(types.ModuleType):
    """``burn_onnx.export`` is this package and the function at once (``burn.onnx.export(...)``)."""

    def __call__(self, *args, **kwargs):
        return export(*args, **kwargs)


sys.modules[__name__].__class__ = _ExportModule
