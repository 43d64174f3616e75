"""burn.signal's ``stft``, ``istft`` and ``resample`` on wgpu, on top of the native FFT.

``stft`` writes windowed, scaled segments straight into FFT rows and the
FFT's last step writes the (..., freq, segment) layout; ``istft`` is the
inverse FFT of each segment and one overlap-add kernel; ``resample`` is an
rfft, the kept bins weighted in place and an irfft.
"""
from __future__ import annotations

import math

from burn_wgpu import api as wgpu

from .._ops import istft_length, stft_plan
from .common import (CPLX, CT, REAL, batch_layout, buf, device, empty, fallback, i32, i64, is_native, kernel, launch,
                     launch_rows, scalar, u32)
from .fft import c2c, fft1, twiddles
from .passes import radices


def _win_scale(dc, real, win, psd, fs):
    """(1 / scale, scale) of the stft's segments on the device: sum(win) or sqrt(fs sum(win^2))."""
    sc = empty(dc, (2,), real)
    launch(dc, kernel(dc, real, "winscale"), 1,
           (i32(win.shape[0]), buf(win), i64(win.offset), i64(win.strides[0]), i32(psd), scalar(real, fs), buf(sc)))
    return sc


def stft(x, win, *, fs, noverlap, nfft, boundary, padded, onesided, scaling):
    """Segments windowed and scaled straight into FFT rows, the native FFT, the spectrum written
    transposed to (..., freq, segment) by the FFT's last step (no framing copy, no transpose).

    >>> import numpy as np
    >>> from burn_wgpu import api as wgpu
    >>> x, win = wgpu.to_device(np.ones(16, np.float32)), wgpu.to_device(np.ones(4, np.float32))
    >>> z = stft(x, win, fs=1.0, noverlap=2, nfft=4, boundary=None, padded=False, onesided=True, scaling="spectrum")
    >>> assert z.shape == (3, 7) and np.allclose(wgpu.to_host(z), [[1] * 7, [0] * 7, [0] * 7], atol=1e-6)
    """
    real = REAL.get(x.dtype)
    ok = (wgpu.is_native(win) and is_native(x) and win.dtype == real and x.size and len(x.shape) >= 1)
    lay = batch_layout(len(x.shape) - 1, x.shape, x.strides) if ok else None
    if lay is None:
        return fallback("stft", x, win, fs=fs, noverlap=noverlap, nfft=nfft, boundary=boundary, padded=padded,
                                onesided=onesided, scaling=scaling)
    dc, n, nper = device(x), x.shape[-1], win.shape[0]
    step, _, nseg = stft_plan("stft", n, nper, noverlap, nfft, boundary, padded)
    pl = nper // 2 if boundary == "zeros" else 0
    isc = _win_scale(dc, real, win, scaling == "psd", fs)
    cplx = x.dtype.startswith("complex")
    pk = onesided and not cplx and nfft % 2 == 0 and nfft >= 4
    L = nfft // 2 if pk else nfft
    batch = x.shape[:-1]
    nrows = math.prod(batch) * nseg
    (d1, d2, d3), (xs,) = lay
    if L > 1 and radices(L) is not None:
        # the first FFT pass frames the rows as it loads them
        y = c2c(dc, real, None, L, nrows, -1, frames=(
            buf(x), i32(n), i32(nper), i32(step), i32(pl), u32(nseg), i32(pk), i32(cplx), i64(x.offset),
            i64(x.strides[-1]), u32(d1), u32(d2), u32(d3), *xs, buf(win), i64(win.offset), i64(win.strides[0]),
            buf(isc)))
    else:
        rows = empty(dc, (nrows, L), CPLX[real])
        ls = min(256, 1 << (L - 1).bit_length())
        launch(dc, kernel(dc, real, "frames"), (L, nrows),
               (i32(n), i32(nper), i32(step), i32(pl), i32(nseg), i32(L), i32(pk), i32(cplx), u32(nrows),
                buf(x), i64(x.offset), i64(x.strides[-1]), u32(d1), u32(d2), u32(d3), *xs, buf(win),
                i64(win.offset), i64(win.strides[0]), buf(isc), buf(rows)), (ls, 1))
        y = c2c(dc, real, rows, L, nrows, -1)
    nfreq = nfft // 2 + 1 if onesided else nfft
    out = empty(dc, tuple(batch) + (nfreq, nseg), CPLX[real])
    # rows are (signal, segment): with inner = nseg the last step writes (signal, freq, segment)
    one = scalar(real, 1.0)
    if pk:
        launch_rows(dc, kernel(dc, real, "rpost"), nrows, nfreq, nseg,
                    (i32(nfft), i32(nfreq), u32(nrows), u32(nseg), one, buf(y), buf(out),
                     buf(twiddles(dc, real, nfft))))
    else:
        launch_rows(dc, kernel(dc, real, "store"), nrows, nfreq, nseg,
                    (i32(nfft), i32(nfreq), u32(nrows), u32(nseg), one, i32(0), buf(y), buf(out)))
    return out


