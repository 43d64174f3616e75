"""burn-cuda's Python wiring on the CPU: the conformance suite through the cuda backend on the
numpy stand-in for CuPy of tests/fakecupy.py, with burn-flex impossible to import.

This does NOT test CUDA (see tests/fakecupy.py): it tests that every kernel of burn_cuda is
called with the attributes core gives it and returns what the meta rule promised, that the
launch arguments follow CuPy's calling convention, the device scope, DLPack and data paths of
the backend, fused groups falling back op by op, bfloat16 through ml_dtypes (CuPy >= 14) and
its refusal on CuPy 13 - and that burn-cuda needs nothing from burn-flex. The numerics of
the generated CUDA C (compile-checked by test_cuda_nvcc.py) need a GPU.
"""
from __future__ import annotations

import ast
import pathlib

import pytest

pytest.importorskip("burn_cuda")

from fakecupy import run_probe  # noqa: E402  (tests/ is on sys.path under pytest)

CONFORMANCE = r'''
import json, sys, numpy as np, burn, cupy
from burn.testing.conformance import cases, run_case
dev = burn.Device.cuda(0)
res = {"passed": 0, "failed": [], "bf16": 0, "info": dev.backend.describe_devices()}
for c in cases():
    try:
        run_case(c, dev)
        res["passed"] += 1
        res["bf16"] += "bfloat16" in c.dtypes
    except Exception as e:
        res["failed"].append(f"{c.name}: {type(e).__name__}: {str(e)[:300]}")
res["launched_ops"] = sorted(set(cupy.LAUNCHES))
res["flex_module"] = repr(sys.modules.get("burn_flex", "absent"))
res["plugins"] = {r.name: r.status for r in burn.plugins.report()}
res["default"] = str(burn.Device.default())
from burn.dispatch import registry
res["fallbacks"] = sorted(op for (op, b), es in registry.kernels.items() if b == "cuda" and "::" not in op
                          for k in es if k.host_fallback)
print(json.dumps(res))
'''


def test_conformance_on_the_stand_in_without_burn_flex(tmp_path):
    res = run_probe(tmp_path, CONFORMANCE, without_flex=True)
    assert res["info"][0].startswith("cuda:0 FakeGPU")
    # burn_flex could not be imported (sys.modules holds None) and its plugin was skipped
    assert res["flex_module"] == "None" and res["plugins"].get("flex") != "loaded", res["plugins"]
    assert res["plugins"]["cuda"] == "loaded" and res["default"] == "cuda:0"
    assert {"add", "exp", "cast", "where", "full"} <= set(res["launched_ops"])
    assert any(op.startswith("burn_scatter_add_") for op in res["launched_ops"]), res["launched_ops"]
    assert res["fallbacks"] == []
    # groups large enough to fuse on their first call launch a generated multi-op kernel, which
    # only a GPU runs: those cases are what the stand-in cannot do
    fused = [f for f in res["failed"] if "fake cupy runs family kernels only" in f]
    other = [f for f in res["failed"] if f not in fused]
    assert len(fused) < 20 and res["passed"] > 1500
    assert not other, f"{len(other)} failed, {res['passed']} passed:\n" + "\n".join(other[:60])
    assert res["bf16"] >= 120        # every bfloat16 conformance case ran on cuda


BF16_ON_CUPY13 = r'''
import json, numpy as np, burn
dev = burn.Device.cuda(0)
res = {"f32": burn.tensor([1.0, 2.0], device=dev).sum().item()}
for name, fn in (("tensor", lambda: burn.tensor([1.0], dtype=burn.bfloat16, device=dev)),
                 ("astype", lambda: burn.ones((2,), device=dev).astype(burn.bfloat16).numpy())):
    try:
        fn()
        res[name] = "no error"
    except burn.BurnError as e:
        res[name] = [type(e).__name__, str(e)]
print(json.dumps(res))
'''


def test_bfloat16_on_cupy13_is_refused_saying_what_to_upgrade(tmp_path):
    res = run_probe(tmp_path, BF16_ON_CUPY13, version="13.6.0+fake", without_flex=True)
    assert res["f32"] == 3.0
    for name in ("tensor", "astype"):
        typ, msg = res[name]
        assert typ == "DTypeError", res[name]
        assert "bfloat16 needs CuPy >= 14" in msg and "13.6.0" in msg and "ml_dtypes" in msg, msg
        assert "pip install" in msg, msg


