"""Creation ops on wgpu: full, arange, linspace, eye as library kernels; random numbers drawn
on the host from core's reference stream (:mod:`burn.ops.random_stream`: the same values as
flex) and uploaded."""
from __future__ import annotations

import numpy as np

from burn.codegen import OPENCL
from burn.codegen.sources import with_defines

from ..native import NP as _NP
from ..native import empty, is_complex
from .elementwise import _default_dc, _name, elementwise
from .movement import upload
from .source import cl_source, register
from .source import library_kernel as _lib


def full(*, shape, value, dtype):
    return elementwise("full")(shape=shape, value=value, dtype=dtype)


def _via_real(fn):
    """A creation kernel for complex dtypes: the real values, cast (imaginary part 0); the
    library's creation kernels would write the value into both parts of a float2."""
    def k(**attrs):
        d = _name(attrs["dtype"])
        if not is_complex(d):
            return fn(**attrs)
        part = "float32" if d == "complex64" else "float64"
        return elementwise("cast")(fn(**dict(attrs, dtype=part)), dtype=d)
    k.__name__ = fn.__name__
    return k


@_via_real
def arange(*, start, stop, step, dtype):
    dtype = _name(dtype)
    dc = _default_dc()
    n = len(np.arange(start, stop, step)) if not all(isinstance(v, (int, np.integer)) for v in (start, stop, step)) \
        else len(range(start, stop, step))
    out = empty(dc, (n,), dtype)
    if all(isinstance(v, (int, np.integer)) for v in (start, step)):
        dc.launch(_lib(dc, dtype, "arange_i"), n, [np.int32(n), out.buf, np.int64(start), np.int64(step)])
    else:
        f = np.float64 if dc.fp64 else np.float32
        # numpy fills start and start + delta, then extends with i * delta
        delta = (start + step) - start
        dc.launch(_lib(dc, dtype, "arange_f"), n, [np.int32(n), out.buf, f(start), f(delta)])
    return out


@_via_real
def linspace(*, start, stop, num, endpoint, dtype):
    dtype = _name(dtype)
    dc = _default_dc()
    out = empty(dc, (num,), dtype)
    div = (num - 1) if endpoint else num
    step = (stop - start) / div if div > 0 else 0.0
    f = np.float64 if dc.fp64 else np.float32
    if num:
        dc.launch(_lib(dc, dtype, "linspace"), num, [np.int32(num), out.buf, f(start), f(step), f(stop),
                                                    np.int32(bool(endpoint))])
    return out


@_via_real
def eye(*, n, m, k, dtype):
    dtype = _name(dtype)
    dc = _default_dc()
    m = n if m is None else m
    out = empty(dc, (n, m), dtype)
    dc.launch(_lib(dc, dtype, "eye"), n * m, [np.int32(n * m), out.buf, np.int32(m), np.int32(k)])
    return out


def _host_random(name):
    # drawn on the host from core's reference stream: the same numbers as flex
    def k(**attrs):
        from burn.ops import random_stream
        arr = getattr(random_stream, name)(**attrs)
        dtype = _name(attrs["dtype"])
        return upload(_default_dc(), arr.astype(_NP[dtype], copy=False), dtype)
    k.__name__ = f"wgpu_{name}"
    return k


def _creation_part(dtype, fp64):
    return with_defines(cl_source("creation.cl"), dict(T=OPENCL.ctype(dtype), F="double" if fp64 else "float"))


register("create", ("arange_", "linspace", "eye"), _creation_part)
