"""burn-cuda's recurrent kernels (burn_cuda/kernels/recurrent.py, cu/recurrent.cu) without a GPU.

The CUDA C is compile-checked with nvcc for every dtype it is rendered for. The wiring (which
slices, buffers, offsets and flags each launch gets, the CuPy matmuls between them, the
backward's accumulation) runs on the numpy stand-in for CuPy (tests/fakecupy.py), where the
probe below emulates each kernel's contract in numpy: LSTM and GRU layers, forward and
backward, both directions, on "cuda" against flex. On a GPU the same comparison runs the
real kernels.
"""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from fakecupy import real_gpu, run_probe  # noqa: E402  (tests/ is on sys.path under pytest)

NVCC = shutil.which("nvcc") or ("/usr/local/bin/nvcc" if os.path.exists("/usr/local/bin/nvcc") else None)


@pytest.mark.skipif(NVCC is None, reason="nvcc (CUDA toolkit) is not installed here")
def test_recurrent_kernels_compile_with_nvcc(tmp_path):
    from burn_cuda.kernels.recurrent import KERNEL_DTYPES, NAMES, recurrent_source
    for dt in KERNEL_DTYPES:
        src = recurrent_source(dt)
        for name in NAMES:
            assert f'extern "C" __global__ void burn_{name}_{dt}(' in src
        f = tmp_path / f"recurrent_{dt}.cu"
        f.write_text(src)
        r = subprocess.run([NVCC, "--ptx", "-arch=sm_90", "-std=c++17", str(f), "-o", str(tmp_path / "o.ptx")],
                           capture_output=True, text=True)
        assert r.returncode == 0, f"{dt}:\n{r.stderr[-3000:]}"


# each kernel's contract, emulated in numpy (what the CUDA C computes per element)
EMULATE = r'''
import burn, cupy, numpy as _np
_orig = cupy._Kernel.__call__
def _sig(x):
    return 1 / (1 + _np.exp(-x))
def _rec(self, grid, block, args):
    if not self.name.startswith(("burn_lstm_", "burn_gru_")):
        return _orig(self, grid, block, args)
    cupy._check_launch(self.name, grid, block, args, 0)
    n, H = args[0], args[1]
    assert isinstance(n, _np.int64) and isinstance(H, _np.int32), (type(n), type(H))
    assert grid[0] * block[0] >= int(n)
    for a in args[2:]:
        if isinstance(a, cupy.ndarray):
            assert a.flags.c_contiguous, self.name
    n, H = int(n), int(H)
    B = n // H
    A = lambda a, k: _np.asarray(a).reshape(B, k, H)
    Gm = lambda a: _np.asarray(a).reshape(4, B, H)        # the saved gates: gate-major
    if self.name.startswith("burn_lstm_step_grad_"):
        dmm, has, gout, gates, cells, cp_, dc, d = args[2:]
        i, f, g, o = Gm(gates)
        dh = A(dmm, 1)[:, 0] + (A(gout, 1)[:, 0] if has else 0)
        tc = _np.tanh(A(cells, 1)[:, 0])
        dcc = A(dc, 1)[:, 0] + dh * o * (1 - tc * tc)
        D = A(d, 4)
        D[:, 0], D[:, 1] = dcc * g * i * (1 - i), dcc * A(cp_, 1)[:, 0] * f * (1 - f)
        D[:, 2], D[:, 3] = dcc * i * (1 - g * g), dh * tc * o * (1 - o)
        A(dc, 1)[:, 0] = dcc * f
    elif self.name.startswith("burn_lstm_step_"):
        xp, hh, cp_, gates, cells, out = args[2:]
        a = A(xp, 4) + A(hh, 4)
        i, f, g, o = _sig(a[:, 0]), _sig(a[:, 1]), _np.tanh(a[:, 2]), _sig(a[:, 3])
        c = f * A(cp_, 1)[:, 0] + i * g
        G = Gm(gates)
        G[0], G[1], G[2], G[3] = i, f, g, o
        A(cells, 1)[:, 0] = c
        A(out, 1)[:, 0] = o * _np.tanh(c)
    elif self.name.startswith("burn_gru_step_grad_"):
        dmm, carry, has, gout, saved, hp, dx, dg = args[2:]
        r, z, nn, ghn = Gm(saved)
        dh = A(dmm, 1)[:, 0] + A(carry, 1)[:, 0] + (A(gout, 1)[:, 0] if has else 0)
        dn = dh * (1 - z) * (1 - nn * nn)
        dr = dn * ghn * r * (1 - r)
        dz = dh * (A(hp, 1)[:, 0] - nn) * z * (1 - z)
        X, Y = A(dx, 3), A(dg, 3)
        X[:, 0], X[:, 1], X[:, 2] = dr, dz, dn
        Y[:, 0], Y[:, 1], Y[:, 2] = dr, dz, dn * r
        A(carry, 1)[:, 0] = dh * z
    else:
        xp, gh, has_bias, bhh, hp, saved, out = args[2:]
        b = _np.asarray(bhh).reshape(3, H) if has_bias else _np.zeros((3, H))
        x, a = A(xp, 3), A(gh, 3)
        r, z = _sig(x[:, 0] + a[:, 0] + b[0]), _sig(x[:, 1] + a[:, 1] + b[1])
        ghn = a[:, 2] + b[2]
        nn = _np.tanh(x[:, 2] + r * ghn)
        S = Gm(saved)
        S[0], S[1], S[2], S[3] = r, z, nn, ghn
        A(out, 1)[:, 0] = nn + z * (A(hp, 1)[:, 0] - nn)
    cupy.LAUNCHES.append(self.name)
cupy._Kernel.__call__ = _rec
'''

