"""Advanced indexing and scatter-add on the GPU: ``index`` (x[key]), ``index_add`` (its
gradient: zeros with ``+=`` at x[key], duplicates accumulate), ``index_put`` (x with
x[key] = v, the last write of a duplicated position wins, as numpy/flex) and
``scatter_add`` (take_along_axis's gradient).

Every op reduces the key to *flat element offsets* into a C-contiguous copy of the
target and then gathers or scatters through them:

- a key (core's spec: ints, slices, None, Ellipsis, integer index tensors) splits into
  *basic* dims (slices, new axes) and the *advanced* block B (the broadcast shape of the
  index tensors, ints counting as advanced when tensors are present, as in numpy). The
  index tensors become one int64 tensor ``off`` of shape B (negative indices wrapped);
  the basic dims give ``boff`` (shape of the basic selection). The selection, computed
  as ``[B..., basic...]``, is ``off[b] + boff[i]`` and is permuted (a view) into
  numpy's order: B where the advanced indices stand if they are adjacent, else first.
- out-of-range indices are checked on the device, one flag read back per op (a wild
  index must never write astray), and raised as :class:`burn.IndexOutOfRange` (a ShapeError) with numpy's
  message: ``index: index 6 is out of bounds for axis 0 with size 6``.
- gathers are ``cupy.take`` on the flat array; ``index_put`` keeps, for each target,
  only the write with the largest position in B (one sort of ``off``) and then assigns
  through unique offsets, so the result is deterministic and equals numpy's.
- additions go through :func:`flat_scatter_add`: one generated kernel doing an
  ``atomicAdd`` per element. Atomics (rather than a sort + segmented sum) because a
  segmented sum of floats through CuPy would need a scan whose differences cancel
  catastrophically, and a hand-written segmented reduction is a kernel per dtype for
  no gain; atomics exist natively for float, double, int and unsigned long long.
  int64 adds through unsigned long long (two's complement: the same bits), narrower
  types are widened (bool/int8/uint8/int16/uint16/uint32 -> int32, whose wrap-around agrees modulo
  2^8 / 2^16 / 2^32; uint64 adds as int64;
  float16/bfloat16 -> float32, i.e. *more* accurate than numpy's per-step rounding),
  complex values add their real and imaginary parts as two floats. Float sums are
  thus exact per element up to the order of the additions, which atomics do not fix
  (like PyTorch's index_add on CUDA).
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from burn.errors import IndexOutOfRange, ShapeError
from burn.ops.movement import strided_index_plan

from ..native import dtype_name, numel
from .elementwise import _cp, _dc_of

# target dtype -> (accumulation dtype, kernel suffix); complex adds as its real type
_ACC = {"float32": ("float32", "f32"), "float64": ("float64", "f64"), "int32": ("int32", "i32"),
        "int64": ("int64", "i64"), "uint64": ("int64", "i64"), "bool": ("int32", "i32"), "int8": ("int32", "i32"),
        "uint8": ("int32", "i32"), "int16": ("int32", "i32"), "uint16": ("int32", "i32"), "uint32": ("int32", "i32"), "float16": ("float32", "f32"), "bfloat16": ("float32", "f32")}
_COMPLEX_REAL = {"complex64": "float32", "complex128": "float64"}


@lru_cache(maxsize=None)
def scatter_source() -> str:
    """The CUDA C of :func:`flat_scatter_add`: ``out[idx[i]] += src[i]`` with an atomicAdd per
    element, one kernel per accumulation type (compiled once, ``nvcc --ptx``-checked by
    tests/test_cuda_nvcc.py).

    >>> assert "atomicAdd((unsigned long long*)" in scatter_source()
    """
    kernels = []
    for suffix, t, add in (("f32", "float", "atomicAdd(out + j, src[i])"),
                           ("f64", "double", "atomicAdd(out + j, src[i])"),
                           ("i32", "int", "atomicAdd(out + j, src[i])"),
                           # two's complement: adding the unsigned bit pattern is the signed sum
                           ("i64", "long long",
                            "atomicAdd((unsigned long long*)(out + j), (unsigned long long)src[i])")):
        kernels.append(
            f'extern "C" __global__ void burn_scatter_add_{suffix}(const long long n, {t}* out, '
            f"const long long* idx, const {t}* src) {{\n"
            f"  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
            f"  if (i >= n) return;\n"
            f"  long long j = idx[i];\n"
            f"  {add};\n}}\n")
    return "\n".join(kernels)


def _dc(x):
    return _dc_of([x])


def flat_scatter_add(out, idx, src):
    """``out.ravel()[idx] += src`` in place on a C-contiguous ``out``, duplicates accumulating;
    ``idx`` holds in-range int64 flat offsets, ``src`` one value per offset. Returns the result
    (``out`` itself, or a new array when the dtype is widened for the atomics)."""
    cp = _cp()
    name = dtype_name(out)
    n = int(idx.size)
    if n == 0:
        return out
    if name in _COMPLEX_REAL:
        real = _COMPLEX_REAL[name]
        idx = idx.reshape(-1, 1) * 2 + cp.arange(2, dtype=np.int64)     # (re, im) of each target
        src = cp.ascontiguousarray(src.reshape(-1).astype(out.dtype, copy=False)).view(real)
        flat_scatter_add(out.reshape(-1).view(real), idx.reshape(-1), src)
        return out
    acc, suffix = _ACC[name]
    buf = out if acc == name else out.astype(acc)
    src = cp.ascontiguousarray(src.reshape(-1).astype(acc, copy=False))
    idx = cp.ascontiguousarray(idx.reshape(-1).astype(np.int64, copy=False))
    dc = _dc(out)
    dc.launch(dc.function(scatter_source(), f"burn_scatter_add_{suffix}"), n,
              [np.int64(n), buf.reshape(-1), idx, src])
    if buf is out:
        return out
    # int32 -> bool is "!= 0" (numpy's add on bools is a logical or); -> int8/uint8 wraps
    return buf.astype(out.dtype)


def _check(op, checks):
    """Raise numpy's out-of-bounds message for the first bad index of ``checks``
    (``(int64 index array, axis, size)``); one device read when all are in range."""
    cp = _cp()
    if not checks:
        return
    flags = [cp.any((t < -size) | (t >= size)) for t, _, size in checks if t.size]
    if not flags or not bool(cp.stack(flags).any()):     # one device read
        return
    for t, axis, size in checks:
        h = t.get().reshape(-1)
        bad = h[(h < -size) | (h >= size)]
        if bad.size:
            raise IndexOutOfRange(f"{op}: index {int(bad[0])} is out of bounds for axis {axis} with size {size}")


def _wrap(t, size):
    cp = _cp()
    t = t.astype(np.int64, copy=False)
    return cp.where(t < 0, t + size, t)


class _Plan:
    """Flat offsets of the selection ``x[key]`` for a C-contiguous x of ``shape``:
    ``off`` (int64, shape B, or None without index tensors), ``boff`` (int64, basic shape)
    and ``where`` (B's position in numpy's order)."""

    def __init__(self, op, shape, idx, spec):
        cp = _cp()
        strides = [1] * len(shape)
        for d in range(len(shape) - 2, -1, -1):
            strides[d] = strides[d + 1] * shape[d + 1]
        base, basic, adv, self.where = strided_index_plan(spec, shape, strides, 0, op)
        # adv: (int64 index tensor, axis, size, stride)
        adv = [(idx[k].astype(np.int64, copy=False), axis, size, st) for k, axis, size, st in adv]
        _check(op, [(t, axis, size) for t, axis, size, _ in adv])
        self.B = tuple(np.broadcast_shapes(*[t.shape for t, _, _, _ in adv])) if adv else ()
        self.basic_shape = tuple(n for n, _, _ in basic)
        off = None
        for t, _, size, st in adv:
            term = _wrap(t, size) * st
            off = term if off is None else off + term
        self.off = None if off is None else cp.broadcast_to(off, self.B)
        boff = cp.full(self.basic_shape, base, dtype=np.int64)
        nb = len(basic)
        for k, (n, st, _) in enumerate(basic):
            if n > 1 and st:
                boff = boff + (cp.arange(n, dtype=np.int64) * st).reshape((n,) + (1,) * (nb - 1 - k))
        self.boff = boff

    def flat(self):
        """The flat offsets of the selection in ``[B..., basic...]`` order."""
        if self.off is None:
            return self.boff
        nb = len(self.basic_shape)
        return self.off.reshape(self.B + (1,) * nb) + self.boff

    def order(self):
        """Axes taking ``[B..., basic...]`` to numpy's order (B at ``where``)."""
        nB, nb = len(self.B), len(self.basic_shape)
        bd, sd = list(range(nB)), list(range(nB, nB + nb))
        return tuple(sd[:self.where] + bd + sd[self.where:])

    def sel_shape(self):
        bs = self.basic_shape
        return bs[:self.where] + self.B + bs[self.where:]

    def values(self, v):
        """``v`` broadcast to the selection, in ``[B..., basic...]`` order (C-contiguous)."""
        cp = _cp()
        v = cp.broadcast_to(v, self.sel_shape())
        inv = tuple(int(a) for a in np.argsort(self.order()))
        return cp.ascontiguousarray(v.transpose(inv))


