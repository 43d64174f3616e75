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

from . import _fftns as fft_namespace
from ._api import *  # noqa: F401,F403  (the public functions)
from ._api import __all__ as _api_all
from ._errors import SignalError
from ._ops import _EXT as ops

__version__ = "0.1.0"
__all__ = list(_api_all) + ["SignalError", "ops"]
