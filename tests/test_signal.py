"""burn.signal / burn.fft (burn-signal) on flex: forward vs numpy.fft / scipy.signal, gradients
vs torch (FFTs, complex convention) and finite differences (float64), errors, `burn info`."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import scipy.fft as sfft
import scipy.signal as ss

import burn

pytest.importorskip("burn_signal")
S = burn.signal
gradcheck = burn.testing.gradcheck
NORMS = [None, "ortho", "forward"]


def T(a, dtype=None):
    a = np.asarray(a)
    if dtype is None:
        dtype = burn.complex128 if a.dtype.kind == "c" else burn.float64
    return burn.tensor(a, dtype=dtype)


def crandn(rng, *shape):
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def close(x, ref, tol=1e-10):
    x = x.numpy() if isinstance(x, burn.Tensor) else np.asarray(x)
    ref = np.asarray(ref)
    assert x.shape == ref.shape, (x.shape, ref.shape)
    np.testing.assert_allclose(x, ref, rtol=tol, atol=tol * max(1.0, float(np.abs(ref).max(initial=0))))


def vs_torch(burn_fn, torch_fn, *arrays, rng, tol=1e-9):
    """Value and gradients of sum(Re(out * conj(c))) for a fixed random cotangent c, burn vs torch.
    Complex leaves compare burn's gradient with torch's (the conjugate-Wirtinger convention)."""
    torch = pytest.importorskip("torch")
    ad = burn.Device.flex().autodiff()
    bs = [T(a).to_device(ad).require_grad() for a in arrays]
    ts = [torch.tensor(np.asarray(a), requires_grad=True) for a in arrays]
    ob, ot = burn_fn(*bs), torch_fn(*ts)
    close(ob, ot.detach().numpy(), tol)
    c = rng.standard_normal(ob.shape) + (1j * rng.standard_normal(ob.shape) if ob.dtype.is_complex else 0)
    cb = T(c).to_device(ad)
    lb = burn.real(ob * burn.conj(cb)).sum() if ob.dtype.is_complex else (ob * cb).sum()
    g = lb.backward()
    lt = (ot * torch.tensor(c).conj()).real.sum() if ot.is_complex() else (ot * torch.tensor(c)).sum()
    lt.backward()
    for b, t in zip(bs, ts):
        close(b.grad(g), t.grad.numpy(), tol)


# -- namespaces ---------------------------------------------------------------------------------------

def test_namespaces():
    import burn_signal
    assert hasattr(burn, "signal") and burn.signal is burn_signal
    for name in burn_signal.__all__:
        assert hasattr(burn.signal, name), name
    for name in ["fft", "ifft", "rfft", "irfft", "fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn", "rfftn",
                 "irfftn", "hfft", "ihfft", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]:
        assert getattr(burn.fft, name) is getattr(burn.signal, name)
    assert not hasattr(burn.fft, "stft")


# -- FFT forward ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("n", [None, 5, 12])
def test_fft_1d_forward(rng, norm, n):
    x = rng.standard_normal((3, 7))
    z = crandn(rng, 3, 7)
    close(S.fft(T(x), n=n, norm=norm), np.fft.fft(x, n=n, norm=norm))
    close(S.fft(T(z), n=n, norm=norm), np.fft.fft(z, n=n, norm=norm))
    close(S.ifft(T(z), n=n, norm=norm), np.fft.ifft(z, n=n, norm=norm))
    close(S.rfft(T(x), n=n, norm=norm), np.fft.rfft(x, n=n, norm=norm))
    close(S.irfft(T(z), n=n, norm=norm), np.fft.irfft(z, n=n, norm=norm))
    # along the first axis, too
    close(S.fft(T(z), n=n, axis=0, norm=norm), np.fft.fft(z, n=n, axis=0, norm=norm))
    close(S.irfft(T(z), n=n, axis=0, norm=norm), np.fft.irfft(z, n=n, axis=0, norm=norm))


def test_fft_dtypes(rng):
    x = rng.standard_normal(9).astype(np.float32)
    y = S.rfft(T(x, burn.float32))
    assert y.dtype is burn.complex64
    close(y, np.fft.rfft(x), 1e-5)
    assert S.irfft(y).dtype is burn.float32
    assert S.fft(T(x, burn.float64)).dtype is burn.complex128
    # ints compute in float64, half precision in float32, as numpy
    assert S.fft(burn.tensor([1, 2, 3])).dtype is burn.complex128
    assert S.rfft(T(x, burn.float16)).dtype is burn.complex64
    close(S.fft(burn.tensor([1, 2, 3])), np.fft.fft([1, 2, 3]))


@pytest.mark.parametrize("norm", NORMS + ["backward"])
@pytest.mark.parametrize("n", [None, 5, 8])
def test_hfft_ihfft_vs_numpy(rng, norm, n):
    z, x = crandn(rng, 3, 5), rng.standard_normal((4, 6))
    for axis in (-1, 0):
        got = burn.fft.hfft(T(z), n=n, axis=axis, norm=norm)
        assert got.dtype is burn.float64
        close(got, np.fft.hfft(z, n=n, axis=axis, norm=norm))
        got = burn.fft.ihfft(T(x), n=n, axis=axis, norm=norm)
        assert got.dtype is burn.complex128
        close(got, np.fft.ihfft(x, n=n, axis=axis, norm=norm))
    # a real input to hfft is a Hermitian half with zero imaginary parts; float32 stays single precision
    close(burn.fft.hfft(T(x), norm=norm), np.fft.hfft(x, norm=norm))
    y = burn.fft.ihfft(T(x.astype(np.float32), burn.float32), n=n, norm=norm)
    assert y.dtype is burn.complex64
    close(y, np.fft.ihfft(x, n=n, norm=norm), 1e-5)
    assert burn.signal.hfft is burn.fft.hfft and burn.signal.ihfft is burn.fft.ihfft
    with pytest.raises(burn.signal.SignalError, match="hfft: norm"):
        burn.fft.hfft(T(z), norm="bogus")


def test_hfft_ihfft_gradcheck(rng):
    re, im, x = rng.standard_normal((2, 4)), rng.standard_normal((2, 4)), rng.standard_normal((2, 6))
    # gradcheck perturbs real inputs: the complex input is built from its real and imaginary parts
    assert gradcheck(lambda p, q: S.hfft(p + q * 1j, n=7, norm="ortho"), re, im)
    assert gradcheck(lambda p, q: S.hfft(p + q * 1j, axis=0), re, im)
    assert gradcheck(lambda a: burn.real(S.ihfft(a)) + burn.imag(S.ihfft(a)), x)


@pytest.mark.parametrize("norm", NORMS)
def test_fft_nd_forward(rng, norm):
    x = rng.standard_normal((2, 5, 6))
    z = crandn(rng, 2, 5, 6)
    close(S.fft2(T(z), norm=norm), np.fft.fft2(z, norm=norm))
    close(S.ifft2(T(z), s=(4, 7), norm=norm), np.fft.ifft2(z, s=(4, 7), norm=norm))
    close(S.rfft2(T(x), norm=norm), np.fft.rfft2(x, norm=norm))
    close(S.irfft2(T(z), norm=norm), np.fft.irfft2(z, norm=norm))
    close(S.irfft2(T(z), s=(5, 9), norm=norm), np.fft.irfft2(z, s=(5, 9), norm=norm))
    close(S.fftn(T(z), norm=norm), np.fft.fftn(z, norm=norm))
    close(S.fftn(T(x), s=(3, 8), axes=(0, 2), norm=norm), np.fft.fftn(x, s=(3, 8), axes=(0, 2), norm=norm))
    close(S.ifftn(T(z), axes=(1,), norm=norm), np.fft.ifftn(z, axes=(1,), norm=norm))
    close(S.rfftn(T(x), s=(4, 5), axes=(2, 0), norm=norm), np.fft.rfftn(x, s=(4, 5), axes=(2, 0), norm=norm))
    close(S.irfftn(T(z), norm=norm), np.fft.irfftn(z, norm=norm))
    close(S.irfftn(T(z), s=(3, 7), axes=(0, 1), norm=norm), np.fft.irfftn(z, s=(3, 7), axes=(0, 1), norm=norm))


def test_freq_and_shift(rng):
    for n in (1, 4, 7):
        close(S.fftfreq(n, d=0.3, dtype=burn.float64), np.fft.fftfreq(n, d=0.3))
        close(S.rfftfreq(n, d=0.3, dtype=burn.float64), np.fft.rfftfreq(n, d=0.3))
        assert S.fftfreq(n).dtype is S.rfftfreq(n).dtype is burn.float32      # the default float (Array API)
        np.testing.assert_allclose(S.fftfreq(n, d=0.3).numpy(), np.fft.fftfreq(n, d=0.3), rtol=1e-6)
    x = rng.standard_normal((5, 6))
    close(S.fftshift(T(x)), np.fft.fftshift(x))
    close(S.ifftshift(T(x)), np.fft.ifftshift(x))
    close(S.fftshift(T(x), axes=1), np.fft.fftshift(x, axes=1))
    close(S.ifftshift(T(x), axes=(0,)), np.fft.ifftshift(x, axes=(0,)))
    assert S.fftfreq(4, dtype=burn.float32).dtype is burn.float32


# -- FFT backward vs torch.fft ----------------------------------------------------------------------------

@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("n", [None, 5, 10])
def test_fft_1d_grads_vs_torch(rng, norm, n):
    torch = pytest.importorskip("torch")
    x = rng.standard_normal((2, 7))
    z = crandn(rng, 2, 7)
    vs_torch(lambda a: S.fft(a, n=n, norm=norm), lambda a: torch.fft.fft(a, n=n, norm=norm), z, rng=rng)
    vs_torch(lambda a: S.fft(a, n=n, norm=norm), lambda a: torch.fft.fft(a, n=n, norm=norm), x, rng=rng)
    vs_torch(lambda a: S.ifft(a, n=n, norm=norm), lambda a: torch.fft.ifft(a, n=n, norm=norm), z, rng=rng)
    vs_torch(lambda a: S.rfft(a, n=n, norm=norm), lambda a: torch.fft.rfft(a, n=n, norm=norm), x, rng=rng)
    vs_torch(lambda a: S.irfft(a, n=n, norm=norm), lambda a: torch.fft.irfft(a, n=n, norm=norm), z, rng=rng)
    vs_torch(lambda a: S.irfft(a, n=n, axis=0, norm=norm),
             lambda a: torch.fft.irfft(a, n=n, dim=0, norm=norm), z, rng=rng)


@pytest.mark.parametrize("norm", NORMS)
def test_fft_nd_grads_vs_torch(rng, norm):
    torch = pytest.importorskip("torch")
    x = rng.standard_normal((3, 4, 5))
    z = crandn(rng, 3, 4, 5)
    vs_torch(lambda a: S.fftn(a, s=(5, 3), axes=(0, 2), norm=norm),
             lambda a: torch.fft.fftn(a, s=(5, 3), dim=(0, 2), norm=norm), z, rng=rng)
    vs_torch(lambda a: S.ifft2(a, norm=norm), lambda a: torch.fft.ifft2(a, norm=norm), z, rng=rng)
    vs_torch(lambda a: S.rfft2(a, s=(6, 3), norm=norm), lambda a: torch.fft.rfft2(a, s=(6, 3), norm=norm), x, rng=rng)
    vs_torch(lambda a: S.irfftn(a, norm=norm), lambda a: torch.fft.irfftn(a, norm=norm), z, rng=rng)
    vs_torch(lambda a: S.irfft2(a, s=(5, 7), norm=norm),
             lambda a: torch.fft.irfft2(a, s=(5, 7), norm=norm), z, rng=rng)


def test_fft_gradcheck_finite_differences(rng):
    x = rng.standard_normal((2, 6))
    assert gradcheck(lambda a: burn.abs(S.rfft(a, n=7, norm="ortho")), x)
    assert gradcheck(lambda a: S.irfft(S.rfft(a) * S.rfft(a)), x)       # a circular auto-convolution
    assert gradcheck(lambda a: burn.imag(S.fft2(a)), x)


def test_complex_core_ops_vs_torch(rng):
    # what the FFTs build on: complex add/mul/sum/matmul/abs/real/imag follow torch's gradients
    torch = pytest.importorskip("torch")
    a, b = crandn(rng, 3, 3), crandn(rng, 3, 3)
    vs_torch(lambda p, q: (p * q + p) @ q, lambda p, q: (p * q + p) @ q, a, b, rng=rng)
    vs_torch(lambda p: burn.abs(p).sum(axis=0), lambda p: torch.abs(p).sum(0), a, rng=rng)
    vs_torch(lambda p: burn.real(p) * burn.imag(p), lambda p: torch.real(p) * torch.imag(p), a, rng=rng)
    vs_torch(lambda x: burn.abs(x.astype(burn.complex128) * 1j + 0.5),
             lambda x: torch.abs(x.to(torch.complex128) * 1j + 0.5), rng.standard_normal(4), rng=rng)


# -- windows --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("M", [1, 2, 7, 8])
@pytest.mark.parametrize("sym", [True, False])
def test_windows_vs_scipy(M, sym):
    w = ss.windows
    close(S.hann(M, sym), w.hann(M, sym))
    close(S.hamming(M, sym), w.hamming(M, sym))
    close(S.blackman(M, sym), w.blackman(M, sym))
    close(S.bartlett(M, sym), w.bartlett(M, sym))
    for beta in (0.0, 5.0, 14.0):
        close(S.kaiser(M, beta, sym), w.kaiser(M, beta, sym))
    for win in ["hann", "hamming", "blackman", "bartlett", ("kaiser", 6.0), ("tukey", 0.3)]:
        close(S.get_window(win, M), ss.get_window(win, M))
        close(S.get_window(win, M, fftbins=False), ss.get_window(win, M, fftbins=False))
    assert S.hann(4, dtype=burn.float32).dtype is burn.float32


# -- convolution / correlation ---------------------------------------------------------------------------------

SIZES_1D = [(9, 4), (4, 9), (6, 6), (7, 1)]


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_convolve_correlate_forward(rng, mode):
    for na, nb in SIZES_1D:
        a, b = rng.standard_normal(na), rng.standard_normal(nb)
        close(S.convolve(T(a), T(b), mode), ss.convolve(a, b, mode))
        close(S.correlate(T(a), T(b), mode), ss.correlate(a, b, mode))
        close(S.fftconvolve(T(a), T(b), mode), ss.fftconvolve(a, b, mode))
    a, b = rng.standard_normal((5, 8)), rng.standard_normal((3, 4))
    close(S.convolve(T(a), T(b), mode), ss.convolve(a, b, mode))
    close(S.correlate(T(a), T(b), mode), ss.correlate(a, b, mode))
    ca, cb = crandn(rng, 7), crandn(rng, 3)
    close(S.correlate(T(ca), T(cb), mode), ss.correlate(ca, cb, mode))
    close(S.fftconvolve(T(ca), T(cb), mode), ss.fftconvolve(ca, cb, mode))
    # batched: convolve along the last axis only, the batch axis broadcasts
    xa, xb = rng.standard_normal((4, 11)), rng.standard_normal((1, 5))
    close(S.fftconvolve(T(xa), T(xb), mode, axes=-1), ss.fftconvolve(xa, xb, mode, axes=-1))
    # float32 stays float32
    y = S.convolve(T(a, burn.float32), T(b, burn.float32), mode)
    assert y.dtype is burn.float32
    close(y, ss.convolve(a, b, mode), 1e-5)


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_convolution_grads_finite_differences(rng, mode):
    for na, nb in [(7, 4), (4, 7), (6, 3)]:
        a, b = rng.standard_normal(na), rng.standard_normal(nb)
        assert gradcheck(lambda p, q: S.convolve(p, q, mode), a, b)
        assert gradcheck(lambda p, q: S.correlate(p, q, mode), a, b)
        assert gradcheck(lambda p, q: S.fftconvolve(p, q, mode), a, b)
    a2, b2 = rng.standard_normal((4, 5)), rng.standard_normal((2, 3))
    assert gradcheck(lambda p, q: S.correlate(p, q, mode), a2, b2)
    xa, xb = rng.standard_normal((3, 8)), rng.standard_normal((1, 3))
    assert gradcheck(lambda p, q: S.fftconvolve(p, q, mode, axes=1), xa, xb)


def test_convolution_complex_grads_vs_torch(rng):
    torch = pytest.importorskip("torch")
    a, b = crandn(rng, 8), crandn(rng, 3)

    def t_conv(p, q):    # full convolution as a sum of shifted products
        out = torch.zeros(p.shape[0] + q.shape[0] - 1, dtype=p.dtype)
        for j in range(q.shape[0]):
            out = out + torch.nn.functional.pad(p * q[j], (j, q.shape[0] - 1 - j))
        return out
    vs_torch(lambda p, q: S.convolve(p, q), t_conv, a, b, rng=rng)
    vs_torch(lambda p, q: S.correlate(p, q), lambda p, q: t_conv(p, q.flip(0).conj()), a, b, rng=rng)
    vs_torch(lambda p, q: S.fftconvolve(p, q, "same"), lambda p, q: t_conv(p, q)[1:9], a, b, rng=rng)


# -- lfilter / sosfilt ----------------------------------------------------------------------------------------

def test_lfilter_forward(rng):
    b, a = np.array([0.3, -0.2, 0.4]), np.array([2.0, 0.5, -0.3, 0.1])
    x = rng.standard_normal((3, 40))
    close(S.lfilter(T(b), T(a), T(x)), ss.lfilter(b, a, x))
    close(S.lfilter(T(b), T(a), T(x.T), axis=0), ss.lfilter(b, a, x.T, axis=0))
    zi = rng.standard_normal((3, 3))
    y, zf = S.lfilter(T(b), T(a), T(x), zi=T(zi))
    y0, zf0 = ss.lfilter(b, a, x, zi=zi)
    close(y, y0)
    close(zf, zf0)
    y, zf = S.lfilter(T(b), T(a), T(x.T), axis=0, zi=T(zi.T))
    y0, zf0 = ss.lfilter(b, a, x.T, axis=0, zi=zi.T)
    close(y, y0)
    close(zf, zf0)
    # FIR, one sample, float32
    close(S.lfilter(T([0.5, 0.5]), T([1.0]), T(x[0])), ss.lfilter([0.5, 0.5], [1.0], x[0]))
    close(S.lfilter(T(b), T(a), T(x[:, :1])), ss.lfilter(b, a, x[:, :1]))
    y = S.lfilter(T(b, burn.float32), T(a, burn.float32), T(x, burn.float32))
    assert y.dtype is burn.float32
    close(y, ss.lfilter(b, a, x), 1e-5)


def test_lfilter_grads_finite_differences(rng):
    b, a = np.array([0.3, -0.2, 0.4]), np.array([1.5, 0.5, -0.3])
    x = rng.standard_normal((2, 12))
    zi = rng.standard_normal((2, 2))
    assert gradcheck(lambda p, q, u: S.lfilter(p, q, u), b, a, x)
    assert gradcheck(lambda p, q, u, z: S.lfilter(p, q, u, zi=z)[0], b, a, x, zi)
    assert gradcheck(lambda p, q, u, z: S.lfilter(p, q, u, zi=z)[1], b, a, x, zi)
    assert gradcheck(lambda p, q, u: S.lfilter(p, q, u, axis=0), b, a[:2], x.T)
    # a longer numerator than denominator
    assert gradcheck(lambda p, q, u: S.lfilter(p, q, u), rng.standard_normal(5), a[:2], x)


def test_lfilter_complex_grads_vs_torch(rng):
    torch = pytest.importorskip("torch")

    def t_lfilter(b, a, x):     # the difference equation, differentiated by torch
        y = []
        for n in range(x.shape[0]):
            acc = sum(b[j] * x[n - j] for j in range(b.shape[0]) if n - j >= 0)
            acc = acc - sum(a[j] * y[n - j] for j in range(1, a.shape[0]) if n - j >= 0)
            y.append(acc / a[0])
        return torch.stack(y)
    b, a, x = crandn(rng, 3), np.array([1.3, 0.2 - 0.3j, 0.1j]), crandn(rng, 9)
    vs_torch(lambda p, q, u: S.lfilter(p, q, u), t_lfilter, b, a, x, rng=rng)
    vs_torch(lambda p, q, u: S.lfilter(p, q, u), t_lfilter, b.real, a.real, x.real, rng=rng)


def test_sosfilt(rng):
    sos = ss.butter(4, 0.15, output="sos")
    x = rng.standard_normal((2, 60))
    close(S.sosfilt(T(sos), T(x)), ss.sosfilt(sos, x))
    zi = rng.standard_normal((2, 2, 2))
    y, zf = S.sosfilt(T(sos), T(x), zi=T(zi))
    y0, zf0 = ss.sosfilt(sos, x, zi=zi)
    close(y, y0)
    close(zf, zf0)
    close(S.sosfilt(T(sos), T(x.T), axis=0), ss.sosfilt(sos, x.T, axis=0))
    # the reference (an lfilter cascade, what autodiff uses) agrees with the kernel
    ref = burn.signal.ops["sosfilt"].reference(T(sos), T(x), T(zi), axis=1)
    close(ref[0], y0)
    close(ref[1], zf0)
    assert gradcheck(lambda s, u: S.sosfilt(s, u), sos, x[:, :15])
    assert gradcheck(lambda s, u, z: S.sosfilt(s, u, zi=z)[1], sos, x[:, :15], zi)


# -- stft / istft / spectrogram / welch ----------------------------------------------------------------------------

STFT_CASES = [dict(nperseg=32), dict(nperseg=31, noverlap=20), dict(nperseg=16, nfft=25),
              dict(nperseg=20, noverlap=5, boundary=None), dict(nperseg=24, padded=False),
              dict(nperseg=16, window=("kaiser", 5.0), scaling="psd", fs=8.0)]


@pytest.mark.parametrize("kw", STFT_CASES)
def test_stft_forward(rng, kw):
    x = rng.standard_normal((2, 203))
    f, t, z = S.stft(T(x), **kw)
    f0, t0, z0 = ss.stft(x, **kw)
    close(z, z0)
    close(f, f0)
    close(t, t0)
    # the reference definition (what autodiff runs) agrees with the kernel
    op = burn.signal.ops["stft"]
    win = S.get_window(kw.get("window", "hann"), kw["nperseg"])
    ref = op.reference(T(x), win, fs=float(kw.get("fs", 1.0)), noverlap=kw.get("noverlap", kw["nperseg"] // 2),
                       nfft=kw.get("nfft", kw["nperseg"]), boundary=kw.get("boundary", "zeros"),
                       padded=kw.get("padded", True), onesided=True, scaling=kw.get("scaling", "spectrum"))
    close(ref, z0)


def test_stft_axis_dtype_complex(rng):
    x = rng.standard_normal((150, 3))
    _, _, z = S.stft(T(x), nperseg=32, axis=0)
    close(z, ss.stft(x, nperseg=32, axis=0)[2])
    x32 = rng.standard_normal(100).astype(np.float32)
    z = S.stft(T(x32, burn.float32), nperseg=16)[2]
    assert z.dtype is burn.complex64
    close(z, ss.stft(x32, nperseg=16)[2], 1e-5)
    c = crandn(rng, 90)
    with pytest.warns(UserWarning):
        z0 = ss.stft(c, nperseg=16)[2]
    close(S.stft(T(c), nperseg=16)[2], z0)
    close(S.istft(S.stft(T(c), nperseg=16)[2], nperseg=16, input_onesided=False)[1][:90], c)


@pytest.mark.parametrize("kw", [dict(nperseg=32), dict(nperseg=33, noverlap=24), dict(nperseg=16, nfft=20),
                                dict(nperseg=64, window="hamming", noverlap=48)])
def test_istft_inverts_stft(rng, kw):
    x = rng.standard_normal((3, 500))
    _, _, z = S.stft(T(x), **kw)
    t, y = S.istft(z, **kw)
    close(y.numpy()[..., :500], x)
    t0, y0 = ss.istft(z.numpy(), **kw)
    close(y, y0)
    # the reference agrees with the kernel
    op = burn.signal.ops["istft"]
    npg = kw["nperseg"]
    ref = op.reference(z, S.get_window(kw.get("window", "hann"), npg), fs=1.0, noverlap=kw.get("noverlap", npg // 2),
                       nfft=kw.get("nfft", npg), onesided=True, boundary=True, scaling="spectrum")
    close(ref, y0)


def test_istft_axes(rng):
    x = rng.standard_normal((2, 300))
    _, _, z = ss.stft(x, nperseg=32)
    zt = np.transpose(z, (1, 0, 2))         # (freq, batch, time)
    _, y = S.istft(T(zt), nperseg=32, freq_axis=0, time_axis=-1)
    _, y0 = ss.istft(zt, nperseg=32, freq_axis=0, time_axis=-1)
    close(y, y0)


def test_stft_istft_grads(rng):
    x = rng.standard_normal(40)
    assert gradcheck(lambda a: burn.abs(S.stft(a, nperseg=8)[2]), x)
    z = ss.stft(x, nperseg=8)[2]
    assert gradcheck(lambda re, im: S.istft(re.astype(burn.complex128) + im * 1j, nperseg=8)[1], z.real, z.imag)


@pytest.mark.parametrize("kw", [dict(), dict(nperseg=64), dict(nperseg=50, noverlap=10, nfft=64),
                                dict(nperseg=64, scaling="spectrum", detrend=False, fs=100.0),
                                dict(nperseg=63, window="hann", mode="magnitude"),
                                dict(nperseg=32, mode="complex")])
def test_spectrogram(rng, kw):
    x = rng.standard_normal((2, 700)) + 0.5
    f, t, s = S.spectrogram(T(x), **kw)
    f0, t0, s0 = ss.spectrogram(x, **kw)
    close(s, s0)
    close(f, f0)
    close(t, t0)


@pytest.mark.parametrize("kw", [dict(), dict(nperseg=64), dict(nperseg=100, noverlap=30, nfft=128, fs=10.0),
                                dict(nperseg=64, scaling="spectrum", window="blackman"),
                                dict(nperseg=64, return_onesided=False)])
def test_welch(rng, kw):
    x = rng.standard_normal((3, 900)) + 0.3
    f, p = S.welch(T(x), **kw)
    f0, p0 = ss.welch(x, **kw)
    close(p, p0)
    close(f, f0)
    x2 = rng.standard_normal((400, 2))
    close(S.welch(T(x2), nperseg=64, axis=0)[1], ss.welch(x2, nperseg=64, axis=0)[1])
    close(S.spectrogram(T(x2), nperseg=64, axis=0)[2], ss.spectrogram(x2, nperseg=64, axis=0)[2])


def test_welch_grad(rng):
    x = rng.standard_normal(80)
    assert gradcheck(lambda a: S.welch(a, nperseg=16)[1], x)


# -- resample --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("nx,num", [(20, 35), (21, 35), (30, 12), (31, 13), (16, 16), (10, 40)])
def test_resample(rng, nx, num):
    x = rng.standard_normal((nx, 3))
    close(S.resample(T(x), num), ss.resample(x, num))
    close(S.resample(T(x.T), num, axis=1), ss.resample(x.T, num, axis=1))
    ref = burn.signal.ops["resample"].reference(T(x), num=num, axis=0)
    close(ref, ss.resample(x, num))
    assert gradcheck(lambda a: S.resample(a, num, axis=0), x[:, :1])
    t = np.linspace(0, 1, nx)
    y, tn = S.resample(T(x), num, t=t)
    close(tn, ss.resample(x, num, t=t)[1])
    c = crandn(rng, nx)
    close(S.resample(T(c), num), ss.resample(c, num))


# -- errors --------------------------------------------------------------------------------------------------

def test_errors_name_the_op(rng):
    x = T(rng.standard_normal(64))
    with pytest.raises(burn.BurnError, match=r"signal::stft.*noverlap"):
        S.stft(x, nperseg=16, noverlap=16)
    with pytest.raises(burn.BurnError, match=r"signal::stft.*nfft"):
        S.stft(x, nperseg=16, nfft=8)
    with pytest.raises(burn.ShapeError, match=r"signal::convolve.*same number of dimensions"):
        S.convolve(x, T(np.ones((2, 2))))
    with pytest.raises(burn.ShapeError, match=r"signal::fftconvolve.*\(4, 8\).*\(3, 2\)"):
        S.fftconvolve(T(np.ones((4, 8))), T(np.ones((3, 2))), axes=1)
    with pytest.raises(burn.ShapeError, match=r"signal::correlate.*valid"):
        S.correlate(T(np.ones((4, 2))), T(np.ones((2, 4))), mode="valid")
    with pytest.raises(burn.BurnError, match=r"signal::convolve.*mode"):
        S.convolve(x, x, mode="circular")
    with pytest.raises(burn.BurnError, match=r"signal::fft.*norm"):
        S.fft(x, norm="unit")
    with pytest.raises(burn.DTypeError, match=r"signal::rfft.*real"):
        S.rfft(T(crandn(rng, 4)))
    with pytest.raises(burn.ShapeError, match=r"signal::fft.*axis"):
        S.fft(x, axis=3)
    with pytest.raises(burn.ShapeError, match=r"signal::irfft.*data points"):
        S.irfft(T(np.ones(1, complex)))
    with pytest.raises(burn.ShapeError, match=r"signal::lfilter.*zi must have shape \(2,\)"):
        S.lfilter(T([1.0, 0.5]), T([1.0, 0.2, 0.1]), x, zi=T(np.zeros(3)))
    with pytest.raises(burn.ShapeError, match=r"signal::lfilter.*1-D"):
        S.lfilter(T(np.ones((2, 2))), T([1.0]), x)
    with pytest.raises(burn.ShapeError, match=r"signal::sosfilt.*\(n_sections, 6\)"):
        S.sosfilt(T(np.ones((2, 5))), x)
    with pytest.raises(burn.BurnError, match=r"signal::lfilter.*a\[0\]"):
        S.lfilter(T([1.0]), T([0.0, 1.0]), x).numpy()       # value-dependent: raised when computed
    with pytest.raises(burn.BurnError, match=r"get_window.*kaiser"):
        S.get_window("kaiser", 8)
    # all errors are BurnErrors and the usual Python exceptions
    with pytest.raises(ValueError):
        S.stft(x, nperseg=16, noverlap=20)


# -- burn info --------------------------------------------------------------------------------------------------

def test_burn_info_lists_signal_kernels():
    out = subprocess.run([sys.executable, "-m", "burn", "info"], capture_output=True, text=True, timeout=120).stdout
    assert "burn-signal" in out and "[loaded]" in out.split("burn-signal")[1].splitlines()[0]
    for op in ["fft", "ifft", "rfft", "irfft", "fftn", "irfftn", "convolve", "correlate", "fftconvolve",
               "lfilter", "sosfilt", "stft", "istft", "resample"]:
        line = next(ln for ln in out.splitlines() if f"signal::{op} " in ln)
        assert "defined by signal" in line and "flex: signal" in line, line


def test_third_party_plugin_with_a_higher_priority_rfft_kernel_wins(rng):
    # a throwaway in-process plugin, registered through the same path as an installed one
    import types

    from burn.cli import info_text
    from burn.dispatch import registry
    calls = []
    default = registry.kernel("signal::rfft", "flex")

    def fast_rfft(x, *, n, axis, norm):
        calls.append((x.shape, n, axis, norm))
        return default(x, n=n, axis=axis, norm=norm)

    mod = types.ModuleType("fast_rfft_plugin")
    mod.burn_register_kernels = lambda registry: registry.register_kernel("signal::rfft", "flex", fast_rfft,
                                                                        priority=10)
    rec = burn.plugins.register_plugin("test-fast-rfft", mod)
    try:
        assert rec.status == "loaded", rec.error
        x = rng.standard_normal((3, 8))
        np.testing.assert_allclose(S.rfft(T(x), norm="ortho").numpy(), sfft.rfft(x, norm="ortho"), atol=1e-12)
        assert len(calls) == 1 and calls[0][0] == (3, 8) and calls[0][3] == "ortho", calls
        assert [e.plugin for e in registry.kernel_entries("signal::rfft", "flex")] == ["test-fast-rfft", "signal"]
        line = next(ln for ln in info_text().splitlines() if ln.strip().startswith("signal::rfft "))
        assert "flex: test-fast-rfft p=10 (wins)" in line, line
    finally:
        registry.forget_plugin("test-fast-rfft")
        burn.plugins._records.pop("test-fast-rfft", None)
        pm = burn.plugins.plugin_manager
        if pm.get_plugin("test-fast-rfft") is not None:
            pm.unregister(name="test-fast-rfft")
    S.rfft(T(rng.standard_normal(4))).numpy()
    assert len(calls) == 1 and registry.kernel("signal::rfft", "flex") is default


def test_fftconvolve_same_broadcasts_non_convolved_axes_like_its_shape_rule(rng):
    # scipy would crop the broadcast axis back to in1's size 1; the op's shape is the broadcast one
    a, b = rng.standard_normal((1, 10)), rng.standard_normal((3, 4))
    y = burn.signal.fftconvolve(burn.tensor(a), burn.tensor(b), mode="same", axes=1)
    assert y.shape == (3, 10) and y.numpy().shape == (3, 10)
    want = np.stack([np.convolve(a[0], b[i], mode="same") for i in range(3)])
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-10, atol=1e-12)


def test_istft_with_a_one_sample_window_keeps_every_sample():
    # scipy's boundary crop x[..., k:-k] is empty for k = 0; the op's shape (and flex) keep all
    x = np.arange(5.0)
    _, _, z = burn.signal.stft(burn.tensor(x), nperseg=1, noverlap=0, return_onesided=False)
    t, y = burn.signal.istft(z, nperseg=1, noverlap=0, input_onesided=False)
    assert y.shape == y.numpy().shape == (5,)
    np.testing.assert_allclose(y.numpy().real, x, atol=1e-12)


def test_stft_reference_scales_by_the_absolute_window_sum_as_scipy():
    import scipy.signal as ss
    from burn_signal import _ops
    rng = np.random.default_rng(2)
    x, win = rng.standard_normal(64), -ss.get_window("hann", 16)       # sum(win) < 0
    want = ss.stft(x, window=win, nperseg=16)[2]
    ref = _ops._stft_ref(burn.tensor(x), burn.tensor(win), fs=1.0, noverlap=8, nfft=16, boundary="zeros",
                         padded=True, onesided=True, scaling="spectrum")
    np.testing.assert_allclose(ref.numpy(), want, rtol=1e-10, atol=1e-12)


def test_sosfilt_with_a_zero_leading_denominator_is_a_signal_error():
    sos = np.array([[1.0, 0.5, 0.0, 0.0, 0.2, 0.0]])
    with pytest.raises(burn.BurnError, match=r"signal::sosfilt: .*a0 .* is zero"):
        burn.signal.sosfilt(burn.tensor(sos), burn.ones((8,), dtype=burn.float64)).numpy()


# -- the burn_memory_cleanup hook: how burn-signal drops its device caches ---------------------------

def test_memory_cleanup_runs_every_plugins_hook_then_the_backend(monkeypatch):
    import types
    dev = burn.Device.flex()
    seen, backend_ran = [], []
    orig = type(dev.backend).memory_cleanup
    monkeypatch.setattr(type(dev.backend), "memory_cleanup",
                        lambda self, index: (backend_ran.append((tuple(seen), index)), orig(self, index))[1])
    mod = types.ModuleType("test_cleanup_plugin")
    mod.burn_memory_cleanup = lambda device: seen.append(str(device))
    rec = burn.plugins.register_plugin("test-cleanup", mod)
    try:
        assert rec.status == "loaded", rec.error
        dev.memory_cleanup()
        assert seen == ["flex:0"] and backend_ran == [(("flex:0",), 0)]   # the hook first, then the backend

        def broken(device):
            raise RuntimeError("cache gone wrong")
        mod.burn_memory_cleanup = broken
        burn.plugins.register_plugin("test-cleanup", mod)                 # registered again: the new hook
        with pytest.raises(RuntimeError, match="cache gone wrong"):
            dev.memory_cleanup()
        assert len(backend_ran) == 2                                      # the backend still released its memory
    finally:
        burn.dispatch.registry.forget_plugin("test-cleanup")
        burn.plugins._records.pop("test-cleanup", None)
        burn.plugins.plugin_manager.unregister(name="test-cleanup")


def test_burn_signal_drops_only_the_caches_of_kernel_modules_that_ran(monkeypatch):
    import sys
    from burn_signal import plugin
    calls = []
    fake = type(sys)("fake_signal_kernels")
    fake.release_caches = calls.append
    monkeypatch.setitem(plugin.KERNEL_MODULES, "flex", "fake_signal_kernels")
    plugin.burn_memory_cleanup(burn.Device.flex())      # the module never ran: nothing to drop
    assert calls == []
    monkeypatch.setitem(sys.modules, "fake_signal_kernels", fake)
    burn.Device.flex().memory_cleanup()                      # through the plugin manager
    assert calls == [0]


def test_kernel_modules_import_neither_scipy_nor_the_device_runtimes():
    # issue 19: registering the kernels (importing these modules) must not cost scipy.signal /
    # scipy.fft (~100-200 ms); only running a flex kernel or a host fallback may import them
    code = ("import sys, burn_signal._flex, burn_signal._wgpu, burn_signal._cuda\n"
            "heavy = ('scipy.signal', 'scipy.fft', 'scipy.linalg', 'scipy.stats', 'pyopencl', 'cupy')\n"
            "print(sorted(m for m in heavy if m in sys.modules))\n"
            "import numpy as np, burn_signal._flex as f\n"
            "f.KERNELS['rfft'](np.ones(4), n=4, axis=-1, norm=None)\n"
            "print('scipy.fft' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.split("\n")[:2] == ["[]", "True"], r.stdout


def test_kernel_sources_are_package_files_with_defines():
    # every kernel file is read through importlib.resources; a program is its files' text and the
    # #defines the backend's kernel api puts before it (T, FP64, R, the generated DFT code)
    from importlib import resources

    from burn_signal import _cuda, _sources
    from burn_signal._wgpu import common, passes
    names = sorted(p.name for p in resources.files("burn_signal").joinpath("kernels").iterdir())
    assert names == ["common.cl", "fft_pass.cl", "filters.cu", "ola.cu", "rounding.cuh", "signal.cl"], names
    assert common.defines("double") == {"T": "double", "FP64": 1} and common.defines("float") == {"T": "float"}
    assert _sources.concat(common.PROGRAM_FILES) is _sources.concat(common.PROGRAM_FILES)   # one str per program
    d = passes.pass_defines("float", 8)
    assert set(d) == {"T", "R", "DFT_F", "DFT_I"} and d["R"] == 8
    assert all("\n" not in str(v) for v in d.values())       # one-line #define values
    assert _cuda.filter_source() == _sources.read("rounding.cuh") + _sources.read("filters.cu")
    assert _cuda.ola_source() == _sources.read("rounding.cuh") + _sources.read("ola.cu")


def test_every_kernel_file_is_declared_package_data():
    # a non-editable install ships only what pyproject declares (checked once with a wheel build):
    # every file of burn_signal/kernels must match a package-data pattern
    import fnmatch
    import pathlib
    import tomllib
    root = pathlib.Path(__file__).resolve().parents[1] / "plugins" / "burn-signal"
    if not (root / "pyproject.toml").exists():
        pytest.skip("not a source checkout")
    cfg = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]
    patterns = cfg["package-data"]["burn_signal"]
    files = sorted(p.relative_to(root / "burn_signal").as_posix() for p in (root / "burn_signal" / "kernels").iterdir())
    assert files and all(any(fnmatch.fnmatch(f, pat) for pat in patterns) for f in files), (files, patterns)
    assert "burn_signal._wgpu" in cfg["packages"]
