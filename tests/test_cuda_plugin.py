"""burn-cuda without a GPU: the plugin installs and registers, `burn info` shows it with the
reason it cannot run, Device.cuda() raises BackendUnavailable saying which (no CuPy / CuPy
without GPU), and the backend's device-free parts (adaptive pool, index structs) work."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import burn
from fakecupy import FAKE_NO_GPU as _FAKE_NO_GPU  # (tests/ is on sys.path under pytest)


def _run(code, tmp_path=None, fake_cupy=None):
    """Run ``code`` in a fresh interpreter; ``fake_cupy`` (source) becomes ``import cupy``;
    without it CuPy is hidden (sys.modules['cupy'] = None) so the test does not depend on
    whether this machine has CuPy."""
    env = dict(os.environ)
    env.pop("BURN_DEVICE", None)
    pre = "import sys\nsys.modules['cupy'] = None\n"
    if fake_cupy is not None:
        d = tmp_path / "fake"
        (d / "cupy").mkdir(parents=True)
        (d / "cupy" / "__init__.py").write_text(textwrap.dedent(fake_cupy))
        env["PYTHONPATH"] = str(d) + os.pathsep + env.get("PYTHONPATH", "")
        pre = ""
    r = subprocess.run([sys.executable, "-c", pre + textwrap.dedent(code)], capture_output=True, text=True,
                       env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


_PROBE = """
import json, burn
out = {}
try:
    burn.zeros((2,), device=burn.Device.cuda(0))
    out["error"] = None
except burn.BackendUnavailable as e:
    out["error"] = str(e)
