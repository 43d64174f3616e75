"""Dialects: what differs between the C-like kernel languages burn generates.

The element-wise renderer (:mod:`burn.codegen.elementwise`) writes plain C
expressions; a :class:`Dialect` supplies the spelling of everything that
differs per target: scalar type names, how a kernel is declared, how a
thread finds its index (flat, or as work-group / block and local index), and
address-space qualifiers. burn-wgpu renders with
:data:`OPENCL`, burn-cuda with :data:`CUDA`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from ..errors import DTypeError

__all__ = ["Dialect", "OPENCL", "CUDA", "DTYPE_INFO", "sum_dtype"]

# burn dtype name -> (kind, itemsize); kind: "f" float, "i" signed, "u" unsigned, "b" bool,
# "c" complex (a two-component vector of its part type: burn.codegen.complex)
DTYPE_INFO = {
    "bool": ("b", 1), "uint8": ("u", 1), "uint16": ("u", 2), "uint32": ("u", 4), "uint64": ("u", 8),
    "int8": ("i", 1), "int16": ("i", 2), "int32": ("i", 4), "int64": ("i", 8),
    "float16": ("f", 2), "bfloat16": ("f", 2), "float32": ("f", 4), "float64": ("f", 8),
    "complex64": ("c", 8), "complex128": ("c", 16),
}


def sum_dtype(dtype: str) -> str:
    """The dtype sums, products and scans of ``dtype`` give (core's rule, restated for kernels):
    floats their own, unsigned integers uint64, signed integers and bool int64.

    >>> assert sum_dtype("uint8") == "uint64" and sum_dtype("int16") == "int64" and sum_dtype("float32") == "float32"
    """
    k = DTYPE_INFO[dtype][0]
    return dtype if k in "fc" else "uint64" if k == "u" else "int64"


@dataclass(frozen=True)
class Dialect:
    """How one target spells kernels.

    Example:
        >>> from burn.codegen import OPENCL, CUDA
        >>> assert OPENCL.ctype("int64") == "long" and CUDA.ctype("int64") == "long long"
        >>> assert "__kernel" in OPENCL.kernel_decl("k", ["int n"])
    """
    name: str
    types: dict
    kernel_prefix: str          # before "void name(...)"
    global_ptr: str             # qualifier of a pointer to device memory
    global_id: str              # expression of the flat thread index
    # work-group / block index, index inside it, its thread count (unsigned expressions);
    # empty: the dialect renders no kernel that needs them
    group_id: str = ""
    local_id: str = ""
    local_size: str = ""
    func_prefix: str = "inline"  # qualifiers of a helper function
    preamble: str = ""          # typedefs and pragmas every program starts with
    # register type of a dtype whose storage type has no arithmetic of its own (CUDA's
    # __half / __nv_bfloat16 compute in float: float32 accumulation, numpy's results)
    compute_types: dict = field(default_factory=dict)
    # (marker, line): a program whose source contains marker gets line after the preamble
    headers: tuple = ()
    # a complex value from its parts: OpenCL's vector literal, CUDA's make_float2/make_double2
    complex_ctor: str = "({T})({re}, {im})"

    def ctype(self, dtype: str) -> str:
        """The C type of a burn dtype name (bool is stored as one unsigned byte)."""
        try:
            return self.types[dtype]
        except KeyError:
            raise DTypeError(f"codegen ({self.name}): dtype {dtype} has no kernel type") from None

    def vtype(self, dtype: str) -> str:
        """The C type values of ``dtype`` are computed in (the storage type unless the
        dialect widens it: CUDA computes float16/bfloat16 in float)."""
        return self.compute_types.get(dtype) or self.ctype(dtype)

    def make(self, dtype: str, re: str, im: str) -> str:
        """The expression of the complex ``dtype`` value with parts ``re`` and ``im``.

        >>> from burn.codegen import OPENCL, CUDA
        >>> assert OPENCL.make("complex64", "a", "b") == "(float2)(a, b)"
        >>> assert CUDA.make("complex128", "a", "b") == "make_double2(a, b)"
        """
        return self.complex_ctor.format(T=self.ctype(dtype), re=re, im=im)

    def kernel_decl(self, name: str, params: list) -> str:
        """``<qualifiers> void name(params)``."""
        return f"{self.kernel_prefix} void {name}({', '.join(params)})"

    def ptr(self, dtype: str, const: bool = False) -> str:
        """A pointer type to device memory holding ``dtype``."""
        c = "const " if const else ""
        return f"{self.global_ptr}{c}{self.ctype(dtype)}*".lstrip()

    def literal(self, value: float, dtype: str) -> str:
        """A C literal of ``value`` in ``dtype`` (floats written exactly)."""
        kind = DTYPE_INFO[dtype][0]
        if kind == "c":
            part = "float32" if dtype == "complex64" else "float64"
            v = complex(value)
            return self.make(dtype, self.literal(v.real, part), self.literal(v.imag, part))
        if kind == "f":
            return f"(({self.ctype(dtype)}){float(value).hex()})" if value == value else f"(({self.ctype(dtype)})NAN)"
        v = int(value)
        if kind == "u" and v >= 0:
            return f"(({self.ctype(dtype)}){v}u)"       # a u suffix: 2^63 and above fit no signed literal
        if v < -(1 << 62):
            return f"(({self.ctype(dtype)})({v + 1} - 1))"   # -2^63 is no literal in C: -(2^63 - 1) - 1
        return f"(({self.ctype(dtype)}){v})"


OPENCL = Dialect(
    name="opencl",
    types={"bool": "uchar", "uint8": "uchar", "uint16": "ushort", "uint32": "uint", "uint64": "ulong",
           "int8": "char", "int16": "short", "int32": "int", "int64": "long",
           "float16": "half", "float32": "float", "float64": "double", "complex64": "float2",
           "complex128": "double2"},
    kernel_prefix="__kernel",
    global_ptr="__global ",
    global_id="get_global_id(0)",
    group_id="get_group_id(0)",
    local_id="get_local_id(0)",
    local_size="get_local_size(0)",
    func_prefix="inline",
    preamble="",
)

CUDA = Dialect(
    name="cuda",
    types={"bool": "unsigned char", "uint8": "unsigned char", "uint16": "unsigned short", "uint32": "unsigned int",
           "uint64": "unsigned long long", "int8": "signed char", "int16": "short", "int32": "int",
           "int64": "long long", "float16": "__half", "bfloat16": "__nv_bfloat16", "float32": "float",
           "float64": "double", "complex64": "float2", "complex128": "double2"},
    kernel_prefix='extern "C" __global__',
    global_ptr="",
    global_id="(blockIdx.x * blockDim.x + threadIdx.x)",
    group_id="blockIdx.x",
    local_id="threadIdx.x",
    local_size="blockDim.x",
    func_prefix="__device__ inline",
    # no toolkit header for NAN: NVRTC (CuPy) may run where math_constants.h is not installed
    preamble="#ifndef NAN\n#define NAN __int_as_float(0x7fc00000)\n#endif",
    compute_types={"float16": "float", "bfloat16": "float"},
    headers=(("__half", "#include <cuda_fp16.h>"), ("__nv_bfloat16", "#include <cuda_bf16.h>")),
    complex_ctor="make_{T}({re}, {im})",
)
