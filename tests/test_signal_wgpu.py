"""burn.signal on the wgpu backend: the native OpenCL FFT (mixed-radix Stockham passes of up to
16 points, Bluestein for other lengths), direct and FFT convolution, lfilter, sosfilt, stft,
istft and resample against numpy.fft / scipy.signal, every op against flex, gradients through
wgpu, ``burn info`` and the transfer counter."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.signal as ss

import burn

S = pytest.importorskip("burn_signal")
F = burn.fft if hasattr(burn, "fft") else S


@pytest.fixture
def rng():
    return np.random.default_rng(11)


def _pairs(dc):
    return [(np.float32, np.complex64)] + ([(np.float64, np.complex128)] if dc.fp64 else [])


def _close(got, want, dt):
    scale = max(1.0, float(np.abs(want).max(initial=0)))
    tol = 3e-6 if dt == np.float32 else 1e-13
    np.testing.assert_allclose(got, want, rtol=0, atol=tol * scale * np.log2(max(want.size, 2)))


def W(x, dev):
    return burn.tensor(np.asarray(x), device=dev)


def _transfers(dc):
    return dc.stats.get("host_transfers", 0), dc.stats.get("host_transfer_bytes", 0)


# -- the native FFT vs numpy -------------------------------------------------------------------------

@pytest.mark.parametrize("n", [1, 2, 7, 8, 12, 100, 256])
def test_native_fft_family(wg, rng, n):
    dev, dc = wg
    for rt, ct in _pairs(dc):
        x = rng.standard_normal((3, n)).astype(rt)
        z = (rng.standard_normal((2, n)) + 1j * rng.standard_normal((2, n))).astype(ct)
        for norm in (None, "ortho", "forward"):
            for name in ("fft", "ifft"):
                for arr in (x, z):
                    got = getattr(F, name)(W(arr, dev), norm=norm)
                    assert got.dtype == burn.as_dtype(ct)
                    _close(got.numpy(), getattr(np.fft, name)(arr, norm=norm), rt)
            _close(F.rfft(W(x, dev), norm=norm).numpy(), np.fft.rfft(x, norm=norm), rt)
            if n > 1:   # irfft's default length 2 * (n - 1) needs n > 1
                _close(F.irfft(W(z, dev), norm=norm).numpy(), np.fft.irfft(z, norm=norm), rt)
        # cropping / zero-padding to n, odd irfft lengths
        _close(F.fft(W(z, dev), n=n + 5).numpy(), np.fft.fft(z, n=n + 5), rt)
        _close(F.rfft(W(x, dev), n=max(1, n - 1)).numpy(), np.fft.rfft(x, n=max(1, n - 1)), rt)
        _close(F.irfft(W(z, dev), n=2 * n + 1).numpy(), np.fft.irfft(z, n=2 * n + 1), rt)


def test_hfft_ihfft_on_wgpu(wg, rng):
    dev, dc = wg
    for rt, ct in _pairs(dc):
        z = (rng.standard_normal((3, 6)) + 1j * rng.standard_normal((3, 6))).astype(ct)
        x = rng.standard_normal((4, 7)).astype(rt)
        for norm in (None, "ortho", "forward"):
            for n, axis in ((None, -1), (9, 0)):
                got = F.hfft(W(z, dev), n=n, axis=axis, norm=norm)
                assert got.dtype == burn.as_dtype(rt) and got.device == dev
                _close(got.numpy(), np.fft.hfft(z, n=n, axis=axis, norm=norm), rt)
                got = F.ihfft(W(x, dev), n=n, axis=axis, norm=norm)
                assert got.dtype == burn.as_dtype(ct)
                _close(got.numpy(), np.fft.ihfft(x, n=n, axis=axis, norm=norm), rt)


def test_native_fft_other_axes_and_nd(wg, rng):
    dev, dc = wg
    rt, ct = _pairs(dc)[-1]
    x = rng.standard_normal((4, 6, 5)).astype(rt)
    z = (rng.standard_normal((4, 6, 5)) + 1j * rng.standard_normal((4, 6, 5))).astype(ct)
    _close(F.fft(W(x, dev), axis=1).numpy(), np.fft.fft(x, axis=1), rt)
    _close(F.rfft(W(x, dev), axis=0).numpy(), np.fft.rfft(x, axis=0), rt)
    _close(F.ifft(W(z, dev), axis=0, n=3).numpy(), np.fft.ifft(z, axis=0, n=3), rt)
    # a strided (transposed) input: read through its strides, no copy first
    xt = W(x, dev).permute(2, 0, 1)
    _close(F.fft(xt, axis=1).numpy(), np.fft.fft(x.transpose(2, 0, 1), axis=1), rt)
    _close(F.fftn(W(z, dev)).numpy(), np.fft.fftn(z), rt)
    _close(F.ifftn(W(z, dev), axes=(0, 2)).numpy(), np.fft.ifftn(z, axes=(0, 2)), rt)
    _close(F.rfftn(W(x, dev), s=(4, 8), axes=(0, 2)).numpy(), np.fft.rfftn(x, s=(4, 8), axes=(0, 2)), rt)
    _close(F.irfftn(W(z, dev)).numpy(), np.fft.irfftn(z), rt)
    _close(F.rfft2(W(x, dev)).numpy(), np.fft.rfft2(x), rt)


def test_native_fft_large_pow2_and_bluestein(wg, rng):
    dev, dc = wg
    for n in (2 ** 14, 3 * 5 * 7 * 11):
        x = rng.standard_normal(n).astype(np.float32)
        _close(F.rfft(W(x, dev)).numpy(), np.fft.rfft(x.astype(np.float64)), np.float32)


def _cplx(rng, shape, ct):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(ct)


def _ref(name, arr, **kw):
    # numpy.fft in float64/complex128: the reference both dtypes are measured against
    up = arr.astype(np.complex128 if np.iscomplexobj(arr) else np.float64)
    return getattr(np.fft, name)(up, **kw)


def test_pass_plan_covers_every_length():
    # the Stockham passes multiply to n, each of at most 16 points; lengths with a prime factor
    # above 13 have no plan (they run Bluestein)
    from burn_signal._wgpu.passes import PMAX, radices
    for n in list(range(2, 400)) + [1 << 19, 1 << 20, 3 << 18, 5 ** 6, 7 * 11 * 13 * 16]:
        rad = radices(n)
        smooth = all(p <= 13 for p in _prime_factors(n))
        assert (rad is not None) == smooth, n
        if rad is not None:
            assert int(np.prod(rad)) == n and all(r <= PMAX for r in rad), (n, rad)
    assert radices(1 << 19) == [16, 16, 16, 16, 8]


def _prime_factors(n):
    out, f = [], 2
    while f * f <= n:
        while n % f == 0:
            out.append(f)
            n //= f
        f += 1
    return out + ([n] if n > 1 else [])


# one pass, two passes, several passes with every radix (2..16, 3, 5, 7, 11, 13), Bluestein (17, 1009)
@pytest.mark.parametrize("n", [16, 9, 10, 14, 13, 11, 48, 96, 256, 625, 1001, 4096, 3 * 2 ** 12, 17, 1009])
def test_native_fft_every_pass_radix_vs_numpy(wg, rng, n):
    dev, dc = wg
    for rt, ct in _pairs(dc):
        z = _cplx(rng, (3, n), ct)
        x = rng.standard_normal((3, 2 * n)).astype(rt)
        _close(F.fft(W(z, dev)).numpy(), _ref("fft", z), rt)
        _close(F.ifft(W(z, dev)).numpy(), _ref("ifft", z), rt)
        _close(F.rfft(W(x, dev)).numpy(), _ref("rfft", x), rt)       # an n-point packed complex FFT
        _close(F.irfft(W(z, dev), n=2 * n).numpy(), _ref("irfft", z, n=2 * n), rt)


def test_native_fft_large_lengths_at_both_precisions(wg, rng):
    # 2^16 (four radix-16 passes, table twiddles at every span), 3 * 2^14 (a radix-12 pass),
    # 2^15 + 1 = 3 * 43 * 257 (Bluestein on 2^17 points)
    dev, dc = wg
    for rt, ct in _pairs(dc):
        for n in (2 ** 16, 3 * 2 ** 14, 2 ** 15 + 1):
            z = _cplx(rng, (n,), ct)
            _close(F.fft(W(z, dev)).numpy(), _ref("fft", z), rt)
            _close(F.ifft(W(z, dev), norm="ortho").numpy(), _ref("ifft", z, norm="ortho"), rt)


def test_native_fft_many_small_transforms_along_odd_axes(wg, rng):
    # batches far larger than the transform (stft-like) along the first, middle and last axis,
    # and through a strided view
    dev, dc = wg
    rt, ct = _pairs(dc)[-1]
    z = _cplx(rng, (8, 300, 12), ct)
    x = rng.standard_normal((16, 257, 6)).astype(rt)
    for ax in (0, 1, 2):
        _close(F.fft(W(z, dev), axis=ax).numpy(), _ref("fft", z, axis=ax), rt)
        _close(F.rfft(W(x, dev), axis=ax).numpy(), _ref("rfft", x, axis=ax), rt)
    xt = W(x, dev).permute(2, 0, 1)
    _close(F.rfft(xt, axis=1).numpy(), _ref("rfft", x.transpose(2, 0, 1), axis=1), rt)
    big = rng.standard_normal((4000, 16)).astype(np.float32)
    _close(F.rfft(W(big, dev)).numpy(), _ref("rfft", big), np.float32)


@pytest.mark.parametrize("n", [2, 16, 256, 4096, 3 * 2 ** 10, 100])
def test_native_fft_reads_contiguous_inputs_in_place_without_writing_them(wg, rng, n):
    # a C-contiguous input is the first pass's source (no load copy): 1, 2 and 3 passes must
    # leave it unchanged; crops, zero-padding and offsets are applied by that read
    dev, dc = wg
    rt, ct = _pairs(dc)[0]
    z = _cplx(rng, (2, n), ct)
    x = rng.standard_normal((3, 2 * n)).astype(rt)
    tz, tx = W(z, dev), W(x, dev)
    for _ in range(2):      # twice: a corrupted input would change the second result
        _close(F.fft(tz).numpy(), _ref("fft", z), rt)
        _close(F.ifft(tz).numpy(), _ref("ifft", z), rt)
        _close(F.rfft(tx).numpy(), _ref("rfft", x), rt)
    # cropped and zero-padded on the fly, from an offset view (in place), an odd offset (a copy)
    for k in (-2, 6):
        _close(F.fft(tz, n=n + k // 2).numpy(), _ref("fft", z, n=n + k // 2), rt)
        _close(F.rfft(tx, n=2 * n + k).numpy(), _ref("rfft", x, n=2 * n + k), rt)
    _close(F.fft(tz[1:]).numpy(), _ref("fft", z[1:]), rt)
    _close(F.rfft(tx[1:, :]).numpy(), _ref("rfft", x[1:]), rt)
    flat = tx.reshape((-1,))
    _close(F.rfft(flat[1:-1]).numpy(), _ref("rfft", x.reshape(-1)[1:-1]), rt)
    np.testing.assert_array_equal(tz.numpy(), z)
    np.testing.assert_array_equal(tx.numpy(), x)


def test_native_bluestein_constants_are_cached_per_length_and_direction(wg, rng):
    # the chirp table and filter spectrum are kept per (n, sign): forward, inverse and another length
    # interleaved must each give numpy's result
    dev, dc = wg
    rt, ct = _pairs(dc)[0]
    for n in (17, 19, 17):
        z = _cplx(rng, (2, n), ct)
        _close(F.fft(W(z, dev)).numpy(), _ref("fft", z), rt)
        _close(F.ifft(W(z, dev)).numpy(), _ref("ifft", z), rt)


@pytest.mark.parametrize("sa,sb", [((10,), (3,)), ((3,), (10,)), ((4, 6), (2, 3)), ((2, 3), (4, 6)),
                                   ((5,), (5,)), ((2, 2, 3, 4), (1, 2, 2, 3))])
def test_native_direct_convolution(wg, rng, sa, sb):
    dev, dc = wg
    rt = _pairs(dc)[-1][0]
    a, b = rng.standard_normal(sa).astype(rt), rng.standard_normal(sb).astype(rt)
    for mode in ("full", "same", "valid"):
        for name in ("convolve", "correlate"):
            try:
                want = getattr(ss, name)(a, b, mode=mode, method="direct")
            except ValueError:          # valid mode needs one input at least as large as the other
                continue
            got = getattr(S, name)(W(a, dev), W(b, dev), mode=mode)
            _close(got.numpy(), want, rt)
    # strided operands (a transposed view) are read through their strides
    at = W(a, dev).permute(*reversed(range(a.ndim)))
    _close(S.convolve(at, W(b.T.copy(), dev)).numpy(), ss.convolve(a.T, b.T, method="direct"), rt)


def test_native_irfft_even_lengths_pad_and_crop(wg, rng):
    # the even-length irfft runs as one half-length FFT: check it with fewer and more bins than n needs
    dev, dc = wg
    for rt, ct in _pairs(dc):
        z = (rng.standard_normal((3, 9)) + 1j * rng.standard_normal((3, 9))).astype(ct)
        for n in (4, 6, 16, 18, 30, 64):
            for norm in (None, "ortho", "forward"):
                _close(F.irfft(W(z, dev), n=n, norm=norm).numpy(), np.fft.irfft(z, n=n, norm=norm), rt)
        _close(F.irfft(W(z, dev), n=10, axis=0).numpy(), np.fft.irfft(z, n=10, axis=0), rt)


# -- fftconvolve ------------------------------------------------------------------------------------

def _fftconvolve_ref(a, b, mode, axes):
    # scipy on inputs broadcast along the axes not convolved (burn's shape rule; scipy's 'same' mode
    # would crop a broadcast axis to in1's length)
    nd = a.ndim
    conv = range(nd) if axes is None else [x % nd for x in ((axes,) if isinstance(axes, int) else axes)]
    sa = [a.shape[d] if d in conv else max(a.shape[d], b.shape[d]) for d in range(nd)]
    sb = [b.shape[d] if d in conv else max(a.shape[d], b.shape[d]) for d in range(nd)]
    return ss.fftconvolve(np.broadcast_to(a, sa), np.broadcast_to(b, sb), mode=mode, axes=axes)


FFTCONV_CASES = [((10,), (3,), None), ((3,), (10,), None), ((17,), (1,), None), ((100,), (100,), None),
                 ((4, 6), (2, 3), None), ((5, 33), (1, 7), 1), ((5, 33), (5, 7), -1), ((1, 33), (4, 7), 1),
                 ((3, 1, 20), (1, 4, 5), 2), ((7, 9, 3), (3, 2, 3), (0, 1)), ((2, 3, 4, 5), (2, 1, 3, 2), (1, 3)),
                 ((6, 300), (6, 37), (1,))]


@pytest.mark.parametrize("sa,sb,axes", FFTCONV_CASES)
def test_native_fftconvolve(wg, rng, sa, sb, axes):
    dev, dc = wg
    for rt, _ in _pairs(dc):
        a, b = rng.standard_normal(sa).astype(rt), rng.standard_normal(sb).astype(rt)
        for mode in ("full", "same", "valid"):
            try:
                want = _fftconvolve_ref(a, b, mode, axes)
            except ValueError:      # valid mode needs one input at least as large as the other
                continue
            got = S.fftconvolve(W(a, dev), W(b, dev), mode=mode, axes=axes)
            assert got.dtype == burn.as_dtype(rt) and got.shape == want.shape, (mode, got.shape, want.shape)
            _close(got.numpy(), want, rt)


def test_native_fftconvolve_strided_and_no_host_copies(wg, rng):
    dev, dc = wg
    rt = _pairs(dc)[-1][0]
    a, b = rng.standard_normal((40, 3)).astype(rt), rng.standard_normal((9, 3)).astype(rt)
    ta, tb = W(a.T.copy(), dev).mT, W(b, dev)        # a transposed view: read through its strides
    ta.numpy(), tb.numpy()
    n0 = _transfers(dc)
    got = S.fftconvolve(ta, tb, mode="same", axes=0)
    _close(got.numpy(), ss.fftconvolve(a, b, mode="same", axes=0), rt)
    assert _transfers(dc) == n0, "fftconvolve copied through the host"


def test_native_fftconvolve_errors_at_the_call(wg):
    dev, _ = wg
    x = W(np.ones((2, 8), np.float32), dev)
    with pytest.raises(S.SignalError, match=r"signal::fftconvolve: mode"):
        S.fftconvolve(x, x, mode="middle")
    with pytest.raises(burn.ShapeError, match=r"signal::fftconvolve.*same number of dimensions"):
        S.fftconvolve(x, W(np.ones(3, np.float32), dev))
    with pytest.raises(burn.ShapeError, match=r"signal::fftconvolve.*valid"):
        S.fftconvolve(x, W(np.ones((3, 4), np.float32), dev), mode="valid")
    with pytest.raises(burn.ShapeError, match=r"signal::fftconvolve.*broadcast"):
        S.fftconvolve(x, W(np.ones((3, 4), np.float32), dev), axes=1)


# -- lfilter / sosfilt --------------------------------------------------------------------------------

def _filters(rng):
    b3, a3 = ss.butter(3, 0.3)
    return [(b3, a3), (np.array([0.5, 0.2]), np.array([2.0, -0.3])),          # a[0] != 1 normalizes
            (rng.standard_normal(7), np.array([1.5])),                          # FIR
            (np.array([0.3]), np.array([1.0, -0.5, 0.2, 0.1])),                 # all-pole
            (np.array([0.7]), np.array([2.0]))]                                 # a gain: no state


@pytest.mark.parametrize("shape,axis", [((3, 50), -1), ((51,), 0), ((4, 37, 3), 1), ((37, 2, 3), 0),
                                        ((2, 3, 4, 5, 6, 2), 2)])
def test_native_lfilter(wg, rng, shape, axis):
    dev, dc = wg
    for rt, _ in _pairs(dc):
        for b, a in _filters(rng):
            b, a, x = b.astype(rt), a.astype(rt), rng.standard_normal(shape).astype(rt)
            got = S.lfilter(W(b, dev), W(a, dev), W(x, dev), axis=axis)
            assert got.dtype == burn.as_dtype(rt)
            _close(got.numpy(), ss.lfilter(b, a, x, axis=axis), rt)
            k = max(len(a), len(b)) - 1
            zshape = list(shape)
            zshape[axis] = k
            zi = rng.standard_normal(zshape).astype(rt)
            y, zf = S.lfilter(W(b, dev), W(a, dev), W(x, dev), axis=axis, zi=W(zi, dev))
            y0, zf0 = ss.lfilter(b, a, x, axis=axis, zi=zi)
            _close(y.numpy(), y0, rt)
            _close(zf.numpy(), zf0, rt)


def test_native_lfilter_strided_operands_and_no_host_copies(wg, rng):
    dev, dc = wg
    rt = _pairs(dc)[-1][0]
    b, a = (c.astype(rt) for c in ss.butter(2, 0.4))
    x, zi = rng.standard_normal((5, 40)).astype(rt), rng.standard_normal((5, 2)).astype(rt)
    tb = W(np.stack([b, b]).T.copy(), dev)[:, 0]            # a strided coefficient view
    tx = W(x.T.copy(), dev).mT                              # a transposed signal
    tz = W(zi.T.copy(), dev).mT
    for t in (tb, tx, tz):
        t.numpy()
    n0 = _transfers(dc)
    y, zf = S.lfilter(tb, W(a, dev), tx, zi=tz)
    y0, zf0 = ss.lfilter(b, a, x, zi=zi)
    _close(y.numpy(), y0, rt)
    _close(zf.numpy(), zf0, rt)
    assert _transfers(dc) == n0, "lfilter copied through the host"


@pytest.mark.parametrize("shape,axis", [((3, 50), -1), ((51,), 0), ((4, 37, 3), 1)])
def test_native_sosfilt(wg, rng, shape, axis):
    dev, dc = wg
    for rt, _ in _pairs(dc):
        sos = ss.butter(4, 0.2, output="sos")
        for so in (sos, sos * np.array([2.0, 2, 2, 2, 2, 2])[None, :]):   # a0 = 2: rows normalized
            so, x = so.astype(rt), rng.standard_normal(shape).astype(rt)
            want_sos = so / so[:, 3:4]
            _close(S.sosfilt(W(so, dev), W(x, dev), axis=axis).numpy(), ss.sosfilt(want_sos, x, axis=axis), rt)
            zshape = [so.shape[0]] + list(shape)
            zshape[axis % len(shape) + 1] = 2
            zi = rng.standard_normal(zshape).astype(rt)
            y, zf = S.sosfilt(W(so, dev), W(x, dev), axis=axis, zi=W(zi, dev))
            y0, zf0 = ss.sosfilt(want_sos, x, axis=axis, zi=zi)
            assert zf.shape == zf0.shape
            _close(y.numpy(), y0, rt)
            _close(zf.numpy(), zf0, rt)


def test_native_filter_errors(wg):
    dev, _ = wg
    x = W(np.ones((2, 8), np.float32), dev)
    one = W(np.ones(2, np.float32), dev)
    with pytest.raises(S.SignalError, match=r"signal::lfilter.*a\[0\] is zero"):
        S.lfilter(one, W(np.array([0.0, 1.0], np.float32), dev), x).numpy()
    with pytest.raises(burn.ShapeError, match=r"signal::lfilter: zi must have shape \(2, 1\)"):
        S.lfilter(one, one, x, zi=W(np.ones((2, 2), np.float32), dev))
    with pytest.raises(burn.ShapeError, match=r"signal::sosfilt: sos must have shape"):
        S.sosfilt(W(np.ones((2, 5), np.float32), dev), x)
    with pytest.raises(burn.ShapeError, match=r"signal::sosfilt: zi must have shape \(1, 2, 2\)"):
        S.sosfilt(W(np.ones((1, 6), np.float32), dev), x, zi=W(np.ones((1, 2, 8), np.float32), dev))


# -- stft ---------------------------------------------------------------------------------------------

STFT_KW = [dict(nperseg=64), dict(nperseg=63, noverlap=20), dict(nperseg=64, nfft=100), dict(nperseg=64, nfft=129),
           dict(nperseg=50, boundary=None, padded=False), dict(nperseg=64, boundary=None),
           dict(nperseg=32, padded=False), dict(nperseg=64, scaling="psd", fs=8000.0),
           dict(nperseg=64, return_onesided=False), dict(nperseg=3, noverlap=1), dict(nperseg=2, noverlap=0)]


@pytest.mark.parametrize("kw", STFT_KW, ids=lambda kw: ",".join(f"{k}={v}" for k, v in kw.items()))
def test_native_stft(wg, rng, kw):
    dev, dc = wg
    for rt, _ in _pairs(dc):
        for shape in [(1000,), (3, 777), (2, 2, 301)]:
            x, win = rng.standard_normal(shape).astype(rt), ss.get_window("hann", kw["nperseg"]).astype(rt)
            f, t, want = ss.stft(x, **{**kw, "window": win})
            f1, t1, got = S.stft(W(x, dev), **{**kw, "window": W(win, dev)})
            assert got.dtype == burn.as_dtype(np.result_type(rt, np.complex64)) and got.shape == want.shape
            _close(got.numpy(), want, rt)
            np.testing.assert_allclose(t1.numpy(), t)
            np.testing.assert_allclose(f1.numpy(), f, rtol=1e-6)


def test_native_stft_complex_input_other_axis_and_no_host_copies(wg, rng):
    dev, dc = wg
    rt, ct = _pairs(dc)[-1]
    z = (rng.standard_normal((2, 500)) + 1j * rng.standard_normal((2, 500))).astype(ct)
    x = rng.standard_normal((300, 3)).astype(rt)
    tz, tx = W(z, dev), W(x, dev)
    tz.numpy(), tx.numpy()
    n0 = _transfers(dc)
    with pytest.warns(UserWarning):     # scipy switches to two-sided for complex input; so does burn, silently
        want = ss.stft(z, nperseg=40)[2]
    _close(S.stft(tz, nperseg=40)[2].numpy(), want, rt)
    _close(S.stft(tx, nperseg=32, axis=0)[2].numpy(), ss.stft(x, nperseg=32, axis=0)[2], rt)
    assert _transfers(dc) == n0, "stft copied through the host"


def test_native_stft_errors_at_the_call(wg):
    dev, _ = wg
    x = W(np.ones(100, np.float32), dev)
    with pytest.raises(S.SignalError, match=r"signal::stft: noverlap"):
        S.stft(x, nperseg=16, noverlap=16)
    with pytest.raises(S.SignalError, match=r"signal::stft: nfft"):
        S.stft(x, nperseg=16, nfft=8)
    with pytest.raises(burn.ShapeError, match=r"signal::stft.*fewer than nperseg"):
        S.stft(x, window=W(np.ones(200, np.float32), dev), nperseg=200, boundary=None)
    with pytest.raises(S.SignalError, match=r"signal::stft: scaling"):
        S.stft(x, nperseg=16, scaling="power")


ISTFT_KW = [dict(nperseg=64), dict(nperseg=63, noverlap=20), dict(nperseg=64, nfft=100), dict(nperseg=64, nfft=129),
            dict(nperseg=64, boundary=False), dict(nperseg=64, scaling="psd", fs=8000.0),
            dict(nperseg=64, input_onesided=False), dict(nperseg=32, noverlap=0), dict(nperseg=16, noverlap=12)]


@pytest.mark.parametrize("kw", ISTFT_KW, ids=lambda kw: ",".join(f"{k}={v}" for k, v in kw.items()))
def test_native_istft(wg, rng, kw):
    dev, dc = wg
    nfft = kw.get("nfft", kw["nperseg"])
    nfreq = nfft // 2 + 1 if kw.get("input_onesided", True) else nfft
    for rt, ct in _pairs(dc):
        z = (rng.standard_normal((3, nfreq, 20)) + 1j * rng.standard_normal((3, nfreq, 20))).astype(ct)
        win = ss.get_window("hann", kw["nperseg"]).astype(rt)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)     # scipy's NOLA / COLA warnings
            _, want = ss.istft(z, window=win, **kw)
        _, got = S.istft(W(z, dev), window=W(win, dev), **kw)
        assert got.shape == want.shape and got.dtype == burn.as_dtype(want.dtype)
        _close(got.numpy(), want, rt)


def test_native_stft_istft_round_trip_without_host_copies(wg, rng):
    dev, dc = wg
    rt = _pairs(dc)[-1][0]
    x = W(rng.standard_normal((2, 1000)).astype(rt), dev)
    x.numpy()
    n0 = _transfers(dc)
    _, _, z = S.stft(x, nperseg=128)
    _, y = S.istft(z, nperseg=128)
    _close(y.numpy()[:, :1000], x.numpy(), rt)
    # a strided spectrum (batch last, moved back as a view) is read through its strides
    _, y2 = S.istft(z.permute(1, 2, 0), nperseg=128, time_axis=1, freq_axis=0)
    _close(y2.numpy(), y.numpy().T, rt)     # scipy puts the time axis first here, as burn does
    assert _transfers(dc) == n0, "stft / istft copied through the host"


def test_native_istft_errors_at_the_call(wg):
    dev, _ = wg
    z = W(np.ones((33, 10), np.complex64), dev)
    with pytest.raises(burn.ShapeError, match=r"signal::istft: Zxx must have at least 2"):
        S.istft(W(np.ones(33, np.complex64), dev), nperseg=64)
    with pytest.raises(S.SignalError, match=r"signal::istft: noverlap"):
        S.istft(z, nperseg=64, noverlap=64)


# -- resample ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape,axis", [((100,), 0), ((3, 64), 1), ((64, 3), 0), ((2, 37, 3), 1), ((1,), 0)])
def test_native_resample(wg, rng, shape, axis):
    dev, dc = wg
    for rt, _ in _pairs(dc):
        x = rng.standard_normal(shape).astype(rt)
        for num in (1, 2, 5, 16, 37, 64, 101, 128, 200):     # down and up, odd and even, Nyquist folds
            got = S.resample(W(x, dev), num, axis=axis)
            want = ss.resample(x, num, axis=axis)
            assert got.shape == want.shape and got.dtype == burn.as_dtype(rt)
            _close(got.numpy(), want, rt)


def test_resample_gradient_on_wgpu(wg, rng):
    dev, dc = wg
    if not dc.fp64:
        pytest.skip(f"{dc.device.name} has no float64: the gradcheck needs it")
    try:
        ok = burn.testing.gradcheck(lambda x: S.resample(x, 11, axis=1), rng.standard_normal((2, 8)), device=dev)
    except burn.DTypeError as e:
        if "complex" in str(e):
            pytest.skip(f"complex element-wise ops on wgpu are still missing (added by another change): {e}")
        raise
    assert ok


# -- every op on wgpu matches flex ---------------------------------------------------------------

def _every_op(rng):
    x = rng.standard_normal((2, 64))
    k = rng.standard_normal((2, 5))
    b, a = ss.butter(3, 0.3)
    sos = ss.butter(4, 0.2, output="sos")
    z = rng.standard_normal((2, 33, 5)) + 1j * rng.standard_normal((2, 33, 5))
    return [
        ("convolve", lambda t: S.convolve(t(x), t(k))),
        ("correlate", lambda t: S.correlate(t(x), t(k), mode="same")),
        ("fftconvolve", lambda t: S.fftconvolve(t(x), t(k), mode="valid", axes=1)),
        ("lfilter", lambda t: S.lfilter(t(b), t(a), t(x))),
        ("sosfilt", lambda t: S.sosfilt(t(sos), t(x))),
        ("stft", lambda t: S.stft(t(x), nperseg=16)[2]),
        ("istft", lambda t: S.istft(t(z), nperseg=64)[1]),
        ("resample", lambda t: S.resample(t(x), 40, axis=1)),
        ("fft", lambda t: F.fft(t(x))), ("rfftn", lambda t: F.rfftn(t(x))),
    ]


def test_every_op_on_wgpu_matches_flex(wg, rng):
    dev, dc = wg
    rt, ct = _pairs(dc)[-1]
    for name, fn in _every_op(rng):
        def on(d):
            return lambda arr: burn.tensor(np.asarray(arr).astype(ct if np.iscomplexobj(arr) else rt), device=d)
        got, want = fn(on(dev)), fn(on(burn.Device.flex()))
        assert got.device == dev, name
        _close(got.numpy(), want.numpy(), rt)


# -- gradients ---------------------------------------------------------------------------------------

def test_gradients_of_real_ops_on_wgpu(wg, rng):
    dev, dc = wg
    if not dc.fp64:
        pytest.skip(f"{dc.device.name} has no float64: the gradcheck needs it")
    gc = burn.testing.gradcheck
    assert gc(lambda x, k: S.convolve(x, k), rng.standard_normal((2, 9)), rng.standard_normal((2, 3)), device=dev)
    assert gc(lambda x: S.lfilter(burn.tensor([0.5, 0.2], device=x.device, dtype=burn.float64),
                                  burn.tensor([1.0, -0.3], device=x.device, dtype=burn.float64), x),
              rng.standard_normal((2, 7)), device=dev)


def test_fft_gradient_on_wgpu(wg, rng):
    dev, dc = wg
    if not dc.fp64:
        raise AssertionError("no float64")
    assert burn.testing.gradcheck(lambda x: burn.real(F.rfft(x)), rng.standard_normal(8), device=dev)


@pytest.mark.parametrize("mode,axes", [("full", None), ("same", -1), ("valid", None), ("same", (0, 1))])
def test_fftconvolve_gradients_on_wgpu(wg, rng, mode, axes):
    dev, dc = wg
    if not dc.fp64:
        pytest.skip(f"{dc.device.name} has no float64: the gradcheck needs it")
    a, b = rng.standard_normal((2, 9)), rng.standard_normal((2 if axes is None else 1, 4))
    assert burn.testing.gradcheck(lambda x, k: S.fftconvolve(x, k, mode=mode, axes=axes), a, b, device=dev)


def test_filter_gradients_on_wgpu(wg, rng):
    dev, dc = wg
    if not dc.fp64:
        pytest.skip(f"{dc.device.name} has no float64: the gradcheck needs it")
    gc = burn.testing.gradcheck
    b, a = np.array([0.5, 0.2, 0.1]), np.array([1.2, -0.3])
    x, zi = rng.standard_normal((2, 7)), rng.standard_normal((2, 2))
    assert gc(lambda b_, a_, x_: S.lfilter(b_, a_, x_), b, a, x, device=dev)
    assert gc(lambda b_, a_, x_, z_: S.lfilter(b_, a_, x_, zi=z_)[0], b, a, x, zi, device=dev)
    assert gc(lambda b_, a_, x_, z_: S.lfilter(b_, a_, x_, zi=z_)[1], b, a, x, zi, device=dev)
    sos = ss.butter(2, 0.3, output="sos")
    zs = rng.standard_normal((1, 2, 2))
    assert gc(lambda s_, x_: S.sosfilt(s_, x_), sos, x, device=dev)
    assert gc(lambda s_, x_, z_: S.sosfilt(s_, x_, zi=z_)[1], sos, x, zs, device=dev)


def test_stft_gradient_on_wgpu(wg, rng):
    # stft differentiates through its reference: framing (take), rfft's adjoint (complex ops on wgpu)
    dev, dc = wg
    if not dc.fp64:
        pytest.skip(f"{dc.device.name} has no float64: the gradcheck needs it")
    try:
        ok = burn.testing.gradcheck(lambda x: burn.real(S.stft(x, nperseg=8)[2]) + burn.imag(S.stft(x, nperseg=8)[2]),
                                    rng.standard_normal((2, 30)), device=dev)
    except burn.DTypeError as e:
        if "complex" in str(e):
            pytest.skip(f"complex element-wise ops on wgpu are still missing (added by another change): {e}")
        raise
    assert ok


def test_istft_gradient_on_wgpu(wg, rng):
    dev, dc = wg
    if not dc.fp64:
        pytest.skip(f"{dc.device.name} has no float64: the gradcheck needs it")
    try:    # gradcheck perturbs real inputs: the complex spectrum comes from an stft
        ok = burn.testing.gradcheck(lambda x: S.istft(S.stft(x, nperseg=8)[2] * 1.5, nperseg=8)[1],
                                    rng.standard_normal((2, 30)), device=dev)
    except burn.DTypeError as e:
        if "complex" in str(e):
            pytest.skip(f"complex element-wise ops on wgpu are still missing (added by another change): {e}")
        raise
    assert ok


# -- declared host fallbacks -----------------------------------------------------------------------

def test_burn_info_lists_every_signal_op_as_native_on_wgpu(wg):
    from burn.cli import info_text
    from burn_signal import _flex, _wgpu
    out = info_text()
    # every signal op has an OpenCL kernel; float16, complex filtering and > 4 batch dims still go
    # through the host at run time (counted, see below), which burn info cannot show per dtype
    assert _wgpu.HOST_FALLBACK == set() and set(_wgpu.NATIVE) == set(_flex.KERNELS)
    for op in _flex.KERNELS:
        line = next(ln for ln in out.splitlines() if ln.strip().startswith(f"signal::{op} "))
        assert "wgpu: signal" in line and "wgpu: signal host-fallback" not in line, line


def test_transfer_counter_counts_fallbacks_only(wg, rng):
    dev, dc = wg
    x = W(rng.standard_normal((2, 32)).astype(np.float32), dev)
    k = W(rng.standard_normal((2, 4)).astype(np.float32), dev)
    x.numpy(), k.numpy()
    n0, b0 = _transfers(dc)
    F.rfft(x).numpy(); F.fft(x, n=30).numpy(); F.irfft(F.rfft(x)).numpy(); S.convolve(x, k).numpy()
    S.fftconvolve(x, k).numpy(); S.lfilter(k[0], k[1], x).numpy(); S.stft(x, nperseg=8)[2].numpy()
    S.istft(S.stft(x, nperseg=8)[2], nperseg=8)[1].numpy(); S.resample(x, 40, axis=1).numpy()
    S.sosfilt(W(np.ones((1, 6), np.float32), dev), x).numpy()
    assert _transfers(dc) == (n0, b0), "a native kernel copied through the host"
    z = W((rng.standard_normal((2, 8)) + 1j).astype(np.complex64), dev)
    z.numpy()
    S.convolve(z, z).numpy()        # complex convolution: a host fallback at run time
    assert _transfers(dc) == (n0 + 3, b0 + 8 * (2 * 2 * 8 + 3 * 15))   # z down twice, y (3, 15) up
    assert burn.Device.wgpu().backend.stats(0)["host_transfers"] == n0 + 3


def test_sosfilt_with_a_zero_leading_denominator_is_a_signal_error_on_wgpu(wg):
    dev, _ = wg
    sos = burn.tensor(np.array([[1.0, 0.5, 0.0, 0.0, 0.2, 0.0]], np.float32), device=dev)
    with pytest.raises(burn.BurnError, match=r"signal::sosfilt: .*a0 .* is zero"):
        burn.signal.sosfilt(sos, burn.ones((8,), device=dev)).numpy()


def _cache_tensors(index):
    from burn_signal import _wgpu
    out = [t for k, t in _wgpu._TW.items() if k[0] == index]
    for k, (w, f) in _wgpu._CHIRP.items():
        if k[0] == index:
            out += [w, f]
    return out


def _cache_bytes(index):
    """(bytes the FFT caches of device ``index`` hold, bytes of the pages that hold nothing else)."""
    blocks = {id(t.block): t.block for t in _cache_tensors(index)}.values()
    pages = {}
    for b in blocks:
        pages.setdefault(id(b.page), [b.page, 0])[1] += b.alen
    return sum(b.size for b in blocks), sum(p.size for p, used in pages.values() if p.used == used)


def test_memory_cleanup_drops_the_fft_caches_and_returns_their_pages(wg, rng):
    """Device.memory_cleanup() runs burn_signal's burn_memory_cleanup hook: the twiddle tables and
    Bluestein constants of the device go, their blocks return to the pool, and the pages that held
    nothing else go back to the driver; the next FFT rebuilds what it needs."""
    import gc
    from burn_signal import _wgpu
    dev, dc = wg
    rt, ct = _pairs(dc)[0]
    # Bluestein lengths (chirp + a power-of-two filter spectrum, ~2-4 MB each) and table lengths
    for n in (100_003, 65_537, 1 << 17, 3 << 14):
        z = _cplx(rng, (1, n), ct)
        _close(F.fft(W(z, dev)).numpy(), _ref("fft", z), rt)
    del z
    gc.collect()
    assert any(k[2] == 100_003 for k in _wgpu._CHIRP) and len(_cache_tensors(dc.index)) >= 6, \
        (list(_wgpu._TW), list(_wgpu._CHIRP))
    # the pages holding nothing but cache blocks are what the pool can give back once the caches go
    cached, freeable = _cache_bytes(dc.index)
    assert cached >= 4 << 20, cached
    dc.synchronize()
    dev.backend.memory_cleanup(dev.index)      # the pool alone (no callbacks): the caches stay
    before = dev.memory_stats()
    assert _cache_tensors(dc.index)
    dev.memory_cleanup()
    after = dev.memory_stats()
    assert _cache_tensors(dc.index) == []
    assert before["in_use_bytes"] - after["in_use_bytes"] >= cached, (before, after, cached)
    assert freeable >= cached // 2 and before["reserved_bytes"] - after["reserved_bytes"] >= freeable, \
        (before["reserved_bytes"], after["reserved_bytes"], freeable, cached)
    # rebuilt on demand
    z = _cplx(rng, (2, 100_003), ct)
    _close(F.fft(W(z, dev)).numpy(), _ref("fft", z), rt)
    assert any(k[0] == dc.index and k[2] == 100_003 for k in _wgpu._CHIRP)