def index(x, *idx, spec):
    cp = _cp()
    xc = cp.ascontiguousarray(x)
    plan = _Plan("index", xc.shape, idx, spec)
    fi = plan.flat()
    sel = cp.take(xc.reshape(-1), fi) if fi.size else cp.empty(fi.shape, x.dtype)
    return sel.transpose(plan.order())


def index_add(g, *idx, spec, shape):
    cp = _cp()
    out = cp.zeros(tuple(shape), g.dtype)
    plan = _Plan("index_add", out.shape, idx, spec)
    return flat_scatter_add(out, plan.flat(), plan.values(g))


def index_put(x, v, *idx, spec):
    cp = _cp()
    out = cp.array(x, copy=True, order="C")
    plan = _Plan("index_put", out.shape, idx, spec)
    vals = plan.values(v.astype(out.dtype, copy=False))
    flat = out.reshape(-1)
    if plan.off is None:                   # basic key: every target is written once
        if vals.size:
            flat[plan.boff.reshape(-1)] = vals.reshape(-1)
        return out
    nB = numel(plan.B)
    nbasic = numel(plan.basic_shape)
    if not nB or not nbasic:
        return out
    off = cp.ascontiguousarray(plan.off).reshape(-1)
    vals = vals.reshape(nB, nbasic)
    if nB > 1:
        # a position named twice in B: numpy writes in order, so the largest b wins. Sort by
        # (offset, b) through one unique int64 key and keep the last of each run of equal offsets.
        if out.size * nB >= 1 << 62:
            raise ShapeError(f"index_put: {nB} index positions into {out.size} elements overflow the "
                             f"int64 sort key (split the assignment)")
        key = off * nB + cp.arange(nB, dtype=np.int64)
        order = cp.argsort(key)
        s = off[order]
        last = cp.ones(nB, dtype=bool)
        last[:-1] = s[:-1] != s[1:]
        keep = order[last]
        off, vals = off[keep], vals[keep]
    tgt = off.reshape(-1, 1) + plan.boff.reshape(1, -1)
    flat[tgt.reshape(-1)] = vals.reshape(-1)
    return out


