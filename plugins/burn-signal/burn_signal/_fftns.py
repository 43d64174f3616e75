"""``burn.fft``: the numpy.fft-like namespace of burn-signal (the same functions as ``burn.signal``).

Example:
    >>> import burn, numpy as np
    >>> x = np.arange(8.0)
    >>> assert np.allclose(burn.fft.fftshift(burn.fft.fft(burn.tensor(x))).numpy(), np.fft.fftshift(np.fft.fft(x)))
"""
from __future__ import annotations

from ._api import (fft, fft2, fftfreq, fftn, fftshift, hfft, ifft, ifft2, ifftn, ifftshift,  # noqa: F401
                   ihfft, irfft, irfft2, irfftn, rfft, rfft2, rfftfreq, rfftn)

__all__ = ["fft", "ifft", "rfft", "irfft", "fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn", "rfftn",
           "irfftn", "hfft", "ihfft", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]
