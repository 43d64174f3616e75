"""The public functions of ``burn.signal`` (numpy.fft names for the FFTs, scipy.signal for the rest).

Transforms, convolutions, filters, ``stft``/``istft`` and ``resample`` are
extension ops (:mod:`burn_signal._ops`) with a kernel per backend; windows,
frequencies, shifts, ``spectrogram`` and ``welch`` are compositions of burn
ops and of those extension ops, so they run and differentiate wherever those
do. Integer inputs are computed in float64 and half precision in float32,
as numpy/SciPy do.
"""
from __future__ import annotations

import numpy as np

import burn
from burn import ShapeError, Tensor

from . import _ops as O
from ._errors import SignalError
from ._ops import _EXT

__all__ = [
    "fft", "ifft", "rfft", "irfft", "fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn", "rfftn", "irfftn",
    "hfft", "ihfft", "fftfreq", "rfftfreq", "fftshift", "ifftshift",
    "stft", "istft", "spectrogram", "welch",
    "get_window", "hann", "hamming", "blackman", "bartlett", "kaiser",
    "convolve", "correlate", "fftconvolve", "lfilter", "sosfilt", "resample",
]


# -- argument helpers -----------------------------------------------------------------------------

def _t(x, like=None) -> Tensor:
    if isinstance(x, Tensor):
        return x
    if like is not None:
        return burn.asarray(np.asarray(x), device=like.device)
    return burn.asarray(np.asarray(x))


def _inexact(x, *, complex_=False) -> Tensor:
    """numpy's computation dtype: ints/bools in float64, half precision in float32."""
    d = x.dtype
    if not d.is_inexact:
        x = x.astype(burn.float64)
    elif d.is_floating and d.itemsize < 4:
        x = x.astype(burn.float32)
    if complex_ and not x.dtype.is_complex:
        x = x.astype(O.complex_of(x.dtype))
    return x


def _common(op, *xs):
    xs = [_inexact(x) for x in xs]
    d = burn.result_type(*[x.dtype for x in xs])
    return [x if x.dtype is d else x.astype(d) for x in xs]


def _axis(op, x, axis) -> int:
    return O.check_axes(op, x, (axis,))[0]


def _norm(op, norm) -> str:
    return O.check_norm(op, norm)


# -- FFTs -------------------------------------------------------------------------------------------

def _fft1(op, x, n, axis, norm, *, complex_in=False):
    x = _inexact(_t(x), complex_=complex_in)
    ax = _axis(op, x, axis)
    if n is None:
        n = 2 * (x.shape[ax] - 1) if op == "irfft" else x.shape[ax]
    return _EXT[op](x, n=int(n) if isinstance(n, (int, np.integer)) else n, axis=ax, norm=_norm(op, norm))


def fft(x, /, n=None, axis=-1, norm=None) -> Tensor:
    """One-dimensional discrete Fourier transform (numpy.fft.fft): a complex tensor.

    ``n`` crops or zero-pads ``axis`` first; ``norm`` is "backward" (default,
    no scaling), "ortho" or "forward" (1/n).

    Example:
        >>> import burn, numpy as np
        >>> x = np.array([1.0, 2.0, 0.0, -1.0])
        >>> assert np.allclose(burn.signal.fft(burn.tensor(x)).numpy(), np.fft.fft(x))
    """
    return _fft1("fft", x, n, axis, norm)


def ifft(x, /, n=None, axis=-1, norm=None) -> Tensor:
    """Inverse of :func:`fft` (numpy.fft.ifft).

    Example:
        >>> import burn, numpy as np
        >>> z = burn.signal.fft(burn.tensor([1.0, 2.0, 3.0]))
        >>> assert np.allclose(burn.signal.ifft(z).numpy(), [1, 2, 3])
    """
    return _fft1("ifft", x, n, axis, norm)


def rfft(x, /, n=None, axis=-1, norm=None) -> Tensor:
    """FFT of a real signal, the n//2 + 1 non-negative frequencies (numpy.fft.rfft).

    Example:
        >>> import burn, numpy as np
        >>> x = np.arange(5.0)
        >>> assert np.allclose(burn.signal.rfft(burn.tensor(x)).numpy(), np.fft.rfft(x))
    """
    return _fft1("rfft", x, n, axis, norm)


