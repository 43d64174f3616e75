"""Conformance cases: the integer dtypes of the Array API beyond burn's first four (int16,
uint16, uint32, uint64) through each family of ops: element-wise arithmetic, comparisons,
bitwise ops and shifts, reductions and scans, casts, indexing, sorting and creation, on
random values and on the extremes of each dtype (wrap-around, the top bit, which an
unsigned type must neither sign-extend nor shift arithmetically), against numpy.
"""
from __future__ import annotations

import numpy as np

import burn

from .._table import Arg, _add

NEW_INTS = ("int16", "uint16", "uint32", "uint64")


def _extremes(d):
    """Values at both ends of ``d``'s range and around the middle (the sign bit of an unsigned type)."""
    i = np.iinfo(d)
    mid = (int(i.max) + 1) // 2 if i.min == 0 else 0
    return np.array([i.min, i.min + 1, mid - 1, mid, mid + 1, i.max - 1, i.max, 3], dtype=d)


def _small(d, lo=0, hi=9, kind="real", shape=(2, 4)):
    return Arg(shape, d, lo if d.startswith("u") else -hi, hi, kind)


def _on_extremes(tag, d, fn, ref, out=None):
    """A case whose input is ``_extremes(d)`` made on the device, ``fn(x)`` vs ``ref(values)``."""
    _add(f"int-dtypes:{tag}[extremes,{d}]", tag, "forward",
         lambda device, d=d: fn(burn.tensor(_extremes(d), device=device)), (),
         lambda d=d: ref(_extremes(d)), out=out or d, needs_device=True)


