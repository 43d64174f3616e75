"""burn.signal's cuda kernels (burn_signal._cuda): every op native.

Without a GPU: the numpy/SciPy stand-in for CuPy of tests/fakecupy.py (``cupy.fft`` runs
numpy.fft, ``cupyx.scipy.signal`` runs scipy.signal, burn_signal's lfilter/sosfilt CUDA C
kernels are emulated in numpy after their launch arguments are checked) runs every kernel
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
    # stft / istft / resample: CuPy compositions around cupy.fft
    ("stft", lambda x: S.stft(x, nperseg=8)[2], lambda r: [r.standard_normal((2, 40))], ["fft.rfft"]),
    ("stft_opts", lambda x: S.stft(x, fs=3.0, nperseg=8, noverlap=5, nfft=13, boundary=None, padded=False,
     scaling="psd")[2], lambda r: [r.standard_normal((3, 37))], ["fft.rfft"]),
    ("stft_twosided", lambda x: S.stft(x, window="hamming", nperseg=8, nfft=10, return_onesided=False)[2],
     lambda r: [r.standard_normal((2, 3, 30))], ["fft.fft"]),
    ("stft_complex", lambda x: S.stft(x, nperseg=6, noverlap=1)[2], lambda r: [_c(r, 2, 33)], ["fft.fft"]),
    ("stft_axis0_padded", lambda x: S.stft(x, nperseg=7, noverlap=2, axis=0)[2],
     lambda r: [r.standard_normal((30, 2))], ["fft.rfft"]),
    ("istft", lambda z: S.istft(z, nperseg=8)[1], lambda r: [_c(r, 5, 11)], ["fft.irfft"]),
    ("istft_opts", lambda z: S.istft(z, fs=2.0, nperseg=10, noverlap=7, nfft=12, boundary=False,
     scaling="psd")[1], lambda r: [_c(r, 2, 7, 9)], ["fft.irfft"]),
    ("istft_twosided", lambda z: S.istft(z, nperseg=8, input_onesided=False)[1], lambda r: [_c(r, 8, 6)],
     ["fft.ifft"]),
    ("istft_window_step", lambda z: S.istft(z, window="hamming", nperseg=8, noverlap=3)[1],
     lambda r: [_c(r, 3, 5, 10)], ["fft.irfft"]),
    ("istft_roundtrip", lambda x: S.istft(S.stft(x, nperseg=16)[2], nperseg=16)[1],
     lambda r: [r.standard_normal((2, 64))], ["fft.rfft", "fft.irfft"]),
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
            assert "asnumpy" in calls and res["host"][name] >= 1, (name, calls, res["host"][name])
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