def irfft(x, /, n=None, axis=-1, norm=None) -> Tensor:
    """Inverse of :func:`rfft`: a real signal of length ``n`` (default 2 * (m - 1)).

    Example:
        >>> import burn, numpy as np
        >>> x = burn.tensor([1.0, 0.0, -2.0, 5.0, 3.0])
        >>> assert np.allclose(burn.signal.irfft(burn.signal.rfft(x), n=5).numpy(), x.numpy(), atol=1e-5)
    """
    return _fft1("irfft", x, n, axis, norm, complex_in=True)


def _fftn(op, x, s, axes, norm, *, complex_in=False):
    x = _inexact(_t(x), complex_=complex_in)
    if axes is None:
        axes = tuple(range(x.ndim)) if s is None else tuple(range(x.ndim - len(s), x.ndim))
    axes = O.check_axes(op, x, tuple(axes))
    if s is None:
        s = [None] * len(axes)
    if len(s) != len(axes):
        raise ShapeError(f"signal::{op}: s={tuple(s)} and axes={axes} must have the same length")
    s = list(s)
    for i, a in enumerate(axes):
        if s[i] is None or s[i] == -1:
            s[i] = x.shape[a]
            if op == "irfftn" and i == len(axes) - 1:
                s[i] = 2 * (x.shape[a] - 1)
    if not axes:
        raise ShapeError(f"signal::{op}: no axes to transform (input shape {x.shape})")
    return _EXT[op](x, s=tuple(int(v) for v in s), axes=axes, norm=_norm(op, norm))


def fftn(x, /, s=None, axes=None, norm=None) -> Tensor:
    """N-dimensional FFT over ``axes`` (all by default), ``s`` the sizes (numpy.fft.fftn).

    Example:
        >>> import burn, numpy as np
        >>> x = np.arange(12.0).reshape(3, 4)
        >>> assert np.allclose(burn.signal.fftn(burn.tensor(x)).numpy(), np.fft.fftn(x))
    """
    return _fftn("fftn", x, s, axes, norm)


def ifftn(x, /, s=None, axes=None, norm=None) -> Tensor:
    """Inverse of :func:`fftn` (numpy.fft.ifftn).

    Example:
        >>> import burn, numpy as np
        >>> x = burn.tensor(np.arange(6.0).reshape(2, 3))
        >>> assert np.allclose(burn.signal.ifftn(burn.signal.fftn(x)).numpy(), x.numpy())
    """
    return _fftn("ifftn", x, s, axes, norm)


def rfftn(x, /, s=None, axes=None, norm=None) -> Tensor:
    """N-dimensional FFT of a real input, one-sided along the last of ``axes`` (numpy.fft.rfftn).

    Example:
        >>> import burn, numpy as np
        >>> x = np.arange(12.0).reshape(3, 4)
        >>> assert np.allclose(burn.signal.rfftn(burn.tensor(x)).numpy(), np.fft.rfftn(x))
    """
    return _fftn("rfftn", x, s, axes, norm)


def irfftn(x, /, s=None, axes=None, norm=None) -> Tensor:
    """Inverse of :func:`rfftn` (numpy.fft.irfftn).

    Example:
        >>> import burn, numpy as np
        >>> x = burn.tensor(np.arange(12.0).reshape(3, 4))
        >>> assert np.allclose(burn.signal.irfftn(burn.signal.rfftn(x), s=(3, 4)).numpy(), x.numpy())
    """
    return _fftn("irfftn", x, s, axes, norm, complex_in=True)


def hfft(x, /, n=None, axis=-1, norm=None) -> Tensor:
    """FFT of a signal with Hermitian symmetry given by its one-sided half: a real tensor of length ``n``
    (default 2 * (m - 1)) along ``axis`` (numpy.fft.hfft).

    Composed as numpy does, ``irfft(conj(x))`` with the norm's direction swapped, so it runs and
    differentiates wherever :func:`irfft` does.

    Example:
        >>> import burn, numpy as np
        >>> x = np.array([1.0, 2.0 - 1.0j, 0.5j])
        >>> assert np.allclose(burn.fft.hfft(burn.tensor(x)).numpy(), np.fft.hfft(x))
    """
    x = _inexact(_t(x), complex_=True)
    return irfft(burn.conj(x), n=n, axis=axis, norm=O._DUAL[_norm("hfft", norm)])


