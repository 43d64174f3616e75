"""burn DType <-> numpy dtype (bfloat16 through ml_dtypes)."""
from __future__ import annotations

import numpy as np

import burn
from burn.errors import DTypeError

_NATIVE = {
    "bool": np.dtype(np.bool_), "uint8": np.dtype(np.uint8), "uint16": np.dtype(np.uint16),
    "uint32": np.dtype(np.uint32), "uint64": np.dtype(np.uint64), "int8": np.dtype(np.int8),
    "int16": np.dtype(np.int16), "int32": np.dtype(np.int32), "int64": np.dtype(np.int64), "float16": np.dtype(np.float16),
    "float32": np.dtype(np.float32), "float64": np.dtype(np.float64),
    "complex64": np.dtype(np.complex64), "complex128": np.dtype(np.complex128),
}


def native(dtype) -> np.dtype:
    """The numpy dtype for a burn DType."""
    d = _NATIVE.get(dtype.name)
    if d is None:
        if dtype is burn.bfloat16:
            import ml_dtypes
            d = _NATIVE["bfloat16"] = np.dtype(ml_dtypes.bfloat16)
        else:
            raise DTypeError(f"flex: dtype {dtype} is not supported")
    return d


# -- half precision: stored in 2 bytes, computed in float32 ---------------------------------
# numpy has no BLAS and few SIMD loops for float16, and ml_dtypes' bfloat16 ufuncs convert
# element by element (a bfloat16 matmul is ~60x a float32 one, a sum accumulates in
# bfloat16). So flex widens half inputs to float32 (exact), runs the float32 kernel, and
# rounds each result once to the half dtype (round-to-nearest-even), as the GPU backends'
# generated kernels do. Ops that only move elements keep the half arrays as they are.

_F32 = np.dtype(np.float32)
_MOVES = frozenset({"reshape", "permute", "broadcast_to", "slice", "slice_grad", "pad", "concat", "index",
                    "take_along_axis", "index_put", "where", "cast"})
# ops whose result depends on the half dtype's own bit layout (the next representable value):
# computed in float32 they would step by a float32 ulp, so they run on the half arrays as they are
HALF_NATIVE = frozenset({"nextafter"})


def half_dtypes() -> tuple:
    """The native half dtypes flex computes in float32: (float16, bfloat16).

    >>> assert np.dtype(np.float16) in half_dtypes()
    """
    return (_NATIVE["float16"], native(burn.bfloat16))


def widen(x):
    """A half array as float32 (exact); other arrays unchanged.

    >>> import ml_dtypes
    >>> assert widen(np.ones(2, ml_dtypes.bfloat16)).dtype == np.float32
    """
    d = x.dtype
    if d.itemsize != 2 or d.kind == "i" or d.kind == "u":
        return x
    if d == _NATIVE["float16"] or x.ndim == 0:      # (a ufunc on a 0-d array gives a numpy scalar)
        return x.astype(_F32)
    # bfloat16 is float32's upper half: a shift of the bits (faster than ml_dtypes' cast loop)
    return np.left_shift(x.view(np.uint16), 16, dtype=np.uint32).view(_F32)


def narrow(x, nd):
    """``x`` rounded once to the native dtype ``nd`` (round-to-nearest-even), or as is if it has it.

    >>> import ml_dtypes
    >>> r = narrow(np.array([1.0 + 2.0 ** -8], np.float32), np.dtype(ml_dtypes.bfloat16))
    >>> assert float(r[0]) == 1.0                  # a tie rounds to the even mantissa
    """
    x = np.asarray(x)
    return x if x.dtype == nd else x.astype(nd)


class HalfKernel:
    """A flex kernel run in float32 for a node with half-precision inputs: widens those inputs,
    calls the kernel, rounds the results the node declares half back once.

    >>> import ml_dtypes
    >>> bf = np.dtype(ml_dtypes.bfloat16)
    >>> k = HalfKernel(np.add, (True, True), (bf,))
    >>> assert k(np.ones(2, bf), np.ones(2, bf)).dtype == bf
    """

    __slots__ = ("fn", "wide", "outs", "__name__")

    def __init__(self, fn, wide, outs):
        self.fn = fn
        self.wide = tuple(i for i, w in enumerate(wide) if w)
        self.outs = outs            # per output: the native half dtype to round to, or None
        self.__name__ = getattr(fn, "__name__", "kernel") + "_in_float32"

    def __call__(self, *args, **attrs):
        args = list(args)
        for i in self.wide:
            args[i] = widen(args[i])
        r = self.fn(*args, **attrs)
        outs = self.outs
        if len(outs) == 1:
            nd = outs[0]
            if isinstance(r, (tuple, list)):
                r = r[0]
            return r if nd is None else narrow(r, nd)
        return tuple(x if nd is None else narrow(x, nd) for x, nd in zip(r, outs))


def adapt_half(fn, op, in_dtypes, out_dtypes):
    """``fn`` itself, or a :class:`HalfKernel` when a node of ``op`` reads float16/bfloat16 arrays
    (element moves excepted: they copy half arrays as they are).

    >>> import burn
    >>> assert adapt_half(np.add, "add", (burn.float32,) * 2, (burn.float32,)) is np.add
    >>> assert isinstance(adapt_half(np.add, "add", (burn.bfloat16,) * 2, (burn.bfloat16,)), HalfKernel)
    """
    if op in _MOVES or op in HALF_NATIVE:
        return fn
    wide = tuple(d.is_floating and d.itemsize == 2 for d in in_dtypes)
    if not any(wide):
        return fn
    outs = tuple(native(d) if d.is_floating and d.itemsize == 2 else None for d in out_dtypes)
    return HalfKernel(fn, wide, outs)
