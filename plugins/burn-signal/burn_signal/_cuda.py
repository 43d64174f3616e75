"""cuda kernels of burn.signal: cupy.fft (cuFFT), cupyx.scipy.signal and CUDA C, on cupy arrays.

The flex kernels (``_flex``) are the reference: same results and the dtypes
the ops' ``.meta`` rules declare (complex64 from float32/complex64, else
complex128; cuFFT has no half-precision path here, so float16 is computed in
float32 and cast as flex casts it); value-dependent ValueErrors become
:class:`SignalError` naming the op.

Every op is native (``HOST_FALLBACK`` is empty):

- the eight FFTs (``cupy.fft``), ``convolve``, ``correlate`` and
  ``fftconvolve`` (``cupyx.scipy.signal``);
- ``lfilter`` and ``sosfilt``: CUDA C (:func:`filter_source`), one thread per
  independent signal, direct form II transposed in scipy's order of
  operations with rounded (``__fmul_rn``/``__fadd_rn``) arithmetic, so nvcc
  contracts nothing into FMAs scipy does not use. Not cupyx.scipy.signal's
  lfilter: its ``zi`` is not scipy's. ``lfilter`` reads ``a[0]`` back (a
  few bytes) and ``sosfilt`` its ``a0`` column, to raise on a zero leading
  coefficient as flex does;
- ``stft``: boundary/end padding into one buffer, a strided view of the
  segments times the window, ``cupy.fft.rfft``/``fft``, scaled (scipy's
  ``1 / |sum(win)|`` or ``sqrt(1 / (fs sum(win^2)))``);
- ``istft``: ``cupy.fft.irfft``/``ifft`` of every segment, then one CUDA C
  overlap-add kernel in gather form (:func:`ola_source`): a thread per output
  sample sums the scaled, windowed segments covering it in ascending order
  (no atomics: deterministic) and divides by the summed squared window where
  it exceeds 1e-10. One launch per call, whatever ``noverlap`` (the slice-add
  form took ``2 ceil(nperseg / step)``: 2 nperseg at ``noverlap = nperseg - 1``);
- ``resample``: scipy's FFT method (``rfft``/``fft``, the kept bins copied,
  the unpaired Nyquist bin folded or split, the inverse, times num / nx),
  also for complex input.

At run time complex ``lfilter``/``sosfilt`` still run on the host (the CUDA
C is real float32/float64 only): the arrays are downloaded, flex's scipy
kernel runs, the results are uploaded, counted in the device's ``stats()``
(``host_transfers``, ``host_transfer_bytes``) as burn-wgpu counts its own.
:data:`RUNTIME_HOST_FALLBACK` says when.

Everything of burn-cuda goes through its public kernel API, :mod:`burn_cuda.api`
(imported as ``cuda``). This module is imported only when the cuda backend is
registered, which burn-cuda does even without CuPy: CuPy is imported inside the
kernels (:func:`burn_cuda.api.cupy`).
"""
from __future__ import annotations

import functools

import numpy as np
from burn_cuda import api as cuda

from . import _flex, _sources
from ._errors import SignalError
from ._ops import istft_length, stft_plan


def _cp():
    return cuda.cupy()


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
        on_device = cuda.on_device(fn)

        @functools.wraps(fn)
        def run(*arrays, **kw):
            try:
                # burn-cuda's scope: the arrays' device, burn's stream and memory pool
                return on_device(*arrays, **kw)
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
    return _direct(cs.convolve, a, b, mode)


@_kernel("correlate")
def correlate(a, b, *, mode="full"):
    import cupyx.scipy.signal as cs
    return _direct(cs.correlate, a, b, mode)


def _direct(fn, a, b, mode):
    """cupyx's convolve/correlate take 1-d inputs only ("Only 1d inputs are supported
    currently", CuPy 14 on an H200): n-d inputs go through cuFFT, correlate as the
    convolution with the reversed conjugate of ``b``, as scipy defines it."""
    if a.ndim > 1:
        import cupyx.scipy.signal as cs
        if fn is cs.correlate:
            b = b[(slice(None, None, -1),) * b.ndim]
            b = b.conj() if b.dtype.kind == "c" else b
        r = cs.fftconvolve(_up(a), _up(b), mode=mode)
    else:
        r = fn(a, b, mode=mode)
    return _cp().asarray(r).astype(a.dtype, copy=False)


@_kernel("fftconvolve")
def fftconvolve(a, b, *, mode="full", axes=None):
    import cupyx.scipy.signal as cs
    return _cp().asarray(cs.fftconvolve(_up(a), _up(b), mode=mode, axes=axes)).astype(a.dtype, copy=False)


# -- IIR filters: CUDA C -------------------------------------------------------------------------

