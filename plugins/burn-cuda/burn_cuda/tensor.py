"""Native tensors of burn-cuda: ``cupy.ndarray`` itself.

A CuPy array already is what burn needs from a native tensor: a device
buffer, a shape, byte strides (views of reshape/permute/slice/broadcast share
memory, negative and zero strides included) and ``__dlpack__``. The helpers
here translate its layout to the element strides the generated kernels read.
"""
from __future__ import annotations

import numpy as np

from burn.errors import DTypeError

# burn dtypes CuPy arrays hold (CuPy has no bfloat16 array type: bfloat16 is refused
# with a clear error instead of silently widening)
SUPPORTED = ("bool", "uint8", "int8", "int32", "int64", "float16", "float32", "float64", "complex64",
             "complex128")
NUMPY = {k: np.dtype(k if k != "bool" else np.bool_) for k in SUPPORTED}


def numpy_dtype(name: str) -> np.dtype:
    """The numpy dtype of a burn dtype name, or DTypeError.

    >>> assert numpy_dtype("float16") == np.float16
    """
    d = NUMPY.get(name)
    if d is None:
        hint = " (CuPy has no bfloat16 arrays; use float16 or float32 on cuda)" if name == "bfloat16" else ""
        raise DTypeError(f"cuda: dtype {name} is not supported{hint}; supported: {', '.join(SUPPORTED)}")
    return d


def dtype_name(x) -> str:
    """burn dtype name of a CuPy/numpy array's dtype.

    >>> assert dtype_name(np.zeros(1, np.bool_)) == "bool"
    """
    d = np.dtype(x.dtype)
    return "bool" if d == np.bool_ else d.name


def numel(shape) -> int:
    n = 1
    for s in shape:
        n *= int(s)
    return n


def elem_strides(x) -> tuple:
    """Strides of ``x`` in elements (CuPy keeps bytes).

    >>> assert elem_strides(np.zeros((2, 3), np.float32)) == (3, 1)
    """
    it = x.dtype.itemsize
    return tuple(s // it for s in x.strides)


def is_contiguous(x) -> bool:
    return bool(x.flags.c_contiguous)
