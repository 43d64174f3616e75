"""burn.signal's kernel sources: the OpenCL C and CUDA C files of ``burn_signal/kernels``.

They ship as package data and are read with :mod:`importlib.resources`; a
program is the ``#define`` lines of its parameters (the dtype ``T``, a radix
and its generated straight-line code...) followed by its files' text.
"""
from __future__ import annotations

import functools
from importlib import resources


@functools.lru_cache(maxsize=None)
def read(filename: str) -> str:
    """The text of kernel file ``filename`` (read once).

    >>> assert "__kernel void load(" in read("signal.cl")
    """
    return resources.files(__package__).joinpath("kernels", filename).read_text(encoding="utf-8")


def render(files: tuple, defines: dict) -> str:
    """One program: a ``#define NAME VALUE`` line per define (in order), then the files' text.

    Values must be one line (a generated block of code is one line of statements).

    >>> src = render(("common.cl",), {"T": "float"})
    >>> assert src.startswith("#define T float\\n") and "inline C cmul(C a, C b)" in src
    """
    for name, value in defines.items():
        if "\n" in str(value):
            raise ValueError(f"burn_signal kernels: #define {name} must be one line, got {value!r}")
    head = "".join(f"#define {name} {value}\n" for name, value in defines.items())
    return head + "".join(read(f) for f in files)
