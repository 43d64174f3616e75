"""Dynamic axes: trace at several sizes and read which attributes and shapes follow them.

Export traces the function once at the example sizes, once per dynamic axis name with that
size changed, and once with every size changed (a check of the fit). Every integer that
differs between the traces (a reshape target, a slice end, an output size) must be an
integer linear function of the sizes: it becomes a :class:`Sym`, computed in the ONNX graph
from the inputs' shapes. Anything else that differs (a constant computed from a size, a
different sequence of ops) fails the export with the op and the values.

Example:
    >>> from burn_onnx.export.dynamic import fit
    >>> s = fit([6, 9, 15], [{"b": 2}, {"b": 3}, {"b": 5}])
    >>> assert s.coefs == {"b": 3} and s.const == 0
"""
from __future__ import annotations

import numpy as np

import burn

from ..errors import OnnxExportError
from .context import Sym

__all__ = ["fit", "resize", "compare", "infer_axes"]


def fit(values, sizes):
    """The :class:`Sym` (or plain int when all equal) that gives ``values[t]`` at ``sizes[t]``;
    None when no integer linear function does. ``sizes[0]`` is the base trace, ``sizes[1..k]``
    change one symbol each."""
    v0 = values[0]
    if all(v == v0 for v in values):
        return v0
    coefs = {}
    for v, s in zip(values[1:], sizes[1:]):
        changed = [k for k in s if s[k] != sizes[0][k]]
        if len(changed) != 1:
            continue
        k = changed[0]
        d = s[k] - sizes[0][k]
        if (v - v0) % d:
            return None
        coefs[k] = (v - v0) // d
    const = v0 - sum(c * sizes[0][k] for k, c in coefs.items())
    sym = Sym(const, coefs)
    if any(sym.eval(s) != v for v, s in zip(values, sizes)):
        return None
    return sym


def resize(t, axis: int, n: int):
    """``t`` with axis ``axis`` of length ``n``: its values repeated (so indices stay in range).

    Example:
        >>> import burn
        >>> assert resize(burn.tensor([1, 2]), 0, 3).tolist() == [1, 2, 1]
    """
    m = t.shape[axis]
    reps = -(-n // m)
    big = burn.concat([t] * reps, axis=axis) if reps > 1 else t
    key = [slice(None)] * t.ndim
    key[axis] = slice(0, n)
    return big[tuple(key)]


def _leaves(v, out):
    if isinstance(v, (tuple, list)):
        for x in v:
            _leaves(x, out)
    else:
        out.append(v)
    return out


def _rebuild(v, it):
    if isinstance(v, (tuple, list)):
        return type(v)(_rebuild(x, it) for x in v)
    return next(it)


def _is_int(v):
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def _fit_tree(values, sizes, what):
    base = values[0]
    flats = [_leaves(v, []) for v in values]
    if any(len(f) != len(flats[0]) for f in flats):
        raise OnnxExportError(f"burn.onnx.export: {what} has a different structure at another size "
                              f"({values[0]!r} vs {values[-1]!r}); this cannot follow a dynamic axis")
    out = []
    changed = False
    for col in zip(*flats):
        if all(type(c) is type(col[0]) and c == col[0] for c in col):
            out.append(col[0])
            continue
        s = fit(list(col), sizes) if all(_is_int(c) for c in col) else None
        if s is None:
            raise OnnxExportError(f"burn.onnx.export: {what} changes with the dynamic sizes in a way ONNX cannot "
                                  f"follow (values {list(col)} at sizes {sizes}); fix that axis's size or "
                                  f"compute it with shape-independent ops")
        out.append(s)
        changed = True
    return _rebuild(base, iter(out)) if changed else None


def compare(flats, sizes):
    """Per node ``(varying attrs, out dims)`` from the flat graphs of every trace."""
    base = flats[0]
    for fg in flats[1:]:
        if [n.op for n in fg.nodes] != [n.op for n in base.nodes] or \
                [n.inputs for n in fg.nodes] != [n.inputs for n in base.nodes]:
            raise OnnxExportError("burn.onnx.export: the traced function runs other ops at another size of its "
                                  "dynamic axes (a Python branch on a shape?); such a function has no one ONNX "
                                  "graph: export it with fixed sizes")
        for k, ((a, da), (b, db)) in enumerate(zip(base.consts, fg.consts)):
            if a.shape != b.shape or not np.array_equal(a, b, equal_nan=True):
                raise OnnxExportError(f"burn.onnx.export: a constant ({da}{list(a.shape)}) depends on the dynamic "
                                      f"sizes (e.g. a mean's 1/n over a dynamic axis, or x.shape used as a "
                                      f"number); ONNX would freeze it at the traced size. Use a reduction that "
                                      f"does not bake the size in, or fix that axis")
    out = []
    for p, n in enumerate(base.nodes):
        varying = {}
        for key, v in n.attrs.items():
            if key in ("_key",):
                continue
            r = _fit_tree([fg.nodes[p].attrs[key] for fg in flats], sizes, f"attribute {key!r} of op '{n.op}'")
            if r is not None:
                varying[key] = r
        dims = []
        for k, (shape, _) in enumerate(n.outputs):
            r = _fit_tree([tuple(fg.nodes[p].outputs[k][0]) for fg in flats], sizes, f"the shape of op '{n.op}'")
            dims.append(tuple(r) if r is not None else tuple(shape))
        out.append((varying, dims))
    return out


def infer_axes(args_a, args_b, names):
    """``dynamic_axes`` from two example argument lists whose tensors differ in size."""
    from burn.capture.tree import flatten
    la, _ = flatten(args_a)
    lb, _ = flatten(args_b)
    if len(la) != len(lb):
        raise OnnxExportError(f"burn.onnx.export_dynamic: the two examples have {len(la)} and {len(lb)} tensors")
    axes, symbols = {}, {}
    for name, a, b in zip(names, la, lb):
        if a.ndim != b.ndim:
            raise OnnxExportError(f"burn.onnx.export_dynamic: input {name!r} has {a.ndim} axes in one example and "
                                  f"{b.ndim} in the other")
        for ax, (m, n) in enumerate(zip(a.shape, b.shape)):
            if m != n:
                sym = symbols.setdefault((ax, m, n), "batch" if ax == 0 and not symbols else f"dim{len(symbols)}")
                axes.setdefault(name, {})[ax] = sym
    if not axes:
        raise OnnxExportError("burn.onnx.export_dynamic: the two examples have the same sizes; give examples "
                              "that differ along the axes that should be dynamic")
    return axes
