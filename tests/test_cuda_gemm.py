"""float16 / bfloat16 matmul on cuda through cuBLAS GemmEx (burn_cuda.kernels.linear), against torch.

Without a GPU the matmuls run on the numpy stand-in for CuPy (tests/fakecupy.py), whose
``cupy.cuda.cublas.gemmEx`` / ``gemmStridedBatchedEx`` compute in float32 from the memory
their raw pointers address after checking every argument as cuBLAS would: a wrong leading
dimension, trans flag, stride or swapped operand gives wrong numbers (or fails the fake's
checks), which the comparison with torch's CPU float32 matmul of the same half values catches.
The expected cuBLAS calls (which function, trans flags, batch count) are checked per case.
With CuPy and a GPU, ``test_half_matmul_on_a_real_gpu_matches_torch`` compares the real
cuBLAS results; it skips otherwise.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("burn_cuda")
torch = pytest.importorskip("torch")

from fakecupy import real_gpu as _real_gpu  # noqa: E402  (tests/ is on sys.path under pytest)
from fakecupy import run_probe  # noqa: E402

from burn_cuda.kernels import linear as gemm  # noqa: E402  (imports no CuPy)

# (name, a shape, b shape, a view, b view, expected cuBLAS calls (fn, transa, transb, batchCount))
# A view: None; "mT": the matrix transpose of a contiguous tensor of the transposed shape;
# "step": every other column of a twice-as-wide tensor; "swap01": the first two (batch) dims of
# a contiguous tensor swapped; ("bcast", shape): broadcast_to(shape).
# cuBLAS's A is burn's b and its B burn's a (C^T = B^T A^T), so transa belongs to b.
G, S = "gemmEx", "gemmStridedBatchedEx"
CASES = [
    ("2d", (33, 17), (17, 9), None, None, [(G, 0, 0, 1)]),
    ("odd", (3, 5), (5, 7), None, None, [(G, 0, 0, 1)]),
    ("k1", (5, 1), (1, 7), None, None, [(G, 0, 0, 1)]),
    ("long_k", (17, 300), (300, 13), None, None, [(G, 0, 0, 1)]),
    ("batched", (4, 6, 5), (4, 5, 3), None, None, [(S, 0, 0, 4)]),
    ("b_shared_one_tall_gemm", (2, 3, 6, 5), (5, 4), None, None, [(G, 0, 0, 1)]),
    ("a_shared", (6, 5), (3, 5, 4), None, None, [(S, 0, 0, 3)]),
    ("broadcast_both_looped", (2, 1, 3, 5), (1, 4, 5, 2), None, None, [(S, 0, 0, 4), (S, 0, 0, 4)]),
    ("broadcast_view", (1, 6, 5), (3, 5, 4), ("bcast", (3, 6, 5)), None, [(S, 0, 0, 3)]),
    ("size_one_batch", (1, 3, 5), (2, 5, 4), None, None, [(S, 0, 0, 2)]),
    ("a_transposed", (5, 7), (7, 3), "mT", None, [(G, 0, 1, 1)]),
    ("b_transposed", (4, 6), (6, 3), None, "mT", [(G, 1, 0, 1)]),
    ("both_transposed_batched", (2, 5, 7), (2, 7, 3), "mT", "mT", [(S, 1, 1, 2)]),
    ("stepped_copy", (5, 6), (6, 4), "step", None, [(G, 0, 0, 1)]),
    ("permuted_batch_looped", (2, 3, 4, 5), (2, 3, 5, 6), "swap01", None, [(S, 0, 0, 3), (S, 0, 0, 3)]),
    ("m0", (0, 5), (5, 3), None, None, []),
    ("k0_zeros", (4, 0), (0, 3), None, None, []),
    ("n0", (4, 5), (5, 0), None, None, []),
    ("batch0", (0, 2, 3), (0, 3, 4), None, None, []),
]

PROBE = r'''
import json, os, numpy as np, burn, cupy
dev = burn.Device.cuda(0)
data = np.load(os.environ["GEMM_IN"])
spec = json.loads(os.environ["GEMM_SPEC"])
calls = cupy.cuda.cublas.CALLS
res, out = {}, {}

def view(x, how):
    if how == "mT":
        return x.mT
    if how == "step":
        return x[:, ::2]
    if how == "swap01":
        return burn.permute_dims(x, (1, 0, 2, 3))
    if how:
        return burn.broadcast_to(x, tuple(how[1]))
    return x

for dt in ("float16", "bfloat16"):
    d = getattr(burn, dt)
    for name, av, bv in spec:
        n0 = len(calls)
        a = view(burn.tensor(data[name + ".a"], dtype=d, device=dev), av)
        b = view(burn.tensor(data[name + ".b"], dtype=d, device=dev), bv)
        c = a @ b
        assert c.dtype == d and c.device == dev, (c.dtype, c.device)
        out[dt + "." + name] = c.astype(burn.float32).numpy()
        res[dt + "." + name] = calls[n0:]
    # burn::linear_relu: bfloat16 sums stay float32 (Ctype 0) until the epilogue
    n0 = len(calls)
    x, w, bias = (burn.tensor(data["lr." + k], dtype=d, device=dev) for k in "xwb")
    out[dt + ".linear_relu"] = burn.nn.functional.linear_relu(x, w, bias).astype(burn.float32).numpy()
    res[dt + ".linear_relu"] = calls[n0:]
n0 = len(calls)
burn.ones((4, 5), device=dev) @ burn.ones((5, 3), device=dev)
(burn.ones((4, 5), device=dev) @ burn.ones((5, 3), device=dev)).numpy()
res["float32_calls"] = len(calls) - n0
np.savez(os.environ["GEMM_OUT"], **out)
print(json.dumps(res))
'''

# bits of precision of each half type: rounding to it errs by at most 2**-BITS relative
BITS = {"float16": 11, "bfloat16": 8}


def _inputs(rng):
    """float32 values exactly representable in float16 and in bfloat16 (8 significant bits,
    small exponents), so both dtypes multiply the same numbers."""
    def half(shape):
        return (rng.integers(-128, 128, size=shape) / 64.0).astype(np.float32)
    d = {}
    for name, ash, bsh, av, bv, _ in CASES:
        d[name + ".a"] = half(ash[:-2] + ash[::-1][:2] if av == "mT" else
                              ash[:-1] + (2 * ash[-1],) if av == "step" else
                              (ash[1], ash[0]) + ash[2:] if av == "swap01" else ash)
        d[name + ".b"] = half(bsh[:-2] + bsh[::-1][:2] if bv == "mT" else bsh)
    d["lr.x"], d["lr.w"], d["lr.b"] = half((2, 3, 5)), half((5, 4)), half((4,))
    return d


def _torch_view(x, how):
    t = torch.from_numpy(x)
    if how == "mT":
        return t.mT
    if how == "step":
        return t[:, ::2]
    if how == "swap01":
        return t.permute(1, 0, 2, 3)
    if how:
        return torch.broadcast_to(t, tuple(how[1]))
    return t


def _close(got, want, dtype, scale=None):
    """|got - want| within one rounding to ``dtype`` of ``scale`` (default |want|), plus the
    difference of two float32 summation orders."""
    scale = np.abs(want) if scale is None else scale
    tol = 2.0 ** -BITS[dtype] * scale + 1e-4
    bad = np.abs(got - want) > tol
    assert not bad.any(), (f"{int(bad.sum())} of {bad.size} differ; worst |diff| "
                           f"{float(np.abs(got - want).max()):.3g}")


def test_half_matmul_through_gemm_ex_matches_torch_on_the_stand_in(tmp_path, monkeypatch):
    data = _inputs(np.random.default_rng(0))
    np.savez(tmp_path / "in.npz", **data)
    monkeypatch.setenv("GEMM_IN", str(tmp_path / "in.npz"))
    monkeypatch.setenv("GEMM_OUT", str(tmp_path / "out.npz"))
    monkeypatch.setenv("GEMM_SPEC", json.dumps([(n, av, bv) for n, _, _, av, bv, _ in CASES]))
    res = run_probe(tmp_path, PROBE, without_flex=True)
    out = np.load(tmp_path / "out.npz")
    for dt in ("float16", "bfloat16"):
        code = {"float16": 2, "bfloat16": 14}[dt]
        for name, ash, bsh, av, bv, calls in CASES:
            want = torch.matmul(_torch_view(data[name + ".a"], av), _torch_view(data[name + ".b"], bv)).numpy()
            got = out[f"{dt}.{name}"]
            assert got.shape == want.shape, (name, got.shape, want.shape)
            _close(got, want, dt)
            seen = [(c["fn"], c["transa"], c["transb"], c["batchCount"]) for c in res[f"{dt}.{name}"]]
            assert seen == calls, (dt, name, seen)
            for c in res[f"{dt}.{name}"]:
                assert (c["Atype"], c["Btype"], c["Ctype"], c["computeType"]) == (code, code, code, 68), c
        x, w, b = (torch.from_numpy(data["lr." + k]) for k in "xwb")
        xw = (x @ w).numpy()
        want = torch.relu(x @ w + b).numpy()
        # float16 rounds x @ w, then the sum with the bias (as flex); bfloat16 rounds once
        _close(out[f"{dt}.linear_relu"], want, dt, scale=2 * (np.abs(xw) + np.abs(b.numpy())))
        lr = res[f"{dt}.linear_relu"]
        assert [(c["fn"], c["m"], c["n"], c["Ctype"]) for c in lr] == [(G, 4, 6, code if dt == "float16" else 0)], lr
    assert res["float32_calls"] == 0          # float32 stays on CuPy's matmul (SGEMM)


OLD_GPU = r'''
import json, os, numpy as np, burn, cupy
os.environ["FAKE_CUPY_CC"] = os.environ.get("GEMM_CC", "90")
dev = burn.Device.cuda(0)
calls = cupy.cuda.cublas.CALLS
a = np.arange(12, dtype=np.float32).reshape(3, 4) / 4
res = {}
for dt in ("float16", "bfloat16"):
    n0 = len(calls)
    try:
        x = burn.tensor(a, dtype=getattr(burn, dt), device=dev)
        res[dt] = [(x @ x.mT).astype(burn.float32).numpy().tolist(), len(calls) - n0]
    except burn.BurnError as e:
        res[dt] = [type(e).__name__, str(e)]
print(json.dumps(res))
'''


def test_bfloat16_before_sm80_keeps_the_float32_path(tmp_path, monkeypatch):
    monkeypatch.setenv("GEMM_CC", "75")
    res = run_probe(tmp_path, OLD_GPU, without_flex=True)
    a = np.arange(12, dtype=np.float32).reshape(3, 4) / 4
    want = a @ a.T
    for dt in ("float16", "bfloat16"):
        got, n = res[dt]
        np.testing.assert_allclose(np.array(got), want, rtol=2.0 ** -BITS[dt])
        assert n == (1 if dt == "float16" else 0), (dt, n)     # sm_75: float16 GemmEx, bfloat16 SGEMM


def test_bfloat16_on_cupy13_is_still_refused_and_float16_uses_gemm_ex(tmp_path):
    res = run_probe(tmp_path, OLD_GPU, version="13.6.0+fake", without_flex=True)
    assert res["float16"][1] == 1
    assert res["bfloat16"][0] == "DTypeError" and "CuPy >= 14" in res["bfloat16"][1], res["bfloat16"]


def test_operand_layouts_and_batch_plans():
    """The pure layout rules (no CuPy): which strides cuBLAS reads without a copy."""
    N, T = gemm.CUBLAS_OP_N, gemm.CUBLAS_OP_T
    assert gemm.operand_layout(4, 6, 6, 1) == (N, 6)
    assert gemm.operand_layout(4, 6, 8, 1) == (N, 8)          # a column slice of a wider row-major array
    assert gemm.operand_layout(4, 6, 1, 4) == (T, 4)          # .mT of a contiguous [6, 4]
    assert gemm.operand_layout(4, 6, 1, 5) == (T, 5)
    assert gemm.operand_layout(1, 6, 0, 1) == (N, 6)          # a single row: its row stride is unused
    assert gemm.operand_layout(4, 1, 1, 0) == (N, 1)          # a single column
    for bad in ((4, 6, 6, 2), (4, 6, 3, 1), (4, 6, 0, 1), (4, 6, -6, 1), (4, 6, 1, 3)):
        assert gemm.operand_layout(*bad) is None, bad
    assert gemm.batch_plan((), []) == 0
    assert gemm.batch_plan((2, 3, 4), [[60, 20, 5], [0, 0, 0]]) == 0
    assert gemm.batch_plan((2, 3, 4), [[60, 20, 5], [12, 0, 3]]) == 2
    assert gemm.batch_plan((2, 3), [[0, 5], [6, 0]]) == 1


REAL_SHAPES = [((33, 17), (17, 9)), ((256, 512), (512, 128)), ((4, 64, 96), (4, 96, 80)),
               ((3, 64, 96), (96, 80)), ((64, 96), (3, 96, 80)), ((2, 1, 8, 16), (1, 3, 16, 8))]


def test_half_matmul_on_a_real_gpu_matches_torch():
    why = _real_gpu()
    if why != "ok":
        pytest.skip(why or "no CUDA GPU / CuPy not installed: only the stand-in test ran")
    import burn
    dev = burn.Device.cuda(0)
    rng = np.random.default_rng(1)
    on_gpu = torch.cuda.is_available()
    for dt in ("float16", "bfloat16"):
        d = getattr(burn, dt)
        for ash, bsh in REAL_SHAPES:
            for transposed in (False, True):
                a = (rng.integers(-128, 128, size=ash) / 64.0).astype(np.float32)
                b = (rng.integers(-128, 128, size=bsh[:-2] + bsh[::-1][:2] if transposed else bsh) / 64.0
                     ).astype(np.float32)
                tb = torch.from_numpy(b).mT if transposed else torch.from_numpy(b)
                want = torch.matmul(torch.from_numpy(a), tb).numpy()
                xb = burn.tensor(b, dtype=d, device=dev)
                got = (burn.tensor(a, dtype=d, device=dev) @ (xb.mT if transposed else xb))
                got = got.astype(burn.float32).numpy()
                _close(got, want, dt)
                if on_gpu:      # torch's own cuBLAS result in the same dtype: at most one rounding apart
                    td = getattr(torch, dt)
                    ref = torch.matmul(torch.from_numpy(a).cuda().to(td), tb.cuda().to(td)).float().cpu().numpy()
                    _close(got, ref, dt, scale=2 * np.abs(ref))
        x, w, bias = (rng.integers(-128, 128, size=s) / 64.0 for s in ((8, 32, 48), (48, 24), (24,)))
        got = burn.nn.functional.linear_relu(*(burn.tensor(v.astype(np.float32), dtype=d, device=dev)
                                               for v in (x, w, bias))).astype(burn.float32).numpy()
        xw = x @ w
        _close(got, np.maximum(xw + bias, 0).astype(np.float32), dt, scale=2 * (np.abs(xw) + np.abs(bias)))
