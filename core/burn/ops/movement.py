"""Shape and movement ops: reshape, permute, broadcast, slicing, indexing, joins.

How an index key is parsed and planned lives in :mod:`burn.ops.index_keys`
(``build_numpy_index`` and ``strided_index_plan`` are re-exported here for kernels).
"""
from __future__ import annotations

import builtins

import numpy as np

from .. import dtypes as dt, views
from ..errors import BurnError, DTypeError, ShapeError, describe, record_site
from ..primitives import MOVEMENT, OPAQUE, TensorMeta, primitive
from ..tensor import Tensor, apply
from ._util import broadcast_shapes, normalize_axes, normalize_axis
from . import elementwise as E
from .creation import arange, as_tensor_like, scalar, tensor, zeros
from .index_keys import (_expand_ellipsis, _index_add_meta, _index_meta, _index_put_meta, _index_spec,  # noqa: F401
                         _is_basic, build_numpy_index, scalar_bool_key, strided_index_plan)

__all__ = ["reshape", "permute_dims", "transpose", "matrix_transpose", "broadcast_to", "broadcast_arrays",
           "squeeze", "expand_dims", "flatten", "concat", "concatenate", "stack", "split", "flip", "pad",
           "take", "take_along_axis", "gather", "scatter_add", "moveaxis", "roll", "tile", "repeat",
           "getitem", "index_put", "tril", "triu", "unstack", "swapaxes"]


# -- reshape ---------------------------------------------------------------------

def _reshape_meta(x, *, shape):
    return TensorMeta(shape, x.dtype)


reshape_p = primitive("reshape", MOVEMENT, _reshape_meta)
reshape_p.backward = lambda c, g: (reshape(g, c.inputs[0].shape),)


