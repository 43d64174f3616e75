"""Import rules of the shape and indexing operators (Reshape, Transpose, Slice, Gather,
Concat, Split, Expand, Pad, ...) and the reductions.

Their shape-like inputs (target shapes, axes, starts/ends, pads, repeats) are ``static``:
a plan is made per input signature, so a Shape -> Gather -> Concat -> Reshape chain is
folded to numbers when the plan is made and the replayed step is a plain ``reshape``.

Example:
    >>> from burn_onnx.importer.registry import OPS
    >>> assert OPS["Slice"].static == frozenset({1, 2, 3, 4})
"""
from __future__ import annotations

import numpy as np

import burn

from .registry import rule, META

__all__: list = []


def _axis(node, a, ndim):
    a = int(a)
    if not -ndim <= a < max(ndim, 1):
        raise node.fail(f"axis {a} is out of range for a tensor of rank {ndim}")
    return a % max(ndim, 1)


def _axes_arg(node, axes_input, ndim, attr="axes"):
    """Axes from the input (newer opsets) or the attribute (older ones); None when absent."""
    if axes_input is not None:
        vals = node.ints(axes_input, "axes")
    elif node.attr(attr) is not None:
        vals = list(node.attr(attr))
    else:
        return None
    return [_axis(node, a, ndim) for a in vals]


# -- meta ops: their output is known from the input's shape when the plan is made ----------

def _shape(node, x):
    nd = len(x.shape)
    start, end = node.attr("start", 0), node.attr("end", nd)
    return np.array(x.shape[slice(start, end)], dtype=np.int64)


META["Shape"] = _shape
META["Size"] = lambda node, x: np.array(int(np.prod(x.shape, dtype=np.int64)), dtype=np.int64)
rule("Shape", note="folded when the plan is made")(None)
rule("Size", note="folded when the plan is made")(None)
rule("Constant", note="folded at load")(None)
rule("ConstantOfShape", static=(0,), note="folded")(None)
rule("Range", static=(0, 1, 2), note="folded")(None)


# -- reshapes --------------------------------------------------------------------------

def _reshape_to(shape):
    shape = tuple(int(s) for s in shape)
    return lambda x, *_: burn.reshape(x, shape)


@rule("Reshape", static=(1,))
def _reshape(node, x, shape):
    target = node.ints(shape, "shape")
    if not node.attr("allowzero", 0):
        target = [x.shape[i] if s == 0 else s for i, s in enumerate(target)]
    if target.count(-1) == 1:
        known = int(np.prod([s for s in target if s != -1], dtype=np.int64))
        if known == 0 or int(np.prod(x.shape, dtype=np.int64)) % known:
            raise node.fail(f"cannot reshape {tuple(x.shape)} into {tuple(target)}")
        target[target.index(-1)] = int(np.prod(x.shape, dtype=np.int64)) // known
    if int(np.prod(target, dtype=np.int64)) != int(np.prod(x.shape, dtype=np.int64)):
        raise node.fail(f"cannot reshape {tuple(x.shape)} into {tuple(target)}")
    return _reshape_to(target)


@rule("Flatten")
def _flatten(node, x):
    a = node.attr("axis", 1)
    a = a % len(x.shape) if a < 0 else a
    lead = int(np.prod(x.shape[:a], dtype=np.int64))
    return _reshape_to((lead, int(np.prod(x.shape[a:], dtype=np.int64))))


@rule("Squeeze", static=(1,))
def _squeeze(node, x, axes=None):
    ax = _axes_arg(node, axes, len(x.shape))
    ax = [i for i, s in enumerate(x.shape) if s == 1] if ax is None else ax
    if any(x.shape[a] != 1 for a in ax):
        raise node.fail(f"cannot squeeze axes {ax} of shape {tuple(x.shape)} (not all of size 1)")
    return _reshape_to([s for i, s in enumerate(x.shape) if i not in ax])


@rule("Unsqueeze", static=(1,))
def _unsqueeze(node, x, axes=None):
    out_nd = len(x.shape) + len(node.ints(axes, "axes") if axes is not None else node.attr("axes", []))
    ax = sorted(_axes_arg(node, axes, out_nd) or [])
    shape, it = [], iter(x.shape)
    for i in range(out_nd):
        shape.append(1 if i in ax else next(it))
    return _reshape_to(shape)


