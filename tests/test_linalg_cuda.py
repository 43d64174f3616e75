"""burn.linalg's cuda kernels (burn_linalg._cuda).

Without a GPU: the numpy/SciPy stand-in for CuPy of tests/fakecupy.py (with ``cupy.linalg``,
``cupy.fft``, ``cupyx.errstate``, ``cupyx.scipy.linalg`` and ``cupyx.scipy.signal``) runs
every kernel through ``burn.Device.cuda(0)`` in a subprocess and compares it with flex. That
checks WIRING, not CUDA numerics: registration, the CuPy functions each kernel calls and with
which arguments, batching/broadcasting, dtypes, and errors named as flex names them. With CuPy and a GPU, ``test_every_op_on_a_real_gpu_matches_flex`` compares
the real cuSOLVER results with flex; it skips otherwise.
"""
from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import burn

pytest.importorskip("burn_linalg")
pytest.importorskip("burn_cuda")

from fakecupy import real_gpu as _real_gpu  # noqa: E402  (tests/ is on sys.path under pytest)
from fakecupy import COMPARE, run_probe  # noqa: E402

# (name, call, inputs builder, CuPy functions the native kernel must call); shared with the GPU test
CASES = r'''
import numpy as np, burn
L = burn.linalg

def _spd(rng, *s):
    x = rng.standard_normal(s)
    return x @ np.swapaxes(x, -1, -2) + s[-1] * np.eye(s[-1])

def _wc(rng, *s):
    return 0.4 * rng.standard_normal(s) + 3 * np.eye(s[-1])

def _tri(rng, *s):
    return np.tril(_wc(rng, *s))

def _lu_solve(a, b, trans=0):
    return L.lu_solve(L.lu_factor(a), b, trans=trans)

# singular and eigen vectors are unique up to a sign (a phase, complex) per vector, which
# cuSOLVER and LAPACK choose differently: compare what does not depend on it
def _svd_invariants(a):
    u, s, vh = L.svd(a, full_matrices=False)
    return s, (u * s[..., None, :]) @ vh, burn.abs(u), burn.abs(vh)

def _eigh_invariants(a):
    w, v = L.eigh(a)
    return w, (v * w[..., None, :]) @ burn.conj(v).mT, burn.abs(v)

CASES = [
    ("solve", lambda a, b: L.solve(a, b), lambda r: [_wc(r, 2, 3, 3), _wc(r, 3, 3)[:, :2]], ["linalg.solve"]),
    ("inv", L.inv, lambda r: [_wc(r, 2, 4, 4)], ["linalg.inv"]),
    ("det", L.det, lambda r: [_wc(r, 3, 3, 3)], ["linalg.det"]),
    ("slogdet", lambda a: tuple(L.slogdet(a)), lambda r: [_wc(r, 2, 3, 3)], ["linalg.slogdet"]),
    ("cholesky", L.cholesky, lambda r: [_spd(r, 2, 4, 4)], ["linalg.cholesky"]),
    ("cholesky_upper", lambda a: L.cholesky(a, upper=True), lambda r: [_spd(r, 3, 3)], ["linalg.cholesky"]),
    ("qr", lambda a: tuple(L.qr(a)), lambda r: [r.standard_normal((2, 5, 3))], ["linalg.qr"]),
    ("qr_complete", lambda a: tuple(L.qr(a, mode="complete")), lambda r: [r.standard_normal((4, 3))], ["linalg.qr"]),
    ("qr_r", lambda a: L.qr(a, mode="r"), lambda r: [r.standard_normal((2, 5, 3))], ["linalg.qr"]),
    ("svd", _svd_invariants, lambda r: [r.standard_normal((2, 4, 3))], ["linalg.svd"]),
    ("svdvals", L.svdvals, lambda r: [r.standard_normal((2, 3, 5))], ["linalg.svd"]),
    ("eigh", _eigh_invariants, lambda r: [_spd(r, 2, 4, 4)], ["linalg.eigh"]),
    ("eigvalsh", lambda a: L.eigvalsh(a, UPLO="U"), lambda r: [_spd(r, 4, 4)], ["linalg.eigvalsh"]),
    ("lstsq", lambda a, b: L.lstsq(a, b)[0], lambda r: [r.standard_normal((2, 5, 3)), r.standard_normal((5, 2))],
     ["linalg.lstsq"]),
    ("pinv", L.pinv, lambda r: [r.standard_normal((2, 4, 3))], ["linalg.svd"]),
    ("lu", lambda a: tuple(L.lu(a)), lambda r: [r.standard_normal((2, 4, 4))], ["scipy.linalg.lu"]),
    ("lu_permute_l", lambda a: tuple(L.lu(a, permute_l=True)), lambda r: [r.standard_normal((3, 3))], ["scipy.linalg.lu"]),
    ("lu_factor", lambda a: tuple(L.lu_factor(a)), lambda r: [_wc(r, 2, 3, 3)], ["scipy.linalg.lu_factor"]),
    ("lu_solve", _lu_solve, lambda r: [_wc(r, 2, 3, 3), r.standard_normal((3, 2))], ["scipy.linalg.lu_solve"]),
    ("lu_solve_t", lambda a, b: _lu_solve(a, b, 1), lambda r: [_wc(r, 3, 3), r.standard_normal((2, 3, 1))],
     ["scipy.linalg.lu_solve"]),
    # an int64 piv (lu_factor's is int32): cuSOLVER's getrs reads int32 pivots and CuPy does not cast
    ("lu_solve_int64_piv", lambda a, b: L.lu_solve((L.lu_factor(a)[0], L.lu_factor(a)[1].astype(burn.int64)), b),
     lambda r: [_wc(r, 2, 3, 3), r.standard_normal((3, 2))], ["scipy.linalg.lu_solve"]),
    ("solve_triangular", lambda a, b: L.solve_triangular(a, b, lower=True), lambda r: [_tri(r, 2, 3, 3),
     r.standard_normal((3, 2))], ["scipy.linalg.solve_triangular"]),
    ("solve_triangular_t", lambda a, b: L.solve_triangular(a, b, trans=1, lower=True, unit_diagonal=True),
     lambda r: [_tri(r, 3, 3), r.standard_normal((3, 2))], ["scipy.linalg.solve_triangular"]),
    ("diagonal", lambda a: L.diagonal(a, offset=1), lambda r: [r.standard_normal((2, 3, 4))], []),
]
''' + COMPARE

