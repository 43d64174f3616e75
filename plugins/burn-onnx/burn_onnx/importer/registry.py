"""The import rule table: one entry per ONNX operator ``burn.onnx.load`` runs.

A rule is a *builder*: given the node (its attributes) and its inputs as they are known
when a plan is made for one input signature (constants as numpy arrays, run-time values
as burn tensors with their shapes), it returns ``run(*inputs)``, the burn computation the
plan replays. Inputs listed in ``static`` must be constants at plan time (shapes, axes,
pads...): the builder reads them, ``run`` ignores them. Inputs in ``buffers`` are
initializers that are state but not trained (BatchNormalization's running statistics).

Example:
    >>> from burn_onnx.importer.registry import OPS, supported_ops
    >>> assert "Conv" in supported_ops() and 1 in OPS["Reshape"].static
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import OnnxImportError

__all__ = ["Rule", "OPS", "META", "rule", "supported_ops", "Node"]


@dataclass(frozen=True)
class Rule:
    """One operator's builder and the roles of its inputs."""

    op: str
    build: object
    static: frozenset = frozenset()
    buffers: frozenset = frozenset()
    note: str = ""


OPS: dict = {}
# ops whose output is a constant computed from an input's shape when the plan is made
META: dict = {}


def rule(*ops, static=(), buffers=(), note=""):
    """Register ``fn`` as the builder of ``ops`` (each op once).

    Example:
        >>> from burn_onnx.importer.registry import OPS
        >>> assert OPS["Relu"].op == "Relu"
    """
    def deco(fn):
        for op in ops:
            if op in OPS:
                raise ValueError(f"burn.onnx: import rule for {op} registered twice")
            OPS[op] = Rule(op, fn, frozenset(static), frozenset(buffers), note)
        return fn
    return deco


def supported_ops() -> list:
    """The ONNX operators (default domain) that ``burn.onnx.load`` supports, sorted.

    Example:
        >>> import burn_onnx
        >>> assert "MatMul" in burn_onnx.importer.supported_ops()
    """
    from . import ops_elementwise, ops_shape, ops_nn  # noqa: F401  (fill the table)
    return sorted(op for op in OPS if "." not in op)     # "burn.Linear" is the importer's own


class Node:
    """An ONNX node as the importer sees it: op, name, input/output names, parsed attributes.

    Example:
        >>> import onnx
        >>> from burn_onnx.importer.registry import Node
        >>> n = Node(onnx.helper.make_node("Softmax", ["x"], ["y"], axis=1), opset=18)
        >>> assert n.attr("axis", -1) == 1 and n.op == "Softmax"
    """

    __slots__ = ("op", "domain", "name", "inputs", "outputs", "attrs", "opset", "proto")

    def __init__(self, proto, opset: int):
        from onnx import helper, numpy_helper
        self.op, self.domain = proto.op_type, proto.domain
        self.name = proto.name or f"{proto.op_type}->{proto.output[0] if proto.output else '?'}"
        self.inputs, self.outputs = list(proto.input), list(proto.output)
        self.opset, self.proto = opset, proto
        self.attrs = {}
        for a in proto.attribute:
            if a.type in (a.GRAPH, a.GRAPHS):
                self.attrs[a.name] = None      # subgraph ops (If/Loop/Scan) are not in the table
                continue
            v = helper.get_attribute_value(a)
            if isinstance(v, bytes):
                v = v.decode()
            elif a.type == a.TENSOR:
                v = numpy_helper.to_array(v)
            elif isinstance(v, list) and v and isinstance(v[0], bytes):
                v = [s.decode() for s in v]
            self.attrs[a.name] = v

    def attr(self, key, default=None):
        """The attribute ``key`` (python value), or ``default`` when absent."""
        return self.attrs.get(key, default)

    def fail(self, what: str) -> OnnxImportError:
        """An OnnxImportError naming this node and its op."""
        return OnnxImportError(f"burn.onnx.load: node {self.name!r} ({self.op}): {what}")

    def ints(self, arr, what) -> list:
        """A constant integer input as a list of python ints (error if not an integer array)."""
        a = np.asarray(arr)
        if a.dtype.kind not in "iu":
            raise self.fail(f"{what} must be an integer tensor, got {a.dtype}")
        return [int(v) for v in a.reshape(-1)]