@rule("Transpose")
def _transpose(node, x):
    perm = node.attr("perm", None)
    perm = tuple(reversed(range(len(x.shape)))) if perm is None else tuple(int(p) for p in perm)
    return lambda x: burn.permute_dims(x, perm)


@rule("Expand", static=(1,))
def _expand(node, x, shape):
    target = tuple(burn.broadcast_shapes(tuple(x.shape), tuple(node.ints(shape, "shape"))))
    if target == tuple(x.shape):
        return lambda x, *_: x
    return lambda x, *_: burn.broadcast_to(x, target)


@rule("Tile", static=(1,))
def _tile(node, x, repeats):
    reps = tuple(node.ints(repeats, "repeats"))
    return lambda x, *_: burn.tile(x, reps)


# -- joining and splitting -------------------------------------------------------------

@rule("Concat")
def _concat(node, *xs):
    axis = _axis(node, node.attr("axis"), len(xs[0].shape))
    return lambda *xs: burn.concat([x for x in xs if x.shape[axis] != 0 or len(xs) == 1], axis=axis)


@rule("Split", static=(1,))
def _split(node, x, split=None):
    axis = _axis(node, node.attr("axis", 0), len(x.shape))
    n = x.shape[axis]
    sizes = node.ints(split, "split") if split is not None else node.attr("split", None)
    if sizes is None:
        k = node.attr("num_outputs", len(node.outputs))
        step = -(-n // k)
        sizes = [min(step, n - i * step) for i in range(k)]
    if sum(sizes) != n or len(sizes) != len(node.outputs):
        raise node.fail(f"split sizes {list(sizes)} do not cover axis {axis} of {tuple(x.shape)} "
                        f"in {len(node.outputs)} outputs")
    bounds = list(np.cumsum(sizes)[:-1])
    return lambda x, *_: tuple(burn.split(x, bounds, axis=axis))


# -- slicing and indexing ----------------------------------------------------------------

@rule("Slice", static=(1, 2, 3, 4))
def _slice(node, x, starts=None, ends=None, axes=None, steps=None):
    nd = len(x.shape)
    if node.opset < 10:
        starts, ends, axes = node.attr("starts"), node.attr("ends"), node.attr("axes")
        steps = None
    starts, ends = node.ints(starts, "starts"), node.ints(ends, "ends")
    axes = list(range(len(starts))) if axes is None else [_axis(node, a, nd) for a in node.ints(axes, "axes")]
    steps = [1] * len(starts) if steps is None else node.ints(steps, "steps")
    key = [slice(None)] * nd
    for a, s, e, st in zip(axes, starts, ends, steps):
        if st == 0:
            raise node.fail("a step of 0")
        lo, hi, st = slice(s, e, st).indices(x.shape[a])
        key[a] = slice(lo, None if hi < 0 else hi, st)
    key = tuple(key)
    if all(k == slice(0, x.shape[i], 1) or k == slice(None) for i, k in enumerate(key)):
        return lambda x, *_: x
    return lambda x, *_: x[key]


@rule("Gather")
def _gather(node, x, idx):
    axis = _axis(node, node.attr("axis", 0), len(x.shape))
    n = x.shape[axis]
    if isinstance(idx, np.ndarray):
        i = np.where(idx < 0, idx + n, idx).astype(np.int64)
        if i.ndim == 0:
            key = (slice(None),) * axis + (int(i),)
            return lambda x, _: x[key]
        return lambda x, _: burn.take(x, burn.from_numpy(i, device=x.device), axis=axis)
    return lambda x, i: burn.take(x, burn.where(i < 0, i + n, i), axis=axis)


@rule("GatherElements")
def _gather_elements(node, x, idx):
    axis = _axis(node, node.attr("axis", 0), len(x.shape))
    n = x.shape[axis]
    return lambda x, i: burn.take_along_axis(x, burn.where(i < 0, i + n, i), axis=axis)


@rule("ScatterElements", note="reduction none or add")
def _scatter_elements(node, x, idx, upd):
    axis = _axis(node, node.attr("axis", 0), len(x.shape))
    red = node.attr("reduction", "none")
    n = x.shape[axis]
    if red == "add":
        return lambda x, i, u: burn.scatter_add(x, burn.where(i < 0, i + n, i), u, axis=axis)
    if red != "none":
        raise node.fail(f"reduction={red!r} is not supported (none and add are)")

    def run(x, i, u):
        i = burn.where(i < 0, i + n, i)
        hit = burn.scatter_add(burn.zeros(x.shape, dtype=u.dtype, device=x.device), i, burn.ones_like(u),
                               axis=axis)
        return burn.where(hit > 0, burn.scatter_add(burn.zeros_like(x), i, u, axis=axis), x)
    return run


def _pad_index(node, mode, n, lo, hi):
    """Source indices along one axis of size ``n`` padded by ``lo``/``hi`` in ``mode``."""
    i = np.arange(-lo, n + hi)
    if mode == "edge":
        return np.clip(i, 0, n - 1)
    if mode == "wrap":
        return i % n
    if n == 1:                                   # reflect of one element repeats it
        return np.zeros_like(i)
    if lo >= n or hi >= n:
        raise node.fail(f"reflect pads ({lo}, {hi}) must be smaller than the axis size {n}")
    j = i % (2 * n - 2)
    return np.where(j < n, j, 2 * n - 2 - j)


@rule("Pad", static=(1, 2, 3), note="constant, reflect, edge, wrap")
def _pad(node, x, pads=None, value=None, axes=None):
    mode = node.attr("mode", "constant")
    if mode not in ("constant", "reflect", "edge", "wrap"):
        raise node.fail(f"mode={mode!r} is not an ONNX Pad mode (constant, reflect, edge, wrap)")
    nd = len(x.shape)
    p = node.ints(pads, "pads") if pads is not None else list(node.attr("pads", []))
    ax = list(range(nd)) if axes is None else [_axis(node, a, nd) for a in node.ints(axes, "axes")]
    width = [(0, 0)] * nd
    for k, a in enumerate(ax):
        width[a] = (p[k], p[k + len(ax)])
    if any(lo < 0 or hi < 0 for lo, hi in width):
        raise node.fail(f"negative pads {p} are not supported")
    if mode != "constant":
        if any(x.shape[a] == 0 and (lo or hi) for a, (lo, hi) in enumerate(width)):
            raise node.fail(f"mode={mode!r} cannot pad an empty axis of shape {tuple(x.shape)}")
        gathers = [(a, _pad_index(node, mode, x.shape[a], lo, hi)) for a, (lo, hi) in enumerate(width) if lo or hi]

        def run(x, *_):
            for a, idx in gathers:
                x = burn.take(x, burn.from_numpy(idx, device=x.device), axis=a)
            return x
        return run
    v = node.attr("value", 0.0) if value is None else np.asarray(value).reshape(-1)
    v = v[0].item() if isinstance(v, np.ndarray) and v.size else (0 if isinstance(v, np.ndarray) else v)
    width = tuple(width)
    return lambda x, *_: burn.pad(x, width, value=v)


@rule("Trilu", static=(1,))
def _trilu(node, x, k=None):
    k = 0 if k is None else node.ints(k, "k")[0]
    fn = burn.triu if node.attr("upper", 1) else burn.tril
    return lambda x, *_: fn(x, k=k)


@rule("CumSum", static=(1,), note="not exclusive/reverse")
def _cumsum(node, x, axis):
    a = _axis(node, node.ints(axis, "axis")[0], len(x.shape))
    if node.attr("exclusive", 0) or node.attr("reverse", 0):
        raise node.fail("exclusive/reverse CumSum is not supported")
    return lambda x, *_: burn.cumsum(x, axis=a)


@rule("Einsum")
def _einsum(node, *xs):
    eq = node.attr("equation").replace(" ", "")
    return lambda *xs: burn.einsum(eq, *xs)


# -- reductions ------------------------------------------------------------------------

def _sum_square(x, axis, keepdims):
    return burn.sum(x * x, axis=axis, keepdims=keepdims)


_REDUCE = {
    "ReduceSum": burn.sum, "ReduceMean": burn.mean, "ReduceMax": burn.max, "ReduceMin": burn.min,
    "ReduceProd": burn.prod, "ReduceLogSumExp": burn.logsumexp, "ReduceSumSquare": _sum_square,
    "ReduceL1": lambda x, axis, keepdims: burn.sum(burn.abs(x), axis=axis, keepdims=keepdims),
    "ReduceL2": lambda x, axis, keepdims: burn.sqrt(_sum_square(x, axis, keepdims)),
    "ReduceLogSum": lambda x, axis, keepdims: burn.log(burn.sum(x, axis=axis, keepdims=keepdims)),
}


@rule(*_REDUCE, static=(1,))
def _reduce(node, x, axes=None):
    fn, nd = _REDUCE[node.op], len(x.shape)
    keep = bool(node.attr("keepdims", 1))
    ax = _axes_arg(node, axes, nd)
    if not ax:
        if node.attr("noop_with_empty_axes", 0):
            return lambda x, *_: x
        ax = list(range(nd))
    ax = tuple(sorted(set(ax)))
    return lambda x, *_: fn(x, axis=ax, keepdims=keep)


@rule("ArgMax", "ArgMin")
def _arg(node, x):
    axis = _axis(node, node.attr("axis", 0), len(x.shape))
    keep = bool(node.attr("keepdims", 1))
    fn = burn.argmax if node.op == "ArgMax" else burn.argmin
    if node.attr("select_last_index", 0):
        n = x.shape[axis]
        return lambda x: (n - 1) - fn(burn.flip(x, axis=axis), axis=axis, keepdims=keep)
    return lambda x: fn(x, axis=axis, keepdims=keep)


@rule("TopK", static=(1,), note="sorted results (sorted=0 gives the same order)")
def _topk(node, x, k):
    axis = _axis(node, node.attr("axis", -1), len(x.shape))
    kk = node.ints(k, "k")[0]
    largest = bool(node.attr("largest", 1))
    return lambda x, *_: tuple(burn.topk(x, kk, axis=axis, largest=largest))


def _eye_like(node, x):
    from .ops_elementwise import onnx_dtype
    dtype = np.dtype(onnx_dtype(node, node.attr("dtype")).name) if node.attr("dtype") is not None else \
        (np.dtype(x.dtype.name) if isinstance(x, burn.Tensor) else x.dtype)
    return np.eye(x.shape[0], x.shape[1], k=int(node.attr("k", 0)), dtype=dtype)


META["EyeLike"] = _eye_like
rule("EyeLike", note="folded to a constant from the input's shape")(None)
rule("DequantizeLinear", static=(0, 1, 2), note="of constants (quantized initializers): folded at load")(None)


# -- random ops: fresh numbers on every call (and every capture replay) ------------------------

RANDOM = frozenset({"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike"})


@rule(*sorted(RANDOM), note="fresh numbers per call from burn's generator (the seed attribute is not used)")
def _random(node, like=None):
    from .ops_elementwise import onnx_dtype
    shape = tuple(like.shape) if like is not None else tuple(int(s) for s in node.attr("shape"))
    code = node.attr("dtype")
    if code is not None:
        dtype = onnx_dtype(node, code)
    elif like is not None:
        dtype = like.dtype if isinstance(like, burn.Tensor) else burn.as_dtype(like.dtype)
    else:
        dtype = burn.float32
    device = node.device
    if "Normal" in node.op:
        mean, scale = float(node.attr("mean", 0.0)), float(node.attr("scale", 1.0))
        return lambda *_: burn.randn(shape, dtype=dtype, device=device) * scale + mean
    lo, hi = float(node.attr("low", 0.0)), float(node.attr("high", 1.0))
    return lambda *_: burn.rand(shape, dtype=dtype, device=device) * (hi - lo) + lo


@rule("Det", note="through burn.linalg (burn-linalg)")
def _det(node, x):
    try:
        det = burn.linalg.det
    except AttributeError as e:
        raise node.fail(f"needs burn.linalg (pip install burn-linalg): {e}") from e
    return det


rule("If", static=(0,), note="a condition known when planned (constants, input shapes): the taken branch is "
                             "planned in its place")(None)