LAYERS = r'''
import json, numpy as np, burn, cupy
from burn.dispatch import registry
cuda, flex = burn.Device.cuda(0), burn.Device.flex()
res = {"bad": [], "kernels": {}}
for kind in ("LSTM", "GRU"):
    for kw in (dict(num_layers=2, bidirectional=True), dict(bias=False, batch_first=True)):
        vals = {}
        for dev in (flex, cuda):
            ad = dev.autodiff()
            burn.Device.flex().seed(0)
            m = getattr(burn.nn, kind)(3, 4, device=burn.Device.flex(), dtype=DTYPE, **kw).to_device(ad)
            rng = np.random.default_rng(1)
            x = burn.tensor(rng.standard_normal((5, 2, 3)), dtype=DTYPE, device=ad).require_grad()
            out, fin = m(x)
            h = fin[0] if kind == "LSTM" else fin
            loss = (out * burn.tensor(rng.standard_normal(out.shape), dtype=DTYPE, device=ad)).sum() + h.sum()
            g = loss.backward()
            vals[dev] = [out.numpy(), h.numpy(), x.grad(g).numpy()] + [p.grad(g).numpy() for p in m.parameters()]
        for a, b in zip(vals[cuda], vals[flex]):
            if not np.allclose(a, b, rtol=TOL, atol=TOL):
                res["bad"].append(f"{kind} {kw}: max diff {float(np.abs(a - b).max())}")
res["launched"] = sorted(set(n for n in getattr(cupy, "LAUNCHES", ()) if n.startswith(("burn_lstm", "burn_gru"))))
for op in ("burn::lstm_layer", "burn::lstm_layer_grad", "burn::gru_layer", "burn::gru_layer_grad"):
    res["kernels"][op] = registry.kernel(op, "cuda").__name__
print(json.dumps(res))
'''


def _check(res, dt, stand_in=True):
    assert not res["bad"], "\n".join(res["bad"])
    assert res["kernels"] == {"burn::lstm_layer": "cuda_lstm_layer", "burn::lstm_layer_grad": "cuda_lstm_layer_grad",
                              "burn::gru_layer": "cuda_gru_layer", "burn::gru_layer_grad": "cuda_gru_layer_grad"}
    if stand_in:            # the stand-in records its launches (a real CuPy does not)
        assert res["launched"] == sorted(f"burn_{k}_{dt}" for k in ("lstm_step", "lstm_step_grad", "gru_step",
                                                                     "gru_step_grad"))


def test_lstm_and_gru_layers_on_cuda_match_flex_on_the_stand_in(tmp_path):
    res = run_probe(tmp_path, EMULATE + "DTYPE = burn.float64\nTOL = 1e-12\n" + LAYERS)
    _check(res, "float64")


@pytest.mark.skipif(real_gpu() != "ok", reason=f"needs CuPy with a usable GPU ({real_gpu() or 'no CuPy'})")
def test_real_gpu_lstm_and_gru_layers_match_flex():
    ns = {}
    exec("import burn\nDTYPE = burn.float32\nTOL = 1e-4\n" + LAYERS.replace("print(json.dumps(res))", "RES = res"), ns)
    _check(ns["RES"], "float32", stand_in=False)
