"""From a graph's initializers to the imported Module's layers, parameters and buffers
(the rules are in :mod:`.module`'s docstring): finds the MatMul/Gemm weights that become
:class:`burn.nn.Linear` layers and rewrites those nodes into ``burn.Linear`` nodes.

Example:
    >>> from burn_onnx.importer.structure import classify
    >>> assert callable(classify)
"""
from __future__ import annotations

from collections import defaultdict

import numpy as np

import burn
from burn.nn import Linear, Parameter

from .module import OnnxModel, onnx_node, place
from .registry import OPS, walk

__all__ = ["classify", "build_model"]


def _consumers(nodes):
    """{name: [(node, input position)]}, the nodes inside If branches and Loop bodies too (a
    weight one of them reads is neither a Linear layer nor a constant)."""
    cons = defaultdict(list)
    for node in walk(nodes):
        for pos, n in enumerate(node.inputs):
            if n:
                cons[n].append((node, pos))
    return cons


def _is_float(a):
    return isinstance(a, np.ndarray) and a.dtype.kind == "f"


def _linear_uses(wname, cons, outs):
    """(orientation, matmul-like nodes, transposes, gemms) if every use of ``wname`` can run
    as one Linear layer, else None. Orientation "kn": the initializer is [d_in, d_out]."""
    kinds, mms, trs, gemms = set(), [], [], []
    for node, pos in cons[wname]:
        if node.op == "MatMul" and pos == 1:
            kinds.add("kn")
            mms.append(node)
        elif (node.op == "Gemm" and pos == 1 and not node.attr("transA", 0)
              and float(node.attr("alpha", 1.0)) == 1.0 and float(node.attr("beta", 1.0)) == 1.0):
            kinds.add("nk" if node.attr("transB", 0) else "kn")
            gemms.append(node)
        elif (node.op == "Transpose" and pos == 0 and list(node.attr("perm", [1, 0])) == [1, 0]
              and node.outputs[0] not in outs and cons[node.outputs[0]]
              and all(n2.op == "MatMul" and p2 == 1 for n2, p2 in cons[node.outputs[0]])):
            kinds.add("nk")
            trs.append(node)
            mms += [n2 for n2, _ in cons[node.outputs[0]]]
        else:
            return None
    return (kinds.pop(), mms, trs, gemms) if len(kinds) == 1 else None


def _bias_of(inits, cons, outs, mms, gemms, d_out):
    """(bias initializer name, the Add node it comes from or None), or (None, None)."""
    def ok(c, users):
        a = inits.get(c)
        return _is_float(a) and a.size == d_out and a.ndim in (1, 2) and a.shape[-1] == d_out \
            and all(u in users for u, _ in cons[c])
    if gemms and not mms:
        cs = {g.inputs[2] if len(g.inputs) > 2 else "" for g in gemms}
        c = cs.pop() if len(cs) == 1 else ""
        return (c, None) if c and ok(c, gemms) else (None, None)
    if len(mms) == 1 and not gemms:
        out = mms[0].outputs[0]
        if out not in outs and len(cons[out]) == 1 and cons[out][0][0].op == "Add":
            add, pos = cons[out][0]
            other = add.inputs[1 - pos]
            if inits.get(other) is not None and inits[other].ndim == 1 and ok(other, [add]):
                return other, add
    return None, None


def _alias_identities(nodes, inits, outs):
    """Drop ``Identity(initializer)`` nodes (how exporters share one weight), reading the
    initializer directly, so a shared weight is one layer."""
    alias = {}
    for node in nodes:
        if node.op == "Identity" and node.inputs[0] in inits and node.outputs[0] not in outs:
            alias[node.outputs[0]] = node.inputs[0]
    if not alias:
        return nodes
    for node in walk(nodes):
        node.inputs = [alias.get(n, n) for n in node.inputs]
    return [node for node in nodes if not (node.outputs and node.outputs[0] in alias)]


def _layer_path_name(wname, bname):
    if wname.endswith(".weight"):
        return wname[:-len(".weight")]
    if bname and bname.endswith(".bias"):
        return bname[:-len(".bias")]
    return wname