BF16_VALUES = r'''
import json, numpy as np, ml_dtypes, burn, cupy
dev = burn.Device.cuda(0)
rng = np.random.default_rng(0)
a = rng.standard_normal((33, 70)).astype(np.float32)
b = rng.standard_normal((70, 9)).astype(np.float32)
bf = lambda x: burn.tensor(x, dtype=burn.bfloat16, device=dev)
A, B = bf(a), bf(b)
ab, bb = a.astype(ml_dtypes.bfloat16).astype(np.float64), b.astype(ml_dtypes.bfloat16).astype(np.float64)
out = {}
m = A @ B
out["matmul_dtype"] = str(m.dtype)
out["matmul_err"] = float(np.abs(m.numpy().astype(np.float64) - ab @ bb).max())
s = A.sum(axis=1)
out["sum_err"] = float(np.abs(s.numpy().astype(np.float64) - ab.sum(axis=1)).max())
u = rng.uniform(0, 1, 20000).astype(ml_dtypes.bfloat16)
out["big_sum"] = [float(burn.tensor(u, device=dev).sum().item()), float(u.astype(np.float64).sum())]
out["cumsum_last"] = float(burn.ones((1000,), dtype=burn.bfloat16, device=dev).cumsum(axis=0).numpy()[-1])
out["exp_dtype"] = str((A * 2).exp().dtype)
out["native"] = str(cupy.asarray(A.numpy()).dtype)

class GpuBF16:          # a CUDA DLPack producer that a CuPy without bfloat16 DLPack rejects
    def __dlpack_device__(self):
        return (2, 0)
def no_bf16_dlpack(obj):
    raise NotImplementedError("CuPy does not support bfloat16 yet")
cupy.from_dlpack = no_bf16_dlpack
try:
    burn.from_dlpack(GpuBF16(), device=dev)
    out["dlpack"] = "no error"
except Exception as e:
    out["dlpack"] = [type(e).__name__, str(e)]
print(json.dumps(out))
'''


def test_bfloat16_kernels_compute_in_float32(tmp_path):
    res = run_probe(tmp_path, BF16_VALUES, without_flex=True)
    assert res["matmul_dtype"] == "bfloat16" and res["exp_dtype"] == "bfloat16" and res["native"] == "bfloat16"
    # float32 accumulation then one bf16 rounding of the result (|x| < 30: spacing <= 0.125)
    assert res["matmul_err"] <= 0.07, res
    assert res["sum_err"] <= 0.07, res
    got, want = res["big_sum"]
    assert abs(got - want) <= want * 2 ** -8, res["big_sum"]     # one bf16 rounding of the exact sum
    assert res["cumsum_last"] == 1000.0      # accumulated in float32: bfloat16 steps would stall at 256
    typ, msg = res["dlpack"]
    assert typ == "DTypeError" and "cannot import bfloat16 over DLPack" in msg and "float32" in msg, res["dlpack"]


_PKG = pathlib.Path(__file__).resolve().parents[1] / "plugins" / "burn-cuda"


