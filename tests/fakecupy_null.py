"""A "null GPU": the fake CuPy of tests/fakecupy.py in a mode where nothing is computed.

``write_null_cupy(root)`` writes the fake packages (``write_fake_cupy``) plus ``cupy/_null.py``
and returns a subprocess environment with ``FAKE_CUPY_NULL=1``; the fake's ``__init__`` then
calls ``_null.install`` (see :data:`NULL`). In that mode:

- ``RawModule`` kernel launches (element-wise family kernels, fused groups, scatter-add) are
  counted and do nothing, so fused groups can "run": ``BURN_CUDA_FUSE_AFTER`` is left at
  burn-cuda's default and the real fused path is what runs;
- CuPy's element-wise ufuncs (operators too), matmul, reductions, copies, ``astype``,
  ``zeros``/``full``/``ascontiguousarray`` allocate an uninitialized output of the right
  shape and dtype and compute nothing (a reduction computes on a one-element slice of its
  reduced axes: cost proportional to its output); ``a[idx] = v`` copies nothing;
- every new array asks the allocator installed by ``cupy.cuda.using_allocator`` for its
  bytes, as CuPy does, so burn-cuda's pool (``AdaptivePool``) runs its Python path;
- ``cupy._null.COUNTS`` counts what a real CuPy would do on the GPU per kind: ``raw``
  (RawKernel launches), ``ufunc`` (CuPy element-wise kernels), ``reduce``, ``matmul``,
  ``copy`` (copy kernels: ascontiguousarray of a strided view, astype, setitem of an array),
  ``fill`` (zeros/full), ``alloc`` (allocator calls), ``scope`` (``using_allocator`` entries),
  ``real`` (calls computed for real by numpy: uploads, small index ops).

The values are garbage (uninitialized memory): only the host side is meaningful, which is
what benchmarks/cuda_host_overhead.py times. Not a test of results.
"""
from __future__ import annotations

from fakecupy import write_fake_cupy

