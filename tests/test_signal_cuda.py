"""burn.signal's cuda kernels (burn_signal._cuda): every op native.

Without a GPU: the numpy/SciPy stand-in for CuPy of tests/fakecupy.py (``cupy.fft`` runs
numpy.fft, ``cupyx.scipy.signal`` runs scipy.signal, burn_signal's lfilter/sosfilt and istft
overlap-add CUDA C kernels are emulated in numpy after their launch arguments are checked) runs every kernel
through ``burn.Device.cuda(0)`` in a subprocess and compares it with flex, over the options
the ops support (zi, axis, batches, a[0] != 1; boundary, padding, nfft, noverlap, scaling,
one- and two-sided, complex input; up/down sampling, even and odd lengths). That checks
WIRING, not CUDA numerics: registration, which CuPy functions and kernels each op uses with
which arguments, no copy to the host (``cupy.asnumpy`` is never called) except the declared,
counted run-time fallback for complex filters, dtypes, and errors named as flex names them.
The CUDA C itself is compiled with ``nvcc --ptx`` (skipped without nvcc). With CuPy and a
GPU, ``test_every_op_on_a_real_gpu_matches_flex`` (run by plugins/burn-cuda/scripts/
gpu_check.sh) compares every case, and larger filters/STFTs, with flex; it skips otherwise.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import textwrap

import numpy as np
import pytest

import burn

pytest.importorskip("burn_signal")
pytest.importorskip("burn_cuda")

from fakecupy import real_gpu as _real_gpu  # noqa: E402  (tests/ is on sys.path under pytest)
from fakecupy import COMPARE, run_probe  # noqa: E402

# (name, call, inputs builder, what the kernel must do on the stand-in: the CuPy functions it calls
#  and "launch:<kernel>" the RawKernels it launches, with no copy to the host; or "host": a counted
#  run-time host fallback)
CASES = r'''
import numpy as np, burn
S = burn.signal

def _c(r, *s):
    return r.standard_normal(s) + 1j * r.standard_normal(s)

OLA = "launch:burn_signal_ola"

CASES = [
    ("fft", lambda x: S.fft(x, n=6, norm="ortho"), lambda r: [r.standard_normal((2, 5))], ["fft.fft"]),
    ("fft_complex", lambda x: S.fft(x, axis=0), lambda r: [_c(r, 4, 3)], ["fft.fft"]),
    ("ifft", lambda x: S.ifft(x, norm="forward"), lambda r: [_c(r, 2, 7)], ["fft.ifft"]),
    ("rfft", lambda x: S.rfft(x, n=8), lambda r: [r.standard_normal((3, 6))], ["fft.rfft"]),
    ("irfft", lambda x: S.irfft(x, n=10), lambda r: [_c(r, 2, 6)], ["fft.irfft"]),
    ("fftn", lambda x: S.fftn(x, s=(4, 5), axes=(0, 2)), lambda r: [r.standard_normal((3, 2, 4))], ["fft.fftn"]),
    ("ifftn", lambda x: S.ifftn(x), lambda r: [_c(r, 3, 4)], ["fft.ifftn"]),
    ("rfftn", lambda x: S.rfftn(x, axes=(-2, -1)), lambda r: [r.standard_normal((2, 4, 6))], ["fft.rfftn"]),
    ("irfftn", lambda x: S.irfftn(x, s=(4, 6)), lambda r: [_c(r, 4, 4)], ["fft.irfftn"]),
    ("fft2", lambda x: S.fft2(x), lambda r: [r.standard_normal((2, 3, 4))], ["fft.fftn"]),
    ("convolve", lambda a, b: S.convolve(a, b), lambda r: [r.standard_normal(9), r.standard_normal(4)],
     ["scipy.signal.convolve"]),
    # n-d direct convolutions run on cuFFT (CuPy's direct ones are 1-d only)
    ("convolve_same", lambda a, b: S.convolve(a, b, mode="same"), lambda r: [r.standard_normal((4, 5)),
     r.standard_normal((2, 3))], ["scipy.signal.fftconvolve"]),
    ("correlate_2d", lambda a, b: S.correlate(a, b, mode="same"), lambda r: [r.standard_normal((5, 4)),
     r.standard_normal((3, 2))], ["scipy.signal.fftconvolve"]),
    ("correlate", lambda a, b: S.correlate(a, b, mode="valid"), lambda r: [r.standard_normal(9),
     r.standard_normal(3)], ["scipy.signal.correlate"]),
    ("fftconvolve", lambda a, b: S.fftconvolve(a, b, axes=-1), lambda r: [r.standard_normal((2, 16)),
     r.standard_normal((1, 5))], ["scipy.signal.fftconvolve"]),
    # IIR filters: burn_signal's CUDA C (fakecupy emulates the kernel); complex runs on the host
    ("lfilter", lambda b, a, x: S.lfilter(b, a, x), lambda r: [np.array([0.2, 0.3]), np.array([1.0, -0.5]),
     r.standard_normal((2, 12))], ["launch:burn_signal_lfilter"]),
    ("lfilter_zi", lambda b, a, x, zi: tuple(S.lfilter(b, a, x, zi=zi)), lambda r: [np.array([0.2, 0.3, 0.1]),
     np.array([1.0, -0.5, 0.1]), r.standard_normal(12), r.standard_normal(2)], ["launch:burn_signal_lfilter"]),
    ("lfilter_axis0_a0", lambda b, a, x: S.lfilter(b, a, x, axis=0), lambda r: [r.standard_normal(4),
     np.array([2.0, -0.6]), r.standard_normal((7, 3, 2))], ["launch:burn_signal_lfilter"]),
    ("lfilter_zi_axis1", lambda b, a, x, zi: tuple(S.lfilter(b, a, x, axis=1, zi=zi)),
     lambda r: [np.array([0.1, 0.2, 0.3]), np.array([0.5, -0.2, 0.05]), r.standard_normal((2, 9, 3)),
                r.standard_normal((2, 2, 3))], ["launch:burn_signal_lfilter"]),
    ("lfilter_fir", lambda b, a, x: S.lfilter(b, a, x), lambda r: [r.standard_normal(3), np.array([2.0]),
     r.standard_normal((3, 10))], ["launch:burn_signal_lfilter"]),
    ("lfilter_gain", lambda b, a, x: S.lfilter(b, a, x), lambda r: [np.array([0.5]), np.array([4.0]),
     r.standard_normal(6)], ["launch:burn_signal_lfilter"]),
    ("lfilter_complex", lambda b, a, x: S.lfilter(b, a, x), lambda r: [_c(r, 2), np.array([1.0, -0.3j]),
     _c(r, 2, 8)], "host"),
    ("sosfilt", lambda s, x: S.sosfilt(s, x), lambda r: [np.array([[0.2, 0.3, 0.1, 1.0, -0.5, 0.1]]),
     r.standard_normal((2, 12))], ["launch:burn_signal_sosfilt"]),
    ("sosfilt_butter", lambda s, x: S.sosfilt(s, x), lambda r: [__import__("scipy.signal").signal.butter(
     4, 0.2, output="sos"), r.standard_normal((3, 50))], ["launch:burn_signal_sosfilt"]),
    ("sosfilt_zi_axis0_a0", lambda s, x, zi: tuple(S.sosfilt(s, x, axis=0, zi=zi)),
     lambda r: [np.array([[0.2, 0.3, 0.1, 2.0, -0.5, 0.1], [1.0, -0.4, 0.2, 0.5, 0.1, -0.2]]),
                r.standard_normal((10, 3)), r.standard_normal((2, 2, 3))], ["launch:burn_signal_sosfilt"]),
    ("sosfilt_complex", lambda s, x: S.sosfilt(s, x), lambda r: [np.array([[0.2, 0.3, 0.1, 1.0, -0.5, 0.1]]) + 0j,
     _c(r, 2, 9)], "host"),
    # stft / resample: CuPy compositions around cupy.fft; istft: cupy.fft, then one overlap-add kernel
    ("stft", lambda x: S.stft(x, nperseg=8)[2], lambda r: [r.standard_normal((2, 40))], ["fft.rfft"]),
    ("stft_opts", lambda x: S.stft(x, fs=3.0, nperseg=8, noverlap=5, nfft=13, boundary=None, padded=False,
     scaling="psd")[2], lambda r: [r.standard_normal((3, 37))], ["fft.rfft"]),
    ("stft_twosided", lambda x: S.stft(x, window="hamming", nperseg=8, nfft=10, return_onesided=False)[2],
     lambda r: [r.standard_normal((2, 3, 30))], ["fft.fft"]),
    ("stft_complex", lambda x: S.stft(x, nperseg=6, noverlap=1)[2], lambda r: [_c(r, 2, 33)], ["fft.fft"]),
    ("stft_axis0_padded", lambda x: S.stft(x, nperseg=7, noverlap=2, axis=0)[2],
     lambda r: [r.standard_normal((30, 2))], ["fft.rfft"]),
    ("istft", lambda z: S.istft(z, nperseg=8)[1], lambda r: [_c(r, 5, 11)], ["fft.irfft", OLA]),
    ("istft_opts", lambda z: S.istft(z, fs=2.0, nperseg=10, noverlap=7, nfft=12, boundary=False,
     scaling="psd")[1], lambda r: [_c(r, 2, 7, 9)], ["fft.irfft", OLA]),
    ("istft_twosided", lambda z: S.istft(z, nperseg=8, input_onesided=False)[1], lambda r: [_c(r, 8, 6)],
     ["fft.ifft", OLA]),
    ("istft_window_step", lambda z: S.istft(z, window="hamming", nperseg=8, noverlap=3)[1],
     lambda r: [_c(r, 3, 5, 10)], ["fft.irfft", OLA]),
    ("istft_roundtrip", lambda x: S.istft(S.stft(x, nperseg=16)[2], nperseg=16)[1],
     lambda r: [r.standard_normal((2, 64))], ["fft.rfft", "fft.irfft", OLA]),
    ("resample", lambda x: S.resample(x, 7, axis=-1), lambda r: [r.standard_normal((2, 12))],
     ["fft.rfft", "fft.irfft"]),
    ("resample_up_even", lambda x: S.resample(x, 20), lambda r: [r.standard_normal((12, 2))],
     ["fft.rfft", "fft.irfft"]),
    ("resample_down_even", lambda x: S.resample(x, 8, axis=1), lambda r: [r.standard_normal((3, 15))],
     ["fft.rfft", "fft.irfft"]),
    ("resample_same", lambda x: S.resample(x, 9), lambda r: [r.standard_normal(9)], ["fft.rfft", "fft.irfft"]),
    ("resample_complex_down", lambda x: S.resample(x, 8), lambda r: [_c(r, 12)], ["fft.fft", "fft.ifft"]),
    ("resample_complex_up", lambda x: S.resample(x, 16, axis=1), lambda r: [_c(r, 2, 10)],
     ["fft.fft", "fft.ifft"]),
]
''' + COMPARE

PROBE = r'''
import json, numpy as np, burn, cupy
exec(CASES_SRC)
dev = burn.Device.cuda(0)
from burn.dispatch import registry
from burn_cuda.runtime import context
res = {"bad": [], "calls": {}, "kernels": {}, "host": {}}
for dt, tol in ((burn.float64, 1e-9), (burn.float32, 2e-4)):
    res["bad"] += compare(dev, dt, tol)
for name, fn, make, _ in CASES:
    del cupy.CALLS[:]
    del cupy.LAUNCHES[:]
    before = context(0).stats.get("host_transfers", 0)
    out = fn(*[burn.tensor(x, device=dev) for x in make(np.random.default_rng(1))])
    [o.numpy() for o in (out if isinstance(out, tuple) else (out,))]
    res["calls"][name] = sorted(set(cupy.CALLS) | {"launch:" + k for k in cupy.LAUNCHES})
    res["host"][name] = context(0).stats.get("host_transfers", 0) - before
from burn_signal import _cuda
for op in _cuda.KERNELS:
    res["kernels"][op] = registry.kernel("signal::" + op, "cuda").__name__
errors = {}
for name, call in (
        ("lfilter", lambda: burn.signal.lfilter(burn.tensor([1.0], device=dev), burn.tensor([0.0, 1.0], device=dev),
                                                burn.ones((4,), device=dev))),
        ("sosfilt", lambda: burn.signal.sosfilt(burn.tensor([[1.0, 0, 0, 0.0, 0.5, 0]], device=dev),
                                                burn.ones((4,), device=dev)))):
    try:
        call().numpy()
        errors[name] = "no error"
    except Exception as e:
        errors[name] = [type(e).__name__, isinstance(e, ValueError), str(e)]
res["error"] = errors
h = burn.ones((8,), dtype=burn.float16, device=dev)
res["half"] = [str(burn.signal.rfft(h).dtype), burn.signal.rfft(h).numpy().tolist()[0].__repr__()]
print(json.dumps(res))
'''


def _launched(calls, want):
    # "launch:burn_signal_lfilter" matches its dtype variants (_f32, _f64)
    return all(any(c == w or c.startswith(w + "_") for c in calls) for w in want)


def test_cuda_kernels_wiring_on_a_numpy_stand_in_for_cupy(tmp_path):
    res = run_probe(tmp_path, f"CASES_SRC = {CASES!r}\n" + textwrap.dedent(PROBE))
    assert not res["bad"], "\n".join(res["bad"])
    from burn_signal import _cuda
    ns = {}
    exec(CASES, ns)
    for name, _, _, must in ns["CASES"]:
        calls = set(res["calls"][name])
        if must == "host":      # a run-time host fallback: download, flex's scipy kernel, upload, counted
            assert res["host"][name] >= 1, (name, calls, res["host"][name])
            assert not any(c.startswith("launch:burn_signal_") for c in calls), (name, calls)
        else:                   # native: CuPy's routines / our kernels, no copy to the host
            assert _launched(calls, must) and "asnumpy" not in calls, (name, calls)
            assert res["host"][name] == 0, (name, res["host"][name])
    for op, k in res["kernels"].items():
        assert k == f"cuda_signal_{op}", (op, k)
    for op in ("lfilter", "sosfilt"):
        err = res["error"][op]
        assert err[:2] == ["SignalError", True] and f"signal::{op}" in err[2], err
    # float16 is computed in float32 and cast as flex casts it (complex128, flex's _complex)
    assert res["half"][0] == str(burn.signal.rfft(burn.ones((8,), dtype=burn.float16)).dtype)
    assert complex(res["half"][1]) == 8


def test_every_op_is_native_and_runtime_fallbacks_are_declared():
    from burn_signal import _cuda, _flex
    assert set(_cuda.KERNELS) == set(_flex.KERNELS) == set(_cuda.NATIVE)
    assert _cuda.HOST_FALLBACK == set()
    # the run-time host paths the wiring test exercises ("host" cases) are the declared ones
    ns = {}
    exec(CASES, ns)
    hosted = {name.split("_")[0] for name, _, _, must in ns["CASES"] if must == "host"}
    assert hosted == set(_cuda.RUNTIME_HOST_FALLBACK)


NVCC = shutil.which("nvcc") or ("/usr/local/bin/nvcc" if os.path.exists("/usr/local/bin/nvcc") else None)


@pytest.mark.skipif(NVCC is None, reason="nvcc (CUDA toolkit) is not installed here")
def test_filter_kernels_compile_with_nvcc_without_fma_contraction(tmp_path):
    """The CUDA C handed to cupy.RawModule on a GPU, compiled as burn_cuda compiles it (C++17);
    its PTX has the four entry points and no fused multiply-add: scipy rounds every product."""
    from burn_signal._cuda import filter_source
    src = tmp_path / "signal_filters.cu"
    src.write_text(filter_source())
    r = subprocess.run([NVCC, "--ptx", "-std=c++17", "-arch=compute_80", str(src), "-o", str(src) + ".ptx"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    ptx = (tmp_path / "signal_filters.cu.ptx").read_text()
    for k in ("lfilter_f32", "lfilter_f64", "sosfilt_f32", "sosfilt_f64"):
        assert f".entry burn_signal_{k}(" in ptx, k
    assert "fma." not in ptx
    assert "mul.rn.f64" in ptx and "mul.rn.f32" in ptx


def test_burn_info_lists_cuda_signal_kernels():
    from burn.cli import info_text
    from burn_signal import _cuda
    out = info_text()
    for op in sorted(_cuda.KERNELS):
        line = next(ln for ln in out.splitlines() if ln.strip().startswith(f"signal::{op} "))
        if op in _cuda.HOST_FALLBACK:
            assert "cuda: signal host-fallback" in line, line
        else:
            assert "cuda: signal" in line and "cuda: signal host-fallback" not in line, line


def test_every_op_on_a_real_gpu_matches_flex():
    why = _real_gpu()
    if why != "ok":
        pytest.skip(why or "no CUDA GPU / CuPy not installed: only the stand-in wiring test ran")
    ns = {}
    exec(CASES, ns)
    dev = burn.Device.cuda(0)
    bad = ns["compare"](dev, burn.float64, 1e-8) + ns["compare"](dev, burn.float32, 1e-3)
    assert not bad, "\n".join(bad)
    rng = np.random.default_rng(2)
    x = rng.standard_normal((4, 1 << 12))
    np.testing.assert_allclose(burn.signal.rfft(burn.tensor(x, device=dev)).numpy(), np.fft.rfft(x), atol=1e-9)
    # the CUDA C filters and the CuPy compositions at sizes where launch shapes matter (many rows,
    # several blocks; rows along axis 0 read with inner > 1)
    import scipy.signal as ss
    T = lambda a: burn.tensor(a, device=dev)
    sos = ss.butter(6, 0.1, output="sos")
    b, a = ss.butter(3, 0.3)
    xs = rng.standard_normal((300, 2000))
    np.testing.assert_allclose(burn.signal.sosfilt(T(sos), T(xs)).numpy(), ss.sosfilt(sos, xs), atol=1e-9)
    np.testing.assert_allclose(burn.signal.lfilter(T(b), T(a), T(xs), axis=0).numpy(),
                               ss.lfilter(b, a, xs, axis=0), atol=1e-9)
    zi = rng.standard_normal((300, 3))
    y, zf = burn.signal.lfilter(T(b), T(a), T(xs), zi=T(zi))
    ry, rzf = ss.lfilter(b, a, xs, zi=zi)
    np.testing.assert_allclose(y.numpy(), ry, atol=1e-9)
    np.testing.assert_allclose(zf.numpy(), rzf, atol=1e-9)
    z = burn.signal.stft(T(xs[:8]), nperseg=256, noverlap=192)[2]
    np.testing.assert_allclose(z.numpy(), ss.stft(xs[:8], nperseg=256, noverlap=192)[2], atol=1e-9)
    np.testing.assert_allclose(burn.signal.istft(z, nperseg=256, noverlap=192)[1].numpy(),
                               ss.istft(z.numpy(), nperseg=256, noverlap=192)[1], atol=1e-9)
    np.testing.assert_allclose(burn.signal.resample(T(xs), 1500, axis=1).numpy(), ss.resample(xs, 1500, axis=1),
                               atol=1e-9)


# -- istft's overlap-add: one gather kernel (burn_signal_ola_{f32,f64}) ------------------------------
# (nperseg, noverlap, window, nfft, boundary, padded, onesided, n, batch, fs, scaling): the inputs are the
# stft of n samples (scipy's), so lengths, padding and boundary vary as they do in practice; each runs
# in float64 and float32. noverlap = nperseg - 1 (step 1) is the case the slice-add form needed
# 2 nperseg launches for; nperseg 1 is the one-sample window; "hann_sym" has zero end points, so
# with noverlap 0 the summed squared window is 0 there (scipy's 1e-10 guard leaves the sum undivided)
ISTFT_CASES = [
    (8, 7, "hann", None, True, True, True, 40, (2,), 1.0, "spectrum"),
    (16, 15, "hamming", None, False, False, True, 53, (), 1.0, "spectrum"),
    (64, 63, "hann", None, True, True, True, 300, (), 1.0, "spectrum"),
    (1, 0, "boxcar", None, False, True, True, 9, (3,), 1.0, "spectrum"),
    (1, 0, "boxcar", None, True, True, True, 9, (), 1.0, "spectrum"),
    (10, 7, ("tukey", 0.3), 12, True, True, True, 61, (2, 2), 2.0, "psd"),
    (8, 6, "hann", None, True, True, False, 37, (2,), 1.0, "spectrum"),
    (7, 3, "blackman", 9, False, True, False, 30, (), 3.0, "psd"),
    (4, 0, "boxcar", None, True, False, True, 22, (), 1.0, "spectrum"),
    (9, 0, "hann_sym", None, False, True, True, 45, (), 1.0, "spectrum"),
]

ISTFT_PROBE = r'''
import json, warnings, numpy as np, scipy.signal as ss, burn, cupy
from burn_signal import _cuda
dev = burn.Device.cuda(0)

# the device work of one call: RawKernel launches, cupy.fft calls, CuPy array functions and array
# operators (each a kernel on a GPU), counted on the stand-in
OPS = []
_ga = cupy.__dict__["__getattr__"]
def _counted(name):
    f = _ga(name)
    if not callable(f):
        return f
    def g(*a, **k):
        OPS.append("cupy." + name)
        return f(*a, **k)
    return g
cupy.__getattr__ = _counted
def _wrap(nm):
    orig = getattr(cupy.ndarray, nm)
    def f(self, *a, **k):
        OPS.append(nm)
        return orig(self, *a, **k)
    setattr(cupy.ndarray, nm, f)
for nm in ("__add__", "__radd__", "__iadd__", "__sub__", "__rsub__", "__isub__", "__mul__", "__rmul__",
           "__imul__", "__truediv__", "__rtruediv__", "__itruediv__", "__gt__", "__setitem__", "sum", "astype",
           "conj"):
    _wrap(nm)

def window(name, n):
    if name == "hann_sym":
        return ss.get_window("hann", n, fftbins=False)
    return ss.get_window(name, n)

res = {"bad": [], "work": []}
for case in CASES:
    nper, nov, wname, nfft, boundary, padded, onesided, n, batch, fs, scaling = case
    win = window(wname, nper)
    rng = np.random.default_rng(nper * 100 + n)
    x = rng.standard_normal(tuple(batch) + (n,))
    if not onesided:
        x = x + 1j * rng.standard_normal(x.shape)
    _, _, z = ss.stft(x, fs=fs, window=win, nperseg=nper, noverlap=nov, nfft=nfft, boundary="zeros" if boundary
                      else None, padded=padded, return_onesided=onesided, scaling=scaling)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)       # NOLA / COLA
        # scipy crops nperseg // 2 with x[..., k:-k]: empty for k = 0, so nothing to crop is asked as none
        _, ref = ss.istft(z, fs=fs, window=win, nperseg=nper, noverlap=nov, nfft=nfft, input_onesided=onesided,
                          boundary=boundary and nper // 2 > 0, scaling=scaling)
    for dt, tol in ((burn.float64, 1e-10), (burn.float32, 2e-5)):
        zc = z.astype(np.complex128 if dt == burn.float64 else np.complex64)
        try:
            _, y = burn.signal.istft(burn.tensor(zc, device=dev), fs=fs, window=burn.tensor(win, dtype=dt, device=dev),
                                     nperseg=nper, noverlap=nov, nfft=nfft, input_onesided=onesided,
                                     boundary=boundary, scaling=scaling)
            assert y.device == dev, y.device
            want = (np.float64 if dt == burn.float64 else np.float32) if onesided else zc.dtype
            assert y.dtype.name == np.dtype(want).name, (y.dtype, want)
            np.testing.assert_allclose(y.numpy(), ref, rtol=tol, atol=tol * max(1.0, float(np.abs(ref).max())))
        except Exception as e:
            res["bad"].append(f"{case} {dt}: {type(e).__name__}: {str(e)[:600]}")
    # the kernel alone, on CuPy arrays: its device work
    zc, wc = cupy.asarray(z), cupy.asarray(win)
    del cupy.LAUNCHES[:], cupy.CALLS[:], OPS[:]
    _cuda.istft(zc, wc, fs=fs, noverlap=nov, nfft=nfft or nper, onesided=onesided, boundary=boundary,
                scaling=scaling)
    res["work"].append({"launches": list(cupy.LAUNCHES), "calls": list(cupy.CALLS), "ops": list(OPS)})
print(json.dumps(res))
'''


def test_istft_overlap_add_is_one_gather_launch_and_matches_scipy_on_the_stand_in(tmp_path):
    res = run_probe(tmp_path, f"CASES = {ISTFT_CASES!r}\n" + textwrap.dedent(ISTFT_PROBE))
    assert not res["bad"], "\n".join(res["bad"])
    counts = set()
    for case, w in zip(ISTFT_CASES, res["work"], strict=True):
        # one overlap-add kernel and one inverse FFT per call, whatever nperseg and noverlap
        assert w["launches"] == ["burn_signal_ola_f64"], (case, w["launches"])
        assert w["calls"] == ["fft.irfft" if case[6] else "fft.ifft"], (case, w["calls"])
        counts.add(len(w["ops"]) + len(w["launches"]) + len(w["calls"]))
        assert "__iadd__" not in w["ops"] and "__setitem__" not in w["ops"], (case, w["ops"])
    # the device work of a call does not grow with nperseg / step: (scaling decides one sum or two)
    assert len(counts) <= 2 and max(counts) <= 12, counts


@pytest.mark.skipif(NVCC is None, reason="nvcc (CUDA toolkit) is not installed here")
def test_ola_kernel_compiles_with_nvcc_for_sm90_without_fma_contraction(tmp_path):
    """istft's overlap-add CUDA C as burn_cuda hands it to cupy.RawModule (C++17), for the H200's
    sm_90: both entry points, every product rounded (no FMA), the division IEEE-rounded."""
    from burn_signal._cuda import ola_source
    src = tmp_path / "signal_ola.cu"
    src.write_text(ola_source())
    r = subprocess.run([NVCC, "--ptx", "-std=c++17", "-arch=sm_90", str(src), "-o", str(src) + ".ptx"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    ptx = (tmp_path / "signal_ola.cu.ptx").read_text()
    for k in ("ola_f32", "ola_f64"):
        assert f".entry burn_signal_{k}(" in ptx, k
    assert "fma." not in ptx
    assert "mul.rn.f64" in ptx and "mul.rn.f32" in ptx and "div.rn.f64" in ptx and "div.rn.f32" in ptx


# the kernel text itself, built with g++ through the shared shim (tests/cuda_on_cpu.py): a driver
# runs every thread of the grid in turn (plus a partial block past the end, which must write nothing)
from cuda_on_cpu import GXX, SHIM, build_library  # noqa: E402

OLA_DRIVER = r"""
extern "C" void run_ola_{s}(long long threads, long long total, long long m, int nper, int step, int nseg,
                            int nfft, int p0, int cplx, const {t}* xs, const {t}* w, const {t}* sc, {t}* y) {
  blockDim.x = 256;
  for (long long g = 0; g < threads; ++g) {
    blockIdx.x = (unsigned)(g / 256); threadIdx.x = (unsigned)(g % 256);
    burn_signal_ola_{s}(total, m, nper, step, nseg, nfft, p0, cplx, xs, w, sc, y);
  }
}
"""


@pytest.mark.skipif(GXX is None, reason="g++ is not installed here")
def test_ola_kernel_cuda_c_on_the_cpu_matches_scipy_istft(tmp_path):
    import ctypes
    import warnings

    import scipy.signal as ss
    from burn_signal._cuda import ola_source
    from burn_signal._ops import istft_length
    drivers = "".join(OLA_DRIVER.replace("{s}", s).replace("{t}", t) for s, t in (("f32", "float"), ("f64", "double")))
    lib = build_library(tmp_path, "ola", SHIM + ola_source() + drivers)
    P = ctypes.c_void_p
    for nper, nov, wname, nfft, boundary, padded, onesided, n, batch, fs, scaling in ISTFT_CASES:
        win = ss.get_window("hann", nper, fftbins=False) if wname == "hann_sym" else ss.get_window(wname, nper)
        nfft = nfft or nper
        rng = np.random.default_rng(nper + n)
        x = rng.standard_normal(tuple(batch) + (n,))
        if not onesided:
            x = x + 1j * rng.standard_normal(x.shape)
        _, _, z = ss.stft(x, fs=fs, window=win, nperseg=nper, noverlap=nov, nfft=nfft,
                          boundary="zeros" if boundary else None, padded=padded, return_onesided=onesided,
                          scaling=scaling)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            _, ref = ss.istft(z, fs=fs, window=win, nperseg=nper, noverlap=nov, nfft=nfft, input_onesided=onesided,
                              boundary=boundary and nper // 2 > 0, scaling=scaling)
        step, nseg = nper - nov, z.shape[-1]
        m = istft_length(nseg, nper, step, boundary)
        nb = int(np.prod(batch, dtype=np.int64))
        for s, T, tol in (("f64", np.float64, 1e-12), ("f32", np.float32, 2e-5)):
            C = np.complex128 if T is np.float64 else np.complex64
            # the kernel's inputs as burn_signal._cuda.istft passes them: the inverse FFTs (nb, nfft, nseg),
            # the window, scipy's segment scale
            xs = np.ascontiguousarray((np.fft.irfft if onesided else np.fft.ifft)(z, n=nfft, axis=-2)
                                      .astype(T if onesided else C))
            w = win.astype(T)
            sc = np.array([w.sum() if scaling == "spectrum" else np.sqrt(fs * (w * w).sum())], T)
            out_t = T if onesided else C
            threads = nb * m + 300
            y = np.full(nb * m + 300, np.nan, out_t)         # past the end: must stay NaN
            getattr(lib, f"run_ola_{s}")(
                ctypes.c_longlong(threads), ctypes.c_longlong(nb * m), ctypes.c_longlong(m), ctypes.c_int(nper),
                ctypes.c_int(step), ctypes.c_int(nseg), ctypes.c_int(nfft),
                ctypes.c_int(nper // 2 if boundary else 0), ctypes.c_int(0 if onesided else 1),
                xs.ctypes.data_as(P), w.ctypes.data_as(P), sc.ctypes.data_as(P), y.ctypes.data_as(P))
            assert np.isnan(y[nb * m:]).all(), "a thread past the end wrote"
            got = y[:nb * m].reshape(tuple(batch) + (m,))
            assert got.shape == ref.shape, (got.shape, ref.shape)
            np.testing.assert_allclose(got, ref, rtol=tol, atol=tol * max(1.0, float(np.abs(ref).max())),
                                       err_msg=f"{(nper, nov, wname, boundary, onesided)} {s}")


def test_istft_on_a_real_gpu_is_one_launch_and_matches_scipy():
    why = _real_gpu()
    if why != "ok":
        pytest.skip(why or "no CUDA GPU / CuPy not installed: the stand-in and g++ tests ran the kernel instead")
    import scipy.signal as ss
    from burn_cuda.runtime import context
    dev = burn.Device.cuda(0)
    rng = np.random.default_rng(3)
    for nper, nov, onesided, dt, tol in ((256, 255, True, burn.float64, 1e-9), (256, 255, True, burn.float32, 1e-4),
                                         (1024, 768, False, burn.float64, 1e-9), (1, 0, True, burn.float64, 1e-12)):
        x = rng.standard_normal((4, 4000))
        if not onesided:
            x = x + 1j * rng.standard_normal(x.shape)
        _, _, z = ss.stft(x, nperseg=nper, noverlap=nov, return_onesided=onesided)
        _, ref = ss.istft(z, nperseg=nper, noverlap=nov, input_onesided=onesided, boundary=nper // 2 > 0)
        zt = burn.tensor(z.astype(np.complex128 if dt == burn.float64 else np.complex64), device=dev)
        dev.sync()
        before = context(0).stats["launches"]
        _, y = burn.signal.istft(zt, nperseg=nper, noverlap=nov, input_onesided=onesided)
        dev.sync()
        assert context(0).stats["launches"] - before <= 2, "istft: one RawKernel (the overlap-add) expected"
        np.testing.assert_allclose(y.numpy(), ref, rtol=tol, atol=tol * np.abs(ref).max())


PLAN_CACHE_PROBE = r'''
import json, numpy as np, burn, cupy
from burn_signal import _cuda
dev = burn.Device.cuda(0)
x = burn.tensor(np.random.default_rng(0).standard_normal((2, 64)), device=dev)
want = np.fft.rfft(x.numpy())
burn.signal.rfft(x).numpy()
burn.signal.fft(x, n=100).numpy()
burn.signal.stft(x, nperseg=16)[2].numpy()
cache = cupy.fft.config.get_plan_cache()
res = {"registered": "signal" in [n for n, _ in burn.plugins.plugin_manager.list_name_plugin()]
       and hasattr(_cuda, "release_caches"), "filled": cache.get_curr_size()}
dev.memory_cleanup()
res["after"] = cache.get_curr_size()
res["again"] = bool(np.allclose(burn.signal.rfft(x).numpy(), want))
res["refilled"] = cache.get_curr_size()
print(json.dumps(res))
'''


def test_memory_cleanup_clears_the_cufft_plan_cache_on_the_stand_in(tmp_path):
    """burn.signal's cuda FFTs are cupy.fft calls: the device memory kept between calls is CuPy's
    cuFFT plan cache (work areas allocated in burn's pool); Device.memory_cleanup() clears it."""
    res = run_probe(tmp_path, PLAN_CACHE_PROBE)
    assert res["registered"]
    assert res["filled"] >= 3 and res["after"] == 0, res
    assert res["again"] and res["refilled"] == 1, res


def test_memory_cleanup_on_a_real_gpu_frees_the_cufft_plans():
    why = _real_gpu()
    if why != "ok":
        pytest.skip(why or "no CUDA GPU / CuPy not installed: the stand-in test checked the wiring")
    import gc

    import cupy
    dev = burn.Device.cuda(0)
    z = np.random.default_rng(4).standard_normal((4, 1_000_003)) + 0j      # a Bluestein length: big work area
    np.testing.assert_allclose(burn.signal.fft(burn.tensor(z, device=dev)).numpy(), np.fft.fft(z), atol=1e-6)
    gc.collect()
    dev.backend.memory_cleanup(0)          # the pool alone: the plans stay
    with cupy.cuda.Device(0):
        cache = cupy.fft.config.get_plan_cache()
    before = dev.memory_stats()
    assert cache.get_curr_size() >= 1
    dev.memory_cleanup()
    after = dev.memory_stats()
    assert cache.get_curr_size() == 0
    assert after["reserved_bytes"] <= before["reserved_bytes"], (before, after)
