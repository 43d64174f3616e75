"""``burn.onnx.export`` and ``burn.onnx.export_dynamic``: trace with :mod:`burn.capture`,
map every node through the rule table, write an ONNX file (weights as initializers named by
their dotted parameter names; external data past 2 GiB).

Example:
    >>> import burn, os, tempfile
    >>> p = os.path.join(tempfile.mkdtemp(), "m.onnx")
    >>> m = burn.onnx.export(burn.nn.Linear(3, 2), (burn.ones((4, 3)),), p)
    >>> assert sorted(i.name for i in m.graph.initializer) == ["bias", "weight"]
"""
from __future__ import annotations

import copy
import os

import numpy as np
import onnx
from onnx import helper

import burn

from ..errors import OnnxExportError
from . import rules_complex, rules_compute, rules_elementwise, rules_ext, rules_library, rules_movement  # noqa: F401
from .context import ExportContext, Node, Sym, Value, onnx_dtype
from .dynamic import compare, infer_axes, resize
from .flat import flatten_graph
from .registry import COMPLEX, rule_for

__all__ = ["export", "export_dynamic"]

_TWO_GIB = 2 ** 31


def _clone(value, memo):
    """A copy of a module tree sharing its tensors (so merge_lora leaves the user's model alone)."""
    if id(value) in memo:
        return memo[id(value)]
    if isinstance(value, burn.nn.Module):
        new = copy.copy(value)
        memo[id(value)] = new
        for k, v in list(vars(value).items()):
            object.__setattr__(new, k, _clone(v, memo))
        return new
    if type(value) is list:
        return [_clone(v, memo) for v in value]
    if type(value) is tuple:
        return tuple(_clone(v, memo) for v in value)
    if type(value) is dict:
        return {k: _clone(v, memo) for k, v in value.items()}
    return value


def _has_qlora(model):
    return any(isinstance(getattr(m, "base", None), burn.nn.NF4Linear) for _, m in model.named_modules())


def _prepare(model, lora, qlora):
    if lora not in ("merged", "separate"):
        raise OnnxExportError(f"burn.onnx.export: lora must be 'merged' or 'separate', got {lora!r}")
    if qlora not in ("dequantized", "blockwise"):
        raise OnnxExportError(f"burn.onnx.export: qlora must be 'dequantized' or 'blockwise', got {qlora!r}")
    if not isinstance(model, burn.nn.Module):
        return model, {}
    if lora == "merged" and any(isinstance(m, burn.nn.lora._LoRALayer) for _, m in model.named_modules()):
        if qlora == "blockwise" and _has_qlora(model):
            raise OnnxExportError("burn.onnx.export: qlora='blockwise' keeps the NF4 base quantized, but "
                                  "lora='merged' folds the adapters into it (a float weight); pass "
                                  "lora='separate' with qlora='blockwise'")
        model = burn.nn.merge_lora(_clone(model, {}))
    names = {}
    for n, t in model.named_parameters():
        names.setdefault(id(t), n)
    for n, t in model.named_buffers():
        names.setdefault(id(t), n)
    return model, names


def _trace(fn, args, names):
    with burn.no_grad():
        try:
            g = burn.capture.trace(fn, *args)
        except burn.CaptureError as e:
            raise OnnxExportError(f"burn.onnx.export: the function could not be traced: {e}") from None
    return flatten_graph(g, names)


def _variants(args, names, dynamic_axes, leaves_of):
    """Example arguments at the traced sizes, one per symbol changed, and all changed."""
    leaves, spec = leaves_of(args)
    where = {}          # symbol -> [(leaf, axis)]
    for name, axes in (dynamic_axes or {}).items():
        if name not in names:
            continue
        i = names.index(name)
        for ax, sym in axes.items():
            ax = int(ax) % max(leaves[i].ndim, 1)
            where.setdefault(str(sym), []).append((i, ax))
    sizes0 = {}
    for sym, places in where.items():
        got = {leaves[i].shape[ax] for i, ax in places}
        if len(got) != 1:
            raise OnnxExportError(f"burn.onnx.export: dynamic axis {sym!r} has different sizes in the example "
                                  f"inputs ({sorted(got)}); one name is one size")
        sizes0[sym] = got.pop()

    def make(sizes):
        new = list(leaves)
        for sym, places in where.items():
            for i, ax in places:
                new[i] = resize(new[i], ax, sizes[sym])
        return new
    plans = [dict(sizes0)]
    for k, sym in enumerate(where):
        s = dict(sizes0)
        s[sym] = sizes0[sym] + 1 + k
        plans.append(s)
    if where:
        plans.append({sym: v + 3 + 2 * k for k, (sym, v) in enumerate(sizes0.items())})
    symbols = {sym: (names[places[0][0]], places[0][1]) for sym, places in where.items()}
    return [make(p) for p in plans], plans, symbols, spec, where


def _dim_param(d):
    if isinstance(d, Sym):
        if d.const == 0 and len(d.coefs) == 1 and list(d.coefs.values())[0] == 1:
            return list(d.coefs)[0]
        return str(d)
    return d


