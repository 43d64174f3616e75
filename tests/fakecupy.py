"""A numpy/SciPy stand-in for CuPy ("fake CuPy"), shared by the cuda tests that run without a GPU.

:func:`write_fake_cupy` writes the packages ``cupy`` and ``cupyx`` under a directory and
returns the environment of a subprocess that imports them instead of a real CuPy;
:func:`run_probe` runs a probe script there and returns the JSON of its last line.

What the stand-in is: CuPy's array functions run by numpy (``cupy.ndarray`` is a numpy
subclass with ``.device`` and ``.get()``), ``cupy.linalg``/``cupy.fft`` and
``cupyx.scipy.{linalg,signal}`` run by numpy/SciPy with every call recorded in
``cupy.CALLS``, and ``RawModule`` kernels "launched" by emulating them in numpy:

- a generated element-wise kernel ``k_<op>`` (burn.codegen's per-op family kernels)
  computes the op with flex's numpy kernel. flex is loaded from its directory under a
  private module name (``FAKE_CUPY_FLEX_DIR``), so a probe can hide ``burn_flex`` from
  burn and burn_cuda (``sys.modules["burn_flex"] = None``) and still have a "GPU";
- burn_cuda's ``burn_scatter_add_<t>`` kernels (``out[idx[i]] += src[i]``) run ``numpy.add.at``;
- burn_signal's ``burn_signal_{lfilter,sosfilt}_{f32,f64}`` (one thread per signal row of a
  C-contiguous (outer, n, inner) array) run the same direct-form-II-transposed recurrences in
  numpy, vectorized over the rows, after checking the launch against the kernel's contract
  (scalar types, dtypes, contiguity, sizes of x/y/zi/zf/state, a grid covering every row);
- burn_signal's ``burn_signal_ola_{f32,f64}`` (istft's overlap-add, one thread per output
  sample) runs scipy's scatter-form overlap-add in numpy after checking the launch;
- ``cupy.fft.config.get_plan_cache()`` counts a plan per distinct ``cupy.fft`` call layout
  (``get_curr_size``, ``clear``), as CuPy's per-device cuFFT plan cache holds them;
- ``cupy.cuda.cublas.gemmEx`` / ``gemmStridedBatchedEx`` (burn_cuda.kernels.linear's half-precision
  matmul) compute in numpy float32 on the memory their raw pointers address (found among the
  arrays whose ``.data.ptr`` was taken), after checking every argument as cuBLAS would; each
  call is recorded in ``cupy.cuda.cublas.CALLS``.

- burn_cuda.kernels.conv's ``burn_conv_{maxpool,maxpool_grad,col2im}_<dtype>`` run the CuPy-form
  window algorithms in numpy (padded grid, a strided slice per window offset).

Other kernels (a fused multi-op group) raise "fake cupy runs family kernels only". The
launch arguments are checked against CuPy's calling convention (index struct as a
size-one structured numpy array, scalars as numpy scalars, float16 params as float32).

Where burn-cuda's calls could go wrong, the stand-in is as strict as CuPy 14's source (audited;
tests/test_cuda_fakecupy.py::test_stand_in_rejects_what_cupy_rejects): ``Function.__call__``'s
``tuple grid, tuple block`` and per-argument rules (a host numpy array of size != 1 is a
TypeError), ``RawModule(*, code: str, options: tuple)``, ``Device.__enter__``'s per-thread
device stack, a ``Stream`` entered only while its own device is current (RuntimeError),
``runtime.malloc/free``, ``UnownedMemory(ptr, size, owner, device_id)`` and
``MemoryPointer(mem, offset)``, ``cupyx.errstate(*, linalg='ignore'|'raise')``, and
cupyx.scipy.linalg's 2-d ``lu_solve`` (int32 pivots: cuSOLVER reads them uncast) and
``solve_triangular``. ``FAKE_CUPY_DEVICES`` (default 1) sets the device count.

This does NOT test CUDA: it tests burn_cuda's wiring (the CuPy calls, attributes,
dtypes, layouts, errors). The generated CUDA C is compile-checked by test_cuda_nvcc.py.
:data:`FAKE_NO_GPU` is the other stand-in: a CuPy that is installed but sees no GPU.
``cupy.__version__`` is ``FAKE_CUPY_VERSION`` (default ``14.0.0+fake``: bfloat16 capable).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

FAKE = r'''
import contextlib as _cl
import os as _os
import numpy as _np

__version__ = _os.environ.get("FAKE_CUPY_VERSION", "14.0.0+fake")


import threading as _th

# CuPy's device state: the current device of each thread (cudaGetDevice/cudaSetDevice) and the
# thread-local stack Device.__enter__ pushes the previous device on (cupy/cuda/device.pyx)
_TLD = _th.local()


def _ndev():
    return int(_os.environ.get("FAKE_CUPY_DEVICES", "1"))


def _get_device():
    return getattr(_TLD, "dev", 0)


def _set_device(i):
    if not 0 <= int(i) < _ndev():
        raise _Runtime.CUDARuntimeError(f"cudaErrorInvalidDevice: invalid device ordinal {i}")
    _TLD.dev = int(i)


class _Dev:
    def __init__(self, i=None):
        self.id = _get_device() if i is None else int(i)
    @property
    def compute_capability(self):          # CuPy's string, e.g. "90" (FAKE_CUPY_CC)
        return _os.environ.get("FAKE_CUPY_CC", "90")
    def __enter__(self):                   # as CuPy: push the current device, select this one
        st = _TLD.__dict__.setdefault("stack", [])
        prev = _get_device()
        if self.id != prev:
            _set_device(self.id)
        st.append(prev)
        return self
    def __exit__(self, *a):
        _set_device(_TLD.stack.pop())
        return False


class ndarray(_np.ndarray):
    @property
    def device(self):
        return _Dev(0)
    def get(self, stream=None, order="C", out=None, blocking=True):
        assert stream is None or isinstance(stream, _Stream), f"get(stream=...) takes a cupy.cuda.Stream, got {stream!r}"
        return _np.array(self, order=order)
    @property
    def data(self):                        # cupy.cuda.MemoryPointer: .ptr (see _MemPtr)
        return _MemPtr(self)


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


def ascontiguousarray(a, dtype=None):
    return _np.ascontiguousarray(_un(a), dtype=dtype).view(ndarray)


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


_STREAMS = []     # the streams entered with `with stream:` (the last one is CuPy's current stream)


class _Stream:
    def __init__(self, null=False, non_blocking=False, ptds=False):
        self.ptr = id(self)
        self.device_id = _get_device()     # CuPy: the device current at creation
    def __enter__(self):
        # CuPy's _BaseStream.__enter__ (check_stream_device_match): only on the stream's own device
        if self.device_id != _get_device():
            raise RuntimeError(f"The device that the stream is created on ({self.device_id}) does not match "
                               f"with the current device ({_get_device()})")
        _STREAMS.append(self)
        return self
    def __exit__(self, *a):
        _STREAMS.pop()
        return False
    def synchronize(self):
        pass


class _Runtime:
    CUDARuntimeError = MemoryError
    @staticmethod
    def getDeviceCount():
        return _ndev()
    @staticmethod
    def getDevice():
        return _get_device()
    @staticmethod
    def setDevice(i):
        _set_device(i)
    # cudaMalloc/cudaFree (cupy_backends/cuda/api/runtime.pyx: malloc(size_t) -> intptr_t,
    # free(intptr_t)): host buffers stand in for device memory
    _MEM = {}
    @staticmethod
    def malloc(size):
        assert type(size) is int and size >= 0, f"malloc(size_t size), got {size!r}"
        buf = _np.zeros(max(int(size), 1), _np.uint8)
        ptr = buf.__array_interface__["data"][0]
        _Runtime._MEM[ptr] = (buf, _get_device())
        return ptr
    @staticmethod
    def free(ptr):
        assert type(ptr) is int and ptr in _Runtime._MEM, f"free of {ptr!r}, which malloc did not return"
        del _Runtime._MEM[ptr]
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
UNROLLED = []      # (op, n, grid, block) of each k_<op>_u<pattern> launch
VECTORED = []      # (op, n, grid, block) of each k_<op>_v<pattern> launch
_FK = []


def _flex_kernels():
    """flex's numpy kernels, loaded from FAKE_CUPY_FLEX_DIR under a private name (the fake
    GPU's ALU), so that hiding the burn_flex package from burn does not hide them."""
    if not _FK:
        import importlib, sys, types
        d = _os.environ["FAKE_CUPY_FLEX_DIR"]
        pkg = types.ModuleType("_fakecupy_flex")
        pkg.__path__ = [d]
        sys.modules["_fakecupy_flex"] = pkg
        _FK.append(importlib.import_module("_fakecupy_flex.kernels.elementwise"))
    return _FK[0]


