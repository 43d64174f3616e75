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
