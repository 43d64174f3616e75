"""burn.signal's IIR filters on wgpu: ``lfilter`` and ``sosfilt``, one work-item per signal.

``lfilter`` is direct form II transposed in scipy's order of operations (with
``zi``), ``sosfilt`` cascaded biquads (``zi``/``zf``); strided operands are read
in place. Both read their denominator back (a sync of a few bytes) to raise on
a zero leading coefficient as flex does.
"""
from __future__ import annotations

import math

from burn_wgpu import api as wgpu

from .. import _flex
from .common import CT, batch_layout, buf, device, download, empty, fallback, i32, i64, kernel, launch


def _native(ops, x):
    return all(wgpu.is_native(t) and t.dtype == x.dtype for t in ops) and x.dtype in CT and x.size


def lfilter(b, a, x, zi=None, *, axis):
    """Direct form II transposed, one work-item per signal, strided operands read in place.

    >>> import numpy as np
    >>> from burn_wgpu import api as wgpu
    >>> b, a, x = (wgpu.to_device(np.float32(v)) for v in ([1], [1, -0.5], [1, 1, 1, 1]))
    >>> assert np.allclose(wgpu.to_host(lfilter(b, a, x, axis=0)), [1, 1.5, 1.75, 1.875])
    """
    ok = _native((b, a, x) + (() if zi is None else (zi,)), x)
    lay = batch_layout(axis % len(x.shape), x.shape, x.strides, (zi if zi is not None else x).strides) if ok else None
    if lay is None:
        return fallback("lfilter", b, a, x, zi, axis=axis)
    _flex._a0(download(a))      # a few coefficients read back (a sync): a[0] == 0 raises as on flex
    dc, ax = device(x), axis % len(x.shape)
    n, K = x.shape[ax], max(a.shape[0], b.shape[0]) - 1
    co = empty(dc, (2 * (K + 1),), x.dtype)
    launch(dc, kernel(dc, x.dtype, "lfcoef"), K + 1,
           (i32(K), i32(b.shape[0]), i32(a.shape[0]), buf(b), i64(b.offset), i64(b.strides[0]), buf(a),
            i64(a.offset), i64(a.strides[0]), buf(co)))
    nb = x.size // n
    y = empty(dc, x.shape, x.dtype)
    zs = empty(dc, (max(K, 1) * nb,), x.dtype)
    (d1, d2, d3), (xs, zst) = lay
    z = zi if zi is not None else x
    inner = math.prod(x.shape[ax + 1:])
    launch(dc, kernel(dc, x.dtype, "lfilt"), nb,
           (i32(n), i32(K), i64(nb), buf(co), buf(x), i64(x.offset), i64(x.strides[ax]), buf(z), i64(z.offset),
            i64(z.strides[ax]), i32(zi is not None), d1, d2, d3, *xs, *zst, buf(y), i64(inner), buf(zs)))
    return y


def sosfilt(sos, x, zi=None, *, axis):
    """Cascaded biquads (direct form II transposed), one work-item per signal; zf when zi is given.

    >>> import numpy as np
    >>> from burn_wgpu import api as wgpu
    >>> sos = wgpu.to_device(np.float32([[1, 0, 0, 1, -0.5, 0]]))
    >>> y = sosfilt(sos, wgpu.to_device(np.ones(4, np.float32)), axis=0)
    >>> assert np.allclose(wgpu.to_host(y), [1, 1.5, 1.75, 1.875])
    """
    ok = _native((sos, x) + (() if zi is None else (zi,)), x)
    ax = axis % len(x.shape) if ok else 0
    if ok and zi is not None:
        # zi: (ns, x's shape with 2 at the axis): its batch strides are those of dims 1..
        zst = zi.strides[1:]
    else:
        zst = x.strides
    lay = batch_layout(ax, x.shape, x.strides, zst) if ok else None
    if lay is None:
        return fallback("sosfilt", sos, x, zi, axis=axis)
    _flex._sos_a0(download(sos))     # 6 coefficients a section read back: a0 == 0 raises as on flex
    dc, ns, n = device(x), sos.shape[0], x.shape[ax]
    so = empty(dc, (ns, 6), x.dtype)
    launch(dc, kernel(dc, x.dtype, "sosnorm"), ns * 6,
           (i32(ns), buf(sos), i64(sos.offset), i64(sos.strides[0]), i64(sos.strides[1]), buf(so)))
    nb = x.size // n
    y = empty(dc, x.shape, x.dtype)
    zs = empty(dc, (2 * ns * nb,), x.dtype)
    zshape = (ns,) + tuple(2 if d == ax else s for d, s in enumerate(x.shape))
    zf = empty(dc, zshape, x.dtype) if zi is not None else zs
    z = zi if zi is not None else x
    (d1, d2, d3), (xs, zs_) = lay
    launch(dc, kernel(dc, x.dtype, "sosf"), nb,
           (i32(n), i32(ns), i64(nb), buf(so), buf(x), i64(x.offset), i64(x.strides[ax]), buf(z), i64(z.offset),
            i64(zst[ax]), i64(z.strides[0]), i32(zi is not None), d1, d2, d3, *xs, *zs_, buf(y),
            i64(math.prod(x.shape[ax + 1:])), buf(zs), buf(zf)))
    return y if zi is None else (y, zf)
