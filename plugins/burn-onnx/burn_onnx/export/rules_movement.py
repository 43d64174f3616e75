"""Export rules of the movement primitives: reshape, permute, broadcast, slicing, advanced
indexing (as flat positions and Gather / ScatterElements), gather/scatter along an axis,
concat and pad. Sizes that follow a dynamic axis are computed from the inputs' shapes.

Example:
    >>> from burn_onnx.export.registry import RULES
    >>> assert RULES["index"].onnx.startswith("Gather")
"""
from __future__ import annotations

import numpy as np

from .context import INT64_MAX, INT64_MIN, Sym
from .registry import export_rule

__all__: list = []


def _same(a, b) -> bool:
    if isinstance(a, Sym) and isinstance(b, Sym):
        return a.const == b.const and a.coefs == b.coefs
    return not isinstance(a, Sym) and not isinstance(b, Sym) and a == b


@export_rule("reshape", onnx="Reshape")
def _reshape(ctx, node):
    x = node.inputs[0]
    target = list(node.dyn("shape"))
    if not any(isinstance(t, Sym) for t in target):
        return ctx.op("Reshape", x.name, ctx.ints(target), allowzero=1 if 0 in target else None)
    if 0 in target:
        return ctx.op("Reshape", x.name, ctx.ints(target), allowzero=1)
    out = []
    for i, t in enumerate(target):
        copy = isinstance(t, Sym) and i < x.ndim and _same(t, x.dims[i])
        out.append(0 if copy else t)
    left = [i for i, t in enumerate(out) if isinstance(t, Sym)]
    if len(left) == 1:
        out[left[0]] = -1
    return ctx.op("Reshape", x.name, ctx.ints(out))


@export_rule("permute", onnx="Transpose")
def _permute(ctx, node):
    return ctx.op("Transpose", node.inputs[0].name, perm=list(node.attrs["axes"]))


@export_rule("broadcast_to", onnx="Expand")
def _broadcast_to(ctx, node):
    x = node.inputs[0]
    shape = list(node.dyn("shape"))
    lead = len(shape) - x.ndim
    # where the input has the size already, Expand's 1 keeps it (so a dynamic size stays dynamic)
    for i in range(x.ndim):
        if isinstance(shape[lead + i], Sym) and _same(shape[lead + i], x.dims[i]):
            shape[lead + i] = 1
    return ctx.op("Expand", x.name, ctx.ints(shape))


def _slice_args(x, starts, stops, steps):
    axes, s0, s1, st = [], [], [], []
    for i, (a, b, c) in enumerate(zip(starts, stops, steps)):
        n = x.dims[i]
        if _same(a, 0) and _same(b, n) and _same(c, 1):
            continue
        if not isinstance(b, Sym) and b < 0:          # a reversed slice down to index 0
            b = INT64_MIN
        elif _same(b, n):
            b = INT64_MAX
        axes.append(i)
        s0.append(a)
        s1.append(b)
        st.append(c)
    return axes, s0, s1, st


@export_rule("slice", onnx="Slice")
def _slice(ctx, node):
    x = node.inputs[0]
    axes, s0, s1, st = _slice_args(x, node.dyn("starts"), node.dyn("stops"), node.dyn("steps"))
    if not axes:
        return ctx.op("Identity", x.name)
    return ctx.op("Slice", x.name, ctx.ints(s0), ctx.ints(s1), ctx.ints(axes), ctx.ints(st))


@export_rule("slice_grad", onnx="Pad (unit steps) or ScatterElements")
def _slice_grad(ctx, node):
    g = node.inputs[0]
    shape, starts, stops, steps = (node.attrs[k] for k in ("shape", "starts", "stops", "steps"))
    if all(s == 1 for s in steps):
        pads = list(starts) + [n - b for n, b in zip(shape, stops)]
        return ctx.op("Pad", g.name, ctx.ints(pads), ctx.scalar(0, g.dtype))
    pos = np.zeros(1, np.int64)
    for n, a, b, c in zip(shape, starts, stops, steps):
        pos = (pos[..., None] * n + np.arange(a, b, c, dtype=np.int64)).reshape(-1)
    zeros = ctx.op("ConstantOfShape", ctx.ints([int(np.prod(shape))]),
                   value=_zero_tensor(g.dtype))
    flat = ctx.op("ScatterElements", zeros, ctx.const(pos), ctx.op("Reshape", g.name, ctx.ints([-1])), axis=0)
    return ctx.op("Reshape", flat, ctx.ints(list(shape)))