_SUFFIX = {"float32": "f32", "float64": "f64"}


def filter_source() -> str:
    """The CUDA C of ``lfilter`` and ``sosfilt`` (``kernels/rounding.cuh`` + ``kernels/filters.cu``):
    ``burn_signal_{lfilter,sosfilt}_{f32,f64}``.

    One thread per signal row ``r`` of ``nb = outer * inner`` rows of a C-contiguous
    ``(outer, n, inner)`` layout (the filter axis in the middle: neighbouring threads read
    neighbouring addresses when ``inner > 1``). The state lives in ``zs[j * nb + r]``
    (coalesced); ``zi``/``zf`` use the op's layout (the axis replaced by K, or by 2 with
    the sections first). ``__fmul_rn``/``__fadd_rn``/``__fsub_rn`` (and the ``_d`` forms)
    keep scipy's exact order and rounding: nvcc may not fuse them into FMAs.

    >>> src = filter_source()
    >>> assert 'extern "C" __global__ void burn_signal_lfilter_f64(' in src
    >>> assert 'extern "C" __global__ void burn_signal_sosfilt_f32(' in src
    """
    return _sources.concat(("rounding.cuh", "filters.cu"))


@functools.lru_cache(maxsize=None)
def _host_kernel(name):
    return cuda.host_fallback(_flex.KERNELS[name], f"signal_{name}")


def _host(name, *xs, **kw):
    """flex's scipy kernel on downloaded arrays, the results uploaded; counted in ``stats()``."""
    return _host_kernel(name)(*xs, **kw)


def _launch(source, name, n, args):
    """Kernel ``name`` of ``source`` (compiled once per device) over ``n`` threads on burn's stream
    of the device of the arrays in ``args`` (the first one's)."""
    dc = cuda.device_of(*args)
    cuda.launch(cuda.program(source, device=dc).kernel(name), n, args, device=dc)


def _native_real(*xs):
    return all(str(x.dtype) in _SUFFIX and x.dtype == xs[0].dtype for x in xs)


def _rows(x, axis):
    """``x`` as C-contiguous (outer, n, inner) around ``axis``: (array, outer, n, inner)."""
    cp = _cp()
    outer = int(np.prod(x.shape[:axis], dtype=np.int64))
    inner = int(np.prod(x.shape[axis + 1:], dtype=np.int64))
    return cp.ascontiguousarray(x), outer, int(x.shape[axis]), inner


@_kernel("lfilter")
def lfilter(b, a, x, zi=None, *, axis):
    """scipy.signal.lfilter's ``y`` (the op's ``zi`` semantics): one CUDA thread per signal."""
    cp = _cp()
    _flex._a0(a)        # a[0] read back (a few bytes): flex raises on a[0] == 0, so do we
    if not _native_real(b, a, x, *([zi] if zi is not None else [])):
        return _host("lfilter", b, a, x, zi, axis=axis)
    ax = axis % x.ndim
    K = max(a.shape[0], b.shape[0]) - 1
    # scipy divides both by a[0] once, then filters with the quotients (zero-padded to K + 1)
    co = cp.zeros((2 * (K + 1),), dtype=x.dtype)
    co[:b.shape[0]] = b / a[0]
    co[K + 1:K + 1 + a.shape[0]] = a / a[0]
    xc, outer, n, inner = _rows(x, ax)
    nb = outer * inner
    y = cp.empty(x.shape, dtype=x.dtype)
    if nb == 0 or n == 0:
        return y
    zs = cp.empty((max(K, 1) * nb,), dtype=x.dtype)
    zc = cp.ascontiguousarray(zi) if zi is not None else xc
    _launch(filter_source(), f"burn_signal_lfilter_{_SUFFIX[str(x.dtype)]}", nb,
            [np.int64(nb), np.int64(n), np.int64(inner), np.int32(K), co, xc, zc, np.int32(zi is not None), y, zs])
    return y