def ihfft(x, /, n=None, axis=-1, norm=None) -> Tensor:
    """Inverse of :func:`hfft`: the one-sided half (n//2 + 1 values) of the Hermitian spectrum of a real
    signal (numpy.fft.ihfft), composed as ``conj(rfft(x))`` with the norm's direction swapped.

    Example:
        >>> import burn, numpy as np
        >>> x = np.array([1.0, -2.0, 3.0, 0.5])
        >>> assert np.allclose(burn.fft.ihfft(burn.tensor(x)).numpy(), np.fft.ihfft(x))
    """
    return burn.conj(rfft(x, n=n, axis=axis, norm=O._DUAL[_norm("ihfft", norm)]))


def fft2(x, /, s=None, axes=(-2, -1), norm=None) -> Tensor:
    """Two-dimensional FFT over the last two axes (numpy.fft.fft2).

    Example:
        >>> import burn, numpy as np
        >>> x = np.arange(6.0).reshape(2, 3)
        >>> assert np.allclose(burn.signal.fft2(burn.tensor(x)).numpy(), np.fft.fft2(x))
    """
    return _fftn("fftn", x, s, axes, norm)


def ifft2(x, /, s=None, axes=(-2, -1), norm=None) -> Tensor:
    """Inverse of :func:`fft2` (numpy.fft.ifft2).

    Example:
        >>> import burn, numpy as np
        >>> x = burn.tensor(np.arange(6.0).reshape(2, 3))
        >>> assert np.allclose(burn.signal.ifft2(burn.signal.fft2(x)).numpy(), x.numpy())
    """
    return _fftn("ifftn", x, s, axes, norm)


def rfft2(x, /, s=None, axes=(-2, -1), norm=None) -> Tensor:
    """Two-dimensional FFT of a real input (numpy.fft.rfft2).

    Example:
        >>> import burn, numpy as np
        >>> x = np.arange(6.0).reshape(2, 3)
        >>> assert np.allclose(burn.signal.rfft2(burn.tensor(x)).numpy(), np.fft.rfft2(x))
    """
    return _fftn("rfftn", x, s, axes, norm)


def irfft2(x, /, s=None, axes=(-2, -1), norm=None) -> Tensor:
    """Inverse of :func:`rfft2` (numpy.fft.irfft2).

    Example:
        >>> import burn, numpy as np
        >>> x = burn.tensor(np.arange(8.0).reshape(2, 4))
        >>> assert np.allclose(burn.signal.irfft2(burn.signal.rfft2(x)).numpy(), x.numpy())
    """
    return _fftn("irfftn", x, s, axes, norm, complex_in=True)


