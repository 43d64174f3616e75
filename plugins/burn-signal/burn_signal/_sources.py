"""burn.signal's kernel sources: the OpenCL C and CUDA C files of ``burn_signal/kernels``.

They ship as package data and are read with :func:`burn.codegen.sources.load_source`
(``importlib.resources``); a program is its files' text, compiled by the backend's
kernel API with its ``#define``s (the dtype ``T``, a radix ``R`` and its
generated straight-line code...): ``wgpu.program(concat(files), defines=...)``.
"""
from __future__ import annotations

import functools

from burn.codegen.sources import load_source


@functools.lru_cache(maxsize=None)
def read(filename: str) -> str:
    """The text of kernel file ``filename`` (read once).

    >>> assert "__kernel void load(" in read("signal.cl")
    """
    return load_source(__package__, f"kernels/{filename}")


@functools.lru_cache(maxsize=None)
def concat(files: tuple) -> str:
    """The text of a program made of several kernel files, in order (one str object per tuple:
    the backends' program caches hash it once).

    >>> src = concat(("common.cl", "signal.cl"))
    >>> assert src.index("inline C cmul(C a, C b)") < src.index("__kernel void load(")
    """
    return "".join(read(f) for f in files)