def _value_info(name, dtype, dims, what):
    return helper.make_tensor_value_info(name, onnx_dtype(dtype, what), [_dim_param(d) for d in dims])


def _pairs(arr, dt):
    """``(array, dtype)`` of an initializer: a complex one as its real and imaginary parts on a last axis."""
    if dt.is_complex:
        return np.stack([arr.real, arr.imag], axis=-1), burn.dtypes.real_of(dt)
    return arr, dt


def _emit(fg, per_node, ctx, input_names, in_dims):
    values = {}
    for i, s in enumerate(fg.inputs):
        values[("in", i)] = Value(input_names[i], s.shape, s.dtype, in_dims[i])
    for j, (name, arr, dt) in enumerate(fg.state):
        a, d = _pairs(arr, dt)
        values[("state", j)] = Value(ctx.const(a, name=name, dtype=d), arr.shape, dt)
        ctx.values[name] = arr
    for k, (arr, dt) in enumerate(fg.consts):
        name = None if arr.size <= 16 else ctx.fresh(f"const{k}")
        a, d = _pairs(arr, dt)
        cname = ctx.const(a, name=name, dtype=d)
        ctx.values[cname] = arr
        values[("const", k)] = Value(cname, arr.shape, dt)
    for p, n in enumerate(fg.nodes):
        varying, dims = per_node[p]
        node = Node(n.op, n.attrs, [values[r] for r in n.inputs], n.outputs, varying=varying, out_dims=dims)
        ctx.current = node
        rule = rule_for(n.op)
        if rule is None:
            raise OnnxExportError(f"burn.onnx.export: op '{n.op}' has no export rule at opset {ctx.opset}; "
                                  f"declare one with burn_onnx.export_rule({n.op!r})")
        if not rule.supported:
            raise ctx.fail(f"no ONNX form: {rule.note}")
        if ctx.opset < rule.min_opset:
            raise ctx.fail(f"its rule needs opset {rule.min_opset} or newer; pass opset={rule.min_opset}")
        fn = rule.fn
        if any(v.dtype.is_complex for v in node.inputs) or any(d.is_complex for _, d in n.outputs):
            fn = COMPLEX.get(n.op)
            if fn is None:
                raise ctx.fail("complex operands: this op has no rule for complex values (they travel as "
                               "[..., 2] real pairs); take burn.real / burn.imag / burn.abs before it")
        res = fn(ctx, node)
        res = (res,) if isinstance(res, str) else tuple(res)
        if len(res) != len(n.outputs):
            raise OnnxExportError(f"burn.onnx.export: the rule of op '{n.op}' gave {len(res)} outputs, the op has "
                                  f"{len(n.outputs)}")
        bad = node.unread_dynamic()
        if bad:
            raise ctx.fail(f"its attribute(s) {', '.join(bad)} follow a dynamic axis ({varying[bad[0]]}), which "
                           f"its rule does not support; fix that axis's size")
        for k, (name, (shape, dt)) in enumerate(zip(res, n.outputs)):
            values[("node", p, k)] = Value(name, shape, dt, dims[k])
    return values


def export(model_or_fn, example_args, path, opset: int = 18, *, input_names=None, output_names=None,
           dynamic_axes=None, check: bool = False, lora: str = "merged", qlora: str = "dequantized",
           external_data=None):
    """Trace ``model_or_fn(*example_args)`` (inference: under ``burn.no_grad()``, a Module in
    eval mode) and write it to ``path`` as ONNX at ``opset`` (17-26, default 18).

    ``input_names`` / ``output_names`` name the flattened tensor arguments and results
    (default ``input0``..., ``output0``...). ``dynamic_axes`` maps an input name to
    ``{axis: name}``; sizes that follow those axes are computed from the inputs' shapes.
    Parameters and buffers become initializers named by their dotted paths. ``lora``:
    adapters folded into their base weights (``"merged"``) or kept as their own MatMuls
    (``"separate"``); ``qlora``: an NF4 base as float32 (``"dequantized"``) or, at opset
    21+, 4-bit codes with block scales (``"blockwise"``). ``external_data``: write weights
    to ``path + ".data"`` (default: when they pass 2 GiB). ``check=True`` runs the file
    with onnxruntime and compares with burn. Returns the ``onnx.ModelProto``.

    Example:
        >>> import burn, os, tempfile
        >>> p = os.path.join(tempfile.mkdtemp(), "f.onnx")
        >>> m = burn.onnx.export(lambda x: (x * 2).relu(), (burn.ones((2, 3)),), p,
        ...                      input_names=["x"], dynamic_axes={"x": {0: "batch"}}, check=True)
        >>> assert m.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    """
    if not 17 <= int(opset) <= 26:
        raise OnnxExportError(f"burn.onnx.export: opset {opset} is outside 17-26 (onnxruntime 1.30 reads up "
                              f"to 26 at IR version <= 13); pass opset between 17 and 26")
    args = tuple(example_args) if isinstance(example_args, (tuple, list)) else (example_args,)
    fn, state_names = _prepare(model_or_fn, lora, qlora)
    was_training = getattr(fn, "training", None)
    if was_training:
        fn.eval()
    try:
        model = _build(fn, args, state_names, int(opset), input_names, output_names, dynamic_axes, qlora)
    finally:
        if was_training:
            fn.train(True)
    _save(model, str(path), external_data)
    onnx.checker.check_model(str(path), full_check=True)
    if check:
        from .check import compare_with_onnxruntime
        compare_with_onnxruntime(fn, args, str(path))
    return model