def scatter_add(x, idx, src, *, axis):
    """``out = x.copy(); out[..., idx, ...] += src`` along ``axis`` (numpy's ``add.at`` with
    ``idx`` at ``axis`` and the positions of ``idx`` elsewhere)."""
    cp = _cp()
    out = cp.array(x, copy=True, order="C")
    axis = axis % x.ndim
    idx = idx.astype(np.int64, copy=False)
    _check("scatter_add", [(idx, axis, x.shape[axis])])
    if idx.size == 0:
        return out
    st = [1] * x.ndim
    for d in range(x.ndim - 2, -1, -1):
        st[d] = st[d + 1] * x.shape[d + 1]
    tgt = _wrap(idx, x.shape[axis]) * st[axis]
    for d, n in enumerate(idx.shape):
        if d != axis and n > 1:
            if n > x.shape[d]:
                raise ShapeError(f"scatter_add: index of shape {tuple(idx.shape)} does not fit the target of "
                                 f"shape {tuple(x.shape)} on axis {d}")
            tgt = tgt + (cp.arange(n, dtype=np.int64) * st[d]).reshape((n,) + (1,) * (idx.ndim - 1 - d))
    return flat_scatter_add(out, tgt, cp.broadcast_to(src, idx.shape))


def index_kernels() -> dict:
    """op name -> kernel for the indexing primitives (wrapped by ``on_device`` at registration)."""
    return {"index": index, "index_add": index_add, "index_put": index_put, "scatter_add": scatter_add}


def take_along_axis(x, idx, *, axis):
    cp = _cp()
    # cupy wraps an out-of-range index silently: check on the device (one flag read), as index does
    _check("take_along_axis", [(idx, axis, x.shape[axis])])
    shape = tuple(b if i == axis else max(a, b) for i, (a, b) in enumerate(zip(x.shape, idx.shape)))
    xs = tuple(shape[i] if i != axis else x.shape[i] for i in range(x.ndim))
    return cp.take_along_axis(cp.broadcast_to(x, xs), cp.broadcast_to(idx, shape), axis=axis)