def _resolve_shape(x, shape):
    if isinstance(shape, (int, np.integer)):
        shape = (int(shape),)
    shape = tuple(int(s) for s in shape)
    n = x.size
    if shape.count(-1) > 1:
        raise ShapeError(f"reshape: only one dimension can be -1, got {shape}")
    if -1 in shape:
        known = 1
        for s in shape:
            if s != -1:
                known *= s
        if known == 0 or n % known:
            raise ShapeError(f"reshape: cannot reshape {describe(x)} into {shape}")
        shape = tuple(n // known if s == -1 else s for s in shape)
    total = 1
    for s in shape:
        if s < 0:
            raise ShapeError(f"reshape: negative dimension in {shape}")
        total *= s
    if total != n:
        raise ShapeError(f"reshape: cannot reshape {describe(x)} ({n} elements) into {shape} ({total} elements)")
    return shape


def reshape(x, /, shape, *, copy=None) -> Tensor:
    """``x`` with a new shape of the same size (one dimension may be -1).

    As in numpy, the result is a view of ``x`` (an in-place update of either is seen
    by the other) unless ``x`` is itself a view that strides cannot reshape, e.g. a
    transpose flattened; ``copy=True`` always copies, ``copy=False`` raises
    ValueError where a copy would be needed (the Array API's rule).

    Example:
        >>> import burn
        >>> assert burn.reshape(burn.arange(6), (2, -1)).shape == (2, 3)
    """
    shape = _resolve_shape(x, shape)
    if copy:
        # a copy shares nothing: a plain result, not linked to x (burn.views)
        return apply(reshape_p, (x,), {"shape": shape}) if shape != x.shape else E.astype(x, x.dtype, copy=True)
    if shape == x.shape:
        return x
    attrs = {"shape": shape}
    shares = views.reshape_shares(x, shape)
    if copy is False and not shares:
        raise ValueError(f"reshape: {describe(x)} is a view that cannot take shape {shape} without "
                         f"a copy, and copy=False was given")
    out = apply(reshape_p, (x,), attrs)
    # a view, unless x is a view that strides cannot reshape (then a copy, as in numpy)
    return views.mark(out, x, reshape_p, attrs) if shares else out


# -- permute ---------------------------------------------------------------------

def _permute_meta(x, *, axes):
    return TensorMeta(tuple(x.shape[a] for a in axes), x.dtype)


permute_p = primitive("permute", MOVEMENT, _permute_meta)
permute_p.backward = lambda c, g: (permute_dims(g, tuple(np.argsort(c.attrs["axes"]).tolist())),)


def permute_dims(x, /, axes) -> Tensor:
    """Reorder the axes of ``x`` (numpy ``transpose`` with axes).

    Example:
        >>> import burn
        >>> assert burn.permute_dims(burn.zeros((2, 3, 4)), (2, 0, 1)).shape == (4, 2, 3)
    """
    axes = tuple(normalize_axis("permute_dims", int(a), x.ndim) for a in axes)
    if sorted(axes) != list(range(x.ndim)):
        raise ShapeError(f"permute_dims: axes {axes} are not a permutation of the {x.ndim} axes of {describe(x)}")
    if axes == tuple(range(x.ndim)):
        return x
    attrs = {"axes": axes}
    return views.mark(apply(permute_p, (x,), attrs), x, permute_p, attrs)


def transpose(x, /, axes=None) -> Tensor:
    """numpy's ``transpose``: reverse the axes, or reorder them by ``axes``.

    Example:
        >>> import burn
        >>> assert burn.transpose(burn.zeros((2, 3))).shape == (3, 2)
    """
    return permute_dims(x, tuple(reversed(range(x.ndim))) if axes is None else axes)


def matrix_transpose(x, /) -> Tensor:
    """Swap the last two axes.

    Example:
        >>> import burn
        >>> assert burn.matrix_transpose(burn.zeros((5, 2, 3))).shape == (5, 3, 2)
    """
    if x.ndim < 2:
        raise ShapeError(f"matrix_transpose: needs at least 2 dimensions, got {describe(x)}")
    axes = list(range(x.ndim))
    axes[-1], axes[-2] = axes[-2], axes[-1]
    return permute_dims(x, axes)


def swapaxes(x, axis1, axis2) -> Tensor:
    """Exchange two axes.

    Example:
        >>> import burn
        >>> assert burn.swapaxes(burn.zeros((2, 3, 4)), 0, 2).shape == (4, 3, 2)
    """
    axes = list(range(x.ndim))
    a, b = normalize_axis("swapaxes", axis1, x.ndim), normalize_axis("swapaxes", axis2, x.ndim)
    axes[a], axes[b] = axes[b], axes[a]
    return permute_dims(x, axes)


def moveaxis(x, source, destination) -> Tensor:
    """Move axis ``source`` to position ``destination`` (ints, or tuples of one length).

    Example:
        >>> import burn
        >>> assert burn.moveaxis(burn.zeros((2, 3, 4)), 0, -1).shape == (3, 4, 2)
        >>> assert burn.moveaxis(burn.zeros((2, 3, 4)), (0, 1), (2, 0)).shape == (3, 4, 2)
    """
    src = (source,) if isinstance(source, (int, np.integer)) else tuple(source)
    dst = (destination,) if isinstance(destination, (int, np.integer)) else tuple(destination)
    if len(src) != len(dst):
        raise ShapeError(f"moveaxis: source {source} and destination {destination} must name as many axes")
    src = [normalize_axis("moveaxis", int(a), x.ndim) for a in src]
    dst = [normalize_axis("moveaxis", int(a), x.ndim) for a in dst]
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise ShapeError(f"moveaxis: repeated axis in source {source} or destination {destination}")
    order = [a for a in range(x.ndim) if a not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return permute_dims(x, order)


# -- broadcast ------------------------------------------------------------------------

def _broadcast_meta(x, *, shape):
    return TensorMeta(shape, x.dtype)


broadcast_p = primitive("broadcast_to", MOVEMENT, _broadcast_meta)
broadcast_p.backward = lambda c, g: (E._unbroadcast(g, c.inputs[0].shape),)


def broadcast_to(x, /, shape) -> Tensor:
    """``x`` broadcast to ``shape`` (numpy rules): a read-only view of ``x``, as numpy's.
    Later in-place updates of ``x`` show through it; updating the view itself raises
    :class:`burn.ReadOnlyError` (see :mod:`burn.views`).

    Example:
        >>> import burn
        >>> x = burn.zeros((3,))
        >>> b = burn.broadcast_to(x, (2, 3))
        >>> x += 1
        >>> assert b.shape == (2, 3) and b.tolist() == [[1.0] * 3] * 2
    """
    out = _broadcast(x, shape)
    if out is x:   # same shape: still a new read-only view, as numpy's (never ``x`` itself, writable)
        out = apply(broadcast_p, (x,), {"shape": x.shape})
    return views.mark(out, x, broadcast_p, {"shape": out.shape})


def _broadcast(x, shape) -> Tensor:
    """``broadcast_to`` as a new tensor, not a view: what burn's own ops use (gradients of
    reductions, ``broadcast_arrays``, ``tile``...), whose results are the caller's to update."""
    shape = tuple(int(s) for s in shape)
    if shape == x.shape:
        return x
    ok = len(shape) >= x.ndim and builtins.all(
        s == t or s == 1 for s, t in zip(reversed(x.shape), reversed(shape)))
    if not ok:
        raise ShapeError(f"broadcast_to: cannot broadcast {describe(x)} to shape {shape}")
    return apply(broadcast_p, (x,), {"shape": shape})


def broadcast_arrays(*arrays) -> list:
    """Broadcast tensors against each other.

    Example:
        >>> import burn
        >>> a, b = burn.broadcast_arrays(burn.ones((3,)), burn.ones((2, 1)))
        >>> assert a.shape == b.shape == (2, 3)
    """
    shape = broadcast_shapes("broadcast_arrays", *arrays)
    return [_broadcast(a, shape) for a in arrays]


def squeeze(x, /, axis=None) -> Tensor:
    """Remove axes of length one (all of them if ``axis`` is None).

    Example:
        >>> import burn
        >>> assert burn.squeeze(burn.zeros((1, 3, 1)), axis=0).shape == (3, 1)
    """
    if axis is None:
        axes = tuple(i for i, s in enumerate(x.shape) if s == 1)
    else:
        axes = normalize_axes("squeeze", axis, x.ndim)
        for a in axes:
            if x.shape[a] != 1:
                raise ShapeError(f"squeeze: axis {a} of {describe(x)} has length {x.shape[a]}, not 1")
    return reshape(x, tuple(s for i, s in enumerate(x.shape) if i not in axes))


def expand_dims(x, /, axis=0) -> Tensor:
    """Insert an axis of length one at ``axis`` (int or tuple).

    Example:
        >>> import burn
        >>> assert burn.expand_dims(burn.zeros((3,)), axis=-1).shape == (3, 1)
    """
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    nd = x.ndim + len(axes)
    axes = sorted(normalize_axis("expand_dims", int(a), nd) for a in axes)
    shape = list(x.shape)
    for a in axes:
        shape.insert(a, 1)
    return reshape(x, tuple(shape))


def flatten(x, /, start_axis=0, end_axis=-1) -> Tensor:
    """Merge axes ``start_axis..end_axis`` into one: a copy, as numpy's ``flatten``
    (``reshape`` gives a view).

    Example:
        >>> import burn
        >>> assert burn.flatten(burn.zeros((2, 3, 4)), 1).shape == (2, 12)
    """
    if x.ndim == 0:
        return reshape(x, (1,), copy=True)
    s = normalize_axis("flatten", start_axis, x.ndim)
    e = normalize_axis("flatten", end_axis, x.ndim)
    n = 1
    for d in x.shape[s:e + 1]:
        n *= d
    return reshape(x, x.shape[:s] + (n,) + x.shape[e + 1:], copy=True)


# -- slicing ------------------------------------------------------------------------

def _slice_meta(x, *, starts, stops, steps):
    shape = tuple(len(range(a, b, c)) for a, b, c in zip(starts, stops, steps))
    return TensorMeta(shape, x.dtype)


def _bw_slice(c, g):
    x = c.inputs[0]
    return (apply(slice_grad_p, (g,), {"shape": x.shape, **c.attrs}),)


slice_p = primitive("slice", MOVEMENT, _slice_meta)
slice_p.backward = _bw_slice


def _slice_grad_meta(g, *, shape, starts, stops, steps):
    return TensorMeta(shape, g.dtype)


slice_grad_p = primitive("slice_grad", MOVEMENT, _slice_grad_meta)
slice_grad_p.backward = lambda c, g: (apply(slice_p, (g,), {k: v for k, v in c.attrs.items() if k != "shape"}),)


def _slice(x, slices) -> Tensor:
    """Basic slicing: one python slice per axis (already normalized)."""
    starts, stops, steps = [], [], []
    for s, n in zip(slices, x.shape):
        a, b, c = s.indices(n)
        starts.append(a)
        stops.append(b)
        steps.append(c)
    if builtins.all(a == 0 and b == n and c == 1 for a, b, c, n in zip(starts, stops, steps, x.shape)):
        return x
    attrs = {"starts": tuple(starts), "stops": tuple(stops), "steps": tuple(steps)}
    return views.mark(apply(slice_p, (x,), attrs), x, slice_p, attrs)


def flip(x, /, *, axis=None) -> Tensor:
    """Reverse the order of elements along ``axis`` (all axes if None).

    Example:
        >>> import burn
        >>> assert burn.flip(burn.arange(3)).tolist() == [2, 1, 0]
    """
    axes = normalize_axes("flip", axis, x.ndim)
    return _slice(x, [slice(None, None, -1) if i in axes else slice(None) for i in range(x.ndim)])


def getitem(x, key) -> Tensor:
    """numpy indexing: ints, slices, None, Ellipsis, integer/bool arrays and tensors.

    A boolean mask makes a data-dependent shape: it is read (its pending work
    flushed) at the call; a 0-d mask adds an axis of length 1 (True) or 0 (False).

    Example:
        >>> import burn
        >>> x = burn.arange(12).reshape((3, 4))
        >>> assert x[1:, None, burn.tensor([0, 3])].shape == (2, 1, 2)
        >>> assert x[-1, ::2].tolist() == [8, 10]
        >>> assert x[burn.tensor(True)].shape == (1, 3, 4) and x[:, False].shape == (3, 0, 4)
    """
    if not isinstance(key, tuple):
        key = (key,)
    if builtins.all(_is_basic(k) for k in key):
        key = _expand_ellipsis("getitem", key, x.ndim, x)
        slices, shape_after = [], []
        axis = 0
        for k in key:
            if k is None:
                shape_after.append(1)
                continue
            n = x.shape[axis]
            if isinstance(k, slice):
                slices.append(k)
                shape_after.append(len(range(*k.indices(n))))
            else:
                i = int(k)
                if not -n <= i < n:
                    raise ShapeError(f"getitem: index {i} is out of bounds for axis {axis} with size {n} "
                                     f"({describe(x)})")
                i %= n
                slices.append(slice(i, i + 1, 1))
            axis += 1
        y = _slice(x, slices)
        return reshape(y, tuple(shape_after))
    bool_key = scalar_bool_key("getitem", key, x.ndim)
    if bool_key is not None:
        new, axis, value = bool_key
        y = getitem(x, new)
        return y if value else getitem(y, (slice(None),) * axis + (slice(0, 0),))
    return _advanced_index(x, key)


# -- advanced indexing ------------------------------------------------------------


def _bw_index(c, g):
    x, *idx = c.inputs
    return (apply(index_add_p, (g, *idx), {"spec": c.attrs["spec"], "shape": x.shape}),) + (None,) * len(idx)


index_p = primitive("index", OPAQUE, _index_meta)
index_p.backward = _bw_index


index_add_p = primitive("index_add", OPAQUE, _index_add_meta)
index_add_p.backward = lambda c, g: (apply(index_p, (g, *c.inputs[1:]), {"spec": c.attrs["spec"]}),) + (None,) * (len(c.inputs) - 1)


def _bw_index_put(c, g):
    x, v, *idx = c.inputs
    spec = c.attrs["spec"]
    gx = apply(index_put_p, (g, scalar(0, g.dtype, g.device), *idx), {"spec": spec}) if x.requires_grad else None
    gv = E._unbroadcast(apply(index_p, (g, *idx), {"spec": spec}), v.shape) if v.requires_grad else None
    return (gx, gv) + (None,) * len(idx)


index_put_p = primitive("index_put", OPAQUE, _index_put_meta)
index_put_p.backward = _bw_index_put


def index_put(x, key, value) -> Tensor:
    """A copy of ``x`` with ``value`` written at ``x[key]`` (numpy assignment:
    for a position named twice, the last write wins). ``x[key] = value``
    is this op followed by rebinding ``x``.

    Example:
        >>> import burn
        >>> y = burn.index_put(burn.zeros((4,)), burn.tensor([1, 3]), 7.0)
        >>> assert y.tolist() == [0.0, 7.0, 0.0, 7.0]
    """
    v = as_tensor_like(value, x)
    if v.dtype is not x.dtype:
        v = E.astype(v, x.dtype)
    key = key if isinstance(key, tuple) else (key,)
    bool_key = scalar_bool_key("index_put", key, x.ndim)
    if bool_key is not None:
        # x[..., True, ...] = v writes v through the new length-1 axis; a False mask selects a
        # length-0 axis (as x[False] does), so v must broadcast to that and nothing is written
        new, axis, keep = bool_key
        rest = tuple(o for k, o in zip(new, key) if not (k is None and o is not None)) or (Ellipsis,)
        target = getitem(x, new).shape
        if not keep:
            _broadcast(v, target[:axis] + (0,) + target[axis + 1:])
            return x
        v = reshape(_broadcast(v, target), target[:axis] + target[axis + 1:])
        return index_put(x, rest, v)
    spec, inputs = _index_spec(x, key)
    return record_site(apply(index_put_p, (x, v, *inputs), {"spec": spec}))


def _advanced_index(x, key):
    spec, inputs = _index_spec(x, key)
    return record_site(apply(index_p, (x, *inputs), {"spec": spec}))


def take(x, indices, /, *, axis=None) -> Tensor:
    """Elements of ``x`` at ``indices`` along ``axis`` (Array API ``take``).

    Example:
        >>> import burn
        >>> x = burn.tensor([[1, 2], [3, 4]])
        >>> assert burn.take(x, burn.tensor([1, 0]), axis=1).tolist() == [[2, 1], [4, 3]]
    """
    if axis is None:
        x = reshape(x, (-1,))
        axis = 0
    axis = normalize_axis("take", axis, x.ndim)
    key = (slice(None),) * axis + (indices if isinstance(indices, Tensor) else np.asarray(indices),)
    return _advanced_index(x, key)


# -- gather / scatter ----------------------------------------------------------------

def _gather_meta(x, idx, *, axis):
    if not idx.dtype.is_integer:
        raise DTypeError(f"take_along_axis: indices must be integers, got {describe(idx)}")
    if idx.ndim != x.ndim:
        raise ShapeError(f"take_along_axis: indices need as many dimensions as x ({describe(idx)} vs {describe(x)})")
    for i, (a, b) in enumerate(zip(x.shape, idx.shape)):
        if i != axis and a != b and b != 1 and a != 1:
            raise ShapeError(f"take_along_axis: dimension {i} differs ({describe(idx)} vs {describe(x)})")
    shape = tuple(b if i == axis else builtins.max(a, b) for i, (a, b) in enumerate(zip(x.shape, idx.shape)))
    return TensorMeta(shape, x.dtype)


def _bw_gather(c, g):
    x, idx = c.inputs
    z = zeros(x.shape, dtype=g.dtype, device=g.device)
    ax = c.attrs["axis"]
    full_idx = _broadcast(idx, g.shape)
    return scatter_add(z, full_idx, g, axis=ax), None


gather_p = primitive("take_along_axis", OPAQUE, _gather_meta)
gather_p.backward = _bw_gather


def take_along_axis(x, indices, /, axis=-1) -> Tensor:
    """numpy ``take_along_axis``: pick one element per position along ``axis``.

    Example:
        >>> import burn
        >>> x = burn.tensor([[10, 20], [30, 40]])
        >>> assert burn.take_along_axis(x, burn.tensor([[1], [0]]), axis=1).tolist() == [[20], [30]]
    """
    if not isinstance(indices, Tensor):
        indices = tensor(indices, device=x.device)
    axis = normalize_axis("take_along_axis", axis, x.ndim)
    return record_site(apply(gather_p, (x, indices), {"axis": axis}))


def gather(x, indices, /, axis=-1) -> Tensor:
    """Alias of :func:`take_along_axis` (Burn/PyTorch name).

    Example:
        >>> import burn
        >>> assert burn.gather(burn.tensor([5, 6, 7]), burn.tensor([2, 0]), axis=0).tolist() == [7, 5]
    """
    return take_along_axis(x, indices, axis=axis)


def _scatter_meta(x, idx, src, *, axis):
    if not idx.dtype.is_integer:
        raise DTypeError(f"scatter_add: indices must be integers, got {describe(idx)}")
    if idx.shape != src.shape:
        raise ShapeError(f"scatter_add: indices and src must have one shape ({describe(idx)} vs {describe(src)})")
    if idx.ndim != x.ndim:
        raise ShapeError(f"scatter_add: indices need as many dimensions as x ({describe(idx)} vs {describe(x)})")
    return TensorMeta(x.shape, x.dtype)


def _bw_scatter(c, g):
    x, idx, src = c.inputs
    return g, None, take_along_axis(g, idx, axis=c.attrs["axis"])


scatter_add_p = primitive("scatter_add", OPAQUE, _scatter_meta)
scatter_add_p.backward = _bw_scatter


def scatter_add(x, indices, src, /, axis=-1) -> Tensor:
    """A copy of ``x`` with ``src`` added at ``indices`` along ``axis`` (repeats accumulate).

    Example:
        >>> import burn
        >>> out = burn.scatter_add(burn.zeros((3,)), burn.tensor([0, 0, 2]), burn.ones((3,)), axis=0)
        >>> assert out.tolist() == [2.0, 0.0, 1.0]
    """
    if not isinstance(indices, Tensor):
        indices = tensor(indices, device=x.device)
    if not isinstance(src, Tensor):
        src = tensor(src, device=x.device, dtype=x.dtype)
    if src.dtype is not x.dtype:
        src = E.astype(src, x.dtype)
    axis = normalize_axis("scatter_add", axis, x.ndim)
    return record_site(apply(scatter_add_p, (x, indices, src), {"axis": axis}))


# -- joins ----------------------------------------------------------------------------

def _concat_meta(*xs, axis):
    first = xs[0]
    for t in xs[1:]:
        if t.ndim != first.ndim or builtins.any(a != b for i, (a, b) in enumerate(zip(t.shape, first.shape)) if i != axis):
            raise ShapeError(f"concat: shapes differ outside axis {axis} ({', '.join(describe(x) for x in xs)})")
    shape = list(first.shape)
    shape[axis] = builtins.sum(t.shape[axis] for t in xs)
    return TensorMeta(tuple(shape), first.dtype)


def _bw_concat(c, g):
    ax = c.attrs["axis"]
    out, start = [], 0
    for t in c.inputs:
        n = t.shape[ax]
        sl = [slice(None)] * g.ndim
        sl[ax] = slice(start, start + n)
        out.append(_slice(g, sl))
        start += n
    return tuple(out)


concat_p = primitive("concat", MOVEMENT, _concat_meta)
concat_p.backward = _bw_concat


def concat(arrays, /, *, axis=0) -> Tensor:
    """Join tensors along an existing axis (``axis=None`` flattens first).

    Example:
        >>> import burn
        >>> assert burn.concat([burn.ones((2, 1)), burn.zeros((2, 2))], axis=1).shape == (2, 3)
    """
    arrays = list(arrays)
    if not arrays:
        raise ShapeError("concat: needs at least one tensor")
    if axis is None:
        arrays = [reshape(a, (-1,)) for a in arrays]
        axis = 0
    d = dt.result_type(*[a.dtype for a in arrays])
    arrays = [a if a.dtype is d else E.astype(a, d) for a in arrays]
    axis = normalize_axis("concat", axis, arrays[0].ndim)
    if len(arrays) == 1:
        return arrays[0]
    return apply(concat_p, tuple(arrays), {"axis": axis})


concatenate = concat


def stack(arrays, /, *, axis=0) -> Tensor:
    """Join tensors of one shape along a new axis.

    Example:
        >>> import burn
        >>> assert burn.stack([burn.ones((3,)), burn.zeros((3,))], axis=1).shape == (3, 2)
    """
    arrays = list(arrays)
    if not arrays:
        raise ShapeError("stack: needs at least one tensor")
    for a in arrays[1:]:
        if a.shape != arrays[0].shape:
            raise ShapeError(f"stack: all tensors need one shape ({', '.join(describe(x) for x in arrays)})")
    return concat([expand_dims(a, axis=axis) for a in arrays], axis=axis)


def unstack(x, /, *, axis=0) -> tuple:
    """Split along ``axis`` into tensors without that axis.

    Example:
        >>> import burn
        >>> a, b = burn.unstack(burn.zeros((2, 3)))
        >>> assert a.shape == (3,)
    """
    axis = normalize_axis("unstack", axis, x.ndim)
    return tuple(getitem(x, (slice(None),) * axis + (i,)) for i in range(x.shape[axis]))


def split(x, indices_or_sections, /, *, axis=0) -> list:
    """numpy ``split``: equal sections, or at the given indices.

    Example:
        >>> import burn
        >>> a, b = burn.split(burn.arange(6), 2)
        >>> assert b.tolist() == [3, 4, 5]
    """
    axis = normalize_axis("split", axis, x.ndim)
    n = x.shape[axis]
    if isinstance(indices_or_sections, (int, np.integer)):
        k = int(indices_or_sections)
        if k <= 0 or n % k:
            raise ShapeError(f"split: axis {axis} of {describe(x)} does not divide into {k} equal sections")
        bounds = [i * (n // k) for i in range(k + 1)]
    else:
        bounds = [0] + [int(i) for i in indices_or_sections] + [n]
    out = []
    for a, b in zip(bounds[:-1], bounds[1:]):
        sl = [slice(None)] * x.ndim
        sl[axis] = slice(a, b)
        out.append(_slice(x, sl))
    return out


def _pad_meta(x, *, pad_width, value):
    return TensorMeta(tuple(s + a + b for s, (a, b) in zip(x.shape, pad_width)), x.dtype)


def _bw_pad(c, g):
    x = c.inputs[0]
    sl = [slice(a, a + s) for s, (a, _) in zip(x.shape, c.attrs["pad_width"])]
    return (_slice(g, sl),)


pad_p = primitive("pad", MOVEMENT, _pad_meta)
pad_p.backward = _bw_pad


def pad(x, /, pad_width, *, value=0) -> Tensor:
    """Constant padding, numpy ``pad_width`` convention (``((before, after), ...)``).

    Example:
        >>> import burn
        >>> assert burn.pad(burn.ones((2,)), ((1, 2),)).tolist() == [0.0, 1.0, 1.0, 0.0, 0.0]
    """
    pw = np.broadcast_to(np.asarray(pad_width, dtype=np.int64).reshape(-1, 2) if np.ndim(pad_width) else
                         np.asarray([[pad_width, pad_width]]), (x.ndim, 2)) if x.ndim else np.zeros((0, 2), np.int64)
    if (pw < 0).any():
        raise ShapeError(f"pad: negative pad widths {pad_width}")
    return apply(pad_p, (x,), {"pad_width": tuple((int(a), int(b)) for a, b in pw), "value": value})


def roll(x, /, shift, *, axis=None) -> Tensor:
    """Roll elements along ``axis`` (flattened if None).

    Example:
        >>> import burn
        >>> assert burn.roll(burn.arange(4), 1).tolist() == [3, 0, 1, 2]
        >>> assert burn.roll(burn.eye(2), 1, axis=(0, 1)).tolist() == [[1.0, 0.0], [0.0, 1.0]]
    """
    if axis is None:
        return reshape(roll(reshape(x, (-1,)), shift, axis=0), x.shape)
    shifts = (shift,) if isinstance(shift, (int, np.integer)) else tuple(shift)
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    if len(shifts) != len(axes):
        # numpy broadcasts one shift over every axis (or one axis over every shift)
        if len(shifts) == 1:
            shifts = shifts * len(axes)
        elif len(axes) == 1:
            axes = axes * len(shifts)
        else:
            raise ShapeError(f"roll: {len(shifts)} shifts for {len(axes)} axes ({describe(x)})")
    for s, a in zip(shifts, axes):
        a = normalize_axis("roll", a, x.ndim)
        n = x.shape[a]
        if n == 0:
            continue
        s %= n
        if s:
            lo = [slice(None)] * x.ndim
            hi = [slice(None)] * x.ndim
            lo[a] = slice(n - s, n)
            hi[a] = slice(0, n - s)
            x = concat([_slice(x, lo), _slice(x, hi)], axis=a)
    return x


def tile(x, /, repetitions) -> Tensor:
    """Repeat the whole tensor ``repetitions`` times per axis.

    Example:
        >>> import burn
        >>> assert burn.tile(burn.tensor([1, 2]), (2,)).tolist() == [1, 2, 1, 2]
    """
    reps = tuple(repetitions) if not isinstance(repetitions, int) else (repetitions,)
    nd = builtins.max(x.ndim, len(reps))
    reps = (1,) * (nd - len(reps)) + reps
    x = reshape(x, (1,) * (nd - x.ndim) + x.shape)
    inter = []
    for r, s in zip(reps, x.shape):
        inter += [1, s]
    y = _broadcast(reshape(x, tuple(inter)), tuple(v for r, s in zip(reps, x.shape) for v in (r, s)))
    return reshape(y, tuple(r * s for r, s in zip(reps, x.shape)))


def repeat(x, repeats, /, *, axis=None) -> Tensor:
    """Repeat each element ``repeats`` times along ``axis`` (flattened if None).

    ``repeats`` is an int, or one count per element along ``axis`` (a tensor,
    list or array); counts make a data-dependent shape, so they are read (their
    pending work flushed) at the call.

    Example:
        >>> import burn
        >>> assert burn.repeat(burn.tensor([1, 2]), 2).tolist() == [1, 1, 2, 2]
        >>> assert burn.repeat(burn.tensor([1, 2, 3]), burn.tensor([0, 2, 1])).tolist() == [2, 2, 3]
    """
    if axis is None:
        x = reshape(x, (-1,))
        axis = 0
    axis = normalize_axis("repeat", axis, x.ndim)
    if not isinstance(repeats, (int, np.integer)):
        counts = np.asarray(repeats.numpy() if isinstance(repeats, Tensor) else repeats)
        if counts.ndim == 0:
            repeats = int(counts)
        else:
            if counts.dtype.kind not in "iu" or counts.ndim != 1 or counts.shape[0] not in (1, x.shape[axis]):
                raise ShapeError(f"repeat: repeats must be an int or 1-D integer counts of length 1 or "
                                 f"{x.shape[axis]} (axis {axis} of {describe(x)}), got {counts.dtype} "
                                 f"of shape {counts.shape}")
            if (counts < 0).any():
                raise ValueError(f"repeat: counts must be non-negative, got {counts.tolist()}")
            if counts.shape[0] == 1:
                repeats = int(counts[0])
            else:
                idx = np.repeat(np.arange(x.shape[axis], dtype=np.int64), counts)
                return take(x, tensor(idx, device=x.device), axis=axis)
    y = expand_dims(x, axis + 1)
    shape = list(y.shape)
    shape[axis + 1] = int(repeats)
    y = _broadcast(y, tuple(shape))
    out = list(x.shape)
    out[axis] *= int(repeats)
    return reshape(y, tuple(out))


def _tri(x, k, upper):
    n, m = x.shape[-2], x.shape[-1]
    rows = reshape(arange(n, device=x.device), (n, 1))
    cols = reshape(arange(m, device=x.device), (1, m))
    mask = (cols - rows >= k) if upper else (cols - rows <= k)
    return E.where(mask, x, False if x.dtype.is_bool else 0)


def tril(x, /, *, k=0) -> Tensor:
    """Lower triangle of the last two axes (zeros above diagonal ``k``).

    Example:
        >>> import burn
        >>> assert burn.tril(burn.ones((2, 2))).tolist() == [[1.0, 0.0], [1.0, 1.0]]
        >>> assert burn.tril(burn.ones((2, 2), dtype=burn.bool)).dtype is burn.bool
    """
    return _tri(x, k, upper=False)


def triu(x, /, *, k=0) -> Tensor:
    """Upper triangle of the last two axes.

    Example:
        >>> import burn
        >>> assert burn.triu(burn.ones((2, 2))).tolist() == [[1.0, 1.0], [0.0, 1.0]]
    """
    return _tri(x, k, upper=True)
