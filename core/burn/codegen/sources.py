"""Kernel sources and launches for the backends' kernel APIs (``burn_wgpu.api``, ``burn_cuda.api``).

What the OpenCL and CUDA APIs share, written once: reading a ``.cl`` / ``.cu`` file shipped
as package data, prepending ``#define`` lines, the program object whose attributes are
kernels, the conversion of Python scalars to the fixed-width numpy scalars a kernel
argument needs, and the rounding of a launch's global size to whole work-groups / blocks.
"""
from __future__ import annotations

import importlib.resources

import numpy as np

from ..errors import BurnError

__all__ = ["load_source", "with_defines", "Program", "kernel_args", "launch_shape"]


def load_source(package: str, filename: str) -> str:
    """The text of ``filename`` shipped as package data of ``package`` (``importlib.resources``).

    A kernel library keeps its OpenCL C / CUDA C in ``.cl`` / ``.cu`` files next to its
    modules (declared as package data) instead of Python strings.

    Example:
        >>> from burn.codegen.sources import load_source
        >>> assert "def load_source" in load_source("burn.codegen", "sources.py")
    """
    try:
        return importlib.resources.files(package).joinpath(filename).read_text(encoding="utf-8")
    except (FileNotFoundError, IsADirectoryError, ModuleNotFoundError) as e:
        raise BurnError(f"load_source: no file {filename!r} in package {package!r} ({type(e).__name__}: {e}); "
                        f"ship it as package data (pyproject: [tool.setuptools.package-data])") from None


def with_defines(source: str, defines: dict | None) -> str:
    """``source`` with one ``#define NAME VALUE`` line per entry of ``defines`` prepended.

    Values are written with ``str`` (bools as 1 / 0); the names are sorted so one set of
    defines always gives one source (and one cache entry).

    Example:
        >>> from burn.codegen.sources import with_defines
        >>> assert with_defines("k", {"SCALE": 2, "FAST": True}) == "#define FAST 1\\n#define SCALE 2\\nk"
    """
    if not defines:
        return source
    lines = []
    for name in sorted(defines):
        if not isinstance(name, str) or not name.isidentifier():
            raise BurnError(f"program: a #define name must be an identifier, got {name!r}")
        v = defines[name]
        v = int(v) if isinstance(v, (bool, np.bool_)) else v
        text = str(v)
        if "\n" in text:
            raise BurnError(f"program: #define {name} has a multi-line value {text!r}")
        lines.append(f"#define {name} {text}\n")
    return "".join(lines) + source


class Program:
    """A compiled program whose attributes are its kernels (``prog.scale``).

    ``get(name)`` fetches a kernel from the backend's cache; each kernel is looked up once
    per Program. A missing kernel (or a module that fails to compile when its first kernel is
    fetched) raises a BurnError naming the kernel, the program and the driver's message.

    Example:
        >>> from burn.codegen.sources import Program
        >>> p = Program(lambda name: f"<kernel {name}>", "wgpu", "demo")
        >>> assert p.scale == "<kernel scale>" and p.kernel("scale") is p.scale
    """

    def __init__(self, get, backend: str, what: str):
        self._get = get
        self._kernels: dict = {}
        self._backend = backend
        self._what = what

    def kernel(self, name: str):
        """The kernel ``name`` of this program (also reachable as an attribute).

        Example:
            >>> from burn.codegen.sources import Program
            >>> assert Program(str.upper, "cuda", "demo").kernel("axpy") == "AXPY"
        """
        k = self._kernels.get(name)
        if k is None:
            try:
                k = self._kernels[name] = self._get(name)
            except BurnError:
                raise
            except Exception as e:      # no such kernel, or (cuda: compiled on first use) a compile error
                raise BurnError(f"{self._backend}: kernel {name!r} of program {self._what}: "
                                f"{type(e).__name__}: {e}") from None
        return k

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        return self.kernel(name)

    def __repr__(self):
        return f"Program({self._backend}, {self._what})"


def kernel_args(args, convert):
    """Launch arguments: Python ``bool``/``int`` become ``numpy.int32``, ``float`` ``numpy.float32``
    (what a C ``int`` / ``float`` parameter reads); ``convert(a)`` maps the backend's arrays to
    what the driver takes and returns other values unchanged.

    Example:
        >>> import numpy as np
        >>> from burn.codegen.sources import kernel_args
        >>> a = kernel_args((3, 0.5, True, np.int64(7), np.float64(2)), lambda a: a)
        >>> assert [type(v) for v in a] == [np.int32, np.float32, np.int32, np.int64, np.float64]
    """
    out = []
    for a in args:
        if isinstance(a, (bool, int)) and not isinstance(a, np.generic):
            if not -2 ** 31 <= int(a) < 2 ** 31:
                raise BurnError(f"launch: the Python int {a} does not fit a kernel's int (int32); pass "
                                f"numpy.int64({a}) for a long / long long parameter")
            out.append(np.int32(a))
        elif isinstance(a, float) and not isinstance(a, np.generic):    # np.float64 is a float too
            out.append(np.float32(a))
        else:
            out.append(convert(a))
    return out


def launch_shape(global_size, local_size, default_local: int):
    """``(global, local)`` tuples of one launch: ``global_size`` (an int or 1-3 ints: work items
    per dimension) rounded up to whole work-groups of ``local_size`` (default: ``default_local``
    work items in 1-D, 16 x 16 in 2-D, 8 x 8 x 4 in 3-D). Kernels check their bounds.

    Example:
        >>> from burn.codegen.sources import launch_shape
        >>> assert launch_shape(1000, None, 256) == ((1024,), (256,))
        >>> assert launch_shape((5, 33), (4, 16), 256) == ((8, 48), (4, 16))
    """
    g = (int(global_size),) if isinstance(global_size, (int, np.integer)) else tuple(int(s) for s in global_size)
    if not 1 <= len(g) <= 3 or any(s < 0 for s in g):
        raise BurnError(f"launch: global_size must be 1 to 3 non-negative ints, got {global_size!r}")
    if local_size is None:
        loc = {1: (default_local,), 2: (16, 16), 3: (8, 8, 4)}[len(g)]
    else:
        loc = (int(local_size),) if isinstance(local_size, (int, np.integer)) else tuple(int(s) for s in local_size)
    if len(loc) != len(g) or any(s <= 0 for s in loc):
        raise BurnError(f"launch: local_size {local_size!r} does not match global_size {global_size!r} "
                        f"(one positive int per dimension)")
    return tuple(-(-s // ls) * ls for s, ls in zip(g, loc)), loc
