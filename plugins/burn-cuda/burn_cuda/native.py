"""Native tensors of burn-cuda: ``cupy.ndarray`` itself.

A CuPy array already is what burn needs from a native tensor: a device
buffer, a shape, byte strides (views of reshape/permute/slice/broadcast share
memory, negative and zero strides included) and ``__dlpack__``. The helpers
here translate its layout to the element strides the generated kernels read.

bfloat16 arrays are ``ml_dtypes.bfloat16`` arrays, which CuPy holds from version 14 on
(cupy PR #9494) when ml_dtypes is installed: :func:`bfloat16_dtype` checks both the
first time a bfloat16 tensor meets the GPU and otherwise raises a DTypeError naming
what to upgrade (never a silent widening to float32).
"""
from __future__ import annotations

import re

import numpy as np

from burn.errors import DTypeError

# burn dtypes CuPy arrays hold (bfloat16 only with CuPy >= 14 and ml_dtypes)
SUPPORTED = ("bool", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64",
             "complex64", "complex128")
NUMPY = {k: np.dtype(k if k != "bool" else np.bool_) for k in SUPPORTED if k != "bfloat16"}

BF16_MIN_CUPY = 14
BF16_HINT = ("pip install -U 'cupy-cuda12x>=14' ml_dtypes (or cupy-cuda13x), i.e. burn-cuda[cuda12] / "
             "burn-cuda[cuda13]; or use float16/float32 on cuda")
_BF16 = None


def cupy_major(version: str) -> int:
    """The major version of a CuPy version string (0 if it has none).

    >>> assert cupy_major("14.0.0rc1") == 14 and cupy_major("13.6.0") == 13
    """
    m = re.match(r"\s*(\d+)", version or "")
    return int(m.group(1)) if m else 0


def bfloat16_dtype() -> np.dtype:
    """``ml_dtypes.bfloat16`` when the installed CuPy holds bfloat16 arrays (CuPy >= 14 with
    ml_dtypes importable), else a DTypeError saying what to upgrade."""
    global _BF16
    if _BF16 is not None:
        return _BF16
    from .runtime import load_cupy
    version = getattr(load_cupy(), "__version__", "")
    if cupy_major(version) < BF16_MIN_CUPY:
        raise DTypeError(f"cuda: bfloat16 needs CuPy >= {BF16_MIN_CUPY} with ml_dtypes; CuPy {version} is "
                         f"installed: {BF16_HINT}")
    try:
        import ml_dtypes
    except ImportError as e:
        raise DTypeError(f"cuda: bfloat16 needs the ml_dtypes package next to CuPy {version} ({e}): "
                         f"{BF16_HINT}") from None
    _BF16 = np.dtype(ml_dtypes.bfloat16)
    return _BF16


def numpy_dtype(name: str) -> np.dtype:
    """The numpy dtype of a burn dtype name, or DTypeError.

    >>> assert numpy_dtype("float16") == np.float16
    """
    d = NUMPY.get(name)
    if d is None:
        if name == "bfloat16":
            return bfloat16_dtype()
        raise DTypeError(f"cuda: dtype {name} is not supported; supported: {', '.join(SUPPORTED)}")
    return d


_NAMES: dict = {}


def dtype_name(x) -> str:
    """burn dtype name of a CuPy/numpy array's dtype.

    >>> assert dtype_name(np.zeros(1, np.bool_)) == "bool"
    """
    d = x.dtype
    n = _NAMES.get(d)
    if n is None:
        # numpy builds ``dtype.name`` in Python on every access (~5 us): kept per dtype
        d = np.dtype(d)
        n = _NAMES[d] = "bool" if d == np.bool_ else d.name
    return n


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
