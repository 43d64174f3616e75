"""Data types: backend-neutral values, and the promotion rules between them.

A :class:`DType` is a name and a kind; each backend maps it to its native
dtype (numpy's for flex, with ``ml_dtypes`` for bfloat16). Promotion follows
the Array API standard inside a kind (int8 + int32 -> int32) and numpy for
bool; mixing integers with floats gives the float operand's dtype (as PyTorch
and JAX do) so that an int64 index never drags float32 work to float64.
"""
from __future__ import annotations

from .errors import DTypeError

__all__ = [
    "DType", "float16", "bfloat16", "float32", "float64", "int8", "int32",
    "int64", "uint8", "bool_", "complex64", "complex128", "as_dtype",
    "result_type", "default_float", "default_int",
]


class DType:
    """A tensor element type.

    Example:
        >>> import burn
        >>> assert burn.float32.itemsize == 4 and burn.float32.is_floating
    """

    __slots__ = ("name", "kind", "itemsize", "rank")

    def __init__(self, name: str, kind: str, itemsize: int, rank: int):
        self.name = name
        self.kind = kind          # 'b' bool, 'i' signed, 'u' unsigned, 'f' float, 'c' complex
        self.itemsize = itemsize
        self.rank = rank          # order inside the kind, for promotion

    @property
    def is_floating(self) -> bool:
        """True for real floating types (float16, bfloat16, float32, float64).

        Example:
            >>> import burn
            >>> assert burn.float16.is_floating and not burn.complex64.is_floating
        """
        return self.kind == "f"

    @property
    def is_complex(self) -> bool:
        """True for complex64 and complex128.

        Example:
            >>> import burn
            >>> assert burn.complex64.is_complex and not burn.float32.is_complex
        """
        return self.kind == "c"

    @property
    def is_integer(self) -> bool:
        """True for signed and unsigned integer types (not bool).

        Example:
            >>> import burn
            >>> assert burn.uint8.is_integer and not burn.bool.is_integer
        """
        return self.kind in "iu"

    @property
    def is_bool(self) -> bool:
        """True for the boolean type only.

        Example:
            >>> import burn
            >>> assert burn.bool.is_bool and not burn.int8.is_bool
        """
        return self.kind == "b"

    @property
    def is_inexact(self) -> bool:
        """True for floating and complex types: the ones that can have gradients.

        Example:
            >>> import burn
            >>> assert burn.complex128.is_inexact and not burn.int32.is_inexact
        """
        return self.kind in "fc"

    def __repr__(self) -> str:
        return f"burn.{self.name}"

    def __str__(self) -> str:
        return self.name

    def __reduce__(self):
        return (as_dtype, (self.name,))


bool_ = DType("bool", "b", 1, 0)
uint8 = DType("uint8", "u", 1, 0)
int8 = DType("int8", "i", 1, 0)
int32 = DType("int32", "i", 4, 2)
int64 = DType("int64", "i", 8, 3)
float16 = DType("float16", "f", 2, 0)
bfloat16 = DType("bfloat16", "f", 2, 0)
float32 = DType("float32", "f", 4, 2)
float64 = DType("float64", "f", 8, 3)
complex64 = DType("complex64", "c", 8, 2)
complex128 = DType("complex128", "c", 16, 3)

ALL = (bool_, uint8, int8, int32, int64, float16, bfloat16, float32, float64, complex64, complex128)
_BY_NAME = {d.name: d for d in ALL}
_BY_NAME.update({"bool_": bool_, "float": float32, "int": int64, "double": float64, "half": float16})

default_float = float32
default_int = int64


def as_dtype(obj) -> DType:
    """Turn a DType, its name, a numpy dtype or a Python type into a DType.

    Example:
        >>> import burn, numpy as np
        >>> assert burn.as_dtype("float32") is burn.float32
        >>> assert burn.as_dtype(np.dtype("int64")) is burn.int64
        >>> assert burn.as_dtype(float) is burn.float32
    """
    if isinstance(obj, DType):
        return obj
    if obj is float:
        return default_float
    if obj is int:
        return default_int
    if obj is bool:
        return bool_
    if obj is complex:
        return complex64
    name = getattr(obj, "name", None) or (obj if isinstance(obj, str) else None)
    if name is None:
        # numpy scalar types such as np.float32 have no .name but a dtype
        try:
            import numpy as np
            name = np.dtype(obj).name
        except Exception:
            name = None
    d = _BY_NAME.get(name) if name is not None else None
    if d is None:
        raise DTypeError(
            f"unknown dtype {obj!r}; use one of {', '.join(x.name for x in ALL)}")
    return d


_FLOAT_BY_SIZE = {2: float16, 4: float32, 8: float64}
_COMPLEX_FOR_FLOAT = {float16: complex64, bfloat16: complex64, float32: complex64, float64: complex128}


def _promote2(a: DType, b: DType) -> DType:
    if a is b:
        return a
    order = "buifc"
    ka, kb = order.index(a.kind), order.index(b.kind)
    if ka != kb:
        hi, lo = (a, b) if ka > kb else (b, a)
        if hi.kind == "c" and lo.kind == "f":
            return complex128 if (hi is complex128 or lo is float64) else complex64
        if hi.kind == "i" and lo.kind == "u":
            # uint8 with a signed int needs a wider signed type (numpy/Array API)
            return int32 if hi in (int8,) else hi if hi.itemsize > 1 else int32
        return hi
    if a.kind == "f" and {a, b} == {float16, bfloat16}:
        return float32
    return a if a.rank >= b.rank else b


def result_type(*dtypes: DType) -> DType:
    """The dtype an op on operands of these dtypes produces.

    Example:
        >>> import burn
        >>> assert burn.result_type(burn.int32, burn.float16) is burn.float16
        >>> assert burn.result_type(burn.float16, burn.bfloat16) is burn.float32
    """
    out = dtypes[0]
    for d in dtypes[1:]:
        out = _promote2(out, d)
    return out


def complex_of(d: DType) -> DType:
    """The complex dtype that holds values of float dtype ``d``."""
    return _COMPLEX_FOR_FLOAT.get(d, d)


def real_of(d: DType) -> DType:
    """The float dtype of a complex dtype's parts."""
    return float32 if d is complex64 else float64 if d is complex128 else d
