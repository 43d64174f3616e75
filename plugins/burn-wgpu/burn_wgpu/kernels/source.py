"""OpenCL C sources of burn-wgpu's kernels that are not generated, one program per (part, dtype).

Each op family (``reduce``, ``linear``, ``nn``, ``creation``, ``movement``, ``indexing``)
registers the parts of the per-dtype library it owns with :func:`register`: a part is its
own program, so a dtype compiles only what it uses (PoCL takes ~0.3-1 s per program; int8
rarely needs a matmul). Sizes, strides and offsets are run-time arguments, so a part is
compiled once per dtype and device (then loaded from the disk cache). Sources that are
plain C live in ``cl/*.cl`` package data (:func:`cl_source`), parameterised by ``#define``s.
"""
from __future__ import annotations

from functools import lru_cache

from burn.codegen import param_words
from burn.codegen.sources import load_source

# part -> (kernel-name prefixes or names, render(dtype, fp64) -> C source); see register()
_PARTS: dict = {}


def register(part: str, names: tuple, render) -> None:
    """Declare library ``part``: the kernels ``names`` (a name ending in ``_`` is a prefix)
    and ``render(dtype, fp64)``, its C source for one dtype ("" where the dtype has none).

    >>> register("doc_part", ("doc_k",), lambda dtype, fp64: "__kernel void doc_k() {}")
    >>> assert part_of("doc_k") == "doc_part" and "doc_k()" in library_source("float32", False, "doc_part")
    """
    _PARTS[part] = (tuple(names), render)


def part_of(name: str) -> str:
    """The library part holding kernel ``name`` (longest matching name or prefix wins).

    >>> from burn_wgpu.kernels import linear
    >>> assert part_of("reduce_sum") == "reduce" and part_of("matmul_packed") == "matmul_cpu"
    """
    best, n = None, -1
    for part, (names, _) in _PARTS.items():
        for p in names:
            if (name == p or (p.endswith("_") and name.startswith(p))) and len(p) > n:
                best, n = part, len(p)
    if best is None:
        raise KeyError(name)
    return best


def kind(dtype: str) -> str:
    """One letter for the family of ``dtype``: f(loat), b(ool), u(nsigned) or i(nteger).

    >>> assert kind("float64") == "f" and kind("int8") == "i" and kind("uint32") == "u"
    """
    return "f" if dtype.startswith("float") else "b" if dtype == "bool" else "u" if dtype.startswith("uint") else "i"


@lru_cache(maxsize=None)
def cl_source(name: str) -> str:
    """The text of ``cl/<name>``, a kernel source shipped as package data.

    >>> assert "reduce_sum" in cl_source("reduce.cl")
    """
    return load_source(__package__, f"cl/{name}")


@lru_cache(maxsize=None)
def library_source(dtype: str, fp64: bool, part: str) -> str:
    """The program of one ``part`` (see :func:`part_of`) of the non-element-wise kernels of ``dtype``.

    >>> from burn_wgpu.kernels import nn
    >>> assert "row_softmax" in library_source("float32", False, "rows")
    """
    parts = []
    if fp64:
        parts.append("#pragma OPENCL EXTENSION cl_khr_fp64 : enable")
    if dtype == "float16":
        parts.append("#pragma OPENCL EXTENSION cl_khr_fp16 : enable")
    parts.append(f"typedef struct {{ int v[{param_words(2)}]; }} burn_idx{param_words(2)};")
    parts.append(_PARTS[part][1](dtype, fp64))
    return "\n".join(parts)


def library_kernel(dc, dtype: str, name: str):
    """Kernel ``name`` of the library program of ``dtype`` on device context ``dc`` (compiled once,
    then cached by the context in memory and on disk).

    >>> from burn_wgpu import runtime, kernels
    >>> k = library_kernel(runtime.context(0), "float32", "reduce_sum")
    >>> assert k.function_name == "reduce_sum"
    """
    return dc.kernel(library_source(dtype, dc.fp64, part_of(name)), name)