out["flex"] = float((burn.tensor([1.0, 2.0]) * 2).sum().item())
out["default"] = str(burn.Device.default())
rec = [r for r in burn.plugins.report() if r.name == "cuda"][0]
out["status"] = rec.status
print(json.dumps(out))
"""


def test_plugin_is_registered_and_imports_no_cupy():
    import burn_cuda
    recs = {r.name: r for r in burn.plugins.report()}
    assert recs["cuda"].status == "loaded" and recs["cuda"].distribution == "burn-cuda"
    assert "cuda" in burn.dispatch.registry.backend_names()
    # a kernel per core primitive, as flex has
    from burn_flex.kernels import all_kernels
    for op in all_kernels():
        assert burn.dispatch.registry.kernel_entries(op, "cuda"), op
    assert burn_cuda.INSTALL_HINT.startswith("pip install burn-cuda[cuda12]")


def test_without_cupy_device_use_says_what_to_install_and_the_rest_works():
    out = json.loads(_run(_PROBE))
    assert "pip install burn-cuda[cuda12]" in out["error"] and "cuda13" in out["error"]
    assert "CuPy" in out["error"]
    assert out["flex"] == 6.0 and out["default"] == "flex:0" and out["status"] == "loaded"


def test_cupy_without_gpu_reports_what_cupy_said(tmp_path):
    """Tests OUR error path for 'CuPy installed, no GPU/driver': a tiny fake ``cupy`` module
    on PYTHONPATH whose is_available() is False and whose runtime raises like CuPy does
    on a machine without a GPU. (Real CuPy on such a machine is not exercised here.)"""
    out = json.loads(_run(_PROBE, tmp_path, fake_cupy=_FAKE_NO_GPU))
    assert "CuPy is installed but cannot use a GPU here" in out["error"]
    assert "cudaErrorNoDevice" in out["error"] and "pip install" not in out["error"]
    assert out["flex"] == 6.0 and out["default"] == "flex:0"


def test_burn_info_lists_cuda_with_its_reason(tmp_path):
    code = "import runpy, sys\nsys.argv = ['burn', 'info']\nrunpy.run_module('burn', run_name='__main__')\n"
    text = _run(code)
    assert "burn-cuda 0.1.0  [loaded]" in text
    line = [ln for ln in text.splitlines() if ln.strip().startswith("cuda") and "unavailable" in ln]
    assert line and "pip install burn-cuda[cuda12]" in line[0], text
    text = _run(code, tmp_path, fake_cupy=_FAKE_NO_GPU)
    line = [ln for ln in text.splitlines() if ln.strip().startswith("cuda") and "unavailable" in ln]
    assert line and "cudaErrorNoDevice" in line[0], text


# -- the adaptive pool, on a fake driver ----------------------------------------------------

class _FakeDriver:
    """cudaMalloc/cudaFree stand-in: hands out addresses, can run out of memory."""

    class OutOfMemory(Exception):
        pass

    def __init__(self, capacity=1 << 40):
        self.capacity, self.used, self.next = capacity, 0, 1 << 20
        self.live = {}
        self.mallocs = 0

    def malloc(self, n):
        if self.used + n > self.capacity:
            raise self.OutOfMemory(n)
        p = self.next
        self.next += n
        self.live[p] = n
        self.used += n
        self.mallocs += 1
        return p

    def free(self, p):
        self.used -= self.live.pop(p)

    def wrap(self, ptr, size, owner):
        return owner           # the "array": dropping it frees the block

    def total_memory(self):
        return self.capacity


def _pool(**kw):
    from burn_cuda.memory import AdaptivePool
    drv = _FakeDriver(**kw)
    return AdaptivePool(driver=drv), drv


def _overlaps(blocks):
    spans = sorted((b.buf, b.buf + b.alen) for b in blocks)
    return any(e > s for (_, e), (s, _) in zip(spans, spans[1:]))


def test_pool_small_allocations_share_pages_apart_from_large_ones():
    from burn.pagepool import SMALL_MAX
    pool, drv = _pool()
    small = [pool.malloc(100) for _ in range(200)]
    big = pool.malloc(4 << 20)
    assert all(x.buf % 256 == 0 for x in small + [big]) and not _overlaps(small + [big])
    assert len({x.page for x in small}) == 1 and small[0].page.small and not big.page.small
    assert pool.stats()["small_pages"] == 1 and drv.mallocs == 2
    assert all(x.size <= SMALL_MAX for x in small)
    del small, big
    st = pool.stats()
    assert st["in_use_bytes"] == 0 and st["free_count"] == st["alloc_count"] == 201


def test_pool_freed_ranges_coalesce_and_serve_other_sizes():
    # what the size-class pool could not do: a freed range serves a request of another size
    pool, drv = _pool()
    a = [pool.malloc(3 << 20) for _ in range(4)]   # large: a page each, sized to fit
    reserved = pool.stats()["reserved_bytes"]
    del a[1:3]                                      # two empty pages, neither fits 5 MiB
    b = pool.malloc(5 << 20)                        # they are merged into the new page
    assert pool.stats()["reserved_bytes"] == reserved and pool.stats()["driver_free_count"] == 2
    c = pool.malloc(1 << 20)                        # the rest of that page serves another size
    assert c.page is b.page and pool.stats()["reserved_bytes"] == reserved and not _overlaps(a + [b, c])
    del a, b, c
    pool.cleanup()
    assert drv.used == 0 and pool.stats()["reserved_bytes"] == 0


def test_pool_reserved_stays_flat_over_repeated_steps():
    # a training step's allocation pattern, repeated: after the first step no driver calls
    rng = np.random.default_rng(0)
    sizes = [int(s) for s in rng.integers(1 << 10, 8 << 20, 40)]
    pool, drv = _pool()

    def step():
        live = []
        for k, n in enumerate(sizes):
            live.append(pool.malloc(n))
            if k % 3 == 2:
                del live[k % len(live)]
        del live
    step()
    after_first = drv.mallocs
    for _ in range(20):
        step()
    assert drv.mallocs == after_first and pool.stats()["in_use_bytes"] == 0


def test_pool_under_pressure_returns_empty_pages_and_retries_then_raises_a_burn_error():
    import burn
    pool, drv = _pool(capacity=40 << 20)
    a = pool.malloc(30 << 20)
    del a                                      # kept: the driver still holds its page for us
    assert drv.used >= 30 << 20
    b = pool.malloc(20 << 20)                  # the empty page is merged/released, then a fit
    assert drv.used <= 40 << 20 and b.alen >= 20 << 20
    with pytest.raises(burn.OutOfMemory, match=r"cuda: out of device memory allocating 31457280 bytes"):
        pool.malloc(30 << 20)
    with pytest.raises(MemoryError):           # also a MemoryError, as CuPy's own error is
        pool.malloc(30 << 20)
    del b


# -- index structs of generated kernels (numpy arrays stand in for CuPy's) ----------------

def test_index_words_modes_and_merged_strides():
    from burn.codegen import MAX_DIMS
    from burn_cuda.kernels.elementwise import index_words, layout_pattern
    a = np.zeros((4, 6), np.float32)
    t = np.zeros((6, 4), np.float32).T            # transposed view: strided
    s = np.zeros((1,), np.float32)
    w = index_words((4, 6), [a, t, s])
    assert w[0] == 24 and w[1] == 2 and list(w[2:4]) == [4, 6]
    modes = [w[2 + MAX_DIMS + k * (2 + MAX_DIMS) + 1] for k in range(3)]
    assert modes == [0, 2, 1]
    k1 = 2 + MAX_DIMS + (2 + MAX_DIMS)
    assert list(w[k1 + 2:k1 + 4]) == [1, 4]       # element strides of the transposed view
    # a row broadcast over [4, 6]: stride 0 on the broadcast dim; contiguous dims merge
    r = np.zeros((6,), np.float32)
    w = index_words((4, 6), [r])
    assert w[1] == 2 and list(w[2 + MAX_DIMS + 2:2 + MAX_DIMS + 4]) == [0, 1]
    assert layout_pattern((4, 6), [a, s]) == 0b10 and layout_pattern((4, 6), [a, t]) is None


def test_family_sources_cover_every_renderable_op_and_dtype():
    from burn.codegen import ELEMENTWISE_OPS
    from burn_cuda.kernels.elementwise import family_source, signatures
    rendered = set()
    for ins, out in signatures():
        src = family_source(ins, out) or ""
        rendered |= {op for op in ELEMENTWISE_OPS if f"void k_{op}(" in src}
        if ins and ins[0] == "float16":
            # float16 is stored as __half and computed in float (float32 accumulation)
            assert "const __half* in0" in src and "float x0 = in0[" in src
    # make_complex's complex results are assembled by CuPy itself (burn_cuda.kernels.elementwise)
    assert rendered == set(ELEMENTWISE_OPS) - {"make_complex"}


# -- the GPU check script (its GPU steps cannot run here; its plumbing can) ---------------

_SCRIPTS = os.path.join(os.path.dirname(__file__), "..", "plugins", "burn-cuda", "scripts")


def test_gpu_check_script_parses_and_its_table_combines_results(tmp_path):
    r = subprocess.run(["bash", "-n", os.path.join(_SCRIPTS, "gpu_check.sh")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    res = {"conformance": {"rows": [["conformance (cuda:0)", "10 passed, 0 failed", "", "1 s", "all pass"]],
                           "ok": True, "failures": []},
           "matmul": {"rows": [["matmul 4096^3 float32", "50 TFLOP/s", "50 TFLOP/s", "1.00x", "ok"]], "ok": True},
           "elementwise": {"rows": [["8-op chain", "4000 GB/s", "", "83%", "ok"]], "ok": True},
           "cnn": {"rows": [["CNN", "2 ms", "2 ms", "1.0x", "ok"]], "ok": True},
           "cuda_graph": {"rows": [["captured CNN step: CUDA graph replay", "1 ms", "2 ms", "0.5x", "ok"]],
                          "ok": True},
           "extensions": {"rows": [["burn.linalg / burn.signal ops on cuda vs flex", "2 passed", "", "", "ok"]],
                          "ok": True},
           "dist": {"rows": [["burn.dist NCCL collectives (world size 1)", "4 passed", "", "", "ok"]], "ok": True},
           "memory_adaptive": {"peak_reserved": 60 << 20, "rows": []},
           "memory_cupy": {"peak_reserved": 100 << 20, "rows": []}}
    for k, v in res.items():
        (tmp_path / f"{k}.json").write_text(json.dumps(v))
    run = [sys.executable, os.path.join(_SCRIPTS, "gpu_check.py"), "table", str(tmp_path)]
    r = subprocess.run(run, capture_output=True, text=True)
    assert r.returncode == 0 and "40% lower" in r.stdout and "8-op chain" in r.stdout, r.stdout + r.stderr
    assert "CUDA graph replay" in r.stdout
    # a missing step and a missed target make it fail, and say so in the table
    (tmp_path / "cnn.json").unlink()
    res["memory_adaptive"]["peak_reserved"] = 90 << 20
    (tmp_path / "memory_adaptive.json").write_text(json.dumps(res["memory_adaptive"]))
    r = subprocess.run(run, capture_output=True, text=True)
    assert r.returncode == 1 and "did not finish" in r.stdout and "MISS (<30%)" in r.stdout, r.stdout


def test_a_real_group_with_a_complex_step_inside_is_not_fused():
    # its generated complex kernels compile (test_cuda_nvcc) but are unverified on a GPU:
    # such groups run op by op on CuPy's ufuncs, like groups with complex inputs
    from burn.fusion import FusedGroup
    from burn_cuda.fused import compile_group
    m = burn.TensorMeta((8,), burn.float32)
    mc = burn.TensorMeta((8,), burn.complex64)
    real = FusedGroup("elementwise", [("mul", {}, [("in", 0), ("in", 0)]), ("exp", {}, [("op", 0)])], [m], [1], [m])
    assert compile_group(real) is not None
    inner = FusedGroup("elementwise", [("cast", {"dtype": burn.complex64}, [("in", 0)]),
                                       ("mul", {}, [("op", 0), ("op", 0)]), ("real", {}, [("op", 1)])],
                       [m], [2], [m])
    assert compile_group(inner) is None
    cin = FusedGroup("elementwise", [("mul", {}, [("in", 0), ("in", 0)])], [mc], [0], [mc])
    assert compile_group(cin) is None


def test_reduce_groups_run_the_reduce_kernels_and_epilogue_groups_fall_back_op_by_op_on_cuda():
    # burn_cuda.kernels.reduce runs both; what its kernels decline runs segmented (prologue kernel
    # + CuPy's reduction) only when the reduction is the last op, else op by op (the segmented
    # run of epilogues is unconfirmed on a GPU for cuda)
    from burn.fusion import FusedGroup
    from burn_cuda.fused import _FusedGroup, compile_group
    full, row = burn.TensorMeta((4, 8), burn.float32), burn.TensorMeta((4, 1), burn.float32)
    classic = FusedGroup("reduce", [("exp", {}, [("in", 0)]), ("sum", {"axis": (1,), "keepdims": True},
                                                                [("op", 0)])], [full], [1], [row])
    fused = compile_group(classic)
    assert type(fused).__name__ == "FusedReduce" and isinstance(fused.fallback, _FusedGroup)
    epilogue = FusedGroup("reduce", [("sum", {"axis": (1,), "keepdims": True}, [("in", 0)]),
                                     ("log", {}, [("op", 0)])], [full], [1], [row])
    fused = compile_group(epilogue)
    assert type(fused).__name__ == "FusedReduce" and not isinstance(fused.fallback, _FusedGroup)


_DEVICE_PROBE = r'''
import json, numpy as np, cupy
from burn_cuda import runtime
from burn_cuda.kernels.indexing import scatter_source
res = {}
dc = runtime.context(1)                        # cuda:1 while device 0 is current
fn = dc.function(scatter_source(), "burn_scatter_add_f32")
out, idx, src = cupy.zeros(4, np.float32), cupy.asarray(np.array([0, 2, 2])), cupy.ones(3, np.float32)
dc.launch(fn, 3, [np.int64(3), out, idx, src])    # outside any scope: the launch selects the device itself
res["out"] = out.get().tolist()
res["device_after"] = cupy.cuda.runtime.getDevice()
# the pool of cuda:1 allocates on device 1 and hands CuPy MemoryPointers over UnownedMemory
p = dc.pool.malloc(1000)
res["is_pointer"] = isinstance(p, cupy.cuda.MemoryPointer) and isinstance(p.mem, cupy.cuda.UnownedMemory)
block = p.mem._owner
res["ptr"] = [p.ptr == block.buf, p.mem.size == block.alen, p.mem.device_id, p.device_id]
base = [b for b, (buf, dev) in cupy.cuda.runtime._MEM.items() if b <= p.ptr < b + buf.nbytes]
res["page_device"] = [cupy.cuda.runtime._MEM[b][1] for b in base]
del p, block
res["in_use_after_free"] = dc.pool.stats()["in_use_bytes"]
print(json.dumps(res))
'''


def test_second_device_launches_and_allocates_on_its_own_device(tmp_path, monkeypatch):
    """Audit against CuPy's source: a stream is entered only while its device is current
    (cupy/cuda/stream.pyx raises RuntimeError otherwise), so DeviceContext.launch outside a
    scope enters the device as well (it entered the stream alone: fine on one GPU, a
    RuntimeError for cuda:1); the pool allocates each page with its device current and wraps
    ranges as ``UnownedMemory(ptr, size, owner, device_id)`` in ``MemoryPointer(mem, 0)``."""
    from fakecupy import run_probe
    monkeypatch.setenv("FAKE_CUPY_DEVICES", "2")
    r = run_probe(tmp_path, _DEVICE_PROBE)
    assert r["out"] == [1.0, 0.0, 2.0, 0.0] and r["device_after"] == 0
    assert r["is_pointer"] is True and r["ptr"] == [True, True, 1, 1]
    assert r["page_device"] == [1]
    assert r["in_use_after_free"] == 0


def test_gpu_check_memory_step_runs_on_the_null_gpu(tmp_path):
    # the GPU script's own memory step (five CNN steps, the pool's statistics) end to end on
    # the stand-in for CuPy that computes nothing: its plumbing cannot first fail on a GPU
    from fakecupy_null import write_null_cupy
    env = write_null_cupy(tmp_path / "fake")
    out = tmp_path / "memory_adaptive.json"
    r = subprocess.run([sys.executable, os.path.join(_SCRIPTS, "gpu_check.py"), "memory", str(out)], env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    res = json.loads(out.read_text())
    assert res["pool"] == "adaptive" and 0 < res["peak_in_use"] <= res["peak_reserved"] < 4 * res["peak_in_use"]
