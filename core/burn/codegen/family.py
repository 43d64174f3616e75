"""Per-op kernel families: one program per dtype signature holding ``k_<op>`` for every
element-wise op of that signature (what a backend compiles for single, unfused ops).

Example:
    >>> from burn.codegen import OPENCL
    >>> names = [k.name for k in family_kernels(("float32",), "float32", OPENCL)]
    >>> assert "k_exp" in names and "k_add" not in names
"""
from __future__ import annotations

from .dialect import Dialect
from .elementwise import BINARY, UNARY, out_dtype, render_group

ARITY = {op: 1 for op in UNARY}
ARITY.update({op: 2 for op in BINARY})
ARITY.update({"cast": 1, "clip": 1, "where": 3, "full": 0})
# attributes a family kernel is rendered with: their values are run-time kernel arguments
RENDER_ATTRS = {"cast": lambda out: {"dtype": out}, "full": lambda out: {"dtype": out, "value": 0},
                "clip": lambda out: {"min": 0, "max": 0}}


def family_patterns(arity):
    """Layout patterns with a kernel without index arithmetic: every mix of contiguous
    inputs and broadcast scalars except all-scalar (one element: the general kernel is fine).

    >>> assert family_patterns(2) == (0, 1, 2) and family_patterns(0) == (0,)
    """
    return tuple(p for p in range(1 << arity) if arity == 0 or p != (1 << arity) - 1)


def family_kernels(in_dtypes: tuple, out: str, dialect: Dialect, unrolled: bool = False,
                    vector: bool = False) -> list:
    """RenderedKernels ``k_<op>`` of every element-wise op of this dtype signature (with
    their ``k_<op>_c<pattern>`` variants); ``unrolled``: only the ``k_<op>_u<pattern>``
    variants (several elements per thread, for large tensors: see ``render_group``),
    which a backend keeps in a program of their own, compiled when a large tensor needs it;
    ``vector`` (CUDA): only the ``k_<op>_v<pattern>`` variants (aligned vector loads), likewise.

    >>> from burn.codegen import CUDA
    >>> assert all(tuple(k.out_dtypes) == ("bool",) for k in family_kernels(("int32", "int32"), "bool", CUDA))
    >>> assert "void k_add_u1(" in family_kernels(("float32",) * 2, "float32", CUDA, unrolled=True)[0].source
    >>> assert "void k_add_v1(" in family_kernels(("float32",) * 2, "float32", CUDA, vector=True)[0].source
    """
    pats = family_patterns(len(in_dtypes))
    variants = ({"general": False, "vector": pats} if vector else
                {"general": False, "unrolled": pats} if unrolled else {"patterns": pats})
    kernels = []
    for op in sorted(ARITY):
        if ARITY[op] != len(in_dtypes):
            continue
        attrs = RENDER_ATTRS.get(op, lambda o: {})(out)
        try:
            if out_dtype(op, list(in_dtypes), attrs) != out:
                continue
            kernels.append(render_group(f"k_{op}", [(op, attrs, [("in", k) for k in range(len(in_dtypes))])],
                                        list(in_dtypes), [0], dialect, **variants))
        except KeyError:
            continue
    return kernels