def classify(nodes, inits, outputs):
    """Rewrite MatMul/Gemm nodes whose weight becomes a Linear; returns ``(nodes, linears, state,
    constants)``: ``linears`` [(layer name, weight [d_in, d_out], bias or None, (weight name,
    bias name))], ``state`` {name: "param" | "buffer"} and ``constants`` {name: array}."""
    outs = set(outputs)
    nodes = _alias_identities(nodes, inits, outs)
    cons = _consumers(nodes)
    top = {id(n) for n in nodes}
    nested = {i for n in walk(nodes) if id(n) not in top for i in n.inputs}    # read inside a subgraph
    replace, drop, linears, taken = {}, set(), [], set()
    for wname, w in inits.items():
        if not _is_float(w) or w.ndim != 2 or wname in outs or not cons[wname] or wname in nested:
            continue
        found = _linear_uses(wname, cons, outs)
        if found is None:
            continue
        orient, mms, trs, gemms = found
        weight = w if orient == "kn" else w.T
        bname, add = _bias_of(inits, cons, outs, mms, gemms, weight.shape[1])
        gemm_c = {g.name: (g.inputs[2] if len(g.inputs) > 2 else "") for g in gemms}
        ref = f"@linear:{wname}"
        for m in mms:
            out = add.outputs[0] if add is not None else m.outputs[0]
            replace[id(m)] = [onnx_node("burn.Linear", [m.inputs[0], ref], [out], m.opset, m.name)]
        for g in gemms:
            c = gemm_c[g.name]
            if c and c != bname:
                tmp = f"{g.outputs[0]}::linear"
                replace[id(g)] = [onnx_node("burn.Linear", [g.inputs[0], ref], [tmp], g.opset, g.name),
                                  onnx_node("Add", [tmp, c], [g.outputs[0]], g.opset, g.name + "::bias")]
            else:
                replace[id(g)] = [onnx_node("burn.Linear", [g.inputs[0], ref], [g.outputs[0]], g.opset, g.name)]
        drop.update(id(t) for t in trs)
        if add is not None:
            drop.add(id(add))
        bias = None if bname is None else inits[bname].reshape(-1)
        linears.append((_layer_path_name(wname, bname), ref, weight, bias, (wname, bname)))
        taken.add(wname)
        if bname:
            taken.add(bname)
    new_nodes = []
    for node in nodes:
        if id(node) in drop:
            continue
        new_nodes.extend(replace.get(id(node), [node]))
    state, constants = {}, {}
    cons = _consumers(new_nodes)
    for name, a in inits.items():
        if name in taken:
            continue
        if not _is_float(a):
            constants[name] = a
            continue
        dyn = [(n, p) for n, p in cons[name] if p not in OPS[n.op].static]
        if not cons[name] or any(p not in OPS[n.op].buffers for n, p in dyn) or name in outs:
            state[name] = "param"
        elif dyn:
            state[name] = "buffer"
        else:
            constants[name] = a
    return new_nodes, linears, state, constants


def build_model(nodes, inits, inputs, outputs, device, source) -> OnnxModel:
    """The :class:`OnnxModel` of a validated graph, its state on ``device``."""
    nodes, linears, state, constants = classify(nodes, inits, outputs)
    refs, taken = [], set()
    model = OnnxModel(nodes, inputs, outputs, constants, refs, source)

    def tensor(a):
        return burn.from_numpy(np.ascontiguousarray(a).copy(), device=device)
    for layer_name, ref, w, b, _ in linears:
        lin = object.__new__(Linear)
        lin.d_in, lin.d_out = int(w.shape[0]), int(w.shape[1])
        lin.weight = Parameter(tensor(w))
        lin.bias = None if b is None else Parameter(tensor(b))
        refs.append((ref, place(model, layer_name, lin, taken)))
    for name, kind in state.items():
        t = Parameter(tensor(inits[name])) if kind == "param" else tensor(inits[name])
        refs.append((name, place(model, name, t, taken)))
    return model