def istft(z, win, *, fs, noverlap, nfft, onesided, boundary, scaling):
    """The native inverse FFT of every segment (along the frequency axis, read through strides),
    then one overlap-add kernel that also windows, scales and normalizes (no framing copies).

    >>> import numpy as np
    >>> from burn_wgpu import api as wgpu
    >>> x, win = wgpu.to_device(np.ones(16, np.float32)), wgpu.to_device(np.ones(4, np.float32))
    >>> opts = dict(fs=1.0, noverlap=2, nfft=4, onesided=True, scaling="spectrum")
    >>> z = stft(x, win, boundary=None, padded=False, **opts)
    >>> assert np.allclose(wgpu.to_host(istft(z, win, boundary=False, **opts)), 1, atol=1e-6)
    """
    real = REAL.get(z.dtype)
    ok = (wgpu.is_native(win) and is_native(z) and win.dtype == real and z.size and len(z.shape) >= 2)
    xs = fft1(z, nfft, len(z.shape) - 2, "backward", "irfft" if onesided else "ifft") if ok else None
    if xs is None:
        return fallback("istft", z, win, fs=fs, noverlap=noverlap, nfft=nfft, onesided=onesided, boundary=boundary,
                                 scaling=scaling)
    dc, nper, nseg = device(z), win.shape[0], z.shape[-1]
    step = nper - noverlap
    m = istft_length(nseg, nper, step, boundary)
    sc = _win_scale(dc, real, win, scaling == "psd", fs)
    batch = z.shape[:-2]
    nb = math.prod(batch)
    cplx = not onesided
    y = empty(dc, tuple(batch) + (m,), CPLX[real] if cplx else real)
    launch(dc, kernel(dc, real, "ola"), nb * m,
           (i32(nper), i32(step), i32(nseg), i32(nfft), i32(nper // 2 if boundary else 0), i32(m), i64(nb),
            i32(cplx), buf(xs), buf(win), i64(win.offset), i64(win.strides[0]), buf(sc), buf(y)))
    return y


def resample(x, *, num, axis):
    """scipy.signal.resample's FFT method: the native rfft, the kept bins weighted in place, the native
    irfft of a view of them (no copies between the transforms).

    >>> import numpy as np
    >>> from burn_wgpu import api as wgpu
    >>> y = resample(wgpu.to_device(np.ones(8, np.float32)), num=4, axis=0)
    >>> assert y.shape == (4,) and np.allclose(wgpu.to_host(y), 1, atol=1e-6)
    """
    if not (is_native(x) and x.dtype in CT and x.size):
        return fallback("resample", x, num=num, axis=axis)
    ax = axis % len(x.shape)
    nx = x.shape[ax]
    X = fft1(x, nx, ax, "backward", "rfft")
    if X is None:
        return fallback("resample", x, num=num, axis=axis)
    m = min(num, nx)
    m2 = m // 2 + 1
    c = num / nx
    kh = m // 2 if m % 2 == 0 and num != nx else -1
    cf = c * (2 if num < nx else 0.5)
    mx, inner = X.shape[ax], math.prod(X.shape[ax + 1:])
    total = math.prod(X.shape[:ax]) * m2 * inner
    dc = device(x)
    launch(dc, kernel(dc, x.dtype, "binscale"), total,
           (i32(mx), i32(m2), i64(total), i64(inner), scalar(x.dtype, c), i32(kh), scalar(x.dtype, cf), buf(X)))
    Xv = wgpu.slice(X, [0] * len(X.shape), [m2 if d == ax else s for d, s in enumerate(X.shape)])
    y = fft1(Xv, num, ax, "backward", "irfft")
    return y if y is not None else fallback("resample", x, num=num, axis=axis)
