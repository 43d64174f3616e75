"""The case table of the conformance suite: how inputs are made (:class:`Arg`), what one
check is (:class:`Case`), and the list the case modules (``burn.testing._cases``) fill
with :func:`_add`. :mod:`burn.testing.conformance` runs the cases and re-exports these
names; it builds the table on first use.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

FLOATS = ("float16", "bfloat16", "float32", "float64")
INTS = ("int8", "int32", "int64", "uint8")
NUMERIC = FLOATS + INTS
ALL_DTYPES = NUMERIC + ("bool",)
COMPLEX = ("complex64", "complex128")

@dataclass(frozen=True)
class Arg:
    """How one tensor input is generated.

    ``kind`` picks the values: ``real`` (uniform in [low, high]), ``nonzero``
    (|x| in [0.25, high], random sign; positive if low >= 0), ``distinct`` (no
    ties, for max/argmax), ``index`` (integers in [low, high)), ``bool``,
    ``special`` (nan, +-inf, +-0 and ordinary values), ``halves`` (k + 0.5),
    ``sparse`` (rows with none, one, several zeros).
    ``const`` inputs are held fixed by the gradient check (non-float ones always
    are); ``autodiff`` inputs are made on ``device.autodiff()``.

    Example:
        >>> import numpy as np
        >>> v = Arg((2, 3), "int8", -3, 3).values(np.random.default_rng(0))
        >>> assert v.shape == (2, 3) and v.min() >= -3 and v.max() <= 3
    """
    shape: tuple = (2, 3)
    dtype: str = "float32"
    low: float = -2.0
    high: float = 2.0
    kind: str = "real"
    const: bool = False
    autodiff: bool = False

    @property
    def is_float(self) -> bool:
        """True for a real floating dtype.

        Example:
            >>> assert Arg((2,), "float64").is_float and not Arg((2,), "int32").is_float
        """
        return self.dtype in FLOATS

    def values(self, rng) -> np.ndarray:
        """float64 / int64 / bool values in this argument's domain (before the cast to ``dtype``).

        Args:
            rng: a ``numpy.random.Generator``; the same seed gives the same values.

        Example:
            >>> import numpy as np
            >>> v = Arg((4,), "float32", 0.0, 1.0).values(np.random.default_rng(0))
            >>> assert v.dtype == np.float64 and ((0.0 <= v) & (v <= 1.0)).all()
        """
        shape, n = self.shape, int(np.prod(self.shape, dtype=np.int64))
        lo, hi = self.low, self.high
        if self.dtype.startswith("uint"):
            lo = max(lo, 0)
        if self.dtype in COMPLEX:
            return rng.uniform(lo, hi, size=shape) + 1j * rng.uniform(lo, hi, size=shape)
        if self.dtype == "bool" or self.kind == "bool":
            return rng.random(shape) < 0.5
        if self.kind == "index":
            return rng.integers(int(lo), int(hi), size=shape).astype(np.int64)
        if self.kind == "special":
            pool = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.5, -2.25, 3.0])
            return np.resize(pool, n).reshape(shape)
        if self.kind == "sparse":   # row r of the last axis holds r zeros (mod its length + 1)
            v = rng.uniform(lo, hi, size=shape).reshape(-1, shape[-1])
            for r, row in enumerate(v):
                row[rng.permutation(shape[-1])[:r % (shape[-1] + 1)]] = 0.0
            return v.reshape(shape)
        if self.kind == "halves":
            return (rng.integers(-4, 4, size=shape) + 0.5).astype(np.float64)
        if self.kind == "distinct":
            v = np.linspace(lo, hi, max(n, 2))[:n]
            return rng.permutation(v).reshape(shape) if self.dtype in FLOATS else \
                rng.permutation(np.arange(n) + int(lo)).reshape(shape)
        if self.dtype in FLOATS:
            if self.kind == "nonzero":
                mag = rng.uniform(0.25, max(abs(hi), abs(lo)), size=shape)
                return mag if lo >= 0 else mag * rng.choice([-1.0, 1.0], size=shape)
            return rng.uniform(lo, hi, size=shape)
        if self.kind == "nonzero":
            mag = rng.integers(1, int(max(abs(hi), abs(lo))) + 1, size=shape)
            return mag if lo >= 0 else mag * rng.choice([-1, 1], size=shape)
        return rng.integers(int(math.ceil(lo)), int(math.floor(hi)) + 1, size=shape)



@dataclass(frozen=True)
class Case:
    """One conformance check.

    ``fn(*tensors)`` runs the op (``fn(*tensors, device=dev)`` when
    ``needs_device``); ``ref(*arrays)`` is the numpy reference on the same
    inputs (floats given as float64, integers and bools in their own dtype);
    ``out`` is the expected burn dtype name or a rule ``[dtype names] -> name``
    (default: the promoted dtype of the inputs); ``prop(values)`` replaces
    ``ref`` for random ops. ``check`` is ``forward``, ``grad`` (finite
    differences in float64) or ``error`` (``error`` class name, ``match``: text
    or texts the message must contain); ``differentiable`` says whether the op
    has a gradient check.

    Example:
        >>> from burn.testing.conformance import get_case
        >>> c = get_case("matmul[batched,float32]")
        >>> assert c.op == "matmul" and c.check == "forward"
    """
    name: str
    op: str
    check: str
    fn: Callable
    args: tuple = ()
    ref: Callable | None = None
    out: object = None
    tol: float = 1.0
    error: str | None = None
    match: str | None = None
    needs_device: bool = False
    prop: Callable | None = None
    differentiable: bool = False

    @property
    def dtypes(self) -> frozenset:
        """Names of the dtypes the case needs (inputs, a fixed output, float64 for a
        gradient check), so a backend without e.g. float64 can skip what it lacks.

        Example:
            >>> case = Case("doc_add", "add", "value", lambda a, b: a + b,
            ...             (Arg((2,), "float32"), Arg((2,), "int32")))
            >>> assert case.dtypes == {"float32", "int32"}
        """
        ds = {a.dtype for a in self.args}
        if isinstance(self.out, str):
            ds.add(self.out)
        if self.check == "grad":
            ds.add("float64")
        return frozenset(ds)

    def __repr__(self):
        return f"<conformance case {self.name}>"


_CASES: list = []
_BY_NAME: dict = {}


def _add(name, op, check, fn, args=(), ref=None, **kw):
    if name in _BY_NAME:
        raise ValueError(f"duplicate conformance case {name}")
    kw.setdefault("differentiable", check == "grad")
    c = Case(name=name, op=op, check=check, fn=fn, args=tuple(args), ref=ref, **kw)
    _CASES.append(c)
    _BY_NAME[name] = c
    return c