PROBE = r'''
import json, numpy as np, burn, cupy, cupyx
exec(CASES_SRC)
dev = burn.Device.cuda(0)
from burn.dispatch import registry
res = {"bad": [], "calls": {}, "kernels": {}, "errors": {}}
for dt, tol in ((burn.float64, 1e-9), (burn.float32, 2e-4), (burn.complex128, 1e-9)):
    res["bad"] += compare(dev, dt, tol)
for name, fn, make, _ in CASES:
    del cupy.CALLS[:]
    out = fn(*[burn.tensor(x, dtype=burn.float16 if name == "cholesky" else burn.float32, device=dev)
               for x in make(np.random.default_rng(1))])
    [o.numpy() for o in (out if isinstance(out, tuple) else (out,))]
    res["calls"][name] = sorted(set(cupy.CALLS))
for op in ("solve", "inv", "cholesky", "qr", "lu_solve", "solve_triangular", "diagonal"):
    res["kernels"][op] = registry.kernel("linalg::" + op, "cuda").__name__
sing = np.array([[1.0, 2.0], [2.0, 4.0]])
for name, fn in (("solve", lambda a: burn.linalg.solve(a, a)), ("inv", burn.linalg.inv),
                 ("cholesky", burn.linalg.cholesky),
                 ("solve_triangular", lambda a: burn.linalg.solve_triangular(a * 0, a))):
    try:
        fn(burn.tensor(sing, device=dev)).numpy()
        res["errors"][name] = "no error"
    except Exception as e:
        res["errors"][name] = [type(e).__name__, isinstance(e, np.linalg.LinAlgError), str(e)]
res["errstate"] = [dict(k) for k in cupyx.ERRSTATE[:1]]
a = np.random.default_rng(2).standard_normal((2, 4, 4))
del cupy.CALLS[:]
w, v = burn.linalg.eig(burn.tensor(a, device=dev))
wn, vn = w.numpy(), v.numpy()
res["eig"] = [str(w.dtype), str(w.device), bool(np.allclose(wn, np.linalg.eigvals(a))),
              bool(np.allclose(a @ vn, vn * wn[..., None, :])), "asnumpy" in cupy.CALLS,
              registry.kernel("linalg::eig", "cuda").__name__,
              bool(np.allclose(burn.linalg.eigvals(burn.tensor(a, device=dev)).numpy(), wn))]
print(json.dumps(res))
'''


