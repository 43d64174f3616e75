"""A captured :class:`burn.Graph` as the flat node list export maps: extension ops without an
export rule are replaced by the nodes of their reference definition (traced on stand-in
inputs of the node's shapes), recursively; state and constants become host arrays.

Example:
    >>> import burn
    >>> from burn_onnx.export.flat import flatten_graph
    >>> g = burn.capture.trace(lambda x: burn.nn.functional.linear_relu(x, x, x[0]), burn.ones((2, 2)))
    >>> assert [n.op for n in flatten_graph(g).nodes][-1] == "burn::linear_relu"
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

import burn

from ..errors import OnnxExportError
from .registry import rule_for

__all__ = ["FlatGraph", "FlatNode", "flatten_graph"]


class FlatNode(NamedTuple):
    """One op to map: ``op``, ``attrs``, ``inputs`` (refs), ``outputs`` ((shape, dtype) each)."""
    op: str
    attrs: dict
    inputs: tuple
    outputs: tuple


class FlatGraph:
    """Inputs (Slots), state (name, array, dtype), constants (array, dtype), nodes and output refs.

    Refs are ``("in", i)``, ``("state", j)``, ``("const", k)`` and ``("node", p, k)``."""

    def __init__(self):
        self.inputs, self.state, self.consts, self.nodes, self.outputs = [], [], [], [], []
        self.out_tree = None


def _host(value):
    if isinstance(value, tuple):           # (backend, device index, native array) from the trace
        backend, index, native = value
        return np.asarray(backend.to_numpy(native, index))
    return np.asarray(value)


def _is_extension(op):
    p = burn.dispatch.registry.ops.get(op)
    return getattr(p, "is_extension", False)


def flatten_graph(g, state_names=None) -> FlatGraph:
    """The :class:`FlatGraph` of ``g``; ``state_names`` renames state (id(tensor) -> dotted name)."""
    if g.hosts:
        raise OnnxExportError(f"burn.onnx.export: the traced function reads host values "
                              f"({', '.join(h.name for h in g.hosts)}), which a Python callback computes "
                              f"before each run; an ONNX file cannot call Python. Pass them as inputs")
    if g.updates:
        what = ", ".join(str(g.state[t[1]].name if t[0] == "state" else f"argument {t[1]}") for t, _ in g.updates)
        raise OnnxExportError(f"burn.onnx.export: the traced function updates tensors in place ({what}); "
                              f"export traces inference: call model.eval() (batch-norm running statistics) "
                              f"and leave optimizer steps out")
    fg = FlatGraph()
    fg.inputs = list(g.inputs)
    tensors = g.state_tensors
    for s in g.state:
        t = tensors.get(s.name)
        if t is None:
            raise OnnxExportError(f"burn.onnx.export: state {s.name!r} no longer exists")
        name = (state_names or {}).get(id(t), s.name)
        fg.state.append((name, np.asarray(t.numpy()), s.dtype))
    for s, v in zip(g.consts, g.const_values):
        fg.consts.append((_host(v), s.dtype))
    refmap = {}
    for r in [("in", i) for i in range(len(g.inputs))] + [("state", j) for j in range(len(g.state))]:
        refmap[r] = r
    for k in range(len(g.consts)):
        refmap[("const", k)] = ("const", k)
    _append(fg, g, refmap, getattr(g, "device", None), 0)
    fg.outputs = [refmap[_key(r)] for r in burn.capture.tree.output_refs(g.outputs)]
    fg.out_tree = g.outputs
    return fg


def _key(ref):
    return tuple(ref) if ref[0] != "node" else ("node", ref[1], ref[2])


def _append(fg, g, refmap, device, depth):
    """Append ``g``'s nodes to ``fg`` with refs mapped through ``refmap`` (inlining references)."""
    for p, n in enumerate(g.nodes):
        ins = tuple(refmap[_key(r)] for r in n.inputs)
        if _is_extension(n.op) and rule_for(n.op) is None:
            outs = _inline(fg, n, ins, device, depth)
            for k, r in enumerate(outs):
                refmap[("node", p, k)] = r
            continue
        q = len(fg.nodes)
        fg.nodes.append(FlatNode(n.op, dict(n.attrs), ins, tuple(n.outputs)))
        for k in range(len(n.outputs)):
            refmap[("node", p, k)] = ("node", q, k)


def _meta_of(fg, ref):
    kind = ref[0]
    if kind == "node":
        return fg.nodes[ref[1]].outputs[ref[2]]
    if kind == "in":
        s = fg.inputs[ref[1]]
        return (s.shape, s.dtype)
    if kind == "state":
        return (fg.state[ref[1]][1].shape, fg.state[ref[1]][2])
    return (fg.consts[ref[1]][0].shape, fg.consts[ref[1]][1])


def _inline(fg, n, ins, device, depth):
    """Trace an extension op's reference definition on zeros of its input shapes and append it."""
    if depth > 16:
        raise OnnxExportError(f"burn.onnx.export: extension op {n.op!r} expands into itself more than 16 "
                              f"levels deep; give it an export rule (burn_onnx.export_rule)")
    ext = burn.dispatch.registry.ops[n.op]
    tpl, kwargs = n.attrs.get("template", ()), dict(n.attrs.get("kwargs", ()))
    stand_ins = [burn.zeros(tuple(s), dtype=d, device=device) for s, d in (_meta_of(fg, r) for r in ins)]

    def call(*xs):
        it = iter(xs)
        args = [next(it) if type(a).__name__ == "_TensorSlot" else a for a in tpl]
        return ext.reference(*args, **kwargs)
    try:
        with burn.no_grad():
            sub = burn.capture.trace(call, *stand_ins)
    except burn.BurnError as e:
        raise OnnxExportError(f"burn.onnx.export: extension op {n.op!r} has no export rule, and its reference "
                              f"definition could not be traced into burn ops ({type(e).__name__}: {e}). Declare "
                              f"a rule with burn_onnx.export_rule({n.op!r})") from None
    if sub.hosts or sub.updates:
        raise OnnxExportError(f"burn.onnx.export: the reference definition of {n.op!r} reads host values or "
                              f"updates state; declare an export rule for it")
    refmap = {("in", i): r for i, r in enumerate(ins)}
    tensors = sub.state_tensors
    for j, s in enumerate(sub.state):          # a tensor the reference reads: fixed at export
        refmap[("state", j)] = ("const", len(fg.consts))
        fg.consts.append((np.asarray(tensors[s.name].numpy()), s.dtype))
    for k, (s, v) in enumerate(zip(sub.consts, sub.const_values)):
        refmap[("const", k)] = ("const", len(fg.consts))
        fg.consts.append((_host(v), s.dtype))
    _append(fg, sub, refmap, device, depth + 1)
    outs = [refmap[_key(r)] for r in burn.capture.tree.output_refs(sub.outputs)]
    if len(outs) != len(n.outputs):
        raise OnnxExportError(f"burn.onnx.export: the reference definition of {n.op!r} returned {len(outs)} "
                              f"tensors, its meta rule declares {len(n.outputs)}")
    return outs