def test_burn_cuda_source_never_imports_burn_flex():
    bad = []
    for path in sorted((_PKG / "burn_cuda").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in (
                    "import_module", "__import__"):
                names = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            bad += [f"{path.name}:{node.lineno} {n}" for n in names if n.split(".")[0] == "burn_flex"]
    assert not bad, bad
    assert not [p.name for p in (_PKG / "burn_cuda" / "kernels").rglob("*.py") if "burn_flex" in p.read_text()]


def test_pyproject_does_not_depend_on_burn_flex():
    import tomllib
    meta = tomllib.loads((_PKG / "pyproject.toml").read_text())["project"]
    assert not [d for d in meta["dependencies"] if d.replace("_", "-").startswith("burn-flex")]
    for extra in ("cuda12", "cuda13"):
        deps = meta["optional-dependencies"][extra]
        assert any(d.startswith("ml_dtypes") for d in deps) and any(d.startswith("cupy-") for d in deps), deps


EXTENSIONS = r'''
import json, numpy as np, burn
import burn.nn.functional as F
from burn.dispatch import registry
cuda, flex = burn.Device.cuda(0), burn.Device.flex()
rng = np.random.default_rng(0)
x = rng.standard_normal((6, 9)) * 3
x[2, :] = -np.inf                                   # an all -inf row: NaN as flex and torch
x[3, 4] = np.inf
g = rng.standard_normal((6, 9))
w, b = rng.standard_normal(9), rng.standard_normal(9)
t = rng.integers(0, 9, 6)
res = {"bad": [], "kernels": {}}
cases = {
    "softmax": lambda d: F.softmax_fused(burn.tensor(x, device=d), 1),
    "softmax_grad": lambda d: F.softmax_grad(F.softmax_fused(burn.tensor(g, device=d), 0), burn.tensor(g, device=d), 0),
    "log_softmax": lambda d: F.log_softmax_fused(burn.tensor(x, device=d), 1),
    "log_softmax_ax0": lambda d: F.log_softmax_fused(burn.tensor(g, device=d), 0),
    "log_softmax_grad": lambda d: F.log_softmax_grad(F.log_softmax_fused(burn.tensor(g, device=d), 1),
                                                     burn.tensor(x[::-1].copy(), device=d) * 0 + 1, 1),
    "layer_norm": lambda d: F.layer_norm(burn.tensor(g, device=d), (9,), burn.tensor(w, device=d),
                                         burn.tensor(b, device=d)),
    "cross_entropy": lambda d: F.cross_entropy(burn.tensor(g, device=d), burn.tensor(t, device=d)),
}
for name, fn in cases.items():
    for dt in (burn.float64, burn.float32):
        try:
            want = fn(flex).astype(dt).numpy() if dt is burn.float32 else fn(flex).numpy()
            got = fn(cuda).astype(dt).numpy() if dt is burn.float32 else fn(cuda).numpy()
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        except Exception as e:
            res["bad"].append(f"{name} {dt}: {type(e).__name__}: {str(e)[:300]}")
for op in ("burn::softmax", "burn::softmax_grad", "burn::log_softmax", "burn::log_softmax_grad",
           "burn::layer_norm", "burn::softmax_cross_entropy"):
    res["kernels"][op] = registry.kernel(op, "cuda").__name__
print(json.dumps(res))
'''


def test_cuda_kernels_of_core_extension_ops_match_flex_on_the_stand_in(tmp_path):
    res = run_probe(tmp_path, EXTENSIONS)
    assert not res["bad"], "\n".join(res["bad"])
    for op, name in res["kernels"].items():
        assert name.startswith("cuda_"), (op, name)       # cuda's own kernel, not the reference


STRICT = r'''
import json, numpy as np, cupy, cupyx
res = {}
def raises(fn, exc):
    try:
        fn()
    except exc as e:
        return str(e)[:120] or type(e).__name__
    return None
src = 'extern "C" __global__ void burn_scatter_add_f32(long long n, float* o, const long long* i, const float* s) {}'
res["module_options_list"] = raises(lambda: cupy.RawModule(code=src, options=["--std=c++17"]), TypeError)
res["module_positional"] = raises(lambda: cupy.RawModule(src), TypeError)
fn = cupy.RawModule(code=src, options=("--std=c++17",)).get_function("burn_scatter_add_f32")
out, idx, s = cupy.zeros(4, np.float32), cupy.asarray(np.array([1, 1, 3])), cupy.ones(3, np.float32)
good = (np.int64(3), out, idx, s)
fn((1,), (256,), good)
res["scatter"] = out.get().tolist()
res["grid_int"] = raises(lambda: fn(1, (256,), good), TypeError)
res["block_list"] = raises(lambda: fn((1,), [256], good), TypeError)
res["host_array_arg"] = raises(lambda: fn((1,), (256,), (np.int64(3), np.zeros(4, np.float32), idx, s)), TypeError)
res["object_arg"] = raises(lambda: fn((1,), (256,), (np.int64(3), out, idx, object())), TypeError)
with cupy.cuda.Device(1):
    st1 = cupy.cuda.Stream(non_blocking=False)
def enter():
    with st1:
        pass
res["stream_other_device"] = raises(enter, RuntimeError)
res["device_after"] = cupy.cuda.runtime.getDevice()
res["no_such_device"] = raises(lambda: cupy.cuda.Device(2).__enter__(), cupy.cuda.runtime.CUDARuntimeError)
ptr = cupy.cuda.runtime.malloc(64)
res["unowned_str_size"] = raises(lambda: cupy.cuda.UnownedMemory(ptr, "64", None, 0), TypeError)
res["pointer_of_int"] = raises(lambda: cupy.cuda.MemoryPointer(ptr, 0), TypeError)
res["pointer_ok"] = cupy.cuda.MemoryPointer(cupy.cuda.UnownedMemory(ptr, 64, None, 1), 8).ptr == ptr + 8
res["errstate_warn"] = raises(lambda: cupyx.errstate(linalg="warn").__enter__(), NotImplementedError)
res["errstate_positional"] = raises(lambda: cupyx.errstate("raise").__enter__(), TypeError)
res["cc"] = cupy.cuda.Device(0).compute_capability
print(json.dumps(res))
'''


def test_stand_in_rejects_what_cupy_rejects(tmp_path, monkeypatch):
    """The stand-in is as strict as CuPy 14 where burn-cuda's calls could go wrong (audited
    against CuPy's source): Function.__call__'s ``tuple grid, tuple block`` and per-argument
    ``_pointer`` rules (cupy/cuda/function.pyx), RawModule's keyword-only ``code`` and
    ``tuple options`` (cupy/_core/raw.pyx), a stream entered only on its own device
    (cupy/cuda/stream.pyx), UnownedMemory(ptr, size, owner, device_id) / MemoryPointer(mem,
    offset) (cupy/cuda/memory.pyx), cupyx.errstate's keyword-only linalg='ignore'|'raise',
    and Device.compute_capability as a string ('90')."""
    monkeypatch.setenv("FAKE_CUPY_DEVICES", "2")
    r = run_probe(tmp_path, STRICT)
    assert r["scatter"] == [0.0, 2.0, 0.0, 1.0]
    for key in ("module_options_list", "module_positional", "grid_int", "block_list", "host_array_arg",
                "object_arg", "stream_other_device", "no_such_device", "unowned_str_size", "pointer_of_int",
                "errstate_warn", "errstate_positional"):
        assert r[key], f"the stand-in accepted {key}, which CuPy rejects"
    assert "size one" in r["host_array_arg"] and "does not match" in r["stream_other_device"]
    assert r["device_after"] == 0 and r["pointer_ok"] is True
    assert r["cc"] == "90"