def _elementwise(d):
    B = (_small(d), _small(d, 1, 5, "nonzero"))
    binary = [("add", burn.add, np.add), ("subtract", burn.subtract, np.subtract),
              ("multiply", burn.multiply, np.multiply), ("floor_divide", burn.floor_divide, np.floor_divide),
              ("remainder", burn.remainder, np.remainder), ("maximum", burn.maximum, np.maximum),
              ("bitwise_and", burn.bitwise_and, np.bitwise_and), ("bitwise_xor", burn.bitwise_xor, np.bitwise_xor)]
    for name, fn, ref in binary:
        _add(f"int-dtypes:{name}[{d}]", name, "forward", fn, B, ref)
    for name, fn, ref in [("equal", burn.equal, np.equal), ("less", burn.less, np.less)]:
        _add(f"int-dtypes:{name}[{d}]", name, "forward", fn, (_small(d, 0, 3), _small(d, 0, 3)), ref, out="bool")
    bits = 8 * np.dtype(d).itemsize
    shift = (_small(d, 0, 99), Arg((2, 4), d, 0, bits - 1, "index"))
    _add(f"int-dtypes:bitwise_left_shift[{d}]", "bitwise_left_shift", "forward", burn.bitwise_left_shift, shift,
         np.left_shift)
    _add(f"int-dtypes:bitwise_right_shift[{d}]", "bitwise_right_shift", "forward", burn.bitwise_right_shift,
         shift, np.right_shift)
    _add(f"int-dtypes:where[{d}]", "where", "forward", burn.where, (Arg((2, 4), "bool"),) + B, np.where)
    # the extremes: wrap-around, comparisons across the top bit, logical vs arithmetic shifts
    _on_extremes("add", d, lambda x: x + 1, lambda v: v + v.dtype.type(1))
    _on_extremes("multiply", d, lambda x: x * x, lambda v: v * v)
    _on_extremes("less", d, lambda x: x < x[3], lambda v: v < v[3], out="bool")
    _on_extremes("bitwise_right_shift", d, lambda x: x >> 3, lambda v: v >> v.dtype.type(3))
    _on_extremes("bitwise_left_shift", d, lambda x: x << 1, lambda v: v << v.dtype.type(1))
    _on_extremes("bitwise_invert", d, lambda x: ~x, np.invert)
    _on_extremes("floor_divide", d, lambda x: x // 7, lambda v: v // v.dtype.type(7))
    _on_extremes("negative", d, lambda x: -x, np.negative)
    _on_extremes("abs", d, burn.abs, np.abs)


def _reductions_and_casts(d):
    acc = "uint64" if d.startswith("u") else "int64"
    X = (_small(d, 0, 9, shape=(3, 4)),)
    _add(f"int-dtypes:sum[{d}]", "sum", "forward", lambda x: burn.sum(x, axis=1), X,
         lambda x: np.sum(x, axis=1), out=acc)
    _add(f"int-dtypes:prod[{d}]", "prod", "forward", lambda x: burn.prod(x, axis=0), X,
         lambda x: np.prod(x, axis=0), out=acc)
    _add(f"int-dtypes:cumulative_sum[{d}]", "cumulative_sum", "forward", lambda x: burn.cumulative_sum(x, axis=1),
         X, lambda x: np.cumsum(x, axis=1), out=acc)
    _add(f"int-dtypes:max[{d}]", "max", "forward", lambda x: burn.max(x, axis=0), X, lambda x: np.max(x, axis=0))
    _add(f"int-dtypes:argmin[{d}]", "argmin", "forward", lambda x: burn.argmin(x, axis=1), X,
         lambda x: np.argmin(x, axis=1), out="int64")
    _on_extremes("sum", d, lambda x: burn.sum(x), lambda v: np.sum(v, dtype=acc), out=acc)
    _on_extremes("max", d, lambda x: burn.max(x), np.max)
    _on_extremes("min", d, lambda x: burn.min(x), np.min)
    _on_extremes("argmax", d, lambda x: burn.argmax(x), np.argmax, out="int64")
    for to in ("float32", "int64", "int8", "bool"):
        _add(f"int-dtypes:astype[{d}->{to}]", "astype", "forward", lambda x, to=to: x.astype(burn.as_dtype(to)), X,
             lambda x, to=to: x.astype(to), out=to)
    for src in ("float32", "int64", "uint8"):
        _add(f"int-dtypes:astype[{src}->{d}]", "astype", "forward", lambda x, d=d: x.astype(burn.as_dtype(d)),
             (Arg((3, 4), src, 0, 60),), lambda x, d=d: x.astype(d), out=d)
    _on_extremes("astype", d, lambda x: x.astype(burn.float64), lambda v: v.astype(np.float64), out="float64")


def _indexing_and_creation(d):
    X = (_small(d, 0, 50, shape=(3, 5)),)
    _add(f"int-dtypes:slice[{d}]", "slice", "forward", lambda x: x[1:, ::2].T.reshape((-1,)), X,
         lambda x: x[1:, ::2].T.reshape(-1))
    _add(f"int-dtypes:take[{d}]", "take", "forward", lambda x: x[burn.tensor([2, 0, 2], device=x.device)], X,
         lambda x: x[[2, 0, 2]])
    _add(f"int-dtypes:setitem[{d}]", "index_put", "forward", _setitem, X, _setitem_ref)
    _add(f"int-dtypes:concat[{d}]", "concat", "forward", lambda x: burn.concat([x, x[:1]]), X,
         lambda x: np.concatenate([x, x[:1]]))
    _add(f"int-dtypes:sort[{d}]", "sort", "forward", lambda x: burn.sort(x, axis=1), X, lambda x: np.sort(x, axis=1))
    _on_extremes("sort", d, burn.sort, np.sort)
    _add(f"int-dtypes:arange[{d}]", "arange", "forward",
         lambda device, d=d: burn.arange(2, 11, 3, dtype=burn.as_dtype(d), device=device), (),
         lambda d=d: np.arange(2, 11, 3, dtype=d), out=d, needs_device=True)
    top = int(np.iinfo(d).max)
    _add(f"int-dtypes:full[{d}]", "full", "forward",
         lambda device, d=d, top=top: burn.full((2, 2), top, dtype=burn.as_dtype(d), device=device), (),
         lambda d=d, top=top: np.full((2, 2), top, dtype=d), out=d, needs_device=True)
    _add(f"int-dtypes:zeros[{d}]", "zeros", "forward",
         lambda device, d=d: burn.zeros((3,), dtype=burn.as_dtype(d), device=device), (),
         lambda d=d: np.zeros(3, dtype=d), out=d, needs_device=True)


def _setitem(x):
    y = x * 1
    y[0, 1:3] = 7
    return y


def _setitem_ref(x):
    y = x.copy()
    y[0, 1:3] = 7
    return y


def _promotion():
    # the standard's table for the new dtypes, spelled out (not computed)
    table = [("uint8", "int8", "int16"), ("uint8", "int16", "int16"), ("uint16", "int8", "int32"),
             ("uint16", "int16", "int32"), ("uint32", "int8", "int64"), ("uint32", "int32", "int64"),
             ("int8", "int16", "int16"), ("int16", "int32", "int32"), ("uint8", "uint16", "uint16"),
             ("uint16", "uint32", "uint32"), ("uint32", "uint64", "uint64"), ("bool", "uint16", "uint16"),
             ("int16", "float32", "float32"), ("uint64", "float64", "float64")]
    for a, b, r in table:
        _add(f"int-dtypes:add[promote,{a}+{b}]", "add", "forward", burn.add,
             (Arg((2, 3), a, 0, 3), Arg((2, 3), b, 0, 3)), np.add, out=r)


def _int_dtypes():
    for d in NEW_INTS:
        _elementwise(d)
        _reductions_and_casts(d)
        _indexing_and_creation(d)
    _promotion()
