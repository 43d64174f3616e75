"""Constant folding: a node whose inputs are all constants is computed with numpy when the
plan is made (or at load, for nodes that depend on no input at all).

The common shape-arithmetic ops have a numpy rule here; any other op of the default domain
is evaluated by ``onnx.reference`` (the ONNX reference implementation), one node at a time.

Example:
    >>> import numpy as np, onnx
    >>> from burn_onnx.importer.folding import fold
    >>> from burn_onnx.importer.registry import Node
    >>> n = Node(onnx.helper.make_node("Unsqueeze", ["a", "ax"], ["b"]), opset=18)
    >>> out, = fold(n, [np.array([3, 4]), np.array([0])])
    >>> assert out.tolist() == [[3, 4]]
"""
from __future__ import annotations

import numpy as np

from .registry import Node

__all__ = ["fold", "constant_value"]


def constant_value(node: Node) -> np.ndarray:
    """The tensor of a ``Constant`` node (any of its value attributes)."""
    a = node.attrs
    if "value" in a:
        return np.asarray(a["value"])
    for key, dtype in (("value_float", np.float32), ("value_floats", np.float32), ("value_int", np.int64),
                       ("value_ints", np.int64)):
        if key in a:
            return np.asarray(a[key], dtype=dtype)
    if "value_string" in a or "value_strings" in a:
        return np.asarray(a.get("value_string", a.get("value_strings")), dtype=object)
    raise node.fail("a Constant without a value attribute")


def _unsqueeze(node, x, axes=None):
    axes = node.attr("axes") if axes is None else axes.tolist()
    nd = x.ndim + len(axes)
    return np.expand_dims(x, tuple(sorted(a % nd for a in axes)))


def _squeeze(node, x, axes=None):
    axes = node.attr("axes") if axes is None else axes.tolist()
    return np.squeeze(x, axis=None if axes is None else tuple(a % x.ndim for a in axes))


def _cast(node, x):
    from onnx import helper
    return x.astype(helper.tensor_dtype_to_np_dtype(int(node.attr("to"))))


def _div(node, a, b):
    if a.dtype.kind in "iu":
        return np.trunc(a / b).astype(a.dtype)
    return (a / b).astype(np.result_type(a, b))


def _gather(node, x, i):
    axis = node.attr("axis", 0) % x.ndim
    return np.take(x, np.where(i < 0, i + x.shape[axis], i), axis=axis)


def _concat(node, *xs):
    return np.concatenate(xs, axis=node.attr("axis"))


def _constant_of_shape(node, shape):
    v = node.attr("value", np.zeros(1, dtype=np.float32))
    return np.full(tuple(int(s) for s in shape), np.asarray(v).reshape(-1)[0], dtype=np.asarray(v).dtype)


_FAST = {
    "Constant": lambda node: constant_value(node),
    "Identity": lambda node, x: x,
    "Cast": _cast,
    "Unsqueeze": _unsqueeze,
    "Squeeze": _squeeze,
    "Concat": _concat,
    "Gather": _gather,
    "Add": lambda node, a, b: np.add(a, b, dtype=np.result_type(a, b)),
    "Sub": lambda node, a, b: np.subtract(a, b, dtype=np.result_type(a, b)),
    "Mul": lambda node, a, b: np.multiply(a, b, dtype=np.result_type(a, b)),
    "Div": _div,
    "Equal": lambda node, a, b: np.equal(a, b),
    "Where": lambda node, c, a, b: np.where(c, a, b),
    "ConstantOfShape": _constant_of_shape,
    "Shape": lambda node, x: np.array(x.shape[slice(node.attr("start", 0), node.attr("end", x.ndim))],
                                      dtype=np.int64),
}


def fold(node: Node, inputs: list) -> list:
    """The outputs of ``node`` (numpy arrays) for constant ``inputs`` (None for a missing one).

    Example:
        >>> import numpy as np, onnx
        >>> from burn_onnx.importer.registry import Node
        >>> n = Node(onnx.helper.make_node("Range", ["a", "b", "c"], ["r"]), opset=18)
        >>> assert fold(n, [np.array(0), np.array(3), np.array(1)])[0].tolist() == [0, 1, 2]
    """
    fast = _FAST.get(node.op)
    if fast is not None and node.domain in ("", "ai.onnx") and len(node.outputs) == 1:
        with np.errstate(all="ignore"):
            return [np.asarray(fast(node, *inputs))]
    return _reference(node, inputs)


def _reference(node, inputs):
    from onnx import helper
    from onnx.reference import ReferenceEvaluator
    names = [f"i{k}" if v is not None else "" for k, v in enumerate(inputs)]
    proto = type(node.proto)()
    proto.CopyFrom(node.proto)
    del proto.input[:], proto.output[:]
    proto.input.extend(names)
    proto.output.extend(f"o{k}" for k in range(len(node.outputs)))
    graph = helper.make_graph([proto], "fold", [helper.make_tensor_value_info(n, 0, None) for n in names if n],
                              [helper.make_tensor_value_info(f"o{k}", 0, None) for k in range(len(node.outputs))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid(node.domain, node.opset)])
    try:
        outs = ReferenceEvaluator(model).run(None, {n: v for n, v in zip(names, inputs) if n})
    except Exception as e:
        raise node.fail(f"constant folding failed: {type(e).__name__}: {e}") from e
    return [np.asarray(o) for o in outs]
