"""The Array API's dtype and namespace inspection: ``finfo``, ``iinfo``, ``isdtype`` and
``__array_namespace_info__`` (capabilities, devices, the dtypes each device stores).

They answer with burn dtypes and Python scalars, as the standard asks (numpy's
``finfo`` gives numpy scalars and dtypes, which code written for the standard
compares with ``xp.float32`` and would get wrong).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from . import dtypes as dt
from .device import Device
from .dtypes import DType, as_dtype
from .errors import DTypeError
from .ops.creation import _default_device

__all__ = ["finfo", "iinfo", "isdtype", "__array_namespace_info__", "__array_api_version__"]

__array_api_version__ = "2024.12"


class finfo_object(NamedTuple):
    """Limits of a floating dtype: ``bits``, ``eps``, ``max``, ``min``, ``smallest_normal``
    (Python ints and floats) and ``dtype`` (a real burn dtype)."""
    bits: int
    eps: float
    max: float
    min: float
    smallest_normal: float
    dtype: DType


class iinfo_object(NamedTuple):
    """Limits of an integer dtype: ``bits``, ``max``, ``min`` (Python ints) and ``dtype``."""
    bits: int
    max: int
    min: int
    dtype: DType


def _dtype_of(type_):
    """A dtype, or the dtype of a tensor (anything with a ``dtype``)."""
    if isinstance(type_, DType):
        return type_
    return as_dtype(getattr(type_, "dtype", type_))


def finfo(type, /) -> finfo_object:  # noqa: A002  (the standard's parameter name)
    """Machine limits of a floating or complex dtype, or of a tensor's dtype.

    A complex dtype answers for its real parts (``finfo(complex64).dtype`` is
    float32), as the standard says.

    Example:
        >>> import burn
        >>> f = burn.finfo(burn.float32)
        >>> assert f.bits == 32 and f.dtype is burn.float32 and type(f.eps) is float
        >>> assert burn.finfo(burn.ones(2, dtype=burn.complex128)).dtype is burn.float64
    """
    d = _dtype_of(type)
    if not d.is_inexact:
        raise DTypeError(f"finfo: needs a floating or complex dtype, got {d} (use iinfo for integers)")
    d = dt.real_of(d)
    if d is dt.bfloat16:
        import ml_dtypes
        f = ml_dtypes.finfo(ml_dtypes.bfloat16)
    else:
        f = np.finfo(d.name)
    return finfo_object(int(f.bits), float(f.eps), float(f.max), float(f.min), float(f.smallest_normal), d)


def iinfo(type, /) -> iinfo_object:  # noqa: A002
    """Limits of an integer dtype, or of a tensor's dtype.

    Example:
        >>> import burn
        >>> i = burn.iinfo(burn.int8)
        >>> assert (i.min, i.max, i.bits, i.dtype) == (-128, 127, 8, burn.int8)
        >>> assert burn.iinfo(burn.arange(3)).max == 2 ** 63 - 1
    """
    d = _dtype_of(type)
    if not d.is_integer:
        raise DTypeError(f"iinfo: needs an integer dtype, got {d} (use finfo for floating dtypes)")
    i = np.iinfo(d.name)
    return iinfo_object(int(i.bits), int(i.max), int(i.min), d)


_KINDS = {
    "bool": lambda d: d.is_bool,
    "signed integer": lambda d: d.kind == "i",
    "unsigned integer": lambda d: d.kind == "u",
    "integral": lambda d: d.is_integer,
    "real floating": lambda d: d.is_floating,
    "complex floating": lambda d: d.is_complex,
    "numeric": lambda d: not d.is_bool,
}


def isdtype(dtype, kind) -> bool:
    """Whether ``dtype`` is of ``kind``: a dtype, one of the standard's kind names
    ("bool", "signed integer", "unsigned integer", "integral", "real floating",
    "complex floating", "numeric"), or a tuple of those.

    Example:
        >>> import burn
        >>> assert burn.isdtype(burn.float32, "real floating")
        >>> assert burn.isdtype(burn.uint8, ("bool", "unsigned integer"))
        >>> assert not burn.isdtype(burn.complex64, burn.float32)
    """
    if not isinstance(dtype, DType):
        raise TypeError(f"isdtype: expected a burn dtype, got {dtype!r}")
    if isinstance(kind, tuple):
        return any(isdtype(dtype, k) for k in kind)
    if isinstance(kind, DType):
        return dtype is kind
    test = _KINDS.get(kind) if isinstance(kind, str) else None
    if test is None:
        raise ValueError(f"isdtype: unknown kind {kind!r}; use a dtype or one of {', '.join(map(repr, _KINDS))}")
    return test(dtype)


class _NamespaceInfo:
    """What ``burn.__array_namespace_info__()`` returns: the standard's inspection API."""

    __slots__ = ()

    def capabilities(self) -> dict:
        """What burn supports of the standard's optional behaviours.

        Boolean-mask indexing and ``nonzero``-like functions have data-dependent
        output shapes: they read the mask (flushing the work that computes it).

        Example:
            >>> import burn
            >>> caps = burn.__array_namespace_info__().capabilities()
            >>> assert caps["boolean indexing"] and caps["max dimensions"] is None
        """
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": None}

    def default_device(self):
        """The device arrays are made on when none is named (``burn.Device.default()``,
        fixed at its first use).

        Example:
            >>> import burn
            >>> assert burn.__array_namespace_info__().default_device() == burn.ones(1).device
        """
        return _default_device()

    def default_dtypes(self, *, device=None) -> dict:
        """The dtypes creation functions use by default on ``device``.

        Example:
            >>> import burn
            >>> d = burn.__array_namespace_info__().default_dtypes()
            >>> assert d["real floating"] is burn.float32 and d["indexing"] is burn.int64
        """
        return {"real floating": dt.default_float, "complex floating": dt.complex_of(dt.default_float),
                "integral": dt.default_int, "indexing": dt.default_int}

    def devices(self) -> list:
        """Every device of every installed backend that can run here.

        Example:
            >>> import burn
            >>> assert burn.Device.flex() in burn.__array_namespace_info__().devices()
        """
        return Device.enumerate()

    def dtypes(self, *, device=None, kind=None) -> dict:
        """The standard's dtypes ``device`` (default: the default device) can store, by
        name, optionally only those of ``kind`` (as in :func:`isdtype`); burn's float16
        and bfloat16 are left out, as dtypes the standard does not define.

        Example:
            >>> import burn
            >>> info = burn.__array_namespace_info__()
            >>> assert info.dtypes(kind="signed integer") == {"int8": burn.int8, "int16": burn.int16,
            ...                                              "int32": burn.int32, "int64": burn.int64}
            >>> assert "float64" in info.dtypes(device=burn.Device.flex())
        """
        dev = self.default_device() if device is None else device if isinstance(device, Device) else Device(device)
        backend = dev.backend
        out = {}
        for d in dt.ALL:
            if d is dt.bfloat16 or d is dt.float16:
                continue    # not dtypes of the standard: code written for it does not expect them
            if kind is not None and not isdtype(d, kind):
                continue
            if backend.supports_dtype(d, dev.index):    # the answer tensor creation acts on
                out[d.name] = d
        return out


def __array_namespace_info__() -> _NamespaceInfo:
    """The Array API inspection namespace (``capabilities``, ``default_device``,
    ``default_dtypes``, ``devices``, ``dtypes``).

    Example:
        >>> import burn
        >>> info = burn.__array_namespace_info__()
        >>> assert info.dtypes(kind="bool") == {"bool": burn.bool}
    """
    return _INFO


_INFO = _NamespaceInfo()