# the scalar types CuPy passes by value (cupy/cuda/function.pyx `_pointer`, via _scalar.CScalar)
_SCALAR_TYPES = {_np.dtype(c).type for c in "?bhilqBHILQefdFD"}


def _check_launch(name, grid, block, args, shared_mem):
    """What cupy.cuda.function.Function.__call__(tuple grid, tuple block, args, size_t shared_mem=0,
    stream=None) accepts: grid and block tuples of ints, and per argument (``_pointer``) a
    cupy.ndarray (its device pointer), None, a numpy.ndarray of size one (its bytes by value:
    a struct), a numpy scalar of a type CuPy knows or a Python int/float/bool/complex."""
    for what, v in (("grid", grid), ("block", block)):
        if type(v) is not tuple:       # Cython's `tuple grid`: a list or an int is a TypeError
            raise TypeError(f"{name}: {what} must be a tuple, got {type(v).__name__}")
        assert 1 <= len(v) <= 3 and all(isinstance(d, (int, _np.integer)) and d >= 0 for d in v), (what, v)
    assert isinstance(shared_mem, int) and shared_mem >= 0, shared_mem
    for i, a in enumerate(args):
        if a is None or isinstance(a, ndarray):
            continue
        if isinstance(a, _np.ndarray):
            if a.size != 1:
                raise TypeError(f"You are trying to pass a numpy.ndarray of shape {a.shape} as a kernel parameter. "
                                f"Only numpy.ndarrays of size one can be passed by value. ({name}, argument {i})")
            continue
        if type(a) in _SCALAR_TYPES or isinstance(a, (bool, int, float, complex)):
            continue
        raise TypeError(f"Unsupported type {type(a)} ({name}, argument {i})")


