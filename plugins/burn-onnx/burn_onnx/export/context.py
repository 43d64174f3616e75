"""What an export rule works with: the node it maps (:class:`Node`), the values it reads
(:class:`Value`), sizes that follow a dynamic axis (:class:`Sym`), and the
:class:`ExportContext` that emits ONNX nodes and initializers.

A rule is ``rule(ctx, node) -> name or tuple of names`` (one ONNX value name per output of
the burn op). It emits ONNX nodes with ``ctx.op(...)`` and constants with ``ctx.const(...)``.

Example:
    >>> import numpy as np
    >>> from burn_onnx.export.context import ExportContext
    >>> ctx = ExportContext(opset=18)
    >>> y = ctx.op("Relu", ctx.const(np.ones(2, np.float32)))
    >>> assert ctx.nodes[0].op_type == "Relu" and y.startswith("Relu")
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import burn

from ..errors import OnnxExportError

__all__ = ["ExportContext", "Node", "Value", "Sym", "onnx_dtype", "INT64_MAX", "INT64_MIN"]

INT64_MAX = np.iinfo(np.int64).max
INT64_MIN = np.iinfo(np.int64).min

_DTYPES = {"bool": TensorProto.BOOL, "uint8": TensorProto.UINT8, "uint16": TensorProto.UINT16,
           "uint32": TensorProto.UINT32, "uint64": TensorProto.UINT64, "int8": TensorProto.INT8,
           "int16": TensorProto.INT16, "int32": TensorProto.INT32, "int64": TensorProto.INT64,
           "float16": TensorProto.FLOAT16, "bfloat16": TensorProto.BFLOAT16, "float32": TensorProto.FLOAT,
           "float64": TensorProto.DOUBLE}


def onnx_dtype(dtype, what="a value") -> int:
    """The ONNX element type (``onnx.TensorProto.FLOAT``...) of a burn dtype.

    Complex dtypes have no ONNX form that onnxruntime runs: they raise OnnxExportError.

    Example:
        >>> import burn, onnx
        >>> assert onnx_dtype(burn.float16) == onnx.TensorProto.FLOAT16
    """
    name = getattr(dtype, "name", str(dtype))
    t = _DTYPES.get(name)
    if t is None:
        raise OnnxExportError(f"burn.onnx.export: {what} has dtype {name}, which has no ONNX form onnxruntime "
                              f"runs (complex tensors are not exported); keep complex values inside the "
                              f"function or export real and imaginary parts (burn.real / burn.imag)")
    return t


class Sym:
    """A size that follows the dynamic axes: ``const + sum(coef * symbol)``, an integer
    linear expression found by tracing at several sizes.

    Example:
        >>> s = Sym(2, {"batch": 3})
        >>> assert s.eval({"batch": 4}) == 14 and str(s) == "2+3*batch"
    """
    __slots__ = ("const", "coefs")

    def __init__(self, const: int, coefs: dict):
        self.const = int(const)
        self.coefs = {k: int(v) for k, v in coefs.items() if v}

    def eval(self, sizes: dict) -> int:
        """The value at the given symbol sizes."""
        return self.const + sum(c * sizes[k] for k, c in self.coefs.items())

    def __str__(self):
        parts = [str(self.const)] if self.const else []
        parts += [f"{c}*{k}" if c != 1 else k for k, c in self.coefs.items()]
        return "+".join(parts) or "0"

    __repr__ = __str__


class Value:
    """A value a rule reads: its ONNX ``name``, burn ``dtype`` and ``shape`` (as traced;
    ``dims`` has a :class:`Sym` where a size follows a dynamic axis).

    Example:
        >>> import burn
        >>> v = Value("x", (2, 3), burn.float32)
        >>> assert v.ndim == 2 and v.dims == (2, 3)
    """
    __slots__ = ("name", "shape", "dtype", "dims")

    def __init__(self, name, shape, dtype, dims=None):
        self.name, self.shape, self.dtype = name, tuple(shape), dtype
        self.dims = tuple(dims) if dims is not None else tuple(shape)

    @property
    def ndim(self) -> int:
        """The number of axes."""
        return len(self.shape)

    @property
    def dynamic(self) -> bool:
        """True when a size follows a dynamic axis."""
        return any(isinstance(d, Sym) for d in self.dims)

    def __repr__(self):
        return f"Value({self.name}: {self.dtype}{list(self.dims)})"


class Node:
    """The burn op a rule maps: ``op``, ``attrs`` (as traced), ``inputs`` (:class:`Value` per
    tensor input), ``outputs`` (``(shape, dtype)`` per output, as traced) and ``out_dims``.

    For an extension op, ``args`` is its call's positional arguments with each tensor replaced
    by its :class:`Value` (``None`` stays ``None``) and ``kwargs`` its keyword arguments.
    ``dyn(attr)`` is an attribute with a :class:`Sym` where it follows a dynamic axis; reading
    such an attribute through ``attrs`` alone fails the export (the rule would bake the traced
    size in), so dynamic-aware rules read it with ``dyn``.

    Example:
        >>> import burn
        >>> n = Node("reshape", {"shape": (6,)}, [Value("x", (2, 3), burn.float32)], [((6,), burn.float32)])
        >>> assert n.dyn("shape") == (6,) and n.inputs[0].name == "x"
    """

    def __init__(self, op, attrs, inputs, outputs, *, varying=None, out_dims=None):
        self.op, self.attrs, self.inputs, self.outputs = op, dict(attrs), list(inputs), list(outputs)
        self.varying = dict(varying or {})
        self.out_dims = list(out_dims) if out_dims is not None else [tuple(s) for s, _ in outputs]
        self.read = set()
        tpl = self.attrs.get("template")
        if isinstance(tpl, tuple) and "kwargs" in self.attrs:
            it = iter(self.inputs)
            self.args = tuple(next(it) if _is_tensor_slot(a) else a for a in tpl)
            self.kwargs = dict(self.attrs["kwargs"])
        else:
            self.args, self.kwargs = tuple(self.inputs), {}

    def dyn(self, attr):
        """The attribute ``attr`` with :class:`Sym` leaves where it follows a dynamic axis."""
        self.read.add(attr)
        return self.varying.get(attr, self.attrs.get(attr))

    def unread_dynamic(self) -> list:
        """Attributes that follow a dynamic axis and that the rule did not read with ``dyn``."""
        return [a for a in self.varying if a not in self.read]


def _is_tensor_slot(a) -> bool:
    return type(a).__name__ == "_TensorSlot"


class ExportContext:
    """Collects the ONNX nodes and initializers of one export; rules call its methods.

    ``opset`` is the default-domain opset being written; ``symbols`` maps each dynamic axis
    name to ``(input name, axis)``.

    Example:
        >>> import numpy as np
        >>> ctx = ExportContext(opset=18)
        >>> c = ctx.const(np.array([1, 2], np.int64))
        >>> assert ctx.initializers[0].name == c
    """

    def __init__(self, opset: int = 18, symbols=None):
        self.opset = opset
        self.symbols = dict(symbols or {})
        self.nodes, self.initializers = [], []
        self._count = {}
        self._taken = set()
        self._inits = set()
        self._consts = {}
        self._sym_cache = {}
        self.current = None          # the burn op being mapped (for messages)
        self.values = {}             # initializer name -> numpy array (parameters, buffers, constants)
        self.options = {}            # export options rules read (qlora)

    def value(self, name: str):
        """The numpy value of initializer ``name`` (a parameter, buffer or constant), or None."""
        return self.values.get(name)

    def fresh(self, base: str) -> str:
        """A new unique value name starting with ``base``."""
        while True:
            n = self._count.get(base, 0)
            self._count[base] = n + 1
            name = f"{base}_{n}" if n else base
            if name not in self._taken:
                self._taken.add(name)
                return name

    def op(self, op_type: str, *inputs, outputs: int = 1, domain: str = "", **attrs):
        """Emit one ONNX node; returns its output name (a list when ``outputs`` > 1).
        An input ``None`` is an omitted optional input (written as "")."""
        names = [self.fresh(op_type) for _ in range(outputs)]
        ins = ["" if i is None else i for i in inputs]
        attrs = {k: v for k, v in attrs.items() if v is not None}
        self.nodes.append(helper.make_node(op_type, ins, names, domain=domain or None,
                                           name=self.fresh(f"n_{op_type}"), **attrs))
        return names[0] if outputs == 1 else names

    def const(self, array, name: str | None = None, dtype=None) -> str:
        """An initializer holding ``array`` (``dtype``: a burn dtype to convert to); small
        constants of equal value are shared."""
        arr = np.asarray(array)
        if dtype is not None:
            arr = _to_numpy_dtype(arr, dtype)
        key = None
        if name is None and arr.size <= 16:
            key = (arr.dtype.str, arr.shape, arr.tobytes(), getattr(dtype, "name", None))
            hit = self._consts.get(key)
            if hit is not None:
                return hit
        if name is None:
            name = self.fresh("c")
        elif name in self._inits:
            raise OnnxExportError(f"burn.onnx.export: two initializers are named {name!r}")
        self._taken.add(name)
        self._inits.add(name)
        self.initializers.append(make_tensor(arr, name, dtype))
        if key is not None:
            self._consts[key] = name
        return name

    def scalar(self, value, dtype) -> str:
        """A 0-d constant of burn ``dtype``."""
        return self.const(np.asarray(value), dtype=dtype)

    def ints(self, items) -> str:
        """An int64 1-D value from ints and :class:`Sym` sizes (computed from the inputs'
        shapes at run time where a size is dynamic)."""
        items = list(items)
        if not any(isinstance(i, Sym) for i in items):
            return self.const(np.asarray(items, dtype=np.int64).reshape(-1))
        parts = [self.sym(i) if isinstance(i, Sym) else self.const(np.asarray([i], np.int64)) for i in items]
        return parts[0] if len(parts) == 1 else self.op("Concat", *parts, axis=0)

    def sym(self, s: "Sym") -> str:
        """An int64 [1] value of a :class:`Sym` size."""
        key = str(s)
        hit = self._sym_cache.get(key)
        if hit is not None:
            return hit
        acc = None
        for k, c in s.coefs.items():
            inp, axis = self.symbols[k]
            d = self.op("Shape", inp, start=axis, end=axis + 1)
            term = d if c == 1 else self.op("Mul", d, self.const(np.asarray([c], np.int64)))
            acc = term if acc is None else self.op("Add", acc, term)
        if s.const:
            acc = self.op("Add", acc, self.const(np.asarray([s.const], np.int64)))
        self._sym_cache[key] = acc
        return acc

    def cast(self, name: str, dtype) -> str:
        """``name`` cast to burn ``dtype``."""
        return self.op("Cast", name, to=onnx_dtype(dtype))

    def fail(self, why: str) -> OnnxExportError:
        """The error for the op being mapped: names it and the opset."""
        op = self.current.op if self.current is not None else "?"
        return OnnxExportError(f"burn.onnx.export: op '{op}' at opset {self.opset}: {why}")


def _to_numpy_dtype(arr, dtype):
    name = getattr(dtype, "name", str(dtype))
    if name == "bfloat16":
        return np.asarray(arr, np.float32)
    return np.asarray(arr).astype(np.dtype(name))


def make_tensor(arr, name, dtype=None) -> onnx.TensorProto:
    """An ONNX TensorProto of a numpy array (bfloat16 written from float32 values)."""
    name_d = getattr(dtype, "name", None) or arr.dtype.name
    if name_d == "bfloat16":
        bits = (np.ascontiguousarray(arr, np.float32).view(np.uint32) + 0x7FFF
                + ((np.ascontiguousarray(arr, np.float32).view(np.uint32) >> 16) & 1)) >> 16
        t = helper.make_tensor(name, TensorProto.BFLOAT16, arr.shape, bits.astype(np.uint16).tobytes(), raw=True)
        return t
    return numpy_helper.from_array(np.array(arr, order="C"), name)


def burn_dtype_of(arr) -> "burn.DType":
    """The burn dtype of a numpy array."""
    return burn.dtypes.as_dtype(arr.dtype)
