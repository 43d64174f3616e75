"""burn-signal's plugin module, the entry point ``signal``: what the library provides, read
at discovery without importing it. The namespace ``burn.signal`` and ``burn.fft`` is the package itself, imported
the first time it is touched; each backend's kernel module (and what it wraps: scipy on
flex, pyopencl on wgpu, CuPy on cuda) is imported the first time one of its kernels runs.

Example:
    >>> import burn
    >>> assert burn.plugins.namespaces()["signal"] == "signal"
    >>> assert burn.dispatch.registry.kernel_entries("signal::convolve", "flex")[0].plugin == "signal"
"""
from __future__ import annotations

import sys

from burn.library import register_kernel_modules

__all__ = ["OPS", "KERNEL_MODULES", "burn_register_kernels", "burn_register_namespaces", "burn_plugin_info",
           "burn_memory_cleanup"]

#: every ``signal::<name>`` op the package declares (a test checks it against ``burn_signal.ops``)
OPS = ('convolve', 'correlate', 'fft', 'fftconvolve', 'fftn', 'ifft', 'ifftn', 'irfft', 'irfftn',
       'istft', 'lfilter', 'resample', 'rfft', 'rfftn', 'sosfilt', 'stft',)

#: backends we ship kernels for -> module holding ``KERNELS`` (op name -> function)
KERNEL_MODULES = {"flex": "burn_signal._flex", "wgpu": "burn_signal._wgpu",
                  "cuda": "burn_signal._cuda"}


def burn_register_kernels(registry):
    """Hook: our kernels for every backend whose plugin is installed, as lazy kernels.

    Example:
        >>> import burn
        >>> from burn_signal import plugin
        >>> r = burn.dispatch.Registry(); r.register_backend("flex", object)
        >>> plugin.burn_register_kernels(r)
        >>> assert r.kernel_entries("signal::convolve", "flex")[0].fn.module == "burn_signal._flex"
    """
    register_kernel_modules(registry, "signal", KERNEL_MODULES, ops=OPS)


def burn_register_namespaces(registry):
    """Hook: ``burn.signal`` and ``burn.fft``, imported when first touched.

    Example:
        >>> import burn
        >>> from burn_signal import plugin
        >>> r = burn.dispatch.Registry()
        >>> plugin.burn_register_namespaces(r)
        >>> assert r.namespaces["signal"].target == "burn_signal"
    """
    registry.add_namespace("signal", "burn_signal")
    registry.add_namespace("fft", "burn_signal._fftns")


def burn_memory_cleanup(device):
    """Hook: drop the FFT caches (twiddle tables, Bluestein constants, cuFFT plans) this
    library keeps on ``device``; only a kernel module that ran can hold any.

    Example:
        >>> import burn
        >>> from burn_signal import plugin
        >>> plugin.burn_memory_cleanup(burn.Device.flex())      # flex keeps no caches
    """
    mod = sys.modules.get(KERNEL_MODULES.get(device.kind, ""))
    if mod is not None and hasattr(mod, "release_caches"):
        mod.release_caches(device.index)


def burn_plugin_info():
    """Hook: facts shown by ``burn info``.

    Example:
        >>> from burn_signal import plugin
        >>> assert "signal" in plugin.burn_plugin_info()["namespace"]
    """
    return {"namespace": "burn.signal, burn.fft", "ops": f"{len(OPS)} extension ops (signal::*)",
            "kernels": "flex: scipy.fft / scipy.signal; cuda: cupy.fft / cupyx.scipy.signal, CUDA C "
                       "(lfilter/sosfilt, istft's overlap-add), CuPy compositions (stft, resample); "
                       "wgpu: OpenCL (FFTs, convolutions, lfilter/sosfilt, stft/istft, resample)"}