NULL = r'''
import collections as _col
import contextlib as _cl
import threading as _th
import time as _time

import numpy as _np

COUNTS = _col.Counter()
REAL_SECONDS = [0.0]        # time spent computing for real (should stay small)
_TL = _th.local()
_DT = {}                    # (ufunc, operand kinds) -> result dtype(s)
_REDUCERS = {"sum", "prod", "max", "min", "amax", "amin", "mean", "any", "all", "argmax", "argmin",
             "nanmax", "nanmin", "var", "std"}
_CREATORS = {"empty", "zeros", "ones", "full"}


def _allocs():
    s = getattr(_TL, "alloc", None)
    if s is None:
        s = _TL.alloc = []
    return s


def install(g):
    nd = g["ndarray"]
    plain = _np.ndarray

    def new(shape, dtype):
        a = plain.__new__(nd, shape, dtype)
        st = _allocs()
        if st:
            COUNTS["alloc"] += 1
            # CuPy asks the allocator of using_allocator for every array; the pointer's
            # owner lives as long as the array (views keep their base alive)
            a._mem = st[-1](a.nbytes)
        return a

    def un(x):
        return x.view(plain) if isinstance(x, nd) else x

    def sample(x):
        if isinstance(x, plain):
            return plain.__new__(plain, (), x.dtype)
        return x

    def kind(x):
        return x.dtype if isinstance(x, plain) else type(x)

    def ufunc_null(uf, inputs, out, kw):
        if uf is _np.matmul:
            COUNTS["matmul"] += 1
        else:
            COUNTS["ufunc"] += 1
        if out is not None:
            out = out if isinstance(out, tuple) else (out,)
            return out[0] if len(out) == 1 else out
        key = (uf, tuple(kind(x) for x in inputs), tuple(sorted(kw.items())) if kw else ())
        dts = _DT.get(key)
        if dts is None:
            with _np.errstate(all="ignore"):
                if uf is _np.matmul:
                    r = uf(*[_np.ones((1, 1), x.dtype) for x in inputs], **kw)
                else:
                    r = uf(*[sample(x) for x in inputs], **kw)
            dts = _DT[key] = tuple(_np.asarray(v).dtype for v in (r if isinstance(r, tuple) else (r,)))
        shapes = [_np.shape(x) for x in inputs]
        if uf is _np.matmul:
            a, b = shapes
            batch = _np.broadcast_shapes(a[:-2], b[:-2]) if len(a) > 1 and len(b) > 1 else ()
            shape = tuple(batch) + (a[-2:-1] if len(a) > 1 else ()) + (b[-1:] if len(b) > 1 else ())
        else:
            shape = _np.broadcast_shapes(*shapes)
        outs = tuple(new(shape, d) for d in dts)
        return outs[0] if len(outs) == 1 else outs

    def collapsed(x, axis):
        """x with its reduced axes cut to (at most) one element: a reduction over it has the
        right shape and dtype and costs its output's size."""
        x = _np.asarray(x) if not isinstance(x, plain) else x
        if x.ndim == 0:
            return x
        axes = range(x.ndim) if axis is None else [a % x.ndim for a in ((axis,) if isinstance(axis, int) else axis)]
        idx = [slice(None)] * x.ndim
        for a in axes:
            idx[a] = slice(0, 1)
        return x[tuple(idx)]

    def reduce_null(fn, x, kw):
        COUNTS["reduce"] += 1
        r = fn(collapsed(un(x), kw.get("axis")), **{k: un(v) for k, v in kw.items()})
        r = _np.asarray(r)
        out = new(r.shape, r.dtype)
        return out

    def array_ufunc(self, uf, method, *inputs, out=None, **kw):
        if method == "__call__":
            return ufunc_null(uf, inputs, out, kw)
        if method == "reduce":
            return reduce_null(uf.reduce, inputs[0], kw)
        COUNTS["real"] += 1
        t0 = _time.perf_counter()
        args = [un(x) for x in inputs]
        if out is not None:
            kw["out"] = tuple(un(o) for o in (out if isinstance(out, tuple) else (out,)))
        r = getattr(uf, method)(*args, **kw)
        REAL_SECONDS[0] += _time.perf_counter() - t0
        return g["_w"](r)

    nd.__array_ufunc__ = array_ufunc

    def copy(self, order="C"):
        COUNTS["copy"] += 1
        return new(self.shape, self.dtype)

    def astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True):
        dtype = _np.dtype(dtype)
        if dtype == self.dtype and not copy:
            return self
        COUNTS["copy"] += 1
        return new(self.shape, dtype)

    def setitem(self, key, value):
        COUNTS["copy" if isinstance(value, plain) and value.size > 1 else "fill"] += 1

    nd.copy = copy
    nd.astype = astype
    nd.__setitem__ = setitem

    real_getattr = g["__getattr__"]

    def getattr_null(name):
        f = getattr(_np, name)
        if isinstance(f, _np.ufunc):
            def h(*a, out=None, **k):
                return ufunc_null(f, a, out, k)
            return h
        if name in _REDUCERS:
            def h(x, axis=None, **k):
                k["axis"] = axis
                return reduce_null(f, x, k)
            return h
        if name in ("cumsum", "cumprod"):
            def h(x, axis=None, dtype=None, **k):
                COUNTS["reduce"] += 1
                x = un(x)
                d = f(collapsed(x, None), axis=axis, dtype=dtype).dtype
                return new(x.shape if axis is not None else (x.size,), d)
            return h
        if name in _CREATORS or name in ("empty_like", "zeros_like", "ones_like", "full_like"):
            def h(*a, **k):
                if name.endswith("_like"):
                    proto = a[0]
                    shape = k.get("shape", proto.shape)
                    d = _np.dtype(k.get("dtype") or proto.dtype)
                else:
                    shape = a[0]
                    if name == "full":
                        d = _np.full((), a[1], dtype=k.get("dtype", a[2] if len(a) > 2 else None)).dtype
                    else:
                        d = _np.dtype(k.get("dtype", a[1] if len(a) > 1 else float))
                if not name.startswith("empty"):
                    COUNTS["fill"] += 1
                return new(tuple(shape) if not isinstance(shape, int) else (shape,), d)
            return h
        real = real_getattr(name)
        if not callable(real):
            return real

        def h(*a, **k):
            COUNTS["real"] += 1
            t0 = _time.perf_counter()
            r = real(*a, **k)
            REAL_SECONDS[0] += _time.perf_counter() - t0
            return r
        return h

    g["__getattr__"] = getattr_null

    def ascontiguousarray(a, dtype=None):
        if isinstance(a, nd) and a.flags.c_contiguous and (dtype is None or _np.dtype(dtype) == a.dtype):
            return a
        if isinstance(a, plain):
            COUNTS["copy"] += 1
            return new(a.shape, dtype or a.dtype)
        return g["_np"].ascontiguousarray(a, dtype=dtype).view(nd)

    real_asarray = g["asarray"]

    def asarray(a, dtype=None):
        if isinstance(a, nd):
            if dtype is None or _np.dtype(dtype) == a.dtype:
                return a           # CuPy: no copy of a device array
            COUNTS["copy"] += 1
            return new(a.shape, dtype)
        # an upload: its values are real (targets, index arrays)
        COUNTS["upload"] += 1
        src = _np.asarray(a, dtype=dtype)
        r = new(src.shape, src.dtype)
        plain.__setitem__(r, Ellipsis, src)
        return r

    g["ascontiguousarray"] = ascontiguousarray
    g["asarray"] = asarray

    class _K:
        def __init__(self, name):
            self.name = name

        def __call__(self, grid, block, args):
            COUNTS["raw"] += 1
            st = args[0]
            if self.name.startswith(("k_", "fused")):
                # CuPy's convention: the index struct by value is a size-one numpy array
                assert type(st) is plain and st.size == 1 and st.dtype.names == ("v",), st
            g["LAUNCHES"].append(self.name) if len(g["LAUNCHES"]) < 64 else None

    g["_Kernel"] = _K

    @_cl.contextmanager
    def using_allocator(f=None):
        COUNTS["scope"] += 1
        st = _allocs()
        st.append(f)
        try:
            yield
        finally:
            st.pop()

    class _Mem:
        __slots__ = ("ptr", "size", "owner", "device_id")

        def __init__(self, ptr, size, owner, device_id=0):
            self.ptr, self.size, self.owner, self.device_id = ptr, size, owner, device_id

    class _MemoryPointer:
        __slots__ = ("mem", "ptr")

        def __init__(self, mem, offset):
            self.mem, self.ptr = mem, mem.ptr + offset

    nxt = [1 << 32]

    def malloc(n):
        p = nxt[0]
        nxt[0] += max(int(n), 1) + 255 & ~255
        return p

    cuda = g["cuda"]
    cuda.using_allocator = staticmethod(using_allocator)
    cuda.UnownedMemory = _Mem
    cuda.MemoryPointer = _MemoryPointer
    cuda.runtime.malloc = staticmethod(malloc)
    cuda.runtime.free = staticmethod(lambda p: None)
'''

# appended to the fake's __init__: the null mode only when asked for (other tests unaffected)
HOOK = '''
if _os.environ.get("FAKE_CUPY_NULL") == "1":
    from . import _null
    _null.install(globals())
    COUNTS = _null.COUNTS
'''


def write_null_cupy(root) -> dict:
    """Write the fake CuPy in null mode under ``root``; returns the subprocess environment
    (``FAKE_CUPY_NULL=1``; ``BURN_CUDA_FUSE_AFTER`` unset: burn-cuda's default fusing)."""
    env = write_fake_cupy(root)
    init = root / "cupy" / "__init__.py"
    init.write_text(init.read_text() + HOOK)
    (root / "cupy" / "_null.py").write_text(NULL)
    env["FAKE_CUPY_NULL"] = "1"
    env.pop("BURN_CUDA_FUSE_AFTER", None)
    return env
