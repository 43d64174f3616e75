"""burn-cuda's Python wiring on the CPU: the conformance suite through the cuda backend with a
numpy-backed stand-in for CuPy.

This does NOT test CUDA: the stand-in (written to a temp dir, put first on PYTHONPATH of a
subprocess) runs CuPy's array functions with numpy and "launches" a generated element-wise
kernel ``k_<op>`` by computing the op with flex's numpy kernel. What it does test is ours:
every kernel of burn_cuda.kernels is called with the attributes core gives it and returns
what the meta rule promised; the launch arguments follow CuPy's calling convention (index
struct as a size-one structured numpy array, float16 params as float32); the device scope,
DLPack and data paths of the backend; fused groups falling back op by op. Only the numerics of
the generated CUDA C (checked for compilation by test_cuda_nvcc.py) need a GPU.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

FAKE = r'''
import contextlib as _cl
import numpy as _np

__version__ = "0.0-fake"


class _Dev:
    def __init__(self, i=0):
        self.id = i
    def __enter__(self):
        return self
    def __exit__(self, *a):
        return False


class ndarray(_np.ndarray):
    @property
    def device(self):
        return _Dev(0)
    def get(self, stream=None):
        return _np.array(self)


def _w(r):
    if isinstance(r, tuple):
        return tuple(_w(x) for x in r)
    if isinstance(r, _np.ndarray):
        return r.view(ndarray)
    if isinstance(r, _np.generic):
        return _np.asarray(r).view(ndarray)
    return r


def _un(a):
    if isinstance(a, (list, tuple)):
        return type(a)(_un(x) for x in a)
    return _np.asarray(a) if isinstance(a, ndarray) else a


def asarray(a, dtype=None):
    return _np.array(_un(a), dtype=dtype, copy=True).view(ndarray)


def ascontiguousarray(a):
    return _np.ascontiguousarray(a).view(ndarray)


def from_dlpack(obj):
    return _np.from_dlpack(obj).view(ndarray)


def __getattr__(name):
    f = getattr(_np, name)
    if not callable(f):
        return f
    def g(*a, **k):
        return _w(f(*[_un(x) for x in a], **{kk: _un(v) for kk, v in k.items()}))
    return g


def is_available():
    return True


class _Stream:
    def __init__(self, non_blocking=False):
        pass
    def __enter__(self):
        return self
    def __exit__(self, *a):
        return False
    def synchronize(self):
        pass


class _Runtime:
    CUDARuntimeError = MemoryError
    @staticmethod
    def getDeviceCount():
        return 1
    @staticmethod
    def getDeviceProperties(i):
        return {"name": b"FakeGPU", "major": 9, "minor": 0, "totalGlobalMem": 1 << 34, "multiProcessorCount": 1}
    @staticmethod
    def runtimeGetVersion():
        return 13000
    @staticmethod
    def driverGetVersion():
        return 13000


LAUNCHES = []


class _Kernel:
    def __init__(self, name):
        self.name = name
    def __call__(self, grid, block, args):
        import burn_flex.kernels as fk
        from burn_cuda.kernels import ARITY
        st, args = args[0], list(args[1:])
        # CuPy's convention: a struct by value is a size-one numpy array
        assert type(st) is _np.ndarray and st.size == 1 and st.dtype.names == ("v",), st
        if not self.name.startswith("k_"):
            raise NotImplementedError(f"fake cupy runs family kernels only, got {self.name}")
        op = self.name[2:].split("_c")[0] if "_c" in self.name[2:] and self.name[2:].rsplit("_c", 1)[1].isdigit() \
            else self.name[2:]
        ar = ARITY[op]
        out, ins, params = args[0], args[1:1 + ar], args[1 + ar:]
        for p in params:
            assert isinstance(p, _np.generic) and p.dtype != _np.float16, p
        x = [_np.asarray(a) for a in ins]
        if op == "cast":
            r = x[0].astype(out.dtype)
        elif op == "full":
            r = _np.asarray(params[0]).astype(out.dtype)
        elif op == "clip":
            r = _np.minimum(_np.maximum(x[0], params[0].astype(x[0].dtype)), params[1].astype(x[0].dtype))
        elif op == "where":
            r = _np.where(x[0], x[1], x[2])
        elif op == "pow":
            r = _np.power(*x)
        else:
            r = dict(fk.UNARY, **fk.BINARY)[op](*x)
        LAUNCHES.append(op)
        _np.asarray(out)[...] = _np.broadcast_to(_np.asarray(r).astype(out.dtype, copy=False), out.shape)


class RawModule:
    def __init__(self, code, options=()):
        assert "extern \"C\" __global__" in code
        self.code = code
    def get_function(self, name):
        assert f" {name}(" in self.code, name
        return _Kernel(name)


class lib:
    class stride_tricks:
        @staticmethod
        def as_strided(x, shape=None, strides=None):
            return _np.lib.stride_tricks.as_strided(x, shape, strides, subok=True)


class cuda:
    Device = _Dev
    Stream = _Stream
    runtime = _Runtime
    @staticmethod
    def using_allocator(f):
        return _cl.nullcontext()
'''

FAKE_X = r'''
import numpy as _np


def scatter_add(a, slices, value):
    _np.add.at(_np.asarray(a), tuple(_np.asarray(s) for s in slices), _np.asarray(value))
'''

PROBE = r'''
import json, sys, numpy as np, burn, cupy
from burn.testing.conformance import cases, run_case
dev = burn.Device.cuda(0)
res = {"passed": 0, "failed": [], "info": burn.Device.cuda(0).backend.describe_devices()}
for c in cases():
    if "bfloat16" in c.dtypes:
        continue
    try:
        run_case(c, dev)
        res["passed"] += 1
    except Exception as e:
        res["failed"].append(f"{c.name}: {type(e).__name__}: {str(e)[:300]}")
res["launched_ops"] = sorted(set(cupy.LAUNCHES))
print(json.dumps(res))
'''


def test_conformance_through_burn_cuda_on_a_numpy_stand_in_for_cupy(tmp_path):
    d = tmp_path / "fake" / "cupy"
    d.mkdir(parents=True)
    (d / "__init__.py").write_text(FAKE)
    (tmp_path / "fake" / "cupyx").mkdir()
    (tmp_path / "fake" / "cupyx" / "__init__.py").write_text(FAKE_X)
    env = dict(os.environ, PYTHONPATH=str(tmp_path / "fake") + os.pathsep + os.environ.get("PYTHONPATH", ""),
               BURN_CUDA_FUSE_AFTER="1000000000")
    env.pop("BURN_DEVICE", None)
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(PROBE)], capture_output=True, text=True, env=env,
                       timeout=600)
    assert r.returncode == 0, r.stderr[-5000:]
    res = json.loads(r.stdout.strip().splitlines()[-1])
    assert res["info"][0].startswith("cuda:0 FakeGPU")
    assert {"add", "exp", "cast", "where", "full"} <= set(res["launched_ops"])
    # groups large enough to fuse on their first call launch a generated multi-op kernel, which
    # only a GPU runs: those cases are what the stand-in cannot do
    fused = [f for f in res["failed"] if "fake cupy runs family kernels only" in f]
    other = [f for f in res["failed"] if f not in fused]
    assert len(fused) < 20 and res["passed"] > 1400
    assert not other, f"{len(other)} failed, {res['passed']} passed:\n" + "\n".join(other[:60])
