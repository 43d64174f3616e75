"""burn.signal's cuda kernels (burn_signal._cuda).

Without a GPU: the numpy/SciPy stand-in for CuPy of tests/fakecupy.py (``cupy.fft`` runs
numpy.fft, ``cupyx.scipy.signal`` runs scipy.signal) runs every kernel through
``burn.Device.cuda(0)`` in a subprocess and compares it with flex. That checks WIRING, not
CUDA numerics: registration, which CuPy function each native kernel calls with which
arguments, dtypes, the declared host fallbacks' download/upload, and errors named as flex
names them. With CuPy and a GPU, ``test_every_op_on_a_real_gpu_matches_flex`` compares cuFFT
and cupyx.scipy.signal with flex; it skips otherwise.
"""
from __future__ import annotations

import textwrap

import numpy as np
import pytest

import burn

pytest.importorskip("burn_signal")
pytest.importorskip("burn_cuda")

from fakecupy import real_gpu as _real_gpu  # noqa: E402  (tests/ is on sys.path under pytest)
from fakecupy import run_probe  # noqa: E402

# (name, call, inputs builder, CuPy functions the kernel must call: [] for host fallbacks)
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
    ("convolve_same", lambda a, b: S.convolve(a, b, mode="same"), lambda r: [r.standard_normal((4, 5)),
     r.standard_normal((2, 3))], ["scipy.signal.convolve"]),
    ("correlate", lambda a, b: S.correlate(a, b, mode="valid"), lambda r: [r.standard_normal(9),
     r.standard_normal(3)], ["scipy.signal.correlate"]),
    ("fftconvolve", lambda a, b: S.fftconvolve(a, b, axes=-1), lambda r: [r.standard_normal((2, 16)),
     r.standard_normal((1, 5))], ["scipy.signal.fftconvolve"]),
    ("lfilter", lambda b, a, x: S.lfilter(b, a, x), lambda r: [np.array([0.2, 0.3]), np.array([1.0, -0.5]),
     r.standard_normal((2, 12))], []),
    ("lfilter_zi", lambda b, a, x, zi: tuple(S.lfilter(b, a, x, zi=zi)), lambda r: [np.array([0.2, 0.3, 0.1]),
     np.array([1.0, -0.5, 0.1]), r.standard_normal(12), r.standard_normal(2)], []),
    ("sosfilt", lambda s, x: S.sosfilt(s, x), lambda r: [np.array([[0.2, 0.3, 0.1, 1.0, -0.5, 0.1]]),
     r.standard_normal((2, 12))], []),
    ("stft", lambda x: S.stft(x, nperseg=8)[2], lambda r: [r.standard_normal((2, 40))], []),
    ("istft", lambda z: S.istft(z, nperseg=8)[1], lambda r: [_c(r, 5, 11)], []),
    ("resample", lambda x: S.resample(x, 7, axis=-1), lambda r: [r.standard_normal((2, 12))], []),
]

def _dt(x, real):
    return x.astype(np.complex64 if real == burn.float32 else np.complex128) if np.iscomplexobj(x) else x

def compare(dev, dtype, atol):
    """Every case on ``dev`` vs flex: returns a list of failures (empty when all match)."""
    bad = []
    for name, fn, make, _ in CASES:
        xs = [_dt(x, dtype) for x in make(np.random.default_rng(0))]
        def T(x, d):
            return burn.tensor(x, dtype=None if np.iscomplexobj(x) else dtype, device=d)
        try:
            # explicit flex: with a cuda device present, it is the default device
            ref = fn(*[T(x, burn.Device.flex()) for x in xs])
            got = fn(*[T(x, dev) for x in xs])
            ref = ref if isinstance(ref, tuple) else (ref,)
            got = got if isinstance(got, tuple) else (got,)
            for r, g in zip(ref, got, strict=True):
                assert g.device == dev and r.device == burn.Device.flex(), (g.device, r.device)
                assert g.dtype == r.dtype and tuple(g.shape) == tuple(r.shape), (g.dtype, r.dtype, g.shape, r.shape)
                np.testing.assert_allclose(g.numpy().astype(np.complex128), r.numpy().astype(np.complex128),
                                           atol=atol, rtol=atol)
        except Exception as e:
            bad.append(f"{name} {dtype}: {type(e).__name__}: {str(e)[:400]}")
    return bad
'''

PROBE = r'''
import json, numpy as np, burn, cupy
exec(CASES_SRC)
dev = burn.Device.cuda(0)
from burn.dispatch import registry
res = {"bad": [], "calls": {}, "kernels": {}}
for dt, tol in ((burn.float64, 1e-9), (burn.float32, 2e-4)):
    res["bad"] += compare(dev, dt, tol)
for name, fn, make, _ in CASES:
    del cupy.CALLS[:]
    out = fn(*[burn.tensor(x, device=dev) for x in make(np.random.default_rng(1))])
    [o.numpy() for o in (out if isinstance(out, tuple) else (out,))]
    res["calls"][name] = sorted(set(cupy.CALLS))
from burn_signal import _cuda
for op in _cuda.KERNELS:
    res["kernels"][op] = registry.kernel("signal::" + op, "cuda").__name__
try:
    burn.signal.lfilter(burn.tensor([1.0], device=dev), burn.tensor([0.0, 1.0], device=dev),
                        burn.ones((4,), device=dev)).numpy()
    res["error"] = "no error"
except Exception as e:
    res["error"] = [type(e).__name__, isinstance(e, ValueError), str(e)]
h = burn.ones((8,), dtype=burn.float16, device=dev)
res["half"] = [str(burn.signal.rfft(h).dtype), burn.signal.rfft(h).numpy().tolist()[0].__repr__()]
print(json.dumps(res))
'''


def test_cuda_kernels_wiring_on_a_numpy_stand_in_for_cupy(tmp_path):
    res = run_probe(tmp_path, f"CASES_SRC = {CASES!r}\n" + textwrap.dedent(PROBE))
    assert not res["bad"], "\n".join(res["bad"])
    from burn_signal import _cuda
    ns = {}
    exec(CASES, ns)
    for name, _, _, must in ns["CASES"]:
        calls = set(res["calls"][name])
        if must:        # native: CuPy's routine, no copy to the host
            assert set(must) <= calls and "asnumpy" not in calls, (name, calls)
        else:           # declared host fallback: download, flex's scipy kernel, upload
            assert calls == {"asnumpy"}, (name, calls)
    for op, k in res["kernels"].items():
        assert k == f"cuda_signal_{op}", (op, k)
    assert res["error"][:2] == ["SignalError", True] and "signal::lfilter" in res["error"][2], res["error"]
    # float16 is computed in float32 and cast as flex casts it (complex128, flex's _complex)
    assert res["half"][0] == str(burn.signal.rfft(burn.ones((8,), dtype=burn.float16)).dtype)
    assert complex(res["half"][1]) == 8


def test_host_fallbacks_are_declared():
    from burn_signal import _cuda, _flex
    assert set(_cuda.KERNELS) == set(_flex.KERNELS)
    assert _cuda.HOST_FALLBACK == {"lfilter", "sosfilt", "stft", "istft", "resample"}
    assert _cuda.HOST_FALLBACK == set(_flex.KERNELS) - set(_cuda.NATIVE)


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
    x = np.random.default_rng(2).standard_normal((4, 1 << 12))
    np.testing.assert_allclose(burn.signal.rfft(burn.tensor(x, device=dev)).numpy(), np.fft.rfft(x), atol=1e-9)
