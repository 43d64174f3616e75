"""cuda kernels of burn.signal: cupy.fft (cuFFT) and cupyx.scipy.signal, on cupy arrays.

The flex kernels (``_flex``) are the reference: same results and the dtypes
the ops' ``.meta`` rules declare (complex64 from float32/complex64, else
complex128; cuFFT has no half-precision path here, so float16 is computed in
float32 and cast as flex casts it); value-dependent ValueErrors become
:class:`SignalError` naming the op.

Native: the eight FFTs (``cupy.fft``), ``convolve``, ``correlate`` and
``fftconvolve`` (``cupyx.scipy.signal``). ``HOST_FALLBACK`` (download,
scipy.signal through the flex kernel, upload; ``burn info`` marks them):
``lfilter``, ``sosfilt``, ``stft``, ``istft`` and ``resample``, whose
cupyx.scipy.signal counterparts exist only in recent CuPy releases and have
not been checked against scipy's ``zi``/``boundary``/``scaling`` semantics
on a GPU yet.

This module is imported only when the cuda backend is registered, which
burn-cuda does even without CuPy: CuPy is imported inside the kernels.
"""
from __future__ import annotations

import functools

import numpy as np

from . import _flex
from ._errors import SignalError


def _cp():
    import cupy
    return cupy


def _complex(x):
    return np.complex64 if x.dtype in (np.float32, np.complex64) else np.complex128


def _real(x):
    return np.float32 if x.dtype in (np.float32, np.complex64) else np.float64


def _up(x):
    # cuFFT: single or double precision only
    return x.astype(np.float32) if x.dtype == np.float16 else x


def _kernel(name):
    """Run in burn-cuda's scope (device, stream, pool) of the arrays; ValueErrors become SignalError
    naming the op."""
    def deco(fn):
        @functools.wraps(fn)
        def run(*arrays, **kw):
            from burn_cuda.kernels import on_device
            try:
                # burn-cuda's scope: the arrays' device, burn's stream and memory pool
                return on_device(fn)(*arrays, **kw)
            except SignalError:
                raise
            except ValueError as e:
                ops = ", ".join(f"shape={tuple(a.shape)} dtype={a.dtype}" for a in arrays if a is not None)
                raise SignalError(f"signal::{name}: {e} (inputs {ops})") from e
        run.__name__ = f"cuda_signal_{name}"
        return run
    return deco


def _fft1(name, out):
    @_kernel(name)
    def k(x, *, n, axis, norm):
        cp = _cp()
        return getattr(cp.fft, name)(_up(x), n=n, axis=axis, norm=norm).astype(out(x), copy=False)
    return k


def _fftn(name, out):
    @_kernel(name)
    def k(x, *, s, axes, norm):
        cp = _cp()
        return getattr(cp.fft, name)(_up(x), s=s, axes=axes, norm=norm).astype(out(x), copy=False)
    return k


@_kernel("convolve")
def convolve(a, b, *, mode="full"):
    import cupyx.scipy.signal as cs
    return _cp().asarray(cs.convolve(a, b, mode=mode)).astype(a.dtype, copy=False)


@_kernel("correlate")
def correlate(a, b, *, mode="full"):
    import cupyx.scipy.signal as cs
    return _cp().asarray(cs.correlate(a, b, mode=mode)).astype(a.dtype, copy=False)


@_kernel("fftconvolve")
def fftconvolve(a, b, *, mode="full", axes=None):
    import cupyx.scipy.signal as cs
    return _cp().asarray(cs.fftconvolve(_up(a), _up(b), mode=mode, axes=axes)).astype(a.dtype, copy=False)


NATIVE = {
    "fft": _fft1("fft", _complex), "ifft": _fft1("ifft", _complex),
    "rfft": _fft1("rfft", _complex), "irfft": _fft1("irfft", _real),
    "fftn": _fftn("fftn", _complex), "ifftn": _fftn("ifftn", _complex),
    "rfftn": _fftn("rfftn", _complex), "irfftn": _fftn("irfftn", _real),
    "convolve": convolve, "correlate": correlate, "fftconvolve": fftconvolve,
}


def _fallback_kernel(name):
    flex = _flex.KERNELS[name]

    def k(*xs, **kw):
        cp = _cp()
        r = flex(*[cp.asnumpy(x) if isinstance(x, cp.ndarray) else x for x in xs], **kw)
        return tuple(cp.asarray(v) for v in r) if isinstance(r, tuple) else cp.asarray(r)
    k.__name__ = f"cuda_host_signal_{name}"
    return _kernel(name)(k)


KERNELS = {name: NATIVE.get(name) or _fallback_kernel(name) for name in _flex.KERNELS}

#: kernels that run on host memory (download, scipy, upload): ``burn info`` lists them
HOST_FALLBACK = set(_flex.KERNELS) - set(NATIVE)
