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
    "DType", "float16", "bfloat16", "float32", "float64", "int8", "int16", "int32",
    "int64", "uint8", "uint16", "uint32", "uint64", "bool_", "complex64", "complex128", "as_dtype",
    "result_type", "can_cast", "default_float", "default_int",
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

    @property
    def dtype(self):
        """The matching numpy dtype, so that ``np.dtype(burn.float64)`` works (numpy reads
        a ``dtype`` attribute); bfloat16 is ml_dtypes' type.

        Example:
            >>> import burn, numpy as np
            >>> assert np.dtype(burn.float64) == np.float64 and burn.int8.dtype == np.int8
            >>> assert np.zeros(2, dtype=burn.float32).dtype == np.float32
        """
        import numpy as np
        if self is bfloat16:
            import ml_dtypes
            return np.dtype(ml_dtypes.bfloat16)
        return np.dtype(self.name)

    def __repr__(self) -> str:
        return f"burn.{self.name}"

    def __str__(self) -> str:
        return self.name

    def __reduce__(self):
        return (as_dtype, (self.name,))


bool_ = DType("bool", "b", 1, 0)
uint8 = DType("uint8", "u", 1, 0)
uint16 = DType("uint16", "u", 2, 1)
uint32 = DType("uint32", "u", 4, 2)
uint64 = DType("uint64", "u", 8, 3)
int8 = DType("int8", "i", 1, 0)
int16 = DType("int16", "i", 2, 1)
int32 = DType("int32", "i", 4, 2)
int64 = DType("int64", "i", 8, 3)
float16 = DType("float16", "f", 2, 0)
bfloat16 = DType("bfloat16", "f", 2, 0)
float32 = DType("float32", "f", 4, 2)
float64 = DType("float64", "f", 8, 3)
complex64 = DType("complex64", "c", 8, 2)
complex128 = DType("complex128", "c", 16, 3)

ALL = (bool_, uint8, uint16, uint32, uint64, int8, int16, int32, int64, float16, bfloat16, float32, float64, complex64, complex128)
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


def _no_signed_holds_uint64(a, b):
    raise DTypeError(f"result_type: no integer dtype holds both {a} and {b} (the Array API leaves "
                     f"uint64 with a signed integer undefined); cast one operand first, e.g. "
                     f"x.astype(burn.int64) or x.astype(burn.float64)")


# a signed operand of itemsize s with an unsigned one of itemsize u promote to the signed
# dtype of itemsize max(s, 2u) (the standard's table: uint8 + int8 -> int16, uint32 + int8 -> int64)
_SIGNED_HOLDING = {2: lambda a, b: int16, 4: lambda a, b: int32, 8: lambda a, b: int64,
                   16: _no_signed_holds_uint64}


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
            return _SIGNED_HOLDING[max(hi.itemsize, 2 * lo.itemsize)](a, b)
        return hi
    if a.kind == "f" and {a, b} == {float16, bfloat16}:
        return float32
    return a if a.rank >= b.rank else b


def _scalar_kind_dtype(value, like):
    """The dtype a Python scalar takes beside an operand of dtype ``like`` (the standard's
    rule: it takes ``like`` when its kind fits, else the default of its own kind)."""
    if isinstance(value, bool):
        return like if like is not None else bool_
    if isinstance(value, int):
        return like if like is not None and not like.is_bool else default_int
    if isinstance(value, float):
        return like if like is not None and like.is_inexact else default_float
    if like is not None and like.is_complex:
        return like
    return complex_of(like) if like is not None and like.is_floating else complex64


def result_type(*arrays_and_dtypes) -> DType:
    """The dtype an op on these operands produces (Array API ``result_type``).

    Operands may be dtypes, tensors (or anything with a ``dtype``) and Python
    scalars; a scalar takes the dtype of the others when its kind fits (an int
    beside float16 stays float16), as in an op with a tensor.

    Example:
        >>> import burn
        >>> assert burn.result_type(burn.int32, burn.float16) is burn.float16
        >>> assert burn.result_type(burn.float16, burn.bfloat16) is burn.float32
        >>> assert burn.result_type(burn.ones(2, dtype=burn.int8), burn.int32) is burn.int32
        >>> assert burn.result_type(burn.float16, 1.5, 2) is burn.float16
    """
    if len(arrays_and_dtypes) == 2:        # the binary ops' call: two dtypes, no scalars
        a, b = arrays_and_dtypes
        if type(a) is DType and type(b) is DType:
            return _promote2(a, b)
    out = None
    scalars = []
    for a in arrays_and_dtypes:
        if isinstance(a, DType):
            d = a
        elif isinstance(a, (bool, int, float, complex)):
            scalars.append(a)
            continue
        else:
            d = as_dtype(getattr(a, "dtype", a))
        out = d if out is None else _promote2(out, d)
    if out is None:
        raise TypeError("result_type: needs at least one array or dtype, got "
                        f"{', '.join(type(a).__name__ for a in arrays_and_dtypes) or 'no arguments'}")
    for v in scalars:
        out = _promote2(out, _scalar_kind_dtype(v, out))
    return out


def can_cast(from_, to, /) -> bool:
    """Whether promotion can turn ``from_`` (a dtype or tensor) into ``to`` without losing
    values (Array API ``can_cast``; numpy's "safe" casting).

    Example:
        >>> import burn
        >>> assert burn.can_cast(burn.int8, burn.int32) and not burn.can_cast(burn.int32, burn.int8)
        >>> assert burn.can_cast(burn.float32, burn.complex64) and not burn.can_cast(burn.float64, burn.complex64)
        >>> assert not burn.can_cast(burn.uint8, burn.int8)
    """
    a = from_ if isinstance(from_, DType) else as_dtype(getattr(from_, "dtype", from_))
    b = as_dtype(to)
    if a is b or a is bool_:
        return True
    if bfloat16 in (a, b):
        # numpy knows no bfloat16 casts; it holds 8 significant bits and float32's range
        if a is bfloat16:
            return b in (float32, float64, complex64, complex128)
        return a in (uint8, int8)
    import numpy as np
    return bool(np.can_cast(np.dtype(a.name), np.dtype(b.name), "safe"))


def complex_of(d: DType) -> DType:
    """The complex dtype that holds values of float dtype ``d``."""
    return _COMPLEX_FOR_FLOAT.get(d, d)


def real_of(d: DType) -> DType:
    """The float dtype of a complex dtype's parts."""
    return float32 if d is complex64 else float64 if d is complex128 else d