def test_cuda_kernels_wiring_on_a_numpy_stand_in_for_cupy(tmp_path):
    res = run_probe(tmp_path, f"CASES_SRC = {CASES!r}\n" + textwrap.dedent(PROBE))
    assert not res["bad"], "\n".join(res["bad"])
    ns = {}
    exec(CASES, ns)
    for name, _, _, must in ns["CASES"]:
        # the native path calls CuPy's routine and never copies to the host
        assert set(must) <= set(res["calls"][name]), (name, res["calls"][name])
        assert "asnumpy" not in res["calls"][name], (name, res["calls"][name])
    for op, k in res["kernels"].items():
        assert k == f"cuda_linalg_{op}", (op, k)
    for op, (typ, is_np, msg) in res["errors"].items():
        assert typ == "LinAlgError" and is_np and f"linalg::{op}" in msg, (op, typ, msg)
    assert res["errstate"] == [{"linalg": "raise"}]
    # eig / eigvals: LAPACK's geev on host copies (a declared fallback), results back on the device
    assert res["eig"] == ["complex128", "cuda:0", True, True, True, "cuda_host_linalg_eig", True], res["eig"]


def test_module_imports_without_cupy_and_declares_its_host_fallbacks():
    # burn-cuda registers itself without CuPy, so importing the kernel module must not need it
    code = "import sys, burn_linalg._cuda, burn_signal._cuda; assert 'cupy' not in sys.modules"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    import importlib
    mod = importlib.import_module("burn_linalg._cuda")
    from burn_linalg import _flex
    assert set(mod.KERNELS) == set(_flex.KERNELS)
    assert mod.HOST_FALLBACK == set(_flex.KERNELS) - set(mod.NATIVE)


def test_burn_info_lists_cuda_linalg_kernels():
    from burn.cli import info_text
    from burn_linalg import _cuda
    out = info_text()
    for op in sorted(set(_cuda.KERNELS)):
        line = next(ln for ln in out.splitlines() if ln.strip().startswith(f"linalg::{op} "))
        tag = "cuda: linalg host-fallback" if op in _cuda.HOST_FALLBACK else "cuda: linalg"
        assert tag in line, line
        if op not in _cuda.HOST_FALLBACK:
            assert "cuda: linalg host-fallback" not in line, line


def test_every_op_on_a_real_gpu_matches_flex():
    why = _real_gpu()
    if why != "ok":
        pytest.skip(why or "no CUDA GPU / CuPy not installed: only the stand-in wiring test ran")
    ns = {}
    exec(CASES, ns)
    dev = burn.Device.cuda(0)
    bad = (ns["compare"](dev, burn.float64, 1e-8) + ns["compare"](dev, burn.float32, 1e-3)
           + ns["compare"](dev, burn.complex128, 1e-8))
    assert not bad, "\n".join(bad)
    with pytest.raises(np.linalg.LinAlgError, match="linalg::cholesky"):
        burn.linalg.cholesky(burn.tensor([[1.0, 2.0], [2.0, 1.0]], device=dev)).numpy()
    with pytest.raises(np.linalg.LinAlgError, match="linalg::solve"):
        a = burn.tensor([[1.0, 2.0], [2.0, 4.0]], device=dev)
        burn.linalg.solve(a, a).numpy()
