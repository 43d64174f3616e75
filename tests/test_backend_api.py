"""The public kernel API of every backend: burn_flex.api, burn_wgpu.api (on PoCL), burn_cuda.api
(on the stand-in CuPy of tests/fakecupy.py, its CUDA C compile-checked by nvcc)."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

import burn
from burn_flex import api as flex
from burn_wgpu import api as wgpu
from fakecupy import run_probe  # (tests/ is on sys.path under pytest)

COMMON = {"native", "from_native", "device_of", "empty", "zeros", "copy", "contiguous", "reshape", "permute",
          "broadcast_to", "slice", "concat", "matmul", "to_host", "to_device", "host_fallback", "load_source", "is_native",
          "numpy_dtype", "dtype_name"}
DEVICE = {"program", "launch", "sync"}

CL_SCALE = """
__kernel void scale(__global const float* x, __global float* y, int n) {
    int i = get_global_id(0);
    if (i < n) y[i] = SCALE * x[i] + SHIFT;
}
"""
CU_SCALE = """
extern "C" __global__ void scale(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = SCALE * x[i] + SHIFT;
}
"""


def test_every_api_has_the_common_names():
    import burn_cuda.api as cuda
    for mod, extra in ((flex, set()), (wgpu, DEVICE | {"local_memory"}), (cuda, DEVICE | {"cupy", "scope",
                                                                                         "on_device"})):
        assert COMMON | extra <= set(mod.__all__), (mod.__name__, COMMON | extra - set(mod.__all__))
        for name in mod.__all__:
            obj = getattr(mod, name)
            assert callable(obj) and obj.__doc__ and ("xample" in obj.__doc__ or ">>>" in obj.__doc__), (mod.__name__, name)
    assert not DEVICE & set(flex.__all__)       # flex compiles nothing


def test_importing_the_apis_imports_neither_pyopencl_nor_cupy():
    code = ("import sys, json, burn_wgpu.api, burn_cuda.api, burn_flex.api\n"
            "print(json.dumps(['pyopencl' in sys.modules, 'cupy' in sys.modules]))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout.strip().splitlines()[-1]) == [False, False]


# -- wgpu (PoCL) ---------------------------------------------------------------------------

def test_wgpu_program_with_defines_matches_numpy_and_is_cached():
    x = np.linspace(-2, 2, 1000, dtype=np.float32)
    dx = wgpu.to_device(x)
    out = wgpu.empty(dx.shape, dx.dtype)
    dc = wgpu.device_of(dx)
    prog = wgpu.program(CL_SCALE, defines={"SCALE": "3.0f", "SHIFT": 1})
    built = (dc.stats["compiles"], dc.stats["disk_loads"])
    assert wgpu.program(CL_SCALE, defines={"SHIFT": 1, "SCALE": "3.0f"}) is prog     # key: sorted defines
    assert (dc.stats["compiles"], dc.stats["disk_loads"]) == built                  # no build, no disk read
    launches = dc.stats["launches"]
    wgpu.launch(prog.scale, x.size, (dx, out, x.size))
    assert dc.stats["launches"] == launches + 1
    np.testing.assert_allclose(wgpu.to_host(out), 3 * x + 1, rtol=1e-6, atol=1e-6)   # a contracted FMA
    # another define is another program; build options are part of the key too
    other = wgpu.program(CL_SCALE, defines={"SCALE": "-1.0f", "SHIFT": 0})
    assert other is not prog
    wgpu.launch(other.scale, x.size, (dx, out, x.size), local_size=50)
    np.testing.assert_allclose(wgpu.to_host(out), -x)
    opt = wgpu.program(CL_SCALE, defines={"SCALE": "2.0f"}, options="-DSHIFT=5")
    wgpu.launch(opt.scale, x.size, (dx, out, x.size))
    np.testing.assert_allclose(wgpu.to_host(out), 2 * x + 5, rtol=1e-6, atol=1e-6)


def test_wgpu_program_errors_name_the_problem():
    with pytest.raises(burn.BurnError, match="compile failed"):
        wgpu.program("__kernel void broken(__global float* y) { y[0] = UNDEFINED_NAME; }")
    prog = wgpu.program(CL_SCALE, defines={"SCALE": 1, "SHIFT": 0})
    with pytest.raises(burn.BurnError, match="kernel 'nope' of program on wgpu:0 .*INVALID_KERNEL_NAME"):
        prog.nope
    with pytest.raises(burn.BurnError, match="identifier"):
        wgpu.program(CL_SCALE, defines={"1BAD": 1})
    x = wgpu.to_device(np.arange(4, dtype=np.float32))
    with pytest.raises(burn.BurnError, match="starting at element 1"):
        wgpu.launch(prog.scale, 3, (wgpu.slice(x, [1], [4]), x, 3))
    with pytest.raises(burn.BurnError, match="int32"):
        wgpu.launch(prog.scale, 3, (x, x, 2 ** 40))


def test_wgpu_launch_2d_and_local_memory():
    src = """
    __kernel void rowsum(__global const float* x, __global float* y, int rows, int cols, __local float* t) {
        int c = get_global_id(0), r = get_global_id(1), l = get_local_id(0);
        t[l] = (r < rows && c < cols) ? x[r * cols + c] : 0.0f;
        barrier(CLK_LOCAL_MEM_FENCE);
        if (l == 0 && r < rows) { float s = 0; for (int k = 0; k < 8; k++) s += t[k]; y[r * 2 + c / 8] = s; }
    }"""
    x = np.arange(3 * 16, dtype=np.float32).reshape(3, 16)
    dx, out = wgpu.to_device(x), wgpu.zeros((3, 2), "float32")
    wgpu.launch(wgpu.program(src).rowsum, (16, 3), (dx, out, 3, 16, wgpu.local_memory(8 * 4)), local_size=(8, 1))
    wgpu.sync()
    np.testing.assert_allclose(wgpu.to_host(out), x.reshape(3, 2, 8).sum(-1))


def test_wgpu_allocation_views_and_copies():
    assert wgpu.empty((2, 3), burn.float32).dtype == "float32" and wgpu.empty((0,), "int8").size == 0
    assert wgpu.to_host(wgpu.zeros((3, 2), burn.int64)).tolist() == [[0, 0]] * 3
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    x = wgpu.to_device(a)
    r = wgpu.reshape(x, (6, 4))
    assert r.buf is x.buf and np.array_equal(wgpu.to_host(r), a.reshape(6, 4))
    p = wgpu.permute(x, (2, 0, 1))
    assert p.buf is x.buf and np.array_equal(wgpu.to_host(p), a.transpose(2, 0, 1))
    assert wgpu.reshape(p, (4, 6)).buf is x.buf          # axes 1, 2 of p still merge
    pr = wgpu.reshape(wgpu.permute(x, (0, 2, 1)), (2, 12))  # strides do not allow a view: a copy
    assert pr.buf is not x.buf and np.array_equal(wgpu.to_host(pr), a.transpose(0, 2, 1).reshape(2, 12))
    b = wgpu.broadcast_to(wgpu.to_device(a[:1]), (3, 3, 4))
    assert b.strides[0] == 0 and np.array_equal(wgpu.to_host(b), np.broadcast_to(a[:1], (3, 3, 4)))
    s = wgpu.slice(x, [1, 2, 3], [2, -1, 0], [1, -1, -2])
    assert np.array_equal(wgpu.to_host(s), a[1:2, 2::-1, 3:0:-2])
    c = wgpu.copy(s)
    assert c.buf is not x.buf and c.offset == 0 and c.is_contiguous and np.array_equal(wgpu.to_host(c), a[1:2, 2::-1, 3:0:-2])
    assert wgpu.contiguous(x) is x and wgpu.contiguous(p).is_contiguous
    cat = wgpu.concat([x, wgpu.to_device(a[:, :1])], axis=-2)
    assert np.array_equal(wgpu.to_host(cat), np.concatenate([a, a[:, :1]], axis=1))
    m = wgpu.matmul(x, wgpu.to_device(a[0].T.copy()))
    np.testing.assert_allclose(wgpu.to_host(m), a @ a[0].T, rtol=1e-6)
    bools = wgpu.to_device(np.array([[True, False], [False, True]]))
    assert wgpu.to_host(wgpu.copy(wgpu.permute(bools, (1, 0)))).tolist() == [[True, False], [False, True]]


@pytest.mark.parametrize("call, match", [
    (lambda api, x: api.reshape(x, (5,)), "reshape of shape"),
    (lambda api, x: api.permute(x, (0, 0)), "permute axes"),
    (lambda api, x: api.broadcast_to(x, (3, 3)), "cannot broadcast"),
    (lambda api, x: api.slice(x, [0], [1]), "slice needs one start, stop"),
    (lambda api, x: api.concat([x, api.empty((2, 3), "float32")], axis=0), "concat along axis 0"),
    (lambda api, x: api.matmul(x, api.empty((3, 2), "float32")), r"matmul of shapes \(2, 2\)"),
])
def test_shape_errors_are_the_same_on_wgpu_and_flex(call, match):
    # every backend's api raises the same ShapeError for the same mistake, naming itself
    for api in (wgpu, flex):
        with pytest.raises(burn.ShapeError, match=f"{api.__name__.split('.')[0][5:]} api: {match}"):
            call(api, api.empty((2, 2), "float32"))


def test_wgpu_as_strided_views_the_buffer_within_its_bounds():
    a = np.arange(12, dtype=np.float32)
    x = wgpu.to_device(a)
    rev = wgpu.as_strided(x, (3, 2), (-4, 1), 8)          # rows backwards, as a reversed view
    assert np.array_equal(wgpu.to_host(rev), a.reshape(3, 4)[::-1, :2])
    z = wgpu.as_strided(x, (2, 3), (3, 1), 0, dtype=burn.complex64)
    assert np.array_equal(wgpu.to_host(z), a.view(np.complex64).reshape(2, 3))
    # (the pool may round a block up: past its end is what is checked)
    for shape, strides, offset in (((3,), (-4,), 4), ((1,), (1,), -1), ((2, 3), (10 ** 6, 1), 0)):
        with pytest.raises(burn.ShapeError, match="reaches outside"):
            wgpu.as_strided(x, shape, strides, offset)
    with pytest.raises(burn.ShapeError, match="reaches outside"):
        wgpu.as_strided(x, (2,), (10 ** 6,), 0, dtype="complex64")


def test_wgpu_api_rejects_other_arrays():
    with pytest.raises(TypeError, match="WTensor"):
        wgpu.copy(np.zeros(2))
    with pytest.raises(burn.DeviceMismatch, match="not a wgpu device"):
        wgpu.empty((2,), "float32", device="flex")


def test_wgpu_host_transfers_are_counted_and_host_fallback():
    dc = wgpu.device_of()
    n0, b0 = dc.stats.get("host_transfers", 0), dc.stats.get("host_transfer_bytes", 0)
    x = wgpu.to_device(np.arange(6), dtype=burn.float32)
    assert x.dtype == "float32" and dc.stats["host_transfers"] == n0 + 1
    assert dc.stats["host_transfer_bytes"] == b0 + 6 * 8      # the int64 host array went up
    k = wgpu.host_fallback(lambda a, *, scale: (a * scale, a.sum()), "demo")
    y, s = k(x, scale=2)
    assert k.host_fallback and k.__name__ == "wgpu_host_demo"
    assert wgpu.to_host(y).tolist() == [0, 2, 4, 6, 8, 10] and float(wgpu.to_host(s)) == 15
    assert dc.stats["host_transfers"] == n0 + 1 + 3 + 2       # 1 down + 2 up, then the 2 reads
    assert wgpu.to_host(y, count=False).tolist() == [0, 2, 4, 6, 8, 10]      # a status read: not counted
    assert dc.stats["host_transfers"] == n0 + 1 + 3 + 2


def test_wgpu_native_round_trip():
    t = burn.tensor([[1.0, 2.0], [3.0, 4.0]], device="wgpu") * 10      # pending: native() runs it
    x = wgpu.native(t)
    assert wgpu.is_native(x) and x.shape == (2, 2) and wgpu.to_host(x).tolist() == [[10, 20], [30, 40]]
    back = wgpu.from_native(wgpu.permute(x, (1, 0)))
    assert back.device == burn.Device.wgpu(0) and back.dtype is burn.float32
    assert (back + 1).tolist() == [[11, 31], [21, 41]]
    assert wgpu.from_native(x, device="wgpu:0").shape == (2, 2)
    with pytest.raises(burn.DeviceMismatch, match="flex"):
        wgpu.native(burn.ones((2,), device="flex"))
    with pytest.raises(burn.DeviceMismatch, match="wgpu:5"):
        wgpu.from_native(x, device="wgpu:5")


@pytest.mark.wgpu
def test_load_source_reads_package_data_and_compiles(tmp_path, monkeypatch):
    pkg = tmp_path / "mykernels"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "scale.cl").write_text(CL_SCALE)
    (pkg / "scale.cu").write_text(CU_SCALE)
    monkeypatch.syspath_prepend(str(tmp_path))
    import burn_cuda.api as cuda
    assert wgpu.load_source("mykernels", "scale.cl") == CL_SCALE and cuda.load_source("mykernels", "scale.cu") == CU_SCALE
    assert flex.load_source is wgpu.load_source is cuda.load_source
    prog = wgpu.program(wgpu.load_source("mykernels", "scale.cl"), defines={"SCALE": 4, "SHIFT": 0})
    x = wgpu.to_device(np.ones(3, np.float32))
    wgpu.launch(prog.scale, 3, (x, x, 3))
    assert wgpu.to_host(x).tolist() == [4, 4, 4]
    with pytest.raises(burn.BurnError, match="no file 'missing.cl' in package 'mykernels'"):
        wgpu.load_source("mykernels", "missing.cl")


# -- flex ------------------------------------------------------------------------------------

def test_flex_api_is_numpy():
    t = burn.arange(6, dtype=burn.float32, device="flex") * 2
    a = flex.native(t)
    assert isinstance(a, np.ndarray) and a.tolist() == [0, 2, 4, 6, 8, 10]
    back = flex.from_native(flex.reshape(a, (2, 3)))
    assert back.device == burn.Device.flex() and back.sum(axis=1).tolist() == [6, 24]
    assert flex.empty((2,), burn.int8).dtype == np.int8 and flex.zeros((2,), "bool").tolist() == [False, False]
    v = flex.slice(a, [5], [-1], [-2])
    assert v.tolist() == [10, 6, 2] and flex.copy(v).flags.c_contiguous and flex.copy(v) is not v
    p = flex.permute(flex.reshape(a, (2, 3)), (1, 0))
    assert flex.contiguous(p).flags.c_contiguous and flex.contiguous(a) is a
    assert flex.broadcast_to(a[:1], (2, 1)).tolist() == [[0], [0]]
    assert flex.concat([a[:2], a[:1]], axis=0).tolist() == [0, 2, 0]
    assert flex.matmul(np.ones((2, 3), np.float32), np.ones((3,), np.float32)).tolist() == [3, 3]
    h = flex.to_host(a)
    assert h is not a and np.array_equal(h, a) and flex.to_device([1, 2], dtype="float16").dtype == np.float16
    k = flex.host_fallback(np.cumsum, "cumsum")
    assert k(np.ones(3)).tolist() == [1, 2, 3]
    assert flex.device_of(a) == burn.Device.flex()
    with pytest.raises(burn.DeviceMismatch):
        flex.empty((2,), "float32", device="wgpu")
    with pytest.raises(burn.ShapeError, match="flex api: permute"):
        flex.permute(a, (1,))


# -- cuda (stand-in CuPy) -----------------------------------------------------------------------

CUDA_PROBE = r'''
import json, re, sys, numpy as np, burn, cupy
from burn_cuda import api as cuda

LOG = []
_orig = cupy.RawModule.get_function


class _Scale:
    """The test kernel ``scale`` run in numpy, after CuPy's launch checks (the stand-in runs
    generated kernels only): y[i] = SCALE * x[i] + SHIFT for i < n, with the module's #defines."""
    def __init__(self, code, name):
        self.code, self.name = code, name
    def __call__(self, grid, block, args, shared_mem=0):
        cupy._check_launch(self.name, grid, block, args, shared_mem)
        d = dict(re.findall(r"#define (\w+) (\S+)", self.code))
        x, y, n = args
        assert type(n) is np.int32 and grid[0] * block[0] >= n, (grid, block, n)
        np.asarray(y)[:n] = float(d["SCALE"]) * np.asarray(x)[:n] + float(d.get("SHIFT", 0))
        LOG.append([self.name, list(grid), list(block), shared_mem, cupy.cuda.runtime.getDevice()])


