"""``burn.onnx.load``: read, validate and import an ONNX model as a :class:`burn.nn.Module`.

Everything that can be wrong with a file is found here, before anything runs: unreadable or
truncated protobuf, operators the importer lacks (all listed at once, with counts), graphs
``onnx.checker`` rejects, names used before they are defined, unsupported element types.

Example:
    >>> import burn_onnx
    >>> assert burn_onnx.load is burn_onnx.importer.api.load
"""
from __future__ import annotations

import os
from collections import Counter

import numpy as np

import burn

from ..errors import OnnxImportError
from .folding import fold
from .plan import NEVER_FOLDED
from .registry import OPS, Node, supported_ops, walk
from .structure import build_model

__all__ = ["load", "MIN_OPSET", "MAX_OPSET"]

MIN_OPSET = 7
MAX_OPSET = 26          # what the rules were written and tested against (torch emits 13-20)


def _read(path):
    import onnx
    from google.protobuf.message import DecodeError
    if isinstance(path, onnx.ModelProto):
        return path, "<ModelProto>"
    if isinstance(path, (bytes, bytearray)):
        src, data = "<bytes>", bytes(path)
    else:
        src = os.fspath(path)
        try:
            with open(src, "rb") as f:
                data = f.read()
        except OSError as e:
            raise OnnxImportError(f"burn.onnx.load: cannot read {src!r}: {e}") from e
    if not data:
        raise OnnxImportError(f"burn.onnx.load: {src!r} is empty, not an ONNX model")
    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except (DecodeError, RuntimeError, ValueError) as e:
        raise OnnxImportError(f"burn.onnx.load: {src!r} is not a readable ONNX model (protobuf decoding "
                              f"failed: {e}); the file is truncated, corrupted or not ONNX") from e
    if not model.HasField("graph"):
        raise OnnxImportError(f"burn.onnx.load: {src!r} holds no graph; the file is truncated or not ONNX")
    if src != "<bytes>" and any(t.data_location == onnx.TensorProto.EXTERNAL for t in model.graph.initializer):
        try:
            from onnx.external_data_helper import load_external_data_for_model
            load_external_data_for_model(model, os.path.dirname(os.path.abspath(src)))
        except Exception as e:
            raise OnnxImportError(f"burn.onnx.load: {src!r}: its external weight data cannot be read: {e}") from e
    return model, src


def _opset(model, src):
    versions = {o.domain: o.version for o in model.opset_import}
    v = versions.get("", versions.get("ai.onnx"))
    if v is None:
        raise OnnxImportError(f"burn.onnx.load: {src!r} imports no opset of the default ONNX domain")
    if not MIN_OPSET <= v <= MAX_OPSET:
        raise OnnxImportError(f"burn.onnx.load: {src!r} uses opset {v}; burn.onnx imports opsets "
                              f"{MIN_OPSET}-{MAX_OPSET} (re-export with e.g. opset_version=18)")
    return v


def _unsupported(nodes, src):
    bad = Counter(n.op if n.domain in ("", "ai.onnx") else f"{n.domain}::{n.op}" for n in walk(nodes)
                  if n.domain not in ("", "ai.onnx") or n.op not in OPS or "." in n.op)
    if bad:
        listing = ", ".join(f"{op} x{k}" for op, k in sorted(bad.items()))
        raise OnnxImportError(f"burn.onnx.load: {src!r} uses {sum(bad.values())} nodes of operators burn.onnx "
                              f"does not import: {listing}. Supported operators: {', '.join(supported_ops())} "
                              f"(docs/onnx.md)")


def _check(model, src):
    import onnx
    try:
        onnx.checker.check_model(model, full_check=True)
    except Exception as e:      # ValidationError, InferenceError, and the C++ checker's own
        raise OnnxImportError(f"burn.onnx.load: {src!r} is not a valid ONNX model: "
                              f"{str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__}") from e


def _value_info(vi, src):
    from onnx import helper
    tt = vi.type.tensor_type
    if not vi.type.HasField("tensor_type"):
        raise OnnxImportError(f"burn.onnx.load: {src!r}: input {vi.name!r} is not a tensor")
    dtype = None
    if tt.elem_type:
        try:
            dtype = burn.as_dtype(helper.tensor_dtype_to_np_dtype(tt.elem_type))
        except Exception:
            raise OnnxImportError(f"burn.onnx.load: {src!r}: input {vi.name!r} has element type "
                                  f"{helper.tensor_dtype_to_string(tt.elem_type)}, which burn has no dtype for")
    dims = None
    if tt.HasField("shape"):
        dims = [d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in tt.shape.dim]
    return vi.name, dtype, dims


