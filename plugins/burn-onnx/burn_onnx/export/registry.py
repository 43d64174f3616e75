"""The table of export rules: burn op name -> how it becomes ONNX.

Core's primitives and extension ops get their rules from ``rules_*.py``; a third-party
package declares a rule for its own extension op with :func:`export_rule` (see
docs/plugins.md). An extension op with no rule exports through its reference definition.

Example:
    >>> from burn_onnx.export.registry import RULES, export_rule
    >>> assert "matmul" in RULES and RULES["matmul"].onnx
"""
from __future__ import annotations

from typing import Callable, NamedTuple

__all__ = ["Rule", "RULES", "COMPLEX", "export_rule", "complex_rule", "no_onnx_form", "rule_for"]


class Rule(NamedTuple):
    """One table entry: the rule function (None: the op has no ONNX form), the ONNX ops it
    emits (for the docs' table), the lowest opset it needs, a note, and whether it is
    supported at all."""
    fn: Callable | None
    onnx: str
    min_opset: int
    note: str
    supported: bool


#: op name -> Rule
RULES: dict = {}
#: op name -> rule for nodes with complex inputs or outputs (complex values travel as real
#: tensors with a trailing axis of 2: real and imaginary parts)
COMPLEX: dict = {}


def complex_rule(op: str):
    """Declare the rule of ``op`` for complex operands: its complex inputs arrive, and its
    complex outputs leave, as real ONNX tensors with a trailing axis of 2 (real, imaginary).
    A graph input or output cannot be complex (onnxruntime runs no complex ops): take
    ``burn.real``/``burn.imag``/``burn.abs`` inside the function.

    Example:
        >>> from burn_onnx.export.registry import COMPLEX
        >>> assert "mul" in COMPLEX and "signal::rfft" in COMPLEX
    """
    def deco(fn):
        COMPLEX[op] = fn
        return fn
    return deco


def export_rule(op: str, *, onnx: str = "", min_opset: int = 17, note: str = "", replace: bool = False):
    """Declare how burn op ``op`` (a primitive or an extension op, e.g. ``"mylib::fused_gelu"``)
    is written to ONNX: decorate ``rule(ctx, node)``, which emits ONNX nodes through
    ``ctx`` (:class:`burn_onnx.export.ExportContext`) and returns one value name per output
    of the op. ``onnx`` names the ONNX ops it emits (shown in docs/onnx.md's table),
    ``min_opset`` the lowest opset it supports (below it the export fails naming both).
    Declaring a second rule for one op raises unless ``replace=True``.

    Example:
        >>> import burn, burn_onnx
        >>> @burn.backend_extension("doc::onnx_twice")
        ... def twice(x):
        ...     return x * 2
        >>> @burn_onnx.export_rule("doc::onnx_twice", onnx="Add")
        ... def _(ctx, node):
        ...     x = node.args[0].name
        ...     return ctx.op("Add", x, x)
        >>> assert burn_onnx.export.registry.RULES["doc::onnx_twice"].onnx == "Add"
    """
    def deco(fn):
        if op in RULES and not replace:
            raise ValueError(f"burn_onnx.export_rule: op {op!r} has a rule already; pass replace=True "
                             f"to override it")
        RULES[op] = Rule(fn, onnx, min_opset, note, True)
        return fn
    return deco


def no_onnx_form(op: str, why: str) -> None:
    """Record that ``op`` has no ONNX form (export raises OnnxExportError saying ``why``).

    Example:
        >>> from burn_onnx.export.registry import RULES, no_onnx_form
        >>> no_onnx_form("doc::no_form", "it reads a file")
        >>> assert not RULES["doc::no_form"].supported
    """
    RULES[op] = Rule(None, "", 0, why, False)


def rule_for(op: str):
    """The Rule of ``op``, or None (an extension op then exports through its reference)."""
    return RULES.get(op)