_init = cupy.RawModule.__init__


def _init_recording_options(self, *, code=None, options=(), **kw):
    _init(self, code=code, options=options, **kw)
    # -DNAME=VALUE options define names as #define lines do
    self.code = "".join(f"#define {o[2:].replace('=', ' ', 1)}\n" for o in options if o.startswith("-D")) + code


cupy.RawModule.__init__ = _init_recording_options
cupy.RawModule.get_function = lambda self, name: _Scale(self.code, name) if name == "scale" else _orig(self, name)
SRC = sys.argv[1]
res = {}
dc = cuda.device_of()
x = cuda.to_device(np.arange(5, dtype=np.float32))
res["transfers_after_up"] = dc.stats["host_transfers"]
out = cuda.empty(x.shape, "float32")
compiled = dc.stats["modules_compiled"]
prog = cuda.program(SRC, defines={"SCALE": 3, "SHIFT": 1})
res["cached"] = cuda.program(SRC, defines={"SHIFT": 1, "SCALE": 3}) is prog
cuda.launch(prog.scale, x.size, (x, out, x.size))
res["launches"] = dc.stats["launches"]
res["scaled"] = cuda.to_host(out).tolist()
res["transfers"] = dc.stats["host_transfers"]
res["compiled"] = dc.stats["modules_compiled"] - compiled
prog.scale; cuda.program(SRC, defines={"SCALE": 3, "SHIFT": 1}).scale
res["compiled_again"] = dc.stats["modules_compiled"] - compiled
opt = cuda.program(SRC, defines={"SCALE": 2}, options=("-DSHIFT=5",))
cuda.launch(opt.scale, 5, (x, out, 5), local_size=2, shared_mem=64)
res["with_options"] = cuda.to_host(out).tolist()
res["log"] = LOG
t = burn.tensor([[1.0, 2.0], [3.0, 4.0]], device="cuda") * 10
a = cuda.native(t)
res["native"] = [type(a).__module__, cuda.to_host(a).tolist()]
back = cuda.from_native(cuda.permute(a, (1, 0)))
res["back"] = [str(back.device), (back + 1).tolist()]
v = cuda.to_device(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
res["views"] = [cuda.to_host(cuda.reshape(cuda.permute(v, (2, 0, 1)), (4, 6))).tolist(),
                cuda.to_host(cuda.slice(v, [1, 2, 3], [2, -1, 0], [1, -1, -2])).tolist(),
                cuda.to_host(cuda.broadcast_to(cuda.slice(v, [0, 0, 0], [1, 1, 4]), (2, 1, 4))).tolist(),
                bool(cuda.copy(cuda.permute(v, (1, 0, 2))).flags.c_contiguous), cuda.contiguous(v) is v,
                cuda.to_host(cuda.concat([v, v], axis=-1)).shape, cuda.to_host(cuda.matmul(v, cuda.permute(v, (0, 2, 1)))).tolist(),
                cuda.to_host(cuda.zeros((2,), burn.int32)).tolist(), str(cuda.empty((1,), "float16").dtype)]
n0 = dc.stats["host_transfers"]
k = cuda.host_fallback(lambda a: (np.sort(a), a.sum()), "demo")
s, total = k(cuda.to_device([3.0, 1.0, 2.0]))
res["fallback"] = [k.__name__, k.host_fallback, cuda.to_host(s).tolist(), float(cuda.to_host(total)),
                   dc.stats["host_transfers"] - n0]
res["uncounted"] = [cuda.to_host(s, count=False).tolist(), dc.stats["host_transfers"] - n0]
with cuda.scope() as sdc:
    res["scope"] = [sdc is dc, cupy.cuda.runtime.getDevice()]
res["on_device"] = cuda.on_device(lambda a: cuda.cupy().asarray(a) * 2)(x).tolist()
res["cupy"] = cuda.cupy() is cupy
cuda.sync()
try:
    prog.nope
except burn.BurnError as e:
    res["missing"] = str(e)
try:
    cuda.permute(x, (1,))
except burn.ShapeError as e:
    res["error"] = str(e)
print(json.dumps(res))
'''


def test_cuda_api_on_the_stand_in(tmp_path):
    code = CUDA_PROBE.replace("SRC = sys.argv[1]", f"SRC = {CU_SCALE!r}")
    res = run_probe(tmp_path, code)
    assert res["cached"] and res["compiled"] == 1 and res["compiled_again"] == 1
    assert res["scaled"] == [1, 4, 7, 10, 13] and res["launches"] >= 1
    assert res["transfers_after_up"] == 1 and res["transfers"] == 2
    assert res["with_options"] == [5, 7, 9, 11, 13]
    assert res["log"] == [["scale", [1], [256], 0, 0], ["scale", [3], [2], 64, 0]]
    assert res["native"] == ["cupy", [[10, 20], [30, 40]]]
    assert res["back"] == ["cuda:0", [[11, 31], [21, 41]]]
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    views = res["views"]
    assert views[0] == a.transpose(2, 0, 1).reshape(4, 6).tolist()
    assert views[1] == a[1:2, 2::-1, 3:0:-2].tolist()
    assert views[2] == np.broadcast_to(a[:1, :1], (2, 1, 4)).tolist() and views[3] is True and views[4] is True
    assert views[5] == [2, 3, 8] and views[6] == (a @ a.transpose(0, 2, 1)).tolist()
    assert views[7] == [0, 0] and views[8] == "float16"
    # the upload of the input, then the fallback's 1 download + 2 uploads, then the 2 reads
    assert res["fallback"] == ["cuda_host_demo", True, [1, 2, 3], 6.0, 1 + 3 + 2]
    assert res["uncounted"] == [[1, 2, 3], 1 + 3 + 2]
    assert res["scope"] == [True, 0] and res["on_device"] == [0, 2, 4, 6, 8] and res["cupy"]
    assert "cuda api: permute axes" in res["error"]
    assert res["missing"].startswith("cuda: kernel 'nope' of program on cuda:0"), res["missing"]


def test_cuda_source_of_the_api_test_compiles_with_nvcc(tmp_path):
    from test_cuda_nvcc import NVCC, nvcc_ptx
    if NVCC is None:
        pytest.skip("nvcc (CUDA toolkit) is not installed here")
    from burn.codegen.sources import with_defines
    path = tmp_path / "scale.cu"
    path.write_text(with_defines(CU_SCALE, {"SCALE": 3, "SHIFT": 1}))
    rc, err, ptx = nvcc_ptx(path)
    assert rc == 0, err
    assert ".entry scale" in ptx