def _build(fn, args, state_names, opset, input_names, output_names, dynamic_axes, qlora):
    from burn.capture.tree import flatten
    leaves, _ = flatten(args)
    input_names = list(input_names) if input_names is not None else [f"input{i}" for i in range(len(leaves))]
    if len(input_names) != len(leaves):
        raise OnnxExportError(f"burn.onnx.export: {len(input_names)} input_names for {len(leaves)} tensor "
                              f"arguments")
    for name in dynamic_axes or {}:
        if name not in input_names and (output_names is None or name not in output_names):
            raise OnnxExportError(f"burn.onnx.export: dynamic_axes names {name!r}, which is not an input "
                                  f"({', '.join(input_names)}) or output name")
    variants, sizes, symbols, spec, where = _variants(args, input_names, dynamic_axes, lambda a: flatten(a))
    flats = []
    for leaves_v in variants:
        call_args = _rebuild_args(args, leaves_v)
        flats.append(_trace(fn, call_args, state_names))
    fg = flats[0]
    per_node = compare(flats, sizes) if len(flats) > 1 else [({}, [tuple(s) for s, _ in n.outputs]) for n in fg.nodes]
    in_dims = []
    for i, s in enumerate(fg.inputs):
        d = list(s.shape)
        for sym, places in where.items():
            for li, ax in places:
                if li == i:
                    d[ax] = Sym(0, {sym: 1})
        in_dims.append(tuple(d))
    ctx = ExportContext(opset, symbols)
    ctx.options = {"qlora": qlora}
    values = _emit(fg, per_node, ctx, input_names, in_dims)
    outs = [values[r] for r in fg.outputs]
    output_names = list(output_names) if output_names is not None else [f"output{i}" for i in range(len(outs))]
    if len(output_names) != len(outs):
        raise OnnxExportError(f"burn.onnx.export: {len(output_names)} output_names for {len(outs)} results")
    for v, name in zip(outs, output_names):
        ctx.nodes.append(helper.make_node("Identity", [v.name], [name], name=ctx.fresh("n_output")))
    g_in = [_value_info(n, s.dtype, d, f"input {n}") for n, s, d in zip(input_names, fg.inputs, in_dims)]
    g_out = [_value_info(n, v.dtype, v.dims, f"output {n}") for n, v in zip(output_names, outs)]
    used = {i for n in ctx.nodes for i in n.input}
    inits = [t for t in ctx.initializers if t.name in used]
    graph = helper.make_graph(ctx.nodes, getattr(fn, "__name__", type(fn).__name__), g_in, g_out, inits)
    opsets = [helper.make_opsetid("", opset)]
    model = helper.make_model(graph, opset_imports=opsets, producer_name="burn-onnx",
                              ir_version=min(helper.find_min_ir_version_for(opsets), 13))
    return model


def _rebuild_args(args, leaves):
    it = iter(leaves)

    def sub(a):
        if isinstance(a, burn.Tensor):
            return next(it)
        if type(a) in (tuple, list):
            return type(a)(sub(x) for x in a)
        if type(a) is dict:
            return {k: sub(v) for k, v in a.items()}
        return a
    return tuple(sub(a) for a in args)


def _save(model, path, external_data):
    size = sum(len(t.raw_data) for t in model.graph.initializer)
    ext = size >= _TWO_GIB if external_data is None else bool(external_data)
    if ext:
        onnx.save_model(model, path, save_as_external_data=True, all_tensors_to_one_file=True,
                        location=os.path.basename(path) + ".data", size_threshold=0 if external_data else 1024)
    else:
        onnx.save_model(model, path)


def export_dynamic(model_or_fn, example_args, other_args, path, opset: int = 18, **kwargs):
    """:func:`export` with ``dynamic_axes`` inferred: every axis whose size differs between
    ``example_args`` and ``other_args`` is dynamic (axis 0 named ``batch``), as Burn's
    ``export_dynamic``.

    Example:
        >>> import burn, os, tempfile
        >>> p = os.path.join(tempfile.mkdtemp(), "d.onnx")
        >>> m = burn.onnx.export_dynamic(lambda x: x.sum(axis=1), (burn.ones((2, 3)),), (burn.ones((5, 3)),), p)
        >>> assert m.graph.output[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    """
    from burn.capture.tree import flatten
    a = tuple(example_args) if isinstance(example_args, (tuple, list)) else (example_args,)
    b = tuple(other_args) if isinstance(other_args, (tuple, list)) else (other_args,)
    names = kwargs.get("input_names") or [f"input{i}" for i in range(len(flatten(a)[0]))]
    kwargs["input_names"] = names
    axes = infer_axes(a, b, names)
    return export(model_or_fn, a, path, opset, dynamic_axes=axes, **kwargs)