class _Kernel:
    def __init__(self, name):
        self.name = name
    def __call__(self, grid, block, args, shared_mem=0):
        _check_launch(self.name, grid, block, args, shared_mem)
        if self.name.startswith("burn_scatter_add_"):
            return self._scatter_add(args)
        if self.name.startswith("burn_signal_ola_"):
            return self._signal_ola(grid, block, args)
        if self.name.startswith("burn_signal_"):
            return self._signal_filter(grid, block, args)
        if self.name.startswith("burn_conv_"):
            return self._window(grid, block, args)
        fk = _flex_kernels()
        from burn_cuda.kernels import ARITY
        st, args = args[0], list(args[1:])
        # CuPy's convention: a struct by value is a size-one numpy array
        assert type(st) is _np.ndarray and st.size == 1 and st.dtype.names == ("v",), st
        if not self.name.startswith("k_"):
            raise NotImplementedError(f"fake cupy runs family kernels only, got {self.name}")
        op, variant = self.name[2:], ""
        for v in ("_c", "_u", "_v"):  # k_<op>_c<pattern>, k_<op>_u<pattern> (UNROLL per thread), _v (VECTOR)
            if v in op and op.rsplit(v, 1)[1].isdigit():
                op, variant = op.rsplit(v, 1)[0], v
        if variant in ("_u", "_v"):   # their grids: exactly ceil(n / (UNROLL or VECTOR * block)) blocks
            from burn.codegen import UNROLL, VECTOR, vector_bytes
            per = (UNROLL if variant == "_u" else VECTOR) * block[0]
            assert grid[0] == -(-int(st["v"][0][0]) // per), (grid, block, int(st["v"][0][0]))
            (UNROLLED if variant == "_u" else VECTORED).append((op, int(st["v"][0][0]), grid[0], block[0]))
        if variant == "_v":           # a vector load of a misaligned array would fault on a GPU
            from burn_cuda.native import dtype_name
            for a in args:
                if isinstance(a, ndarray) and a.size > 1:
                    addr = a.__array_interface__["data"][0]
                    assert addr % vector_bytes(dtype_name(a)) == 0, (self.name, addr, a.dtype)
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
        elif op == "pow":       # the generated kernel's integer pow: PyTorch's result for negative exponents
            r = fk._int_pow(*x)
        else:
            r = dict(fk.UNARY, **fk.BINARY)[op](*x)
        LAUNCHES.append(op)
        _np.asarray(out)[...] = _np.broadcast_to(_np.asarray(r).astype(out.dtype, copy=False), out.shape)

    def _scatter_add(self, args):
        n, out, idx, src = args
        want = {"f32": _np.float32, "f64": _np.float64, "i32": _np.int32, "i64": _np.int64}[self.name[17:]]
        assert isinstance(n, _np.int64) and int(n) == idx.size == src.size, (n, idx.size, src.size)
        assert out.dtype == want and src.dtype == want and idx.dtype == _np.int64, (out.dtype, src.dtype, idx.dtype)
        assert out.flags.c_contiguous and idx.flags.c_contiguous and src.flags.c_contiguous
        i = _np.asarray(idx)
        # the kernel has no bounds check: burn_cuda must have checked the offsets
        assert i.size == 0 or (i.min() >= 0 and i.max() < out.size), (i.min(), i.max(), out.size)
        _np.add.at(_np.asarray(out).reshape(-1), i, _np.asarray(src))
        LAUNCHES.append(self.name)


    def _window(self, grid, block, args):
        """burn_cuda.kernels.conv's burn_conv_{maxpool,maxpool_grad,col2im}_<dtype> (NCHW, C-contiguous,
        dims H W OH OW KH KW SH SW PT PL DH DW as int32 last): the pools by flex's numpy pooling,
        col2im on a padded grid with one strided slice per window offset in row-major order."""
        kind, dt = self.name[len("burn_conv_"):].rsplit("_", 1)
        n, arrays, dims = args[0], args[1:-12], args[-12:]
        assert isinstance(n, _np.int64) and all(isinstance(d, _np.int32) for d in dims), (n, dims)
        H, W, OH, OW, KH, KW, SH, SW, PT, PL, DH, DW = (int(d) for d in dims)
        for a in arrays:
            assert isinstance(a, ndarray) and a.flags.c_contiguous and a.dtype.name == dt, (self.name, a.dtype)
        assert grid[0] * block[0] >= int(n) and int(n) == arrays[-1].size, (grid, block, n, arrays[-1].shape)
        a = [_np.asarray(x) for x in arrays]
        Hp = max(H + PT, (KH - 1) * DH + SH * (OH - 1) + 1)
        Wp = max(W + PL, (KW - 1) * DW + SW * (OW - 1) + 1)
        offs = [(i, j, slice(i * DH, i * DH + SH * (OH - 1) + 1, SH), slice(j * DW, j * DW + SW * (OW - 1) + 1, SW))
                for i in range(KH) for j in range(KW)]
        if kind in ("maxpool", "maxpool_grad"):
            # flex's pooling (the fake GPU's ALU), with the bottom/right padding that gives OH x OW
            import importlib
            _flex_kernels()
            fc = importlib.import_module("_fakecupy_flex.kernels.conv")
            geo = dict(kernel=(KH, KW), stride=(SH, SW), dilation=(DH, DW),
                       padding=(PT, max(0, Hp - H - PT), PL, max(0, Wp - W - PL)))
            if kind == "maxpool":
                x, out = a
                out[...] = fc.max_pool2d(x, **geo)[:, :, :OH, :OW]
            else:
                x, out, g, gx = a
                gx[...] = fc.max_pool2d_grad(x, out, g, **geo)
        elif kind == "col2im":
            cols, gx = a
            gxp = _np.zeros(gx.shape[:2] + (Hp, Wp), gx.dtype)
            for i, j, rs, cs in offs:
                gxp[:, :, rs, cs] += cols[:, :, i, j]
            gx[...] = gxp[:, :, PT:PT + H, PL:PL + W]
        else:
            raise NotImplementedError(self.name)
        LAUNCHES.append(self.name)

    def _signal_ola(self, grid, block, args):
        """burn_signal's burn_signal_ola_{f32,f64} (istft's overlap-add), checked against its launch
        contract, then computed in scatter form as scipy.signal.istft does: each segment of the
        C-contiguous (nb, nfft, nseg) inverse FFTs xs (complex when cplx) times sc[0] times the window
        added at s * step, the squared window likewise; the sum divided by that where > 1e-10,
        samples p0 .. p0 + m - 1 kept per signal."""
        T = {"f32": _np.float32, "f64": _np.float64}[self.name.rsplit("_", 1)[1]]
        total, m = args[:2]
        assert isinstance(total, _np.int64) and isinstance(m, _np.int64), args[:2]
        assert all(isinstance(a, _np.int32) for a in args[2:8]), args[2:8]
        total, m = int(total), int(m)
        nper, step, nseg, nfft, p0, cplx = (int(a) for a in args[2:8])
        xs, w, sc, y = args[8:]
        want = _np.dtype(_np.complex64 if T is _np.float32 else _np.complex128) if cplx else _np.dtype(T)
        for a, dt in ((xs, want), (w, T), (sc, T), (y, want)):
            assert isinstance(a, ndarray) and a.dtype == dt and a.flags.c_contiguous, (self.name, a.dtype, dt)
        assert total > 0 and m > 0 and total % m == 0 and grid[0] * block[0] >= total, (grid, block, total, m)
        nb = total // m
        length = nper + (nseg - 1) * step
        assert 0 < step and nper <= nfft and y.size == total and w.size == nper and sc.size >= 1, (step, nper, nfft)
        assert xs.size == nb * nfft * nseg and 0 <= p0 and p0 + m <= length, (xs.size, nb, nfft, nseg, p0, m)
        fr = (_np.asarray(xs).reshape(nb, nfft, nseg)[:, :nper, :] * _np.asarray(sc).reshape(-1)[0]) \
            * _np.asarray(w)[:, None]
        acc = _np.zeros((nb, length), want)
        nrm = _np.zeros(length, T)
        for s in range(nseg):
            acc[:, s * step:s * step + nper] += fr[:, :, s]
            nrm[s * step:s * step + nper] += _np.asarray(w) * _np.asarray(w)
        acc, nrm = acc[:, p0:p0 + m], nrm[p0:p0 + m]
        _np.asarray(y).reshape(nb, m)[...] = acc / _np.where(nrm > T(1e-10), nrm, T(1))
        LAUNCHES.append(self.name)

    def _signal_filter(self, grid, block, args):
        """burn_signal's burn_signal_{lfilter,sosfilt}_{f32,f64}: one thread per row r < nb of
        C-contiguous (outer, n, inner) x and y; the DF2T recurrences below in T arithmetic, the
        CUDA C's order of operations, vectorized over the rows."""
        kind, suffix = self.name[len("burn_signal_"):].rsplit("_", 1)
        T = {"f32": _np.float32, "f64": _np.float64}[suffix]
        nb, n, inner, k = args[:4]
        assert isinstance(nb, _np.int64) and isinstance(n, _np.int64) and isinstance(inner, _np.int64), args[:3]
        assert isinstance(k, _np.int32) and isinstance(args[7], _np.int32), (k, args[7])
        nb, n, inner, k, has_zi = int(nb), int(n), int(inner), int(k), bool(args[7])
        # the grid covers every row; the kernel reads no further than its bounds check allows
        assert grid[0] * block[0] >= nb > 0 and inner > 0 and nb % inner == 0, (grid, block, nb, inner)
        arrays = [a for a in args[4:] if not isinstance(a, _np.generic)]
        for a in arrays:
            assert isinstance(a, ndarray) and a.dtype == T and a.flags.c_contiguous, (self.name, type(a), a.dtype)
        co, x, zi, y, zs = (_np.asarray(a).reshape(-1) for a in (args[4], args[5], args[6], args[8], args[9]))
        outer = nb // inner
        assert x.size == y.size == nb * n, (x.size, y.size, nb, n)
        X = x.reshape(outer, n, inner)
        Y = y.reshape(outer, n, inner)
        if kind == "lfilter":
            assert co.size == 2 * (k + 1) and zs.size >= nb * max(k, 1), (co.size, k, zs.size)
            assert not has_zi or zi.size == nb * k, (zi.size, nb, k)
            z = [(zi.reshape(outer, k, inner)[:, j, :] if has_zi else _np.zeros((outer, inner), T)).astype(T)
                 for j in range(k)]
            b, a = co[:k + 1], co[k + 1:]
            for t in range(n):
                xv = X[:, t, :]
                yv = (z[0] + b[0] * xv) if k > 0 else xv * b[0]
                for j in range(k - 1):
                    z[j] = (z[j + 1] + xv * b[j + 1]) - yv * a[j + 1]
                if k > 0:
                    z[k - 1] = xv * b[k] - yv * a[k]
                Y[:, t, :] = yv
        elif kind == "sosfilt":
            ns = k
            zf = _np.asarray(args[10]).reshape(-1)
            assert co.size == 6 * ns and zs.size >= 2 * ns * nb, (co.size, ns, zs.size)
            assert not has_zi or zi.size == zf.size == ns * 2 * nb, (zi.size, zf.size, ns, nb)
            so = co.reshape(ns, 6)
            Z = zi.reshape(ns, outer, 2, inner) if has_zi else None
            z = [[(Z[s, :, j, :] if has_zi else _np.zeros((outer, inner), T)).astype(T) for j in range(2)]
                 for s in range(ns)]
            for t in range(n):
                v = X[:, t, :]
                for s in range(ns):
                    c = so[s]
                    yv = c[0] * v + z[s][0]
                    z[s][0] = (c[1] * v - c[4] * yv) + z[s][1]
                    z[s][1] = c[2] * v - c[5] * yv
                    v = yv
                Y[:, t, :] = v
            if has_zi:
                ZF = zf.reshape(ns, outer, 2, inner)
                for s in range(ns):
                    for j in range(2):
                        ZF[s, :, j, :] = z[s][j]
        else:
            raise NotImplementedError(self.name)
        LAUNCHES.append(self.name)


class RawModule:
    # cupy/_core/raw.pyx: RawModule(*, str code=None, str path=None, tuple options=(), ...)
    def __init__(self, *, code=None, path=None, options=(), backend="nvrtc", translate_cucomplex=False,
                 enable_cooperative_groups=False, name_expressions=None, jitify=False):
        if (code is None) == (path is None):
            raise TypeError("Exactly one of `code` and `path` keyword arguments must be given.")
        if type(code) is not str or type(options) is not tuple or not all(type(o) is str for o in options):
            raise TypeError(f"RawModule(code: str, options: tuple of str), got {type(code).__name__}, {options!r}")
        assert "extern \"C\" __global__" in code
        self.code = code
        self.device_id = _get_device()
    def get_function(self, name):
        if type(name) is not str:
            raise TypeError(f"get_function(str name), got {type(name).__name__}")
        assert f" {name}(" in self.code, name
        return _Kernel(name)


class lib:
    class stride_tricks:
        @staticmethod
        def as_strided(x, shape=None, strides=None):
            return _np.lib.stride_tricks.as_strided(x, shape, strides, subok=True)


class _BaseMemory:
    pass


class _UnownedMemory(_BaseMemory):
    """cupy/cuda/memory.pyx: UnownedMemory(intptr_t ptr, size_t size, object owner, int device_id=-1)."""
    def __init__(self, ptr, size, owner, device_id=-1):
        for what, v in (("ptr", ptr), ("size", size), ("device_id", device_id)):
            if not isinstance(v, (int, _np.integer)) or isinstance(v, bool):
                raise TypeError(f"UnownedMemory: {what} must be an int, got {type(v).__name__}")
        assert size >= 0 and -1 <= device_id < _ndev(), (size, device_id)
        if device_id < 0 and ptr == 0:
            raise RuntimeError("UnownedMemory requires explicit device ID for a null pointer.")
        self.ptr, self.size, self._owner = int(ptr), int(size), owner
        self.device_id = int(device_id) if device_id >= 0 else _get_device()


class _MemoryPointer:
    """cupy/cuda/memory.pyx: MemoryPointer(BaseMemory mem, ptrdiff_t offset)."""
    def __init__(self, mem, offset):
        if not isinstance(mem, _BaseMemory):
            raise TypeError(f"MemoryPointer: mem must be a cupy.cuda.BaseMemory, got {type(mem).__name__}")
        assert mem.ptr != 0 or offset == 0
        self.mem, self.ptr, self.device_id = mem, mem.ptr + int(offset), mem.device_id


class cuda:
    Device = _Dev
    Stream = _Stream
    runtime = _Runtime
    BaseMemory = _BaseMemory
    UnownedMemory = _UnownedMemory
    MemoryPointer = _MemoryPointer
    @staticmethod
    def using_allocator(allocator=None):
        assert allocator is None or callable(allocator), allocator
        return _cl.nullcontext()


# cuBLAS for burn_cuda.kernels.linear (cupy.cuda.cublas, cupy.cuda.device.get_cublas_handle): GemmEx and
# GemmStridedBatchedEx read and write the memory their raw pointers address, found among the
# arrays whose ``.data.ptr`` was taken, and compute in numpy float32; every argument is checked
# as cuBLAS would (int types, leading dims, strides, data/compute types, the handle's stream
# and pointer mode), so a wrong ld, flag or swapped operand gives wrong numbers or fails here
import ctypes as _ctypes
import weakref as _weakref

_OWNERS = _weakref.WeakValueDictionary()     # id -> array owning the memory of a taken .data.ptr


class _MemPtr:
    def __init__(self, a):
        self.ptr = a.__array_interface__["data"][0]
        o = a
        while isinstance(o.base, _np.ndarray):
            o = o.base
        _OWNERS[id(o)] = o


def _blas_dtype(t):
    if t == 14:
        import ml_dtypes
        return _np.dtype(ml_dtypes.bfloat16)
    return {0: _np.dtype(_np.float32), 2: _np.dtype(_np.float16)}[t]


def _blas_view(ptr, t, rows, cols, ld, count, stride):
    """``count`` column-major rows x cols matrices (leading dim ``ld``, ``stride`` elements apart)
    at address ``ptr`` as a writable numpy view [count, cols, rows] of the array holding them;
    numpy's buffer check fails a view reaching past that array."""
    dt = _blas_dtype(t)
    for o in list(_OWNERS.values()):
        lo = o.__array_interface__["data"][0]
        if lo <= ptr < lo + max(o.nbytes, 1):
            break
    else:
        raise AssertionError(f"cuBLAS pointer {ptr:#x} lies in no array whose .data.ptr was taken")
    assert o.dtype == dt, f"cuBLAS data type {t} on {o.dtype} memory"
    assert o.flags.c_contiguous and (ptr - lo) % dt.itemsize == 0, (o.flags, ptr - lo)
    it = dt.itemsize
    return _np.ndarray((count, cols, rows), dt, buffer=o.reshape(-1).view(_np.uint8), offset=ptr - lo,
                       strides=(stride * it, ld * it, it))


class _Cublas:
    HANDLE = 0xC0B1A5
    CUBLAS_OP_N, CUBLAS_OP_T, CUBLAS_POINTER_MODE_HOST, CUBLAS_COMPUTE_32F = 0, 1, 0, 68
    CALLS = []
    _state = {"stream": None, "mode": 0}

    @staticmethod
    def setStream(handle, stream):
        assert handle == _Cublas.HANDLE and type(stream) is int, (handle, stream)
        _Cublas._state["stream"] = stream

    @staticmethod
    def getStream(handle):
        return _Cublas._state["stream"]

    @staticmethod
    def setPointerMode(handle, mode):
        assert handle == _Cublas.HANDLE and mode in (0, 1), (handle, mode)
        _Cublas._state["mode"] = mode

    @staticmethod
    def getPointerMode(handle):
        return _Cublas._state["mode"]

    @staticmethod
    def gemmEx(handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C, Ctype, ldc,
               computeType, algo):
        _Cublas._gemm("gemmEx", handle, transa, transb, m, n, k, alpha, A, Atype, lda, 0, B, Btype, ldb, 0,
                      beta, C, Ctype, ldc, 0, 1, computeType, algo)

    @staticmethod
    def gemmStridedBatchedEx(handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B, Btype, ldb,
                             strideB, beta, C, Ctype, ldc, strideC, batchCount, computeType, algo):
        _Cublas._gemm("gemmStridedBatchedEx", handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA,
                      B, Btype, ldb, strideB, beta, C, Ctype, ldc, strideC, batchCount, computeType, algo)

    @staticmethod
    def _gemm(fn, handle, ta, tb, m, n, k, alpha, A, At, lda, sA, B, Bt, ldb, sB, beta, C, Ct, ldc, sC, count,
              ct, algo):
        rec = dict(fn=fn, transa=ta, transb=tb, m=m, n=n, k=k, Atype=At, lda=lda, strideA=sA, Btype=Bt, ldb=ldb,
                   strideB=sB, Ctype=Ct, ldc=ldc, strideC=sC, batchCount=count, computeType=ct, algo=algo)
        for key, v in list(rec.items())[1:] + [("alpha", alpha), ("beta", beta), ("A", A), ("B", B), ("C", C)]:
            assert type(v) is int, f"{fn}: {key} is {type(v).__name__}, CuPy's binding takes int"
        assert handle == _Cublas.HANDLE, handle
        assert _Cublas._state["mode"] == 0, "alpha/beta are host pointers: pointer mode must be HOST"
        assert _STREAMS and _Cublas._state["stream"] == _STREAMS[-1].ptr, "cuBLAS handle is not on the current stream"
        assert ta in (0, 1) and tb in (0, 1), (ta, tb)
        assert ct == 68, f"compute type {ct}: CUBLAS_COMPUTE_32F (68) expected"
        assert At == Bt and At in (2, 14) and Ct in (At, 0), (At, Bt, Ct)
        assert algo in (-1, 99), algo
        assert min(m, n, k) >= 0 and count >= 1, (m, n, k, count)
        ra, ca = (m, k) if ta == 0 else (k, m)
        rb, cb = (k, n) if tb == 0 else (n, k)
        assert lda >= max(1, ra) and ldb >= max(1, rb) and ldc >= max(1, m), (lda, ra, ldb, rb, ldc, m)
        assert count == 1 or sC >= ldc * n, "the C matrices of a batch overlap"
        al = _ctypes.c_float.from_address(alpha).value
        be = _ctypes.c_float.from_address(beta).value
        va = _blas_view(A, At, ra, ca, lda, count, sA)
        vb = _blas_view(B, Bt, rb, cb, ldb, count, sB)
        vc = _blas_view(C, Ct, m, n, ldc, count, sC).transpose(0, 2, 1)      # [count, m, n]
        op_a = (va.transpose(0, 2, 1) if ta == 0 else va).astype(_np.float32)   # [count, m, k]
        op_b = (vb.transpose(0, 2, 1) if tb == 0 else vb).astype(_np.float32)   # [count, k, n]
        r = _np.float32(al) * _np.matmul(op_a, op_b)
        if be != 0:           # beta == 0: cuBLAS does not read C (it may hold NaN)
            r += _np.float32(be) * vc.astype(_np.float32)
        vc[...] = r.astype(vc.dtype)
        _Cublas.CALLS.append(rec)


class _CudaDevice:
    @staticmethod
    def get_cublas_handle():
        return _Cublas.HANDLE


cuda.cublas = _Cublas
cuda.device = _CudaDevice


# CuPy's linalg/fft namespaces run by numpy; every call is recorded in CALLS so a test can
# tell the native path from a host fallback
import numpy.linalg as _nl
import numpy.fft as _nf

CALLS = []


class _NS:
    def __init__(self, mod, prefix):
        self._m, self._p = mod, prefix
    def __getattr__(self, name):
        f = getattr(self._m, name)
        if not callable(f) or isinstance(f, type):
            return f
        def g(*a, **k):
            CALLS.append(self._p + name)
            if self._p == "fft.":         # CuPy keeps a cuFFT plan per transform layout
                _PLANS.add(name, a, k)
            return _w(f(*[_un(x) for x in a], **{kk: _un(v) for kk, v in k.items()}))
        return g


class _PlanCache:
    """cupy.fft.config.get_plan_cache(): an LRU of 16 plans, one per (function, shape, dtype, args)."""
    def __init__(self):
        self._plans = {}
    def add(self, name, a, k):
        key = (name, tuple((getattr(x, "shape", None), str(getattr(x, "dtype", type(x).__name__))) for x in a),
               tuple(sorted((kk, repr(v)) for kk, v in k.items())))
        self._plans.pop(key, None)
        self._plans[key] = True
        while len(self._plans) > 16:
            self._plans.pop(next(iter(self._plans)))
    def get_curr_size(self):
        return len(self._plans)
    def clear(self):
        self._plans.clear()


_PLANS = _PlanCache()


class _FFTConfig:
    @staticmethod
    def get_plan_cache():
        return _PLANS


linalg = _NS(_nl, "linalg.")
fft = _NS(_nf, "fft.")
fft.config = _FFTConfig


def argsort(a, axis=-1, kind=None):
    # cupy/_sorting/sort.py: always thrust's stable sort; kind None (meaning 'stable') or 'stable' only
    if kind not in (None, "stable"):
        raise NotImplementedError("kind is not supported")
    return _w(_np.argsort(_un(a), axis=axis, kind="stable"))


def asnumpy(a):
    CALLS.append("asnumpy")
    return _np.array(a)
'''

FAKE_X = r'''
import contextlib as _cl
import numpy as _np

ERRSTATE = []


def scatter_add(a, slices, value):
    _np.add.at(_np.asarray(a), tuple(_np.asarray(s) for s in slices), _np.asarray(value))


@_cl.contextmanager
def errstate(*, divide=None, over=None, under=None, invalid=None, linalg=None):
    # cupyx/_ufunc_config.py: only linalg is implemented, as 'ignore' or 'raise'
    if any(v is not None for v in (divide, over, under, invalid)) or linalg not in (None, "ignore", "raise"):
        raise NotImplementedError()
    ERRSTATE.append({"linalg": linalg} if linalg is not None else {})
    yield
'''

FAKE_SUB = r'''
import importlib as _il
import cupy as _c
_ns = _c._NS(_il.import_module("scipy.{mod}"), "scipy.{mod}.")


def __getattr__(name):
    return getattr(_ns, name)


if "{mod}" == "signal":
    # CuPy 14 (seen on an H200): convolve/correlate take 1-d inputs only
    def _one_d(fn):
        def k(in1, in2, mode="full", method="auto"):
            if getattr(in1, "ndim", 1) > 1 or getattr(in2, "ndim", 1) > 1:
                raise NotImplementedError("Only 1d inputs are supported currently")
            return fn(in1, in2, mode=mode, method=method)
        return k
    convolve = _one_d(_ns.convolve)
    correlate = _one_d(_ns.correlate)

if "{mod}" == "linalg":
    # cupyx/scipy/linalg/_decomp_lu.py: 2-d only; lu_solve passes ``ipiv.data.ptr`` to cuSOLVER's
    # getrs, which reads int32 pivots, without casting ipiv (an int64 piv would be misread)
    def lu_solve(lu_and_piv, b, trans=0, overwrite_b=False, check_finite=True):
        lu, piv = lu_and_piv
        assert lu.ndim == 2 and piv.ndim == 1 and b.ndim in (1, 2), (lu.shape, piv.shape, b.shape)
        assert piv.dtype == "int32", f"cupyx lu_solve: cuSOLVER getrs reads int32 pivots, got {piv.dtype}"
        if trans not in (0, 1, 2):
            raise ValueError("unknown trans")
        return _ns.lu_solve((lu, piv), b, trans=trans)

    def solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False, check_finite=False):
        # cupyx/scipy/linalg/_solve_triangular.py: one square matrix
        if a.ndim != 2 or a.shape[0] != a.shape[1]:
            raise ValueError("expected square matrix")
        if len(a) != len(b):
            raise ValueError("incompatible dimensions")
        return _ns.solve_triangular(a, b, trans=trans, lower=lower, unit_diagonal=unit_diagonal)
