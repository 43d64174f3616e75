"""The native array of burn-wgpu: a strided view of a pooled device buffer.

``reshape`` (when strides allow), ``permute``, ``broadcast_to`` (stride 0) and
``slice`` (offset and scaled, possibly negative, strides) only change the
metadata; kernels read any view through its strides, and a copy is made
only where a kernel needs contiguous memory (``contiguous()``).
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from burn.codegen.layout import index_words, view_modes
from burn.codegen.layout import broadcast_strides as _broadcast_strides
from burn.codegen.layout import layout_pattern as _layout_pattern
from burn.errors import BurnError, DTypeError

NUMPY = {"bool": np.bool_, "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32, "uint64": np.uint64,
         "int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64,
         "float16": np.float16, "float32": np.float32, "float64": np.float64,
         # float2 / double2 in kernels (burn.codegen.complex); reductions, scans and matmul in
         # burn_wgpu.kernels.reduce.complex and kernels.linear
         "complex64": np.complex64, "complex128": np.complex128}

NP = {k: np.dtype(v) for k, v in NUMPY.items()}
# scalar kernel arguments: a bool is passed as uchar
_PARAM_NP = dict(NP, bool=np.dtype(np.uint8))

def is_complex(dtype) -> bool:
    """True for complex64 / complex128.

    >>> assert is_complex("complex64") and not is_complex("float32")
    """
    return dtype in ("complex64", "complex128")


def contiguous_strides(shape):
    st, acc = [], 1
    for s in reversed(shape):
        st.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(st))


def numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


class WTensor:
    """``block`` (a pool Block) viewed with ``shape``, ``strides`` and ``offset`` in elements."""

    __slots__ = ("block", "shape", "strides", "offset", "dtype", "dc", "__weakref__")

    def __init__(self, dc, block, shape, dtype: str, strides=None, offset=0):
        self.dc = dc
        self.block = block
        self.shape = tuple(shape)
        self.strides = contiguous_strides(self.shape) if strides is None else tuple(strides)
        self.offset = int(offset)
        self.dtype = dtype

    @property
    def buf(self):
        return self.block.buf

    @property
    def itemsize(self):
        return np.dtype(NUMPY[self.dtype]).itemsize

    @property
    def size(self):
        return numel(self.shape)

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def is_contiguous(self):
        if self.size <= 1:
            return True
        return all(st == c for st, c, s in zip(self.strides, contiguous_strides(self.shape), self.shape) if s != 1)

    def view(self, shape, strides, offset):
        return WTensor(self.dc, self.block, shape, self.dtype, strides, offset)

    def __repr__(self):
        return f"WTensor({self.dtype}, shape={self.shape}, strides={self.strides}, offset={self.offset})"


def dtype_reason(dtype: str, device_name: str, fp64: bool, fp16: bool) -> str | None:
    """None if an OpenCL device with these extensions holds ``dtype``, else why
    not and what to use instead.

    >>> assert dtype_reason("float32", "cpu", False, False) is None
    >>> assert "cl_khr_fp16" in dtype_reason("float16", "cpu", True, False)
    >>> assert "flex" in dtype_reason("bfloat16", "cpu", True, True)
    """
    if dtype == "bfloat16":
        # OpenCL C has no bfloat16 type on any device (no cl_khr extension defines one)
        return ("wgpu: OpenCL has no bfloat16 type; use float32 (or float16 where the device has "
                "cl_khr_fp16), or bfloat16 on flex or cuda")
    if dtype not in NUMPY:
        return f"wgpu: dtype {dtype} is not supported (supported: {', '.join(NUMPY)})"
    if dtype in ("float64", "complex128") and not fp64:
        return f"wgpu: {device_name.strip()} has no {dtype} (no cl_khr_fp64 extension); use float32"
    if dtype == "float16" and not fp16:
        return (f"wgpu: {device_name.strip()} has no float16 (no cl_khr_fp16 extension); use float32, "
                f"or float16 on flex or cuda")
    return None


def empty(dc, shape, dtype: str) -> WTensor:
    why = dtype_reason(dtype, dc.device.name, dc.fp64, dc.fp16)
    if why is not None:
        raise DTypeError(why)
    n = numel(shape)
    if n >= 2 ** 31:
        raise DTypeError(f"wgpu: tensors of 2**31 or more elements are not supported yet (shape {tuple(shape)})")
    try:
        block = dc.pool.alloc(n * np.dtype(NUMPY[dtype]).itemsize)
    except BurnError as e:
        raise type(e)(f"{e} [tensor of shape {tuple(shape)}, {dtype}]") from None
    if dc.recorder is not None:     # a pre-bound replay keeps every block its commands use
        dc.recorder.blocks.append(block)
    return WTensor(dc, block, shape, dtype)


def reshape_view(x: WTensor, shape):
    """A view of ``x`` with ``shape`` if its strides allow it without a copy, else None."""
    shape = tuple(shape)
    if x.is_contiguous:
        return x.view(shape, contiguous_strides(shape), x.offset)
    # merge x's dims into runs of contiguous memory, then split them as numpy does
    old = [(s, st) for s, st in zip(x.shape, x.strides) if s != 1]
    new_strides = []
    oi = 0
    ni = 0
    new = list(shape)
    while ni < len(new):
        if new[ni] == 1:
            new_strides.append(0)
            ni += 1
            continue
        if oi >= len(old):
            return None
        # take old dims until their product covers new dims
        osz, ost = old[oi]
        block_old = [old[oi]]
        oi += 1
        nsz = new[ni]
        block_new = [ni]
        ni += 1
        while osz != nsz:
            if osz < nsz:
                if oi >= len(old):
                    return None
                s, st = old[oi]
                if block_old[-1][1] != s * st:
                    return None
                block_old.append(old[oi])
                osz *= s
                oi += 1
            else:
                while ni < len(new) and new[ni] == 1:
                    ni += 1
                if ni >= len(new):
                    return None
                block_new.append(ni)
                nsz *= new[ni]
                ni += 1
        # strides for the new dims of this block: innermost old stride, growing outward
        st = block_old[-1][1]
        strides_block = {}
        for j in reversed(block_new):
            strides_block[j] = st
            st *= new[j]
        for j in range(block_new[0], ni):
            new_strides.append(strides_block.get(j, 0))
    if oi != len(old) or len(new_strides) != len(shape):
        return None
    return x.view(shape, tuple(new_strides), x.offset)


# -- views as kernels read them --------------------------------------------------------------

def broadcast_strides(x: WTensor, shape):
    """x's strides aligned to ``shape`` (stride 0 where x broadcasts).

    >>> class V: shape, strides = (3, 1), (1, 1)
    >>> assert broadcast_strides(V, (2, 3, 4)) == [0, 1, 0]
    """
    return _broadcast_strides(x.shape, x.strides, shape)


def index_struct(shape, views, strided=()):
    """The index struct of a generated kernel: [n, nd, shape..., per input (off, mode, strides...)].

    ``views`` are WTensors read as if broadcast to ``shape``; those at positions in
    ``strided`` always use their strides (a kernel relying on zero strides).

    >>> class V: shape, strides, offset, is_contiguous = (2, 3), (3, 1), 0, True
    >>> assert index_struct((2, 3), [V])["f0"] == 6
    """
    modes, strides = view_modes(shape, [(x.shape, x.strides, x.is_contiguous) for x in views], strided)
    v = index_words("wgpu", shape, numel(shape), modes, strides, [x.offset for x in views])
    return v.view(_struct_dtype(v.size))[0]


@lru_cache(maxsize=None)
def _struct_dtype(words):
    # named fields: the launcher reads nd (``f1``) back to pick the kernel variant
    return np.dtype([(f"f{i}", np.int32) for i in range(words)])


def layout_pattern(shape, inputs):
    """None if some input needs index arithmetic, else the bit pattern of broadcast scalars.

    >>> class V: shape, is_contiguous = (), True
    >>> assert layout_pattern((2, 3), [V]) == 1
    """
    return _layout_pattern(shape, [(x.shape, x.is_contiguous) for x in inputs])


def scalar_args(params):
    """Kernel arguments of ``(dtype, value)`` scalar parameters.

    >>> assert scalar_args([("float32", 2.0), ("bool", True)])[1] == 1
    """
    return [_PARAM_NP[d].type(v) for d, v in params]