def _zero_tensor(dtype, value=0):
    from .context import make_tensor, _to_numpy_dtype
    return make_tensor(_to_numpy_dtype(np.asarray([value]), dtype), "value", dtype)


def _expand_spec(spec, ndim):
    n_axes = sum(1 for s in spec if s[0] in "tis")
    out = []
    for s in spec:
        if s[0] == "e":
            out.extend([("s", None, None, None)] * (ndim - n_axes))
        else:
            out.append(s)
    out.extend([("s", None, None, None)] * (ndim - sum(1 for s in out if s[0] in "tis")))
    return out


def _positions(ctx, shape, spec, idx):
    """The flat positions ``x[key]`` reads, for an ``x`` of static ``shape``: an int64 value of
    the selection's shape (index arrays may have dynamic sizes)."""
    items = _expand_spec(spec, len(shape))
    has_t = any(s[0] == "t" for s in items)
    adv = [k for k, s in enumerate(items) if s[0] == "t" or (has_t and s[0] == "i")]
    adjacent = bool(adv) and adv == list(range(adv[0], adv[-1] + 1))
    basic_before = 0
    layout = []                      # ("b", item position) per basic output dim, "B" for the block
    for k, s in enumerate(items):
        if adv and k == adv[0] and adjacent:
            layout.append("B")
        if s[0] == "s" or s[0] == "n":
            layout.append(("b", k))
            if not adv or k < adv[0]:
                basic_before += 1
    if adv and not adjacent:
        layout.insert(0, "B")
    strides = [int(np.prod(shape[i + 1:])) for i in range(len(shape))]
    n_block = max([idx[items[k][1]].ndim for k in adv if items[k][0] == "t"], default=0)
    total = sum(1 for e in layout if e != "B") + (n_block if "B" in layout else 0)
    acc = None
    axis = 0
    for k, s in enumerate(items):
        if s[0] == "n":
            continue
        n, stride = shape[axis], strides[axis]
        axis += 1
        pos_out = _out_pos(layout, k, n_block)
        if s[0] == "s":
            r = np.arange(*slice(s[1], s[2], s[3]).indices(n), dtype=np.int64) * stride
            term = ctx.const(r.reshape((-1,) + (1,) * (total - 1 - pos_out)))
        elif s[0] == "i":
            term = ctx.const(np.asarray((int(s[1]) % n) * stride, np.int64))
        else:
            v = idx[s[1]]
            t = v.name if v.dtype.name == "int64" else ctx.cast(v.name, _int64())
            t = ctx.op("Where", ctx.op("Less", t, ctx.scalar(0, _int64())),
                       ctx.op("Add", t, ctx.scalar(n, _int64())), t)
            after = total - (pos_out + n_block)
            if after:
                t = ctx.op("Unsqueeze", t, ctx.ints(list(range(v.ndim, v.ndim + after))))
            term = ctx.op("Mul", t, ctx.scalar(stride, _int64()))
        acc = term if acc is None else ctx.op("Add", acc, term)
    if acc is None:
        acc = ctx.const(np.asarray(0, np.int64))
    return ctx.op("Expand", acc, ctx.ints([1] * total)) if total else acc


def _out_pos(layout, k, n_block):
    """The output axis where item ``k``'s dims start (its slice axis, or the block's first)."""
    p = 0
    for e in layout:
        if e == "B":
            if k not in [x[1] for x in layout if x != "B"]:
                return p
            p += n_block
        else:
            if e[1] == k:
                return p
            p += 1
    return p