'''

# a stand-in for an installed CuPy on a machine without a usable GPU (test_cuda_plugin.py)
FAKE_NO_GPU = """
def is_available():
    return False
class _Runtime:
    @staticmethod
    def getDeviceCount():
        raise RuntimeError("cudaErrorNoDevice: no CUDA-capable device is detected")
class cuda:
    runtime = _Runtime
"""

# prepended to a probe that must run without burn-flex: the package cannot be imported and
# the plugin is disabled, so burn and burn_cuda must do everything on their own
NO_FLEX = 'import sys\nsys.modules["burn_flex"] = None\n'


def _flex_dir() -> str:
    import burn_flex
    return os.path.dirname(burn_flex.__file__)


def write_fake_cupy(root, *, version: str | None = None, without_flex: bool = False) -> dict:
    """Write the stand-in packages ``cupy`` and ``cupyx`` under ``root``; returns the env for a
    subprocess (``version``: the fake's ``cupy.__version__``; ``without_flex``: flex's plugin
    disabled, for probes that also start with :data:`NO_FLEX`)."""
    (root / "cupy").mkdir(parents=True)
    (root / "cupy" / "__init__.py").write_text(FAKE)
    (root / "cupyx" / "scipy").mkdir(parents=True)
    (root / "cupyx" / "__init__.py").write_text(FAKE_X)
    (root / "cupyx" / "scipy" / "__init__.py").write_text("")
    for mod in ("linalg", "signal"):
        (root / "cupyx" / "scipy" / f"{mod}.py").write_text(FAKE_SUB.replace("{mod}", mod))
    env = dict(os.environ, PYTHONPATH=str(root) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               BURN_CUDA_FUSE_AFTER="1000000000", FAKE_CUPY_FLEX_DIR=_flex_dir())
    env.pop("BURN_DEVICE", None)
    if version is not None:
        env["FAKE_CUPY_VERSION"] = version
    if without_flex:
        disabled = [p for p in env.get("BURN_PLUGINS_DISABLE", "").split(",") if p.strip()]
        env["BURN_PLUGINS_DISABLE"] = ",".join(disabled + ["flex"])
    return env


def run_probe(tmp_path, probe: str, *, version: str | None = None, without_flex: bool = False,
              timeout: int = 600):
    """Run ``probe`` (Python source printing one JSON line last) on the fake CuPy in a fresh
    interpreter; returns the parsed JSON. ``without_flex``: burn_flex cannot be imported."""
    env = write_fake_cupy(tmp_path / "fake", version=version, without_flex=without_flex)
    code = (NO_FLEX if without_flex else "") + textwrap.dedent(probe)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=timeout)
    assert r.returncode == 0, r.stderr[-5000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def real_gpu():
    """"ok" when a real CuPy with a usable GPU is importable here; else None or the reason."""
    try:
        import cupy
        if not cupy.is_available() or cupy.__version__.endswith("fake"):
            return None
    except Exception as e:
        return f"CuPy unusable: {type(e).__name__}: {e}"
    return "ok"

# the comparison both kernel libraries' cuda tests run after their CASES (in the stand-in's
# subprocess and on a real GPU): every case on ``dev`` against flex, inputs in ``dtype``
# (complex inputs in the complex dtype of ``dtype``'s precision)
COMPARE = r'''
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
