"""burn-cuda's host path: the optimizer-update kernels (burn_cuda/kernels/optim.py), the re-entrant
device scope (burn_cuda/runtime.py) and the null-GPU harness (benchmarks/cuda_host_overhead.py).

Without a GPU: the CUDA C of the update kernels is compile-checked with nvcc; their wiring
(arguments, modes, outputs, dtypes) runs on the numpy stand-in for CuPy (tests/fakecupy.py),
where the probe emulates the kernels in numpy in the reference's op order, against flex's
``burn::adam_update`` / ``burn::sgd_update``. On a GPU the same comparison runs the real kernels.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fakecupy import real_gpu, run_probe  # noqa: E402  (tests/ is on sys.path under pytest)

ROOT = Path(__file__).resolve().parent.parent
NVCC = shutil.which("nvcc") or ("/usr/local/bin/nvcc" if os.path.exists("/usr/local/bin/nvcc") else None)


@pytest.mark.skipif(NVCC is None, reason="nvcc (CUDA toolkit) is not installed here")
def test_optimizer_update_kernels_compile_with_nvcc(tmp_path):
    from burn_cuda.kernels.optim import KERNEL_DTYPES, adam_source, sgd_source
    for dt in KERNEL_DTYPES:
        for make in (adam_source, sgd_source):
            src, name = make(dt)
            assert f'extern "C" __global__ void {name}(' in src
            f = tmp_path / f"{name}.cu"
            f.write_text(src)
            r = subprocess.run([NVCC, "--ptx", "-arch=sm_90", "-std=c++17", str(f), "-o", str(tmp_path / "o.ptx")],
                               capture_output=True, text=True)
            assert r.returncode == 0, f"{name}:\n{r.stderr[-3000:]}"


def test_float_kernels_never_contract_into_fma_and_half_rounds_every_op():
    from burn_cuda.kernels.optim import adam_source, sgd_source
    f32, _ = adam_source("float32")
    body = f32.split("if (i >= n) return;", 1)[1]         # the arithmetic: no bare operator to contract
    assert "__fmul_rn" in f32 and "__fadd_rn" in f32 and "__fsqrt_rn" in f32
    assert not any(f" {o} " in body for o in "*+-/"), body
    assert "__dmul_rn" in sgd_source("float64")[0]
    h16, _ = adam_source("float16")
    assert h16.count("__half2float(__float2half_rn(") == 5      # MUL ADD SUB DIV SQRT each round to half


# the kernels' contract, emulated in numpy in the reference's op order (what the CUDA C computes)
EMULATE = r'''
import burn, cupy, numpy as _np
_orig = cupy._Kernel.__call__
def _optim(self, grid, block, args):
    if not self.name.startswith("burn_optim_"):
        return _orig(self, grid, block, args)
    kind, dt = self.name[len("burn_optim_"):].split("_", 1)
    n = args[0]
    assert isinstance(n, _np.int64), type(n)
    arrays = [a for a in args[1:] if isinstance(a, cupy.ndarray)]
    for a in arrays:
        assert a.flags.c_contiguous, self.name
    assert grid[0] * block[0] >= int(n), (grid, block, n)
    T = _np.dtype(dt) if dt != "bfloat16" else arrays[0].dtype
    def r(x):
        return _np.asarray(x).astype(T)
    if kind == "adam":
        p, g, m, v, h, mode, po, mo, vo = args[1:]
        assert h.dtype == _np.float64 and isinstance(mode, _np.int32)
        lr, b1, omb1, b2, omb2, c1, c2, eps, wd, decay = [r(x) for x in _np.asarray(h)]
        p, g, m, v = (_np.asarray(a) for a in (p, g, m, v))
        if mode == 1:
            g = r(g + r(p * wd))
        m2 = r(r(m * b1) + r(g * omb1))
        v2 = r(r(v * b2) + r(r(g * g) * omb2))
        st = r(r(m2 * c1) / r(r(_np.sqrt(r(v2 * c2))) + eps))
        if mode == 2:
            p = r(p * decay)
        _np.asarray(po)[...] = r(p - r(st * lr))
        _np.asarray(mo)[...] = m2
        _np.asarray(vo)[...] = v2
    else:
        p, g, buf, h, first, decay, nesterov, po, bo = args[1:]
        lr, wd, mom, omd = [r(x) for x in _np.asarray(h)]
        p, g, buf = (_np.asarray(a) for a in (p, g, buf))
        if decay:
            g = r(g + r(p * wd))
        b = g if first else r(r(buf * mom) + r(g * omd))
        d = r(g + r(b * mom)) if nesterov else b
        _np.asarray(po)[...] = r(p - r(d * lr))
        _np.asarray(bo)[...] = b
    cupy.LAUNCHES.append(self.name)
cupy._Kernel.__call__ = _optim
'''

UPDATES = r'''
import json, numpy as np, burn, cupy
from burn.dispatch import registry
cuda, flex = burn.Device.cuda(0), burn.Device.flex()
rng = np.random.default_rng(0)
res = {"bad": [], "kernels": {}}
def model(dev, dtype):
    p1 = burn.nn.Parameter(burn.tensor(rng0.standard_normal((5, 7)), dtype=dtype, device=dev))
    p2 = burn.nn.Parameter(burn.tensor(rng0.standard_normal((7,)), dtype=dtype, device=dev))
    return [p1, p2]
OPTS = {
    "adam": lambda ps: burn.optim.Adam(ps, lr=0.1),
    "adam_l2": lambda ps: burn.optim.Adam(ps, lr=0.05, weight_decay=0.1),
    "adamw": lambda ps: burn.optim.AdamW(ps, lr=0.05, weight_decay=0.1),
    "sgd": lambda ps: burn.optim.SGD(ps, lr=0.1),
    "sgd_momentum": lambda ps: burn.optim.SGD(ps, lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.01),
    "sgd_nesterov": lambda ps: burn.optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True),
}
for name, make in OPTS.items():
    for dtype in DTYPES:
        out = {}
        for dev in (flex, cuda):
            rng0 = np.random.default_rng(1)
            ad = dev.autodiff()
            ps = model(ad, dtype)
            opt = make(ps)
            for step in range(3):
                x = burn.tensor(np.random.default_rng(step).standard_normal((3, 5)), dtype=dtype, device=ad)
                loss = ((x @ ps[0] + ps[1]) ** 2).sum()
                opt.step(loss.backward())
            out[dev] = [p.detach().astype(burn.float64).numpy() for p in ps]
        try:
            for a, b in zip(out[cuda], out[flex]):
                tol = TOL[dtype.name] if isinstance(TOL, dict) else TOL
                np.testing.assert_allclose(a, b, rtol=tol, atol=tol)
        except AssertionError as e:
            res["bad"].append(f"{name} {dtype}: {str(e)[:400]}")
# the stand-in records its launches (a real CuPy does not: None)
res["launched"] = sorted(set(n for n in getattr(cupy, "LAUNCHES", ()) if n.startswith("burn_optim_"))) \
    if hasattr(cupy, "LAUNCHES") else None
for op in ("burn::adam_update", "burn::sgd_update"):
    res["kernels"][op] = registry.kernel(op, "cuda").__name__
print(json.dumps(res))
'''


def _check_updates(res, dtypes):
    assert not res["bad"], "\n".join(res["bad"])
    assert res["kernels"] == {"burn::adam_update": "adam_update", "burn::sgd_update": "sgd_update"}
    for dt in dtypes if res["launched"] is not None else ():
        assert {f"burn_optim_adam_{dt}", f"burn_optim_sgd_{dt}"} <= set(res["launched"]), res["launched"]


def test_adam_and_sgd_updates_on_cuda_match_flex_on_the_stand_in(tmp_path):
    probe = EMULATE + "DTYPES = (burn.float32, burn.float64)\nTOL = 1e-12\n" + UPDATES
    res = run_probe(tmp_path, probe)
    # float32/float64: the reference's ops in its order, rounded as flex rounds them
    _check_updates(res, ("float32", "float64"))


def test_half_precision_updates_round_like_the_reference_on_the_stand_in(tmp_path):
    # flex computes each half-precision kernel and fused group in float32 and rounds once; the
    # stand-in's kernels round where the CUDA C does. Three steps of lr 0.1 on a squared loss
    # amplify that difference to a few bfloat16 ulps (8-bit significand: 2**-8 relative)
    probe = EMULATE + "DTYPES = (burn.float16, burn.bfloat16)\nTOL = {'float16': 2e-2, 'bfloat16': 6e-2}\n" + UPDATES
    res = run_probe(tmp_path, probe)
    _check_updates(res, ("float16", "bfloat16"))


@pytest.mark.skipif(real_gpu() != "ok", reason=f"needs CuPy with a usable GPU ({real_gpu() or 'no CuPy'})")
def test_real_gpu_adam_and_sgd_updates_match_flex():
    ns = {}
    exec("import burn\nDTYPES = (burn.float32, burn.float64)\nTOL = 1e-6\n"
         + UPDATES.replace("print(json.dumps(res))", "RES = res"), ns)
    _check_updates(ns["RES"], ("float32", "float64"))


SCOPE = r'''
import json, burn, cupy
from burn_cuda import runtime
dc = runtime.context(0)
out = {}
with dc.scope() as a:
    depth1 = len(cupy._STREAMS) if hasattr(cupy, "_STREAMS") else None
    with dc.scope() as b:
        out["same"] = a is b is dc
        out["nested_streams"] = (len(cupy._STREAMS) if hasattr(cupy, "_STREAMS") else None) == depth1
    out["after_inner"] = len(runtime._TLS.stack)
try:
    with dc.scope():
        with dc.scope():
            raise KeyError("inside")
except KeyError as e:
    out["raised"] = str(e)
out["stack_after"] = len(runtime._TLS.stack)
out["streams_after"] = len(cupy._STREAMS) if hasattr(cupy, "_STREAMS") else 0
x = burn.tensor([1.0, 2.0], device=burn.Device.cuda(0))
out["value"] = ((x * 2).exp() + 1).tolist()
out["stack_end"] = len(runtime._TLS.stack)
print(json.dumps(out))
'''


def test_device_scope_reenters_for_free_and_unwinds_on_errors(tmp_path):
    res = run_probe(tmp_path, SCOPE)
    assert res["same"] and res["nested_streams"] and res["after_inner"] == 1
    assert res["raised"] == "'inside'" and res["stack_after"] == 0 and res["streams_after"] == 0
    np.testing.assert_allclose(res["value"], np.exp([2.0, 4.0]) + 1, rtol=1e-6)
    assert res["stack_end"] == 0


def test_null_gpu_harness_runs_the_cnn_step_with_one_update_launch_per_parameter(tmp_path):
    out = tmp_path / "r.json"
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "cuda_host_overhead.py"), "--reps", "1",
                        "--steps", "2", "--warmup", "2", "--top", "5", "--no-context", "--json", str(out)],
                       capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-4000:]
    res = json.loads(out.read_text())
    c = res["per_step"]
    assert res["fuse_after"].startswith("default")
    # the step's 8 parameters: 8 update kernels among the RawKernel launches, counted by burn_cuda too
    assert c["raw"] == c["dc_launches"] and c["raw"] >= 8
    assert c["gpu_work"] > c["raw"] and c["alloc"] > 0 and 0 < c["scope"] < c["gpu_work"]
    assert res["host_ms"]["median"] > 0 and "CNN step" in r.stdout


# -- the window kernels' CUDA C, run on the CPU ----------------------------------------------------
# burn_cuda.kernels.conv's generated kernels are plain C++ apart from CUDA's spellings: with a shim for
# those (thread indices, __global__, the _rn intrinsics as IEEE operations) g++ builds them into
# a library whose drivers run every thread in turn. This checks their index arithmetic and window
# logic (float32/float64) against PyTorch and numpy without a GPU; nvcc checks they compile for one.

from cuda_on_cpu import GXX, SHIM, build_library  # noqa: E402  (shared with test_signal_cuda.py)

DIMS = "int H, int W, int OH, int OW, int KH, int KW, int SH, int SW, int PT, int PL, int DH, int DW"
DIM_NAMES = "H, W, OH, OW, KH, KW, SH, SW, PT, PL, DH, DW"


def _host_library(tmp_path, dt):
    from burn_cuda.kernels.conv import window_source
    T = {"float32": "float", "float64": "double"}[dt]
    arrays = {"maxpool": ["x", "out"], "maxpool_grad": ["x", "out", "g", "gx"], "col2im": ["cols", "gx"]}
    drivers = []
    for kind, names in arrays.items():
        params = ", ".join(f"{T}* {a}" for a in names)
        drivers.append(f"""extern "C" void run_{kind}(long long n, {params}, {DIMS}) {{
    blockDim.x = 256;
    for (long long t = 0; t < n; ++t) {{
        blockIdx.x = (unsigned)(t / 256); threadIdx.x = (unsigned)(t % 256);
        burn_conv_{kind}_{dt}(n, {", ".join(names)}, {DIM_NAMES});
    }}
}}""")
    return build_library(tmp_path, f"win_{dt}", SHIM + window_source(dt) + "\n".join(drivers))


def _run(lib, kind, arrays, dims):
    import ctypes
    out = arrays[-1]
    getattr(lib, f"run_{kind}")(ctypes.c_longlong(out.size), *[a.ctypes.data_as(ctypes.c_void_p) for a in arrays],
                                *[ctypes.c_int(int(d)) for d in dims])


WINDOWS = [  # (N, C, H, W), kernel, stride, padding (t, b, l, r), dilation
    ((2, 3, 8, 9), (2, 2), (2, 2), (0, 0, 0, 0), (1, 1)),
    ((1, 2, 7, 7), (3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),      # overlapping windows, padding
    ((2, 1, 9, 8), (3, 2), (2, 1), (1, 1, 0, 0), (2, 1)),      # dilation, unequal strides
    ((1, 1, 5, 6), (2, 3), (3, 2), (0, 1, 1, 2), (1, 1)),      # asymmetric padding
]


def _np_windows(shape, kernel, stride, padding, dilation):
    from burn.ops.conv import conv_out_hw, window_offsets
    out_hw = conv_out_hw(shape, kernel, stride, padding, dilation)
    return out_hw, list(window_offsets(kernel, stride, dilation, out_hw))


@pytest.mark.skipif(GXX is None, reason="g++ is not installed here")
@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_window_kernels_cuda_c_on_the_cpu_match_torch_and_numpy(tmp_path, dt):
    import torch
    from burn_cuda.kernels.conv import _dims
    lib = _host_library(tmp_path, dt)
    rng = np.random.default_rng(0)
    for shape, kernel, stride, padding, dilation in WINDOWS:
        out_hw, offs = _np_windows(shape, kernel, stride, padding, dilation)
        dims = _dims("test", shape[2:], out_hw, kernel, stride, padding, dilation)
        # ties (few distinct values) exercise the first-maximum rule
        x = rng.integers(-3, 4, shape).astype(dt)
        out = np.empty(shape[:2] + out_hw, dt)
        _run(lib, "maxpool", [x, out], dims)
        pt, pb, pl, pr = padding
        xp = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)), constant_values=-np.inf)
        want = np.max([xp[:, :, rs, cs] for _, _, rs, cs in offs], axis=0)
        np.testing.assert_array_equal(out, want)
        g = rng.standard_normal(out.shape).astype(dt)
        gx = np.empty(shape, dt)
        _run(lib, "maxpool_grad", [x, out, g, gx], dims)
        if pt == pb and pl == pr:       # torch pads symmetrically
            xt = torch.tensor(x, requires_grad=True)
            yt = torch.nn.functional.max_pool2d(xt, kernel, stride, (pt, pl), dilation)
            np.testing.assert_array_equal(yt.detach().numpy(), out)
            yt.backward(torch.tensor(g))
            np.testing.assert_allclose(gx, xt.grad.numpy(), rtol=1e-6, atol=1e-6)
        # the first maximum of each window (row-major) takes its gradient: numpy by hand
        ref = np.zeros(xp.shape, dt)
        win = np.stack([xp[:, :, rs, cs] for _, _, rs, cs in offs])       # [K, N, C, OH, OW]
        first = np.argmax(win == out, axis=0)
        for k, (_, _, rs, cs) in enumerate(offs):
            ref[:, :, rs, cs] += np.where(first == k, g, 0)
        np.testing.assert_allclose(gx, ref[:, :, pt:pt + shape[2], pl:pl + shape[3]], rtol=1e-6, atol=1e-6)
        # col2im: every column summed into its input position
        cols = rng.standard_normal(shape[:2] + tuple(kernel) + out_hw).astype(dt)
        gi = np.empty(shape, dt)
        _run(lib, "col2im", [cols, gi], dims)
        acc = np.zeros(xp.shape, dt)
        for i, j, rs, cs in offs:
            acc[:, :, rs, cs] += cols[:, :, i, j]
        np.testing.assert_allclose(gi, acc[:, :, pt:pt + shape[2], pl:pl + shape[3]], rtol=1e-6, atol=1e-6)


@pytest.mark.skipif(GXX is None, reason="g++ is not installed here")
def test_window_kernels_propagate_nan_like_the_cupy_form(tmp_path):
    from burn_cuda.kernels.conv import _dims
    lib = _host_library(tmp_path, "float64")
    shape, kernel, stride, padding, dilation = (1, 1, 4, 4), (2, 2), (2, 2), (0, 0, 0, 0), (1, 1)
    out_hw, _ = _np_windows(shape, kernel, stride, padding, dilation)
    dims = _dims("test", shape[2:], out_hw, kernel, stride, padding, dilation)
    x = np.arange(16, dtype=np.float64).reshape(shape)
    x[0, 0, 0, 1] = np.nan
    out = np.empty((1, 1, 2, 2))
    _run(lib, "maxpool", [x, out], dims)
    assert np.isnan(out[0, 0, 0, 0]) and out[0, 0, 1, 1] == 15.0        # maximum(): NaN propagates
    g = np.array([[[[1.0, np.nan], [2.0, 3.0]]]])
    gx = np.empty(shape)
    _run(lib, "maxpool_grad", [x, out, g, gx], dims)
    # a NaN window sends nothing (NaN == NaN is false); a NaN gradient spreads as 0 * g did
    assert not np.isnan(gx[0, 0, :2, :2]).any() and np.isnan(gx[0, 0, :2, 2:]).all()
    assert gx[0, 0, 3, 1] == 2.0 and gx[0, 0, 3, 3] == 3.0 and gx[0, 0, :2, :2].sum() == 0