@_kernel("sosfilt")
def sosfilt(sos, x, zi=None, *, axis):
    """scipy.signal.sosfilt's ``y`` (and ``zf`` with ``zi``): one CUDA thread per signal."""
    cp = _cp()
    if bool((sos[:, 3] == 0).any()):        # a few bytes read back, as lfilter's a[0]
        raise SignalError(f"signal::sosfilt: a section's leading denominator coefficient sos[:, 3] is zero "
                          f"(sos shape {tuple(sos.shape)}); each section must have a0 != 0")
    if not _native_real(sos, x, *([zi] if zi is not None else [])):
        return _host("sosfilt", sos, x, zi, axis=axis)
    ax = axis % x.ndim
    ns = sos.shape[0]
    # scipy wants a0 == 1 (flex divides each section by its a0); x / 1 is exact, so always divide
    so = cp.ascontiguousarray(sos / sos[:, 3:4])
    xc, outer, n, inner = _rows(x, ax)
    nb = outer * inner
    y = cp.empty(x.shape, dtype=x.dtype)
    zshape = (ns,) + tuple(2 if d == ax else s for d, s in enumerate(x.shape))
    zf = cp.empty(zshape, dtype=x.dtype) if zi is not None else None
    if nb == 0:
        return y if zi is None else (y, zf)
    zs = cp.empty((2 * ns * nb,), dtype=x.dtype)
    zc = cp.ascontiguousarray(zi) if zi is not None else xc
    _launch(filter_source(), f"burn_signal_sosfilt_{_SUFFIX[str(x.dtype)]}", nb,
            [np.int64(nb), np.int64(n), np.int64(inner), np.int32(ns), so, xc, zc, np.int32(zi is not None),
             y, zs, zf if zf is not None else zs])
    return y if zi is None else (y, zf)


# -- stft / istft / resample: CuPy compositions ------------------------------------------------------

def _stft_scale(win, scaling, fs):
    """scipy's stft scale: ``sqrt(1 / sum(win)^2)`` ('spectrum') or ``sqrt(1 / (fs sum(win^2)))``."""
    cp = _cp()
    if scaling == "spectrum":
        return 1 / cp.abs(win.sum())
    return cp.sqrt(1 / (fs * (win * win).sum()))


@_kernel("stft")
def stft(x, win, *, fs, noverlap, nfft, boundary, padded, onesided, scaling):
    """scipy.signal.stft's ``Zxx`` (..., freq, segment) for the last axis of ``x``."""
    cp = _cp()
    n, nper = x.shape[-1], win.shape[0]
    step, total, nseg = stft_plan("stft", n, nper, noverlap, nfft, boundary, padded)
    pl = nper // 2 if boundary == "zeros" else 0
    batch = tuple(x.shape[:-1])
    # boundary zeros, the signal, the end padding: one buffer, then its segments as a strided view
    xp = cp.zeros(batch + (total,), dtype=x.dtype)
    xp[..., pl:pl + n] = x
    it = xp.itemsize
    fr = cp.lib.stride_tricks.as_strided(xp, shape=batch + (nseg, nper),
                                         strides=tuple(xp.strides[:-1]) + (step * it, it))
    fr = fr * win.astype(_real(x), copy=False)
    z = (cp.fft.rfft if onesided else cp.fft.fft)(fr, n=nfft, axis=-1)
    z = z * _stft_scale(win, scaling, fs)
    return cp.ascontiguousarray(cp.swapaxes(z, -1, -2)).astype(_complex(x), copy=False)


def ola_source() -> str:
    """The CUDA C of ``istft``'s overlap-add (``kernels/rounding.cuh`` + ``kernels/ola.cu``):
    ``burn_signal_ola_{f32,f64}``, gather form.

    One thread per output sample ``g < nb * m`` (signal ``b = g / m``, sample ``p = g % m + p0``;
    ``p0`` skips the boundary padding): it sums, over the segments ``s`` that cover ``p`` in
    ascending order (scipy's order; no atomics, so the result is deterministic),
    ``xs[b, p - s step, s] * sc[0] * w[p - s step]`` and ``w[p - s step]^2``, and divides the first
    by the second where that exceeds 1e-10 (scipy's NOLA guard). ``xs`` is the inverse FFT of
    every segment, C-contiguous (nb, nfft, nseg): real, or complex read as (re, im) pairs when
    ``cplx``. ``sc[0]`` is scipy's segment scale (``sum(w)`` or ``sqrt(fs sum(w^2))``).

    >>> src = ola_source()
    >>> assert 'extern "C" __global__ void burn_signal_ola_f32(' in src
    >>> assert 'extern "C" __global__ void burn_signal_ola_f64(' in src
    """
    return _sources.concat(("rounding.cuh", "ola.cu"))