def fftfreq(n, /, d=1.0, *, dtype=None, device=None) -> Tensor:
    """Sample frequencies of an ``n``-point FFT with sample spacing ``d`` (numpy.fft.fftfreq), in
    ``dtype`` or the default real floating dtype, float32 (the Array API's rule; numpy's is float64).

    Example:
        >>> import burn
        >>> assert burn.signal.fftfreq(4, d=0.5).tolist() == [0.0, 0.5, -1.0, -0.5]
    """
    if n < 1:
        raise ShapeError(f"signal::fftfreq: n must be positive, got {n}")
    k = np.concatenate([np.arange(0, (n - 1) // 2 + 1), np.arange(-(n // 2), 0)])
    # the default real floating dtype (float32), as the Array API says; numpy gives float64
    return burn.tensor(k / (n * d), dtype=dtype or burn.float32, device=device)


def rfftfreq(n, /, d=1.0, *, dtype=None, device=None) -> Tensor:
    """Sample frequencies of :func:`rfft` (numpy.fft.rfftfreq), in ``dtype`` or float32 as :func:`fftfreq`.

    Example:
        >>> import burn
        >>> assert burn.signal.rfftfreq(5, dtype=burn.float64).tolist() == [0.0, 0.2, 0.4]
    """
    if n < 1:
        raise ShapeError(f"signal::rfftfreq: n must be positive, got {n}")
    return burn.tensor(np.arange(0, n // 2 + 1) / (n * d), dtype=dtype or burn.float32, device=device)


def _shift(x, axes, sign):
    x = _t(x)
    axes = tuple(range(x.ndim)) if axes is None else (axes,) if isinstance(axes, int) else tuple(axes)
    axes = O.check_axes("fftshift", x, axes)
    if not axes:
        return x
    return burn.roll(x, tuple(sign * (x.shape[a] // 2) for a in axes), axis=axes)


def fftshift(x, /, axes=None) -> Tensor:
    """Move the zero frequency to the centre (numpy.fft.fftshift).

    Example:
        >>> import burn
        >>> assert burn.signal.fftshift(burn.tensor([0, 1, 2, -2, -1])).tolist() == [-2, -1, 0, 1, 2]
    """
    return _shift(x, axes, 1)


def ifftshift(x, /, axes=None) -> Tensor:
    """Inverse of :func:`fftshift` (numpy.fft.ifftshift).

    Example:
        >>> import burn
        >>> assert burn.signal.ifftshift(burn.tensor([-2, -1, 0, 1, 2])).tolist() == [0, 1, 2, -2, -1]
    """
    return _shift(x, axes, -1)


# -- windows (scipy.signal.windows conventions) ----------------------------------------------------------

def _win_out(w, dtype, device):
    return burn.tensor(np.asarray(w, dtype=np.float64), dtype=dtype or burn.float64, device=device)


def _cosine(M, coeffs, sym):
    if M <= 1:
        return np.ones(max(M, 0))
    n = M if sym else M + 1          # periodic: one more point of the symmetric window, dropped
    fac = np.linspace(-np.pi, np.pi, n)
    w = sum(a * np.cos(k * fac) for k, a in enumerate(coeffs))
    return w[:M]


def hann(M, sym=True, *, dtype=None, device=None) -> Tensor:
    """Hann window of ``M`` points (scipy.signal.windows.hann); ``sym=False`` is periodic, for spectra.

    Example:
        >>> import burn
        >>> assert burn.signal.hann(3).tolist() == [0.0, 1.0, 0.0]
    """
    return _win_out(_cosine(M, (0.5, 0.5), sym), dtype, device)


def hamming(M, sym=True, *, dtype=None, device=None) -> Tensor:
    """Hamming window (scipy.signal.windows.hamming).

    Example:
        >>> import burn, numpy as np
        >>> assert np.allclose(burn.signal.hamming(3).numpy(), [0.08, 1.0, 0.08])
    """
    return _win_out(_cosine(M, (0.54, 0.46), sym), dtype, device)


def blackman(M, sym=True, *, dtype=None, device=None) -> Tensor:
    """Blackman window (scipy.signal.windows.blackman).

    Example:
        >>> import burn, numpy as np
        >>> assert np.allclose(burn.signal.blackman(3).numpy(), [0.0, 1.0, 0.0], atol=1e-12)
    """
    return _win_out(_cosine(M, (0.42, 0.50, 0.08), sym), dtype, device)


def bartlett(M, sym=True, *, dtype=None, device=None) -> Tensor:
    """Bartlett (triangular, zero end points) window (scipy.signal.windows.bartlett).

    Example:
        >>> import burn
        >>> assert burn.signal.bartlett(5).tolist() == [0.0, 0.5, 1.0, 0.5, 0.0]
    """
    if M <= 1:
        return _win_out(np.ones(max(M, 0)), dtype, device)
    m = M if sym else M + 1
    n = np.arange(m)
    w = np.where(n <= (m - 1) / 2.0, 2.0 * n / (m - 1), 2.0 - 2.0 * n / (m - 1))
    return _win_out(w[:M], dtype, device)


def kaiser(M, beta, sym=True, *, dtype=None, device=None) -> Tensor:
    """Kaiser window with shape parameter ``beta`` (scipy.signal.windows.kaiser).

    Example:
        >>> import burn, numpy as np
        >>> w = burn.signal.kaiser(5, 0.0)
        >>> assert np.allclose(w.numpy(), 1.0)
    """
    if M <= 1:
        return _win_out(np.ones(max(M, 0)), dtype, device)
    m = M if sym else M + 1
    n = np.arange(m)
    alpha = (m - 1) / 2.0
    w = np.i0(beta * np.sqrt(np.clip(1 - ((n - alpha) / alpha) ** 2, 0, None))) / np.i0(beta)
    return _win_out(w[:M], dtype, device)


_WINDOWS = {"hann": hann, "hanning": hann, "hamming": hamming, "blackman": blackman,
            "bartlett": bartlett, "kaiser": kaiser}


def get_window(window, Nx, fftbins=True, *, dtype=None, device=None) -> Tensor:
    """A window by name, ``(name, parameter)`` or as given (scipy.signal.get_window).

    ``fftbins=True`` (default) gives the periodic window used for spectra.
    hann, hamming, blackman, bartlett and kaiser are computed here; other
    names SciPy knows (``("tukey", 0.25)``, ...) come from SciPy.

    Example:
        >>> import burn, numpy as np, scipy.signal as ss
        >>> w = burn.signal.get_window(("kaiser", 8.0), 16)
        >>> assert np.allclose(w.numpy(), ss.get_window(("kaiser", 8.0), 16))
    """
    if isinstance(window, Tensor):
        return window
    name, args = (window[0], tuple(window[1:])) if isinstance(window, tuple) else (window, ())
    if isinstance(name, str) and name.lower() in _WINDOWS:
        fn = _WINDOWS[name.lower()]
        if fn is kaiser and len(args) != 1:
            raise SignalError("signal::get_window: the 'kaiser' window needs its beta: ('kaiser', beta)")
        return fn(Nx, *args, sym=not fftbins, dtype=dtype, device=device)
    if isinstance(name, str):
        import scipy.signal as ss
        try:
            w = ss.get_window(window, Nx, fftbins=fftbins)
        except ValueError as e:
            raise SignalError(f"signal::get_window: {e}") from None
        return _win_out(w, dtype, device)
    return _win_out(np.asarray(window), dtype, device)


def _window_for(op, window, nperseg, n, like, *, clip=True):
    """(window tensor of like's real dtype, nperseg) as scipy's _triage_segments."""
    real = O.real_of(like.dtype)
    if isinstance(window, (str, tuple)):
        if nperseg is None:
            nperseg = 256
        if clip and n is not None and nperseg > n:
            nperseg = n
        win = get_window(window, int(nperseg), dtype=real, device=like.device)
    else:
        win = _t(window, like)
        if win.ndim != 1:
            raise ShapeError(f"signal::{op}: the window must be 1-D, got shape {win.shape}")
        if nperseg is not None and nperseg != win.shape[0]:
            raise SignalError(f"signal::{op}: nperseg={nperseg} differs from the window's length {win.shape[0]}")
        nperseg = win.shape[0]
        win = win.astype(real) if win.dtype is not real else win
        win = win if win.device == like.device else win.to_device(like.device)
    return win, int(nperseg)


# -- stft / istft / spectrogram / welch -----------------------------------------------------------------------

def stft(x, fs=1.0, window="hann", nperseg=256, noverlap=None, nfft=None, detrend=False,
         return_onesided=True, boundary="zeros", padded=True, axis=-1, scaling="spectrum"):
    """Short-time Fourier transform, ``(f, t, Zxx)`` as scipy.signal.stft.

    ``Zxx`` has the frequencies at ``axis`` and the segment times last
    (shape ``(..., len(f), len(t))`` for ``axis=-1``). ``boundary`` is
    "zeros" or None, ``detrend`` False (others are not supported).

    Example:
        >>> import burn, numpy as np, scipy.signal as ss
        >>> x = np.sin(np.arange(400) * 0.3)
        >>> f, t, z = burn.signal.stft(burn.tensor(x), nperseg=64)
        >>> assert np.allclose(z.numpy(), ss.stft(x, nperseg=64)[2])
    """
    x = _inexact(_t(x))
    ax = _axis("stft", x, axis)
    if detrend not in (False, None):
        raise SignalError(f"signal::stft: detrend={detrend!r} is not supported; use detrend=False")
    if x.dtype.is_complex:
        return_onesided = False          # scipy switches to two-sided for complex input, too
    xl = burn.moveaxis(x, ax, -1) if ax != x.ndim - 1 else x
    win, nperseg = _window_for("stft", window, nperseg, xl.shape[-1], xl)
    noverlap = nperseg // 2 if noverlap is None else int(noverlap)
    nfft = nperseg if nfft is None else int(nfft)
    z = O.stft_op(xl, win, fs=float(fs), noverlap=noverlap, nfft=nfft, boundary=boundary, padded=bool(padded),
                  onesided=bool(return_onesided), scaling=scaling)
    nseg = z.shape[-1]
    f = (rfftfreq if return_onesided else fftfreq)(nfft, 1.0 / fs, dtype=burn.float64, device=x.device)
    t = (nperseg / 2 + (nperseg - noverlap) * np.arange(nseg)) / fs
    if boundary is not None:
        t = t - (nperseg / 2) / fs
    if ax != x.ndim - 1:
        z = burn.moveaxis(z, -2, ax)
    return f, burn.tensor(t, dtype=burn.float64, device=x.device), z


def istft(Zxx, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None, input_onesided=True,
          boundary=True, time_axis=-1, freq_axis=-2, scaling="spectrum"):
    """Inverse STFT, ``(t, x)`` as scipy.signal.istft: ``istft(stft(x)[2])[1]`` recovers ``x``.

    (``t`` counts the samples along the output's time axis; SciPy's counts
    the first axis, which differs for batched input.)

    Example:
        >>> import burn, numpy as np
        >>> x = burn.tensor(np.cos(np.arange(256) * 0.1))
        >>> _, _, z = burn.signal.stft(x, nperseg=32)
        >>> _, y = burn.signal.istft(z, nperseg=32)
        >>> assert np.allclose(y.numpy()[:256], x.numpy())
    """
    z = _inexact(_t(Zxx), complex_=True)
    if z.ndim < 2:
        raise ShapeError(f"signal::istft: Zxx must have at least 2 dimensions (..., freq, time), got shape {z.shape}")
    fa, ta = O.check_axes("istft", z, (freq_axis, time_axis))
    if fa == ta:
        raise SignalError("signal::istft: freq_axis and time_axis must differ")
    if (fa, ta) != (z.ndim - 2, z.ndim - 1):
        outer = [i for i in range(z.ndim) if i not in (fa, ta)]
        z = burn.permute_dims(z, outer + [fa, ta])
    nfreq = z.shape[-2]
    n_default = 2 * (nfreq - 1) if input_onesided else nfreq
    if nperseg is None and not isinstance(window, (str, tuple)):
        nperseg = _t(window).shape[0]
    nperseg = n_default if nperseg is None else int(nperseg)
    if nperseg < 1:
        raise SignalError(f"signal::istft: nperseg must be positive, got {nperseg}")
    if nfft is None:
        nfft = nperseg if (input_onesided and nperseg == n_default + 1) else n_default
    win, nperseg = _window_for("istft", window, nperseg, None, z, clip=False)
    noverlap = nperseg // 2 if noverlap is None else int(noverlap)
    x = O.istft_op(z, win, fs=float(fs), noverlap=noverlap, nfft=int(nfft), onesided=bool(input_onesided),
                   boundary=bool(boundary), scaling=scaling)
    out_axis = -1
    if x.ndim > 1 and ta != z.ndim - 1:
        out_axis = ta - 1 if fa < ta else ta
        x = burn.moveaxis(x, -1, out_axis)
    t = burn.tensor(np.arange(x.shape[out_axis]) / float(fs), dtype=burn.float64, device=x.device)
    return t, x


def _spectral(op, x, fs, window, nperseg, noverlap, nfft, detrend, onesided, scaling, axis, mode, ov_div):
    x = _inexact(_t(x))
    ax = _axis(op, x, axis)
    if x.dtype.is_complex:
        onesided = False
    if scaling not in ("density", "spectrum"):
        raise SignalError(f"signal::{op}: scaling must be 'density' or 'spectrum', got {scaling!r}")
    if detrend not in ("constant", False, None):
        raise SignalError(f"signal::{op}: detrend={detrend!r} is not supported; use 'constant' or False")
    xl = burn.moveaxis(x, ax, -1) if ax != x.ndim - 1 else x
    win, nperseg = _window_for(op, window, nperseg, xl.shape[-1], xl)
    noverlap = nperseg // ov_div if noverlap is None else int(noverlap)
    nfft = nperseg if nfft is None else int(nfft)
    z = O.stft_op(xl, win, fs=float(fs), noverlap=noverlap, nfft=nfft, boundary=None, padded=False,
                  onesided=bool(onesided), scaling="spectrum")          # FFT(w * segment) / sum(w)
    step = nperseg - noverlap
    nseg = z.shape[-1]
    wsum = burn.sum(win)
    if detrend == "constant":
        # FFT(w * (seg - mean)) = FFT(w * seg) - mean * FFT(w): the means come from the same segments
        means = burn.mean(O.frames(xl, nperseg, step, nseg), axis=-1)
        W = (_EXT["rfft"] if onesided else _EXT["fft"])(win, n=nfft, axis=0, norm="backward") / wsum
        z = z - W[:, None] * means[..., None, :]
    if scaling == "density":
        amp = wsum / burn.sqrt(burn.sum(win * win) * fs)
        z = z * amp
    if mode == "psd":
        out = burn.real(z) * burn.real(z) + burn.imag(z) * burn.imag(z)
        if onesided:
            w = np.full(z.shape[-2], 2.0)
            w[0] = 1.0
            if nfft % 2 == 0:
                w[-1] = 1.0
            out = out * O.along(w, out.ndim - 2, out)
    elif mode == "magnitude":
        out = burn.abs(z)
    elif mode == "complex":
        out = z
    else:
        raise SignalError(f"signal::{op}: mode must be 'psd', 'magnitude' or 'complex', got {mode!r}")
    f = (rfftfreq if onesided else fftfreq)(nfft, 1.0 / fs, dtype=burn.float64, device=x.device)
    t = burn.tensor((nperseg / 2 + step * np.arange(nseg)) / fs, dtype=burn.float64, device=x.device)
    if ax != x.ndim - 1:
        out = burn.moveaxis(out, -2, ax)
    return f, t, out


def spectrogram(x, fs=1.0, window=("tukey", 0.25), nperseg=None, noverlap=None, nfft=None,
                detrend="constant", return_onesided=True, scaling="density", axis=-1, mode="psd"):
    """Spectrogram ``(f, t, Sxx)`` as scipy.signal.spectrogram (modes psd, magnitude, complex).

    Example:
        >>> import burn, numpy as np, scipy.signal as ss
        >>> x = np.random.default_rng(0).standard_normal(1000)
        >>> f, t, s = burn.signal.spectrogram(burn.tensor(x), nperseg=128)
        >>> assert np.allclose(s.numpy(), ss.spectrogram(x, nperseg=128)[2])
    """
    return _spectral("spectrogram", x, fs, window, nperseg, noverlap, nfft, detrend, return_onesided,
                     scaling, axis, mode, 8)


def welch(x, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None, detrend="constant",
          return_onesided=True, scaling="density", axis=-1, average="mean"):
    """Power spectral density by Welch's method, ``(f, Pxx)`` as scipy.signal.welch (average="mean").

    Example:
        >>> import burn, numpy as np, scipy.signal as ss
        >>> x = np.random.default_rng(0).standard_normal(2000)
        >>> f, p = burn.signal.welch(burn.tensor(x), nperseg=256)
        >>> assert np.allclose(p.numpy(), ss.welch(x, nperseg=256)[1])
    """
    if average != "mean":
        raise SignalError(f"signal::welch: average={average!r} is not supported; use 'mean'")
    f, _, s = _spectral("welch", x, fs, window, nperseg, noverlap, nfft, detrend, return_onesided,
                        scaling, axis, "psd", 2)
    return f, burn.mean(s, axis=-1)


# -- convolution, filtering, resampling --------------------------------------------------------------------

def _conv_args(op, in1, in2):
    a = _t(in1)
    b = _t(in2, a)
    return _common(op, a, b)


def convolve(in1, in2, mode="full", method="auto") -> Tensor:
    """N-dimensional convolution (scipy.signal.convolve); ``mode`` "full", "same" or "valid".

    ``method`` is accepted for compatibility; the kernel picks direct or FFT as SciPy's "auto".

    Example:
        >>> import burn
        >>> y = burn.signal.convolve(burn.tensor([1.0, 2.0, 3.0]), burn.tensor([0.0, 1.0, 0.5]))
        >>> assert y.tolist() == [0.0, 1.0, 2.5, 4.0, 1.5]
    """
    a, b = _conv_args("convolve", in1, in2)
    return O.convolve_op(a, b, mode=mode)


def correlate(in1, in2, mode="full", method="auto") -> Tensor:
    """N-dimensional cross-correlation (scipy.signal.correlate): ``convolve(in1, conj(reverse(in2)))``.

    Example:
        >>> import burn
        >>> y = burn.signal.correlate(burn.tensor([1.0, 2.0, 3.0]), burn.tensor([0.0, 1.0, 0.5]))
        >>> assert y.tolist() == [0.5, 2.0, 3.5, 3.0, 0.0]
    """
    a, b = _conv_args("correlate", in1, in2)
    return O.correlate_op(a, b, mode=mode)


def fftconvolve(in1, in2, mode="full", axes=None) -> Tensor:
    """Convolution through FFTs (scipy.signal.fftconvolve); ``axes`` to convolve over (others broadcast).

    Example:
        >>> import burn, numpy as np
        >>> y = burn.signal.fftconvolve(burn.tensor([1.0, 2.0, 3.0]), burn.tensor([0.0, 1.0, 0.5]))
        >>> assert np.allclose(y.numpy(), [0.0, 1.0, 2.5, 4.0, 1.5], atol=1e-5)
    """
    a, b = _conv_args("fftconvolve", in1, in2)
    if axes is not None:
        axes = (axes,) if isinstance(axes, int) else tuple(axes)
        axes = tuple(sorted(O.check_axes("fftconvolve", a, axes)))
    return O.fftconvolve_op(a, b, mode=mode, axes=axes)


def lfilter(b, a, x, axis=-1, zi=None):
    """IIR/FIR filter along ``axis`` (scipy.signal.lfilter): ``y``, or ``(y, zf)`` when ``zi`` is given.

    ``a[0]`` normalizes the coefficients; ``zi`` (x's shape with ``axis`` of
    length ``max(len(a), len(b)) - 1``) is the initial state, ``zf`` the final.
    Differentiable in ``b``, ``a``, ``x`` and ``zi``.

    Example:
        >>> import burn, numpy as np, scipy.signal as ss
        >>> x = np.random.default_rng(0).standard_normal(50)
        >>> y = burn.signal.lfilter(burn.tensor([0.2, 0.3]), burn.tensor([1.0, -0.5]), burn.tensor(x))
        >>> assert np.allclose(y.numpy(), ss.lfilter([0.2, 0.3], [1.0, -0.5], x))
    """
    x = _t(x)
    b, a = _t(b, x), _t(a, x)
    arrays = [b, a, x] + ([_t(zi, x)] if zi is not None else [])
    arrays = _common("lfilter", *arrays)
    b, a, x = arrays[:3]
    ax = _axis("lfilter", x, axis)
    if zi is None:
        return O.lfilter_op(b, a, x, axis=ax)
    O.lfilter_meta("lfilter", b, a, x, arrays[3], axis=ax)    # shape errors before composing
    return O.lfilter_full(b, a, x, arrays[3], ax)


def sosfilt(sos, x, axis=-1, zi=None):
    """Cascade of second-order sections (scipy.signal.sosfilt): ``y``, or ``(y, zf)`` with ``zi``.

    ``sos`` is (n_sections, 6), each row ``[b0, b1, b2, a0, a1, a2]`` (a0 normalizes the row, 1 in
    SciPy's convention); ``zi`` is
    (n_sections, ..., 2, ...) with 2 at ``axis``.

    Example:
        >>> import burn, numpy as np, scipy.signal as ss
        >>> sos = ss.butter(4, 0.2, output="sos")
        >>> x = np.random.default_rng(0).standard_normal(100)
        >>> assert np.allclose(burn.signal.sosfilt(burn.tensor(sos), burn.tensor(x)).numpy(), ss.sosfilt(sos, x))
    """
    x = _t(x)
    sos = _t(sos, x)
    arrays = _common("sosfilt", sos, x, *([_t(zi, x)] if zi is not None else []))
    ax = _axis("sosfilt", arrays[1], axis)
    return O.sosfilt_op(*arrays, axis=ax)


def resample(x, num, t=None, axis=0):
    """Resample to ``num`` samples along ``axis`` with the FFT method (scipy.signal.resample).

    With ``t`` (the sample positions) it returns ``(y, new_t)``. Like SciPy, ``axis`` defaults to 0.

    Example:
        >>> import burn, numpy as np, scipy.signal as ss
        >>> x = np.cos(np.arange(20) * 0.4)
        >>> assert np.allclose(burn.signal.resample(burn.tensor(x), 35).numpy(), ss.resample(x, 35))
    """
    x = _inexact(_t(x))
    ax = _axis("resample", x, axis)
    y = O.resample_op(x, num=int(num) if isinstance(num, (int, np.integer)) else num, axis=ax)
    if t is None:
        return y
    tn = np.asarray(t.numpy() if isinstance(t, Tensor) else t, dtype=np.float64)
    new_t = tn[0] + (tn[1] - tn[0]) * x.shape[ax] / num * np.arange(num)
    return y, burn.tensor(new_t, dtype=burn.float64, device=x.device)
