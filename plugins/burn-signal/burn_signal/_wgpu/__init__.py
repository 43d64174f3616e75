"""wgpu kernels of burn.signal: an OpenCL FFT, convolutions, IIR filters, the STFT and resampling.

Native: ``fft``, ``ifft``, ``rfft``, ``irfft`` and their n-D forms
(``fftn``... as 1-D transforms along each axis), complex64 (complex128 where
the device has fp64), batched over every other axis, inputs read through
their strides (:mod:`.fft`: lengths whose prime factors are all <= 13 run
mixed-radix Stockham passes of up to 16 points each, :mod:`.passes`; other
lengths run Bluestein's chirp-z algorithm on top of them). Index math is
32-bit (tensors hold < 2^31 elements): 64-bit divisions per element cost as
much as the FFT arithmetic on a CPU device.

On top of them, float32/float64: ``convolve``, ``correlate`` and
``fftconvolve`` (:mod:`.conv`), ``lfilter`` and ``sosfilt`` (:mod:`.filters`),
``stft``, ``istft`` and ``resample`` (:mod:`.spectral`).

The OpenCL C is in ``burn_signal/kernels``: ``common.cl`` + ``signal.cl``, one
program per dtype holding every kernel but the FFT passes (lengths, batch and
strides are run-time arguments, so it compiles once per device, then the disk
cache), and ``common.cl`` + ``fft_pass.cl``, one program per dtype and radix,
its R-point DFT generated as straight-line code (:func:`.passes.pass_source`).

So every op is native (``HOST_FALLBACK`` is empty). What the kernels do not
cover falls back to the host at run time: more than 4 batch dims (after
merging contiguous ones), empty inputs, float16, and complex convolution,
filtering or resampling. The inputs are copied to the host, the flex
(scipy) kernel runs, the results are copied back, and the copies are counted
in the device's ``stats()`` (``host_transfers``, ``host_transfer_bytes``).

It uses burn-wgpu only through its kernel API, :mod:`burn_wgpu.api` (program
from source with ``#define``s, launch, buffers, views, counted host copies).
This package is imported only when the wgpu backend is registered; PyOpenCL is
imported by the first kernel that runs.
"""
from __future__ import annotations

from .. import _flex
from . import conv, fft, filters, spectral
from .common import fallback_kernel

# the device caches of the FFT (the same dicts as fft.TW / fft.CHIRP)
_TW = fft.TW
_CHIRP = fft.CHIRP


def release_caches(index: int) -> None:
    """Drop the FFT caches of wgpu device ``index``: its twiddle tables and Bluestein constants.

    They keep device memory for the life of the process otherwise (up to 16 tables and 8
    Bluestein entries, ~24 MB each at n ~ 1e6). ``Device.memory_cleanup()`` calls this
    (through burn-signal's ``burn_memory_cleanup`` hook) before the pool releases the freed
    pages; the next FFT of a length rebuilds what it needs.

    Example (``burn.Device("wgpu").memory_cleanup()`` does this for device 0):
        >>> from burn_signal import _wgpu
        >>> _wgpu._TW[(99, "float32", 8)] = "a table of device 99"
        >>> _wgpu.release_caches(99)
        >>> assert not [k for k in _wgpu._TW if k[0] == 99]
    """
    for cache in (_TW, _CHIRP):
        for key in [k for k in cache if k[0] == index]:
            del cache[key]


NATIVE = {k: fft.one(k) for k in ("fft", "ifft", "rfft", "irfft")}
NATIVE.update({k: fft.many(k) for k in ("fftn", "ifftn", "rfftn", "irfftn")})
NATIVE.update({k: conv.direct(k) for k in ("convolve", "correlate")})
NATIVE.update(fftconvolve=conv.fftconvolve, lfilter=filters.lfilter, sosfilt=filters.sosfilt, stft=spectral.stft,
              istft=spectral.istft, resample=spectral.resample)

KERNELS = {name: NATIVE.get(name) or fallback_kernel(name) for name in _flex.KERNELS}

#: kernels that run on host memory (download, scipy, upload): ``burn info`` lists them
HOST_FALLBACK = set(_flex.KERNELS) - set(NATIVE)
