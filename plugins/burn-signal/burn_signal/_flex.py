"""flex kernels of burn.signal: scipy.fft / scipy.signal on numpy arrays.

Kernels receive numpy arrays exactly as given and the op's keyword options
(already normalized by the public functions), and return arrays of the
dtypes the ops' ``.meta`` rules declare (scipy keeps float32/complex64 in
single precision; the casts below are no-ops then). SciPy's ValueErrors for
value-dependent problems (``a[0] == 0``) become :class:`SignalError` naming
the op. This module is imported only from the ``burn_register_kernels``
hook, when burn-flex is installed; scipy.fft and scipy.signal are imported by
the first kernel that runs (registering the kernels does not pay for them).
"""
from __future__ import annotations

import functools
import warnings

import numpy as np

from ._errors import SignalError


def _sfft():
    import scipy.fft      # deferred to the first kernel run: registration must not import scipy
    return scipy.fft


def _ss():
    import scipy.signal   # deferred as scipy.fft (it costs more)
    return scipy.signal


def _complex(x):
    return np.complex64 if x.dtype in (np.float32, np.complex64) else np.complex128


def _real(x):
    return np.float32 if x.dtype in (np.float32, np.complex64) else np.float64


def _scipy(name):
    def deco(fn):
        @functools.wraps(fn)
        def run(*arrays, **kw):
            try:
                return fn(*arrays, **kw)
            except ValueError as e:
                ops = ", ".join(f"shape={tuple(a.shape)} dtype={a.dtype}" for a in arrays)
                raise SignalError(f"signal::{name}: {e} (inputs {ops})") from e
        return run
    return deco


def _fft1(name, out):
    """scipy.fft's 1-D transform ``name``, its result in ``out(x)`` (the input's precision)."""
    def k(x, *, n, axis, norm):
        return getattr(_sfft(), name)(x, n=n, axis=axis, norm=norm).astype(out(x), copy=False)
    k.__name__ = name
    return k


def _fftn(name, out):
    """scipy.fft's n-D transform ``name``, its result in ``out(x)``."""
    def k(x, *, s, axes, norm):
        return getattr(_sfft(), name)(x, s=s, axes=axes, norm=norm).astype(out(x), copy=False)
    k.__name__ = name
    return k


fft, ifft, rfft, irfft = (_fft1("fft", _complex), _fft1("ifft", _complex), _fft1("rfft", _complex),
                          _fft1("irfft", _real))
fftn, ifftn, rfftn, irfftn = (_fftn("fftn", _complex), _fftn("ifftn", _complex), _fftn("rfftn", _complex),
                              _fftn("irfftn", _real))


@_scipy("convolve")
def convolve(a, b, *, mode="full"):
    return np.asarray(_ss().convolve(a, b, mode=mode)).astype(a.dtype, copy=False)


@_scipy("correlate")
def correlate(a, b, *, mode="full"):
    return np.asarray(_ss().correlate(a, b, mode=mode)).astype(a.dtype, copy=False)


@_scipy("fftconvolve")
def fftconvolve(a, b, *, mode="full", axes=None):
    if axes is not None and mode == "same" and a.ndim == b.ndim:
        # scipy crops every axis to a's size in mode "same", also a broadcast (size-1) axis it is
        # not convolving along; the op broadcasts those axes (its meta rule): broadcast them first
        conv = {ax % a.ndim for ax in np.atleast_1d(axes)}
        shape = [s if i in conv else max(s, t) for i, (s, t) in enumerate(zip(a.shape, b.shape))]
        a = np.broadcast_to(a, shape)
    return np.asarray(_ss().fftconvolve(a, b, mode=mode, axes=axes)).astype(a.dtype, copy=False)


def _a0(a):
    if a[0] == 0:
        raise SignalError(f"signal::lfilter: the first denominator coefficient a[0] is zero (a={a.tolist()}); "
                          f"the filter is not causal. Normalize a so that a[0] != 0")


def lfilter(b, a, x, zi=None, *, axis):
    _a0(a)
    if zi is None:
        return _ss().lfilter(b, a, x, axis=axis).astype(x.dtype, copy=False)
    return _ss().lfilter(b, a, x, axis=axis, zi=zi)[0].astype(x.dtype, copy=False)


@_scipy("sosfilt")
def _sos_a0(sos):
    if np.any(sos[:, 3] == 0):
        raise SignalError(f"signal::sosfilt: a section's first denominator coefficient a0 (column 3) is zero "
                          f"(sections {np.flatnonzero(sos[:, 3] == 0).tolist()}); the filter is not causal. "
                          f"Normalize each section so that a0 != 0")


def sosfilt(sos, x, zi=None, *, axis):
    _sos_a0(sos)
    if np.any(sos[:, 3] != 1):
        # scipy wants a0 == 1; each section is normalized by its a0 as lfilter does (the reference's semantics)
        sos = sos / sos[:, 3:4]
    if zi is None:
        return _ss().sosfilt(sos, x, axis=axis).astype(x.dtype, copy=False)
    y, zf = _ss().sosfilt(sos, x, axis=axis, zi=zi)
    return y.astype(x.dtype, copy=False), zf.astype(x.dtype, copy=False)


@_scipy("stft")
def stft(x, win, *, fs, noverlap, nfft, boundary, padded, onesided, scaling):
    _, _, z = _ss().stft(x, fs=fs, window=win, nperseg=win.shape[0], noverlap=noverlap, nfft=nfft,
                      detrend=False, return_onesided=onesided, boundary=boundary, padded=padded, axis=-1,
                      scaling=scaling)
    return z.astype(_complex(x), copy=False)


@_scipy("istft")
def istft(z, win, *, fs, noverlap, nfft, onesided, boundary, scaling):
    with warnings.catch_warnings():
        # NOLA: scipy warns and divides where the window overlap is non-zero; so does the reference
        warnings.simplefilter("ignore", UserWarning)
        # scipy crops nperseg // 2 samples at each end with x[..., k:-k]: for k = 0 that slice is
        # empty, not the whole signal, so a one-sample window is cropped by not asking for it
        crop = boundary and win.shape[0] // 2 > 0
        _, x = _ss().istft(z, fs=fs, window=win, nperseg=win.shape[0], noverlap=noverlap, nfft=nfft,
                        input_onesided=onesided, boundary=crop, time_axis=-1, freq_axis=-2, scaling=scaling)
    return x.astype(_real(z) if onesided else _complex(z), copy=False)


@_scipy("resample")
def resample(x, *, num, axis):
    return _ss().resample(x, num, axis=axis).astype(x.dtype, copy=False)


KERNELS = {
    "fft": fft, "ifft": ifft, "rfft": rfft, "irfft": irfft,
    "fftn": fftn, "ifftn": ifftn, "rfftn": rfftn, "irfftn": irfftn,
    "convolve": convolve, "correlate": correlate, "fftconvolve": fftconvolve,
    "lfilter": lfilter, "sosfilt": sosfilt, "stft": stft, "istft": istft, "resample": resample,
}
