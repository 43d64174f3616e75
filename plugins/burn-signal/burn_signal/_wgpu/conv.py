"""burn.signal's convolutions on wgpu: direct ``convolve`` / ``correlate`` and ``fftconvolve``.

``convolve`` and ``correlate`` (float32/float64, up to 4 dims, every mode) are
one direct convolution kernel; ``fftconvolve`` zero-pads to a power of two,
multiplies the rfftn spectra in place (an operand with a batch of 1 is not
broadcast) and crops the irfftn for the mode.
"""
from __future__ import annotations

import numpy as np
from burn_wgpu import api as wgpu

from .common import CT, REAL, buf, device, empty, fallback, i64, kernel, launch, u32
from .fft import fft1

_INT4 = np.dtype([("x", np.int32), ("y", np.int32), ("z", np.int32), ("w", np.int32)])


def direct(kind):
    """The wgpu kernel of ``convolve`` or ``correlate`` (scipy.signal's modes), float32/float64,
    up to 4 dims.

    >>> import numpy as np
    >>> from burn_wgpu import api as wgpu
    >>> a, b = np.float32([1, 2, 3]), np.float32([0, 1, 0.5])
    >>> y = direct("convolve")(wgpu.to_device(a), wgpu.to_device(b), mode="full")
    >>> assert np.allclose(wgpu.to_host(y), np.convolve(a, b))
    """
    def k(a, b, *, mode="full"):
        ok = (wgpu.is_native(a) and wgpu.is_native(b) and a.dtype == b.dtype and a.dtype in CT
              and len(a.shape) <= 4 and a.size and b.size)
        if not ok:
            return fallback(kind, a, b, mode=mode)
        if kind == "correlate":
            # correlate(a, b) = convolve(a, reverse(b)) (real): b reversed as a view, negative strides
            b = wgpu.slice(b, [s - 1 for s in b.shape], [-1] * len(b.shape), [-1] * len(b.shape))
        A, B = list(a.shape), list(b.shape)
        if mode == "valid" and all(bs >= as_ for as_, bs in zip(A, B)) and A != B:
            a, b, A, B = b, a, B, A         # convolution commutes: valid mode slides the smaller one
        full = [x + y - 1 for x, y in zip(A, B)]
        O = full if mode == "full" else A if mode == "same" else [x - y + 1 for x, y in zip(A, B)]
        S = [(f - o) // 2 if mode == "same" else (0 if mode == "full" else y - 1)
             for f, o, y in zip(full, O, B)]
        dc = device(a)
        out = empty(dc, tuple(O), a.dtype)
        pad = 4 - len(O)

        def v4(xs, fill):
            return np.array([fill] * pad + list(xs), dtype=np.int32).view(_INT4)[0]
        sa = [0] * pad + list(a.strides)
        sb = [0] * pad + list(b.strides)
        launch(dc, kernel(dc, a.dtype, "conv"), out.size,
               (i64(out.size), buf(a), i64(a.offset), buf(b), i64(b.offset), buf(out),
                v4(O, 1), v4(A, 1), v4(B, 1), v4(S, 0), *map(i64, sa), *map(i64, sb)))
        return out
    k.__name__ = f"wgpu_{kind}"
    return k


class _Fallback(Exception):
    """A layout the native path does not cover (more than 4 batch dims after merging)."""


def _spectrum(x, nf, first):
    """rfftn of ``x`` (real, its convolved axes last, from ``first`` on) zero-padded to ``nf``."""
    nd = len(x.shape)
    y = fft1(x, nf[-1], nd - 1, "backward", "rfft")
    for i in range(len(nf) - 1):
        if y is None:
            break
        y = fft1(y, nf[i], first + i, "backward", "fft")
    if y is None:
        raise _Fallback
    return y


def _inverse_spectrum(y, nf, first):
    for i in range(len(nf) - 1):
        y = fft1(y, nf[i], first + i, "backward", "ifft")
        if y is None:
            raise _Fallback
    y = fft1(y, nf[-1], len(y.shape) - 1, "backward", "irfft")
    if y is None:
        raise _Fallback
    return y


def _fast_len(n):
    # the native FFT's fast lengths are powers of two (others run Bluestein on a power of two >= 2n - 1)
    return 1 << (n - 1).bit_length()


def fftconvolve(a, b, *, mode="full", axes=None):
    """Zero-pad to a power of two along the convolved axes, rfftn both, multiply, irfftn, crop for ``mode``.

    Convolved axes are moved last (a view: the FFT loads read through strides), so the spectra are
    (batch..., spectrum...) and an operand of batch size 1 multiplies every batch row without
    being broadcast; operands that both broadcast along different axes are broadcast (views) first.

    >>> import numpy as np
    >>> from burn_wgpu import api as wgpu
    >>> a, b = np.float32([1, 2, 3, 4]), np.float32([1, -1])
    >>> y = fftconvolve(wgpu.to_device(a), wgpu.to_device(b), mode="same")
    >>> assert np.allclose(wgpu.to_host(y), np.convolve(a, b, mode="same"), atol=1e-5)
    """
    ok = (wgpu.is_native(a) and wgpu.is_native(b) and a.dtype == b.dtype and a.dtype in CT
          and len(a.shape) == len(b.shape) >= 1 and a.size and b.size)
    if not ok:
        return fallback("fftconvolve", a, b, mode=mode, axes=axes)
    nd = len(a.shape)
    conv = tuple(range(nd)) if axes is None else tuple(sorted(int(x) % nd for x in axes))
    bat = [d for d in range(nd) if d not in conv]
    perm = bat + list(conv)
    nb_dims = len(bat)
    bshape = tuple(max(a.shape[d], b.shape[d]) for d in bat)
    full = [a.shape[d] + b.shape[d] - 1 for d in conv]
    nf = [_fast_len(n) for n in full]
    av, bv = wgpu.permute(a, perm), wgpu.permute(b, perm)
    a1, b1 = all(a.shape[d] == 1 for d in bat), all(b.shape[d] == 1 for d in bat)
    if b1 or a1:
        big, small = (av, bv) if b1 else (bv, av)
    else:
        big = wgpu.broadcast_to(av, bshape + av.shape[nb_dims:])
        small = wgpu.broadcast_to(bv, bshape + bv.shape[nb_dims:])
    try:
        fa = _spectrum(big, nf, nb_dims)
        fb = _spectrum(small, nf, nb_dims)
        # the product, in place: fb repeats every fb.size elements (its batch is 1 or equal to fa's)
        dc = device(a)
        launch(dc, kernel(dc, REAL[a.dtype], "cmul_rows"), fa.size,
               (u32(fb.size), u32(fa.size // fb.size), buf(fa), buf(fb)))
        y = _inverse_spectrum(fa, nf, nb_dims)
    except _Fallback:
        return fallback("fftconvolve", a, b, mode=mode, axes=axes)
    starts, stops = [0] * nb_dims, list(bshape)
    for i, d in enumerate(conv):
        na, nbb = a.shape[d], b.shape[d]
        size = full[i] if mode == "full" else na if mode == "same" else abs(na - nbb) + 1
        start = 0 if mode == "full" else (nbb - 1) // 2 if mode == "same" else min(na, nbb) - 1
        starts.append(start)
        stops.append(start + size)
    y = wgpu.slice(y, starts, stops)
    return wgpu.contiguous(wgpu.permute(y, tuple(int(d) for d in np.argsort(perm))))
