"""Index keys: how a numpy-style key (ints, slices, None, Ellipsis, integer/bool arrays and
tensors) becomes the hashable spec the index primitives record, what shape it selects,
and how a backend that indexes through strides reads it (:func:`strided_index_plan`).
The index ops themselves (getitem, index_put, take, ...) are in :mod:`burn.ops.movement`.
"""
from __future__ import annotations

import builtins

import numpy as np

from .. import dtypes as dt
from ..errors import BurnError, DTypeError, ShapeError, describe
from ..primitives import TensorMeta
from ..tensor import Tensor
from .creation import tensor

__all__ = ["build_numpy_index", "strided_index_plan"]


def _is_basic(k):
    return k is None or k is Ellipsis or isinstance(k, (slice, int, np.integer)) and not isinstance(k, (bool, np.bool_))


def _is_bool_scalar(k):
    if k is True or k is False or isinstance(k, np.bool_):
        return True
    return isinstance(k, (Tensor, np.ndarray)) and k.ndim == 0 and (k.dtype is dt.bool_ or k.dtype == np.bool_)


def scalar_bool_key(op, key, ndim):
    """numpy's 0-d boolean index: ``x[True]`` is ``x[None]``, and ``x[False]`` the same
    with that new axis of length 0. Returns ``(key with None in its place, the output
    axis it makes, its value)``, or None when the key has no 0-d boolean. The value is
    read (a tensor mask is flushed): the output shape depends on it.

    Example:
        >>> from burn.ops.index_keys import scalar_bool_key
        >>> assert scalar_bool_key("getitem", (slice(None), False), 2) == ((slice(None), None), 1, False)
    """
    pos = [i for i, k in enumerate(key) if _is_bool_scalar(k)]
    if not pos:
        return None
    i = pos[0]
    if len(pos) > 1 or not builtins.all(_is_basic(k) for j, k in enumerate(key) if j != i):
        raise BurnError(f"{op}: a 0-d boolean index goes with basic indices only (ints, slices, None, "
                        f"Ellipsis), and once; got {key!r}")
    k = key[i]
    value = bool(k.item()) if isinstance(k, (Tensor, np.ndarray)) else bool(k)
    new = key[:i] + (None,) + key[i + 1:]
    n_real = builtins.sum(1 for k in new if k is not None and k is not Ellipsis)
    axis = 0
    for k in new[:i]:
        if k is Ellipsis:
            axis += ndim - n_real
        elif k is None or isinstance(k, slice):
            axis += 1
    return new, axis, value


def _expand_ellipsis(op, key, ndim, x):
    n_real = builtins.sum(1 for k in key if k is not None and k is not Ellipsis and not (
        isinstance(k, (Tensor, np.ndarray)) and getattr(k, "dtype", None) in (dt.bool_, np.bool_) and False))
    n_ell = builtins.sum(1 for k in key if k is Ellipsis)
    if n_ell > 1:
        raise ShapeError(f"{op}: an index can only have a single ellipsis")
    if n_real > ndim:
        raise ShapeError(f"{op}: too many indices ({n_real}) for {describe(x)}")
    out = []
    for k in key:
        if k is Ellipsis:
            out.extend([slice(None)] * (ndim - n_real))
        else:
            out.append(k)
    if not n_ell:
        out.extend([slice(None)] * (ndim - n_real))
    return out


def _index_spec(x, key):
    """Turn a key with arrays into (spec, tensor inputs); spec items are hashable."""
    spec, inputs = [], []
    for k in key:
        if isinstance(k, (list, np.ndarray)) or isinstance(k, Tensor):
            t = k if isinstance(k, Tensor) else tensor(np.asarray(k), device=x.device)
            if t.dtype.is_bool:
                # data-dependent shape: read the mask now and index by its positions
                idx = np.nonzero(t.numpy())
                for a in idx:
                    spec.append(("t", len(inputs)))
                    inputs.append(tensor(a.astype(np.int64), device=x.device))
                continue
            if not t.dtype.is_integer:
                raise DTypeError(f"getitem: index arrays must be integer or bool, got {describe(t)}")
            if t.device != x.device:
                t = t.to_device(x.device)
            spec.append(("t", len(inputs)))
            inputs.append(t)
        elif k is None:
            spec.append(("n",))
        elif k is Ellipsis:
            spec.append(("e",))
        elif isinstance(k, slice):
            spec.append(("s", k.start, k.stop, k.step))
        elif isinstance(k, (int, np.integer)):
            spec.append(("i", int(k)))
        else:
            raise BurnError(f"getitem: unsupported index {k!r} of type {type(k).__name__}")
    return tuple(spec), inputs