def _initializers(graph, src):
    from onnx import numpy_helper
    out = {}
    for t in graph.initializer:
        try:
            out[t.name] = numpy_helper.to_array(t)
        except Exception as e:
            raise OnnxImportError(f"burn.onnx.load: {src!r}: initializer {t.name!r} cannot be read "
                                  f"({e}); the file may be truncated") from e
        if out[t.name].dtype.name in ("int4", "uint4"):        # ml_dtypes' 4-bit types: their values
            out[t.name] = out[t.name].astype(np.int8 if out[t.name].dtype.name == "int4" else np.uint8)
        if out[t.name].dtype.kind not in "biuf":
            raise OnnxImportError(f"burn.onnx.load: {src!r}: initializer {t.name!r} has dtype "
                                  f"{out[t.name].dtype}, which burn has no tensor for")
    for t in graph.sparse_initializer:
        raise OnnxImportError(f"burn.onnx.load: {src!r}: sparse initializer {t.values.name!r} is not supported")
    return out


def _check_defined(nodes, defined, outputs, src):
    known = set(defined)
    for node in nodes:
        missing = [n for n in node.inputs if n and n not in known]
        if missing:
            raise OnnxImportError(f"burn.onnx.load: {src!r}: node {node.name!r} ({node.op}) reads {missing}, "
                                  f"which no earlier node, input or initializer defines")
        known.update(o for o in node.outputs if o)
    missing = [o for o in outputs if o not in known]
    if missing:
        raise OnnxImportError(f"burn.onnx.load: {src!r}: graph outputs {missing} are never computed")


def _fold_at_load(nodes, constants):
    """Fold the nodes that depend on no input and no state (Constant and what reads only them)."""
    kept = []
    for node in nodes:
        if node.op not in NEVER_FOLDED and all(not n or n in constants for n in node.inputs):
            for name, v in zip(node.outputs, fold(node, [constants[n] if n else None for n in node.inputs])):
                if name:
                    constants[name] = v
        else:
            kept.append(node)
    return kept


def load(path, device=None):
    """Import the ONNX model at ``path`` as a :class:`burn.nn.Module` on ``device``.

    The initializers become its parameters (dotted names from the graph; MatMul/Gemm weights
    are :class:`burn.nn.Linear` layers in burn's [d_in, d_out] layout, so
    :func:`burn.nn.apply_lora` adapts them), BatchNormalization statistics its buffers. It
    runs on any device, is differentiable, and saves with ``save``/``load_state_dict``. The
    graph is planned once per input signature (shapes folded, constants precomputed), so a
    dynamic batch size works at any size.

    Args:
        path: a file path (or the model's bytes, or an ``onnx.ModelProto``).
        device: where the parameters live (default: burn's default device); an autodiff
            device makes them trainable.

    Raises:
        OnnxImportError: the file is unreadable, truncated or invalid, or uses operators
            burn.onnx does not import (all of them listed, with counts).

    Example:
        >>> import burn, onnx, numpy as np, os, tempfile
        >>> from onnx import helper, TensorProto as T
        >>> g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
        ...     [helper.make_tensor_value_info("x", T.FLOAT, [2])], [helper.make_tensor_value_info("y", T.FLOAT, [2])])
        >>> p = os.path.join(tempfile.mkdtemp(), "relu.onnx")
        >>> onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)]), p)
        >>> m = burn.onnx.load(p)
        >>> assert m(burn.tensor([-1.0, 2.0])).tolist() == [0.0, 2.0]
    """
    import onnx
    from . import ops_elementwise, ops_nn, ops_shape, ops_signal  # noqa: F401  (fill the rule table)
    model, src = _read(path)
    if model.functions:
        try:
            model = onnx.inliner.inline_local_functions(model)
        except Exception as e:
            raise OnnxImportError(f"burn.onnx.load: {src!r}: its local functions cannot be inlined: {e}") from e
    opset = _opset(model, src)
    graph = model.graph
    nodes = [Node(p, opset) for p in graph.node]
    _unsupported(nodes, src)
    _check(model, src)
    inits = _initializers(graph, src)
    inputs = [_value_info(vi, src) for vi in graph.input if vi.name not in inits]
    outputs = [o.name for o in graph.output]
    _check_defined(nodes, [n for n, _, _ in inputs] + list(inits), outputs, src)
    device = burn.Device(device) if isinstance(device, str) else device
    if device is None:
        device = burn.zeros((1,)).device
    m = build_model(nodes, inits, inputs, outputs, device, src)
    object.__setattr__(m, "_onnx_nodes", _fold_at_load(m._onnx_nodes, m._onnx_constants))
    return m