def _int64():
    import burn
    return burn.int64


def _static_shape(ctx, v, what):
    if v.dynamic:
        raise ctx.fail(f"the indexed tensor {v} has a size that follows a dynamic axis; {what} needs its "
                       f"shape fixed (index a tensor of fixed shape, or drop that dynamic axis)")
    return v.shape


@export_rule("index", onnx="Gather (on flat positions)")
def _index(ctx, node):
    x, *idx = node.inputs
    shape = _static_shape(ctx, x, "advanced indexing")
    pos = _positions(ctx, shape, node.attrs["spec"], idx)
    return ctx.op("Gather", ctx.op("Reshape", x.name, ctx.ints([-1])), pos, axis=0)


@export_rule("index_put", onnx="ScatterElements (on flat positions)", note="positions named twice: the last write wins")
def _index_put(ctx, node):
    x, v, *idx = node.inputs
    shape = _static_shape(ctx, x, "index assignment")
    pos = _positions(ctx, shape, node.attrs["spec"], idx)
    vals = ctx.op("Reshape", ctx.op("Expand", v.name, ctx.op("Shape", pos)), ctx.ints([-1]))
    flat = ctx.op("ScatterElements", ctx.op("Reshape", x.name, ctx.ints([-1])),
                  ctx.op("Reshape", pos, ctx.ints([-1])), vals, axis=0)
    return ctx.op("Reshape", flat, ctx.ints(list(shape)))


@export_rule("index_add", onnx="ScatterElements reduction=add (on flat positions)")
def _index_add(ctx, node):
    g, *idx = node.inputs
    shape = tuple(node.attrs["shape"])
    pos = _positions(ctx, shape, node.attrs["spec"], idx)
    zeros = ctx.op("ConstantOfShape", ctx.ints([int(np.prod(shape))]), value=_zero_tensor(g.dtype))
    flat = ctx.op("ScatterElements", zeros, ctx.op("Reshape", pos, ctx.ints([-1])),
                  ctx.op("Reshape", g.name, ctx.ints([-1])), axis=0, reduction="add")
    return ctx.op("Reshape", flat, ctx.ints(list(shape)))


def _norm_index(ctx, idx, x, axis):
    t = idx.name if idx.dtype.name == "int64" else ctx.cast(idx.name, _int64())
    return t


@export_rule("take_along_axis", onnx="GatherElements (Expand where broadcast)")
def _take_along_axis(ctx, node):
    x, idx = node.inputs
    axis = node.attrs["axis"]
    out = node.out_dims[0]
    xi, ii = x.name, _norm_index(ctx, idx, x, axis)
    if any(not _same(a, b) for i, (a, b) in enumerate(zip(x.dims, out)) if i != axis):
        xi = ctx.op("Expand", xi, ctx.ints([x.dims[i] if i == axis else d for i, d in enumerate(out)]))
    if any(not _same(a, b) for i, (a, b) in enumerate(zip(idx.dims, out)) if i != axis):
        ii = ctx.op("Expand", ii, ctx.ints(list(out)))
    return ctx.op("GatherElements", xi, ii, axis=axis)


@export_rule("scatter_add", onnx="ScatterElements reduction=add")
def _scatter_add(ctx, node):
    x, idx, src = node.inputs
    ii = idx.name if idx.dtype.name == "int64" else ctx.cast(idx.name, _int64())
    return ctx.op("ScatterElements", x.name, ii, src.name, axis=node.attrs["axis"], reduction="add")


@export_rule("concat", onnx="Concat")
def _concat(ctx, node):
    return ctx.op("Concat", *[v.name for v in node.inputs], axis=node.attrs["axis"])


@export_rule("pad", onnx="Pad (constant)")
def _pad(ctx, node):
    x = node.inputs[0]
    pw = node.attrs["pad_width"]
    pads = [a for a, _ in pw] + [b for _, b in pw]
    return ctx.op("Pad", x.name, ctx.ints(pads), ctx.scalar(np.asarray(node.attrs["value"]), x.dtype))