def build_numpy_index(spec, arrays):
    """The numpy index for an index spec and its index arrays (used by kernels).

    Example:
        >>> import numpy as np
        >>> from burn.ops.index_keys import build_numpy_index
        >>> idx = build_numpy_index((("s", 1, None, None), ("t", 0)), [np.array([0, 2])])
        >>> assert np.arange(12).reshape(3, 4)[idx].tolist() == [[4, 6], [8, 10]]
    """
    out = []
    for s in spec:
        tag = s[0]
        if tag == "t":
            out.append(arrays[s[1]])
        elif tag == "n":
            out.append(None)
        elif tag == "e":
            out.append(Ellipsis)
        elif tag == "s":
            out.append(slice(s[1], s[2], s[3]))
        else:
            out.append(s[1])
    return tuple(out)


def strided_index_plan(spec, shape, strides, base=0, op="index"):
    """How ``x[key]`` reads an ``x`` of ``shape`` and element ``strides`` starting at ``base``,
    for backends that index through strides: ``(base, basic, adv, where)``.

    ``base`` is the offset with every int index and slice start applied; ``basic`` lists
    ``(size, stride, position)`` per view dimension (slices, ``None``); ``adv`` lists
    ``(index array number, axis, axis size, stride)`` per index tensor; ``where`` is the
    position of the index arrays' broadcast dimensions in numpy's result (0 unless the
    advanced indices, ints included, are adjacent).

    Example:
        >>> from burn.ops.index_keys import strided_index_plan
        >>> spec = (("s", 1, None, None), ("t", 0))         # x[1:, idx] of a 3x4 array
        >>> assert strided_index_plan(spec, (3, 4), (4, 1)) == (4, [(2, 4, 0)], [(0, 1, 4, 1)], 1)
    """
    n_consume = sum(1 for s in spec if s[0] in ("i", "s", "t"))
    items = []
    for s in spec:
        if s[0] == "e":
            items.extend([("s", None, None, None)] * (len(shape) - n_consume))
        else:
            items.append(s)
    items.extend([("s", None, None, None)] * (len(shape) - sum(1 for s in items if s[0] in ("i", "s", "t"))))
    has_adv = any(s[0] == "t" for s in items)
    basic, adv, adv_pos = [], [], []
    d = 0
    for pos, s in enumerate(items):
        tag = s[0]
        if tag == "n":
            basic.append((1, 0, pos))
            continue
        size, st = shape[d], strides[d]
        if tag == "i":
            k = s[1]
            if not -size <= k < size:       # core's meta rule catches it first; kept for direct calls
                raise ShapeError(f"{op}: index {k} is out of bounds for axis {d} with size {size}")
            base += (k % size) * st
            if has_adv:
                adv_pos.append(pos)         # an int among index arrays is one of them for numpy
        elif tag == "s":
            a, b, c = slice(s[1], s[2], s[3]).indices(size)
            n = len(range(a, b, c))
            if n:
                base += a * st
            basic.append((n, st * c, pos))
        else:
            adv.append((s[1], d, size, st))
            adv_pos.append(pos)
        d += 1
    adjacent = bool(adv_pos) and adv_pos == list(range(adv_pos[0], adv_pos[-1] + 1))
    where = sum(1 for _, _, p in basic if p < adv_pos[0]) if adjacent else 0
    return base, basic, adv, where


def _index_meta(x, *idx, spec):
    dummy = np.lib.stride_tricks.as_strided(np.zeros(1, np.int8), shape=x.shape, strides=(0,) * x.ndim)
    arrays = [np.zeros(t.shape, dtype=np.intp) for t in idx]
    try:
        shape = dummy[build_numpy_index(spec, arrays)].shape
    except IndexError as e:
        raise ShapeError(f"getitem: {e} ({describe(x)})") from None
    return TensorMeta(tuple(shape), x.dtype)


def _index_add_meta(g, *idx, spec, shape):
    return TensorMeta(shape, g.dtype)


def _index_put_meta(x, v, *idx, spec):
    target = _index_meta(x, *idx, spec=spec).shape
    if v.dtype is not x.dtype:
        raise DTypeError(f"setitem: value dtype {v.dtype} differs from the tensor's ({describe(x)})")
    if v.ndim > len(target) or builtins.any(a != b and a != 1 for a, b in zip(reversed(v.shape), reversed(target))):
        raise ShapeError(f"setitem: value of shape {v.shape} cannot be broadcast to the selection of "
                         f"shape {target} ({describe(x)})")
    return TensorMeta(x.shape, x.dtype)
