"""burn-signal: ``burn.signal`` and ``burn.fft``, differentiable signal processing with a kernel per backend.

FFTs follow numpy.fft (``n``, ``axis``/``axes``, ``norm``; complex outputs);
everything else follows scipy.signal (``stft`` returns ``(f, t, Zxx)``,
``lfilter(b, a, x, axis, zi)`` returns ``(y, zf)`` with ``zi``...). The
transforms, convolutions, filters, ``stft``/``istft`` and ``resample`` are
``burn.backend_extension`` ops named ``signal::<name>`` with a ``.meta`` rule
(shape/dtype errors at the call) and a backward rule (or a reference
definition autodiff runs through); the flex kernels are scipy.fft /
scipy.signal and are registered only when burn-flex is installed. Third
parties can register a faster kernel for any of them
(``registry.register_kernel("signal::rfft", "wgpu", fn, priority=10)``).

Installed, it is found through the ``burn.plugins`` entry point ``signal``
and appears as ``burn.signal`` (everything) and ``burn.fft`` (the
numpy.fft-like subset):

    >>> import burn, numpy as np
    >>> x = burn.tensor([1.0, 0.0, -1.0, 0.0])
    >>> assert np.allclose(burn.fft.rfft(x).numpy(), [0, 2, 0])
    >>> assert burn.signal.rfft is burn.fft.rfft
"""
from __future__ import annotations

import sys

from . import _fftns as fft_namespace
from ._api import *  # noqa: F401,F403  (the public functions)
from ._api import __all__ as _api_all
from ._errors import SignalError
from ._ops import _EXT as ops

__version__ = "0.1.0"
__all__ = list(_api_all) + ["SignalError", "ops"]

#: backends we ship kernels for -> module holding ``KERNELS`` (op name -> function)
_KERNEL_MODULES = {"flex": "burn_signal._flex", "wgpu": "burn_signal._wgpu",
                   "cuda": "burn_signal._cuda"}


def burn_register_kernels(registry):
    """Hook: register our kernels for every backend whose plugin is installed. They are
    lazy: a backend's kernel module (and scipy.signal, scipy.fft behind flex's) is imported
    the first time one of its kernels runs, not at discovery."""
    from burn.library import register_kernel_modules
    register_kernel_modules(registry, "signal", _KERNEL_MODULES, ops=list(ops))


def burn_register_namespaces(registry):
    """Hook: ``burn.signal`` (everything) and ``burn.fft`` (the numpy.fft-like subset)."""
    registry.add_namespace("signal", sys.modules[__name__])
    registry.add_namespace("fft", fft_namespace)


def burn_memory_cleanup(device):
    """Hook: drop the FFT caches (twiddle tables, Bluestein constants, cuFFT plans) this
    library keeps on ``device``; only a kernel module that ran can hold any."""
    mod = sys.modules.get(_KERNEL_MODULES.get(device.kind, ""))
    if mod is not None and hasattr(mod, "release_caches"):
        mod.release_caches(device.index)


def burn_plugin_info():
    """Hook: facts shown by ``burn info``."""
    return {"namespace": "burn.signal, burn.fft", "ops": f"{len(ops)} extension ops (signal::*)",
            "kernels": "flex: scipy.fft / scipy.signal; cuda: cupy.fft / cupyx.scipy.signal, CUDA C "
                       "(lfilter/sosfilt, istft's overlap-add), CuPy compositions (stft, resample); "
                       "wgpu: OpenCL (FFTs, convolutions, lfilter/sosfilt, stft/istft, resample)"}