@_kernel("istft")
def istft(z, win, *, fs, noverlap, nfft, onesided, boundary, scaling):
    """scipy.signal.istft's ``x`` from ``z`` (..., freq, segment): the inverse FFT of every segment,
    then one overlap-add kernel (:func:`ola_source`) that scales, windows, sums and normalizes."""
    cp = _cp()
    nper, nseg = win.shape[0], z.shape[-1]
    step = nper - noverlap
    real = _real(z)
    out_t = real if onesided else _complex(z)
    xs = (cp.fft.irfft if onesided else cp.fft.ifft)(z, n=nfft, axis=-2)
    xs = cp.ascontiguousarray(xs.astype(out_t, copy=False))
    w = cp.ascontiguousarray(win.astype(real, copy=False))
    # scipy: the segments times sum(win) ('spectrum') or sqrt(fs sum(win^2)) ('psd'), then windowed
    scale = w.sum() if scaling == "spectrum" else cp.sqrt(fs * (w * w).sum())
    sc = cp.ascontiguousarray(scale.astype(real, copy=False).reshape(1))
    lead = tuple(z.shape[:-2])
    nb = int(np.prod(lead, dtype=np.int64))
    m = istft_length(nseg, nper, step, boundary)
    y = cp.empty(lead + (m,), dtype=out_t)
    total = nb * m
    if total == 0:
        return y
    _launch(ola_source(), f"burn_signal_ola_{_SUFFIX[np.dtype(real).name]}", total,
            [np.int64(total), np.int64(m), np.int32(nper), np.int32(step), np.int32(nseg), np.int32(nfft),
             np.int32(nper // 2 if boundary else 0), np.int32(not onesided), xs, w, sc, y])
    return y


@_kernel("resample")
def resample(x, *, num, axis):
    """scipy.signal.resample (FFT method) to ``num`` samples along ``axis``."""
    cp = _cp()
    ax = axis % x.ndim
    nx = x.shape[ax]
    real = x.dtype.kind != "c"
    X = (cp.fft.rfft if real else cp.fft.fft)(x, axis=ax)
    shape = list(x.shape)
    shape[ax] = num // 2 + 1 if real else num
    Y = cp.zeros(tuple(shape), dtype=X.dtype)
    N = min(num, nx)
    nyq = N // 2 + 1

    def sl(a, b):
        key = [slice(None)] * x.ndim
        key[ax] = slice(a, b)
        return tuple(key)

    # scipy.signal.resample: the kept bins copied, the unpaired Nyquist bin folded or split
    Y[sl(0, nyq)] = X[sl(0, nyq)]
    if not real and N > 2:
        Y[sl(nyq - N, None)] = X[sl(nyq - N, None)]
    if N % 2 == 0:
        if num < nx:
            if real:
                Y[sl(N // 2, N // 2 + 1)] *= 2.0
            else:
                Y[sl(-N // 2, -N // 2 + 1)] += X[sl(-N // 2, -N // 2 + 1)]
        elif nx < num:
            Y[sl(N // 2, N // 2 + 1)] *= 0.5
            if not real:
                Y[sl(num - N // 2, num - N // 2 + 1)] = Y[sl(N // 2, N // 2 + 1)]
    y = cp.fft.irfft(Y, n=num, axis=ax) if real else cp.fft.ifft(Y, axis=ax)
    y = y * (float(num) / float(nx))
    return cp.ascontiguousarray(y).astype(x.dtype, copy=False)


def release_caches(index: int) -> None:
    """Drop CuPy's cuFFT plan cache of cuda device ``index`` (this thread's: CuPy keeps one per
    thread and device), whose plans hold their work areas in burn's pool (they are made inside
    the device's scope). ``Device.memory_cleanup()`` calls this (through burn-signal's
    ``burn_memory_cleanup`` hook) before the pool releases the freed pages; burn.signal
    keeps no other device memory on cuda (cuFFT computes its twiddles and Bluestein constants
    inside its plans).

    Example (with CuPy and a GPU)::

        dev = burn.Device("cuda")
        burn.signal.fft(burn.ones((12,), device=dev)).numpy()
        dev.memory_cleanup()
        assert cupy.fft.config.get_plan_cache().get_curr_size() == 0
    """
    with cuda.scope(index):
        _cp().fft.config.get_plan_cache().clear()



NATIVE = {
    "fft": _fft1("fft", _complex), "ifft": _fft1("ifft", _complex),
    "rfft": _fft1("rfft", _complex), "irfft": _fft1("irfft", _real),
    "fftn": _fftn("fftn", _complex), "ifftn": _fftn("ifftn", _complex),
    "rfftn": _fftn("rfftn", _complex), "irfftn": _fftn("irfftn", _real),
    "convolve": convolve, "correlate": correlate, "fftconvolve": fftconvolve,
    "lfilter": lfilter, "sosfilt": sosfilt, "stft": stft, "istft": istft, "resample": resample,
}

#: native ops that still run on the host for some inputs (downloaded, flex's kernel, uploaded,
#: counted in the device's ``stats()``): op -> when
RUNTIME_HOST_FALLBACK = {"lfilter": "complex operands", "sosfilt": "complex operands"}

KERNELS = dict(NATIVE)

#: kernels that run on host memory (download, scipy, upload): ``burn info`` lists them; none
HOST_FALLBACK: set = set(_flex.KERNELS) - set(NATIVE)
