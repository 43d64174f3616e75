"""The native FFT of burn.signal on wgpu: loads, the pass plan, Bluestein, the 1-D and n-D kernels.

Lengths whose prime factors are all <= 13 run mixed-radix Stockham passes
(:mod:`.passes`); every other length runs Bluestein's chirp-z algorithm on top
of them (a power-of-two convolution of length >= 2n - 1, its chirp and filter
spectrum cached). A C-contiguous input is read in place by the first pass
(cropped or zero-padded on the fly), and a complex output of scale 1 is the
last pass's buffer: no copies before or after the passes. An even-length
``rfft`` is one half-length complex FFT of the samples packed in pairs plus a
split step; an even-length ``irfft`` is the mirror image (a merge step in the
load, one half-length inverse FFT).
"""
from __future__ import annotations

import math

import numpy as np
from burn_wgpu import api as wgpu

from .common import (CPLX, CT, REAL, batch_layout, buf, device, empty, fallback, i32, i64, is_contiguous, is_native,
                     kernel, launch, launch_rows, scalar, u32)
from .passes import pass_kernel, radices

# (device, dtype, n) -> twiddle table (kept: tables are reused across calls; memory_cleanup drops them)
TW: dict = {}
# (device, dtype, n, m, sign) -> (chirp table, filter spectrum): Bluestein's constants (memory_cleanup drops them)
CHIRP: dict = {}


def _load(x, axis, m, n, mode, real):
    """Rows (nb, n) complex: ``x`` with ``axis`` moved last, cropped/padded to n (or Hermitian-extended).

    Returns ``(rows, nb, view)``, rows None when the batch has more than 4 dims after merging.
    ``view`` is None when ``rows`` is a new (nb, n) buffer; else ``rows`` is ``x`` itself, whose
    buffer the first pass reads in place as ``(offset, row stride, valid values)`` in complex
    elements (a C-contiguous complex input, or a real one of even length to pack in pairs,
    cropped or zero-padded on the fly): the FFT must not write to it."""
    dc = device(x)
    nd = len(x.shape)
    bshape = [x.shape[d] for d in range(nd) if d != axis]
    # batch dims that are contiguous with each other merged, so any layout fits in 4 dims
    lay = batch_layout(axis, x.shape, x.strides)
    nb = math.prod(bshape)
    if lay is None:
        return None, nb, None
    view, m_in = None, x.shape[axis]
    if axis == nd - 1 and is_contiguous(x):
        if mode == 1:
            view = (x.offset, m_in, m)
        elif mode == 3 and m_in % 2 == 0 and m % 2 == 0 and x.offset % 2 == 0:
            view = (x.offset // 2, m_in // 2, m // 2)
    # the passes read through a view; Bluestein's chirp only reads plain rows
    if view is not None and (view == (0, n, n) or (n > 1 and radices(n) is not None)):
        return x, nb, view
    out = empty(dc, (nb, n), CPLX[real])
    (d1, d2, d3), (strides,) = lay
    tw = twiddles(dc, real, 2 * n) if mode == 4 else out      # mode 4's W^-j (else unused)
    launch(dc, kernel(dc, real, "load"), nb * n,
           (i32(mode), i32(m), i32(n), u32(nb * n), buf(x), i64(x.offset), i64(x.strides[axis]),
            u32(d1), u32(d2), u32(d3), *strides, buf(out), buf(tw)))
    return out, nb, None


def twiddles(dc, real, n):
    """The table tw[j] = exp(-2 pi i j / n) on ``dc`` (cached, at most 16 tables).

    >>> import numpy as np
    >>> from burn_wgpu import api as wgpu
    >>> t = twiddles(wgpu.device_of(), "float32", 4)
    >>> assert twiddles(wgpu.device_of(), "float32", 4) is t         # cached
    >>> assert np.allclose(wgpu.to_host(t), [1, -1j, -1, 1j], atol=1e-6)
    """
    key = (dc.index, real, n)
    t = TW.get(key)
    if t is None:
        if len(TW) >= 16:
            TW.pop(next(iter(TW)))
        t = TW[key] = empty(dc, (n,), CPLX[real])
        launch(dc, kernel(dc, real, "twiddles"), n, (i32(n), buf(t)))
    return t


def _chirp(dc, real, n, m, sign):
    key = (dc.index, real, n, m, sign)
    hit = CHIRP.get(key)
    if hit is None:
        if len(CHIRP) >= 8:
            CHIRP.pop(next(iter(CHIRP)))
        w = empty(dc, (n,), CPLX[real])
        launch(dc, kernel(dc, real, "chirp_table"), n, (i32(n), i32(sign), buf(w)))
        f = empty(dc, (1, m), CPLX[real])
        launch(dc, kernel(dc, real, "chirp_filter"), m, (i32(n), i32(m), i32(sign), buf(f)))
        hit = CHIRP[key] = (w, c2c(dc, real, f, m, 1, -1))
    return hit


def c2c(dc, real, a, n, nb, sign, view=None, frames=None):
    """Unnormalized DFT of the rows of ``a`` (nb, n), sign -1 forward, +1 inverse; ``a`` itself
    when n == 1. Without ``view`` it may write to ``a`` (a ping-pong buffer); with one (see
    ``_load``) ``a`` is only read, through its buffer, by the first pass (Bluestein and n == 1 take only the plain view (0, n, n)). ``frames``: no ``a``, the
    first (forward) pass frames an stft's rows itself (its arguments after the signal, see
    ``stft``); only for n > 1 with a pass plan.

    >>> import numpy as np
    >>> from burn_wgpu import api as wgpu
    >>> a = wgpu.to_device(np.ones((1, 8), np.complex64))
    >>> y = c2c(wgpu.device_of(a), "float32", a, 8, 1, -1)
    >>> assert np.allclose(wgpu.to_host(y), [[8, 0, 0, 0, 0, 0, 0, 0]], atol=1e-5)
    """
    if n == 1:
        return a
    rad = radices(n)
    if rad is None:
        return _bluestein(dc, real, a, n, nb, sign)
    tw = twiddles(dc, real, n)
    # passes write tmp, then the other buffer, then tmp...: ``a`` itself only if owned
    tmp = empty(dc, (nb, n), CPLX[real])
    reuse = view is None and frames is None
    other = a if reuse or len(rad) == 1 else empty(dc, (nb, n), CPLX[real])
    src, p, T = a, 1, CT[real]
    off, xs, mv = view or (0, n, n)
    for idx, R in enumerate(rad):
        q = n // R
        total = nb * q
        dst = other if idx % 2 else tmp
        if idx == 0 and frames is not None:
            launch(dc, pass_kernel(dc, T, R, "pass_frames"), total,
                   (u32(q), u32(total), *frames[:1], buf(dst), *frames[1:]))
            src, p = dst, R
            continue
        launch(dc, pass_kernel(dc, T, R, "pass_f" if sign < 0 else "pass_i"), total,
               (u32(q), u32(p), u32(total), u32(n // (R * p)), buf(src), buf(dst), buf(tw),
                np.uint64(off), u32(xs), u32(mv)))
        off, xs, mv = 0, n, n
        src = dst
        p *= R
    return src


def _bluestein(dc, real, a, n, nb, sign):
    # a chirp-z convolution of length m >= 2n - 1 (a power of two); its constants cached
    m = 1 << (2 * n - 2).bit_length()
    w, ff = _chirp(dc, real, n, m, sign)
    ab = empty(dc, (nb, m), CPLX[real])
    launch(dc, kernel(dc, real, "chirp_in"), nb * m, (i32(n), i32(m), u32(nb), buf(w), buf(a), buf(ab)))
    fa = c2c(dc, real, ab, m, nb, -1)
    launch(dc, kernel(dc, real, "cmul_rows"), nb * m, (u32(m), u32(nb), buf(fa), buf(ff)))
    c = c2c(dc, real, fa, m, nb, +1)
    out = empty(dc, (nb, n), CPLX[real])
    launch(dc, kernel(dc, real, "chirp_out"), nb * n,
           (i32(n), i32(m), u32(nb), scalar(real, 1.0 / m), buf(w), buf(c), buf(out)))
    return out


def _scale(norm, n, inverse):
    if norm == "ortho":
        return 1.0 / math.sqrt(n)
    return 1.0 / n if (norm == "forward") != inverse else 1.0


def fft1(x, n, axis, norm, kind):
    """One 1-D transform on the device; kind: fft, ifft, rfft, irfft. None if it must fall back.

    >>> import numpy as np
    >>> from burn_wgpu import api as wgpu
    >>> x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    >>> y = fft1(wgpu.to_device(x), 3, 1, "backward", "rfft")
    >>> assert y.shape == (2, 2) and np.allclose(wgpu.to_host(y), np.fft.rfft(x), atol=1e-5)
    """
    dc, real = device(x), REAL[x.dtype]
    cplx_in = x.dtype.startswith("complex")
    m_in = x.shape[axis]
    # rfft / irfft of even length: one n/2-point complex FFT of the samples packed in pairs
    # (and a split step after an rfft, a merge step in the load before an irfft)
    half = kind in ("rfft", "irfft") and n % 2 == 0 and n >= 4
    if kind == "irfft":
        mode, m = (4 if half else 2), m_in
    else:
        mode, m = (3 if half else 1 if cplx_in else 0), min(m_in, n)
    a, nb, view = _load(x, axis, m, n // 2 if half else n, mode, real)
    if a is None:
        return None
    inverse = kind in ("ifft", "irfft")
    y = c2c(dc, real, a, n // 2 if half else n, nb, +1 if inverse else -1, view)
    m_out = n // 2 + 1 if kind == "rfft" else n
    out_dt = real if kind == "irfft" else CPLX[real]
    shape = list(x.shape)
    shape[axis] = m_out
    inner = math.prod(x.shape[axis + 1:])
    sc = _scale(norm, n, inverse)
    if kind in ("fft", "ifft") and inner == 1 and sc == 1.0 and y is not x:
        # the last pass wrote the output's layout: y itself, or a view of it with the output's shape
        return y if y.shape == tuple(shape) else wgpu.reshape(y, tuple(shape))
    out = empty(dc, tuple(shape), out_dt)
    if half and kind == "irfft":
        launch_rows(dc, kernel(dc, real, "irpost"), nb, n // 2, inner,
                    (i32(n // 2), u32(nb), u32(inner), scalar(real, _scale(norm, n, True)), buf(y), buf(out)))
        return out
    if half:
        launch_rows(dc, kernel(dc, real, "rpost"), nb, m_out, inner,
                    (i32(n), i32(m_out), u32(nb), u32(inner), scalar(real, _scale(norm, n, False)), buf(y),
                     buf(out), buf(twiddles(dc, real, n))))
        return out
    # contiguous output: element-wise kernels cannot copy complex views yet
    launch_rows(dc, kernel(dc, real, "store"), nb, m_out, inner,
                (i32(n), i32(m_out), u32(nb), u32(inner), scalar(real, sc), i32(kind == "irfft"),
                 buf(y), buf(out)))
    return out


def one(kind):
    """The wgpu kernel of 1-D transform ``kind`` (fft, ifft, rfft, irfft).

    >>> import numpy as np
    >>> from burn_wgpu import api as wgpu
    >>> k = one("ifft")
    >>> z = k(wgpu.to_device(np.complex64([4, 0, 0, 0])), n=4, axis=0, norm=None)
    >>> assert k.__name__ == "wgpu_ifft" and np.allclose(wgpu.to_host(z), [1, 1, 1, 1])
    """
    def k(x, *, n, axis, norm):
        r = fft1(x, n, axis, norm, kind) if is_native(x) else None
        return r if r is not None else fallback(kind, x, n=n, axis=axis, norm=norm)
    k.__name__ = f"wgpu_{kind}"
    return k


def many(kind):
    """The wgpu kernel of n-D transform ``kind``: 1-D transforms along each axis (the norms
    multiply to the n-D norm).

    >>> import numpy as np
    >>> from burn_wgpu import api as wgpu
    >>> y = many("rfftn")(wgpu.to_device(np.ones((2, 4), np.float32)), s=(2, 4), axes=(0, 1), norm=None)
    >>> assert np.allclose(wgpu.to_host(y), [[8, 0, 0], [0, 0, 0]])
    """
    def k(x, *, s, axes, norm):
        if not is_native(x):
            return fallback(kind, x, s=s, axes=axes, norm=norm)
        y = x
        steps = [("fft" if kind in ("fftn", "rfftn") else "ifft", a, n) for a, n in zip(axes, s)]
        if kind == "rfftn":
            steps = [("rfft", axes[-1], s[-1])] + steps[:-1]
        elif kind == "irfftn":
            steps = steps[:-1] + [("irfft", axes[-1], s[-1])]
        for kd, a, n in steps:
            r = fft1(y, n, a, norm, kd)
            if r is None:
                return fallback(kind, x, s=s, axes=axes, norm=norm)
            y = r
        return y
    k.__name__ = f"wgpu_{kind}"
    return k
