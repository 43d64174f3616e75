"""Movement ops on wgpu: views where the strides allow (reshape, permute, broadcast, slice),
else a strided copy kernel (``copy_into``: slicing gradients, padding, concatenation), and
the host transfers of whole tensors (:func:`upload`, :func:`download`)."""
from __future__ import annotations

import numpy as np

from burn.codegen import MAX_DIMS, OPENCL, op_params, param_words
from burn.errors import BurnError

from ..native import NP as _NP
from ..native import broadcast_strides as _broadcast_strides
from ..native import WTensor, empty, reshape_view
from .elementwise import elementwise, family_source
from .source import register
from .source import library_kernel as _lib


def contiguous(x: WTensor) -> WTensor:
    """``x`` itself if contiguous, else a contiguous copy."""
    if x.is_contiguous:
        return x
    return elementwise("positive")(x)


def reshape(x, *, shape):
    v = reshape_view(x, shape)
    if v is None:
        v = reshape_view(contiguous(x), shape)
    return v


def permute(x, *, axes):
    return x.view(tuple(x.shape[a] for a in axes), tuple(x.strides[a] for a in axes), x.offset)


def broadcast_to(x, *, shape):
    shape = tuple(shape)
    return x.view(shape, tuple(_broadcast_strides(x, shape)), x.offset)


def _slice_view(x, starts, stops, steps):
    shape, strides, off = [], [], x.offset
    for a, b, c, st in zip(starts, stops, steps, x.strides):
        n = len(range(a, b, c))
        shape.append(n)
        strides.append(st * c)
        if n:
            off += a * st
    return x.view(tuple(shape), tuple(strides), off)


def slice_(x, *, starts, stops, steps):
    return _slice_view(x, starts, stops, steps)



def copy_into(dst_view: WTensor, src: WTensor):
    """Write ``src`` (broadcast to dst's shape) into the strided view ``dst_view``."""
    n = dst_view.size
    if not n:
        return
    dc = dst_view.dc
    if src.dtype != dst_view.dtype:
        src = elementwise("cast")(src, dtype=dst_view.dtype)
    # both views share one index struct: mode 2 for both (the kernel always computes coords)
    v = np.zeros(param_words(2), np.int32)
    shape = dst_view.shape
    dims = [s for s in shape if s != 1] or [1]
    dst_st = [st for s, st in zip(shape, dst_view.strides) if s != 1] or [0]
    src_st = [st for s, st in zip(shape, _broadcast_strides(src, shape)) if s != 1] or [0]
    if len(dims) > MAX_DIMS:
        raise BurnError(f"wgpu: strided write into a view of shape {shape} needs more than {MAX_DIMS} dimensions")
    v[0], v[1] = n, len(dims)
    v[2:2 + len(dims)] = dims
    b0, b1 = 2 + MAX_DIMS, 2 + MAX_DIMS + (2 + MAX_DIMS)
    v[b0], v[b0 + 1] = dst_view.offset, 2
    v[b0 + 2:b0 + 2 + len(dims)] = dst_st
    v[b1], v[b1 + 1] = src.offset, 2
    v[b1 + 2:b1 + 2 + len(dims)] = src_st
    dc.launch(_lib(dc, dst_view.dtype, "copy_into"), n,
              [v.view(np.dtype((np.void, v.nbytes)))[0], dst_view.buf, src.buf])


def _filled(dc, shape, dtype, value):
    return elementwise("full")(shape=shape, value=value, dtype=dtype) if dc is None else \
        dc.run_generated(_full_kernels(dc, dtype), tuple(shape), [], [dtype],
                        op_params("full", {"value": value}, dtype))[0]


def _full_kernels(dc, dtype):
    src = family_source((), dtype)
    return lambda pat: dc.kernel(src, "k_full" if pat is None else f"k_full_c{pat}")


def slice_grad(g, *, shape, starts, stops, steps):
    out = _filled(g.dc, shape, g.dtype, 0)
    copy_into(_slice_view(out, starts, stops, steps), g)
    return out


def pad(x, *, pad_width, value):
    shape = tuple(s + a + b for s, (a, b) in zip(x.shape, pad_width))
    out = _filled(x.dc, shape, x.dtype, value)
    copy_into(_slice_view(out, [a for a, _ in pad_width], [a + s for s, (a, _) in zip(x.shape, pad_width)],
                          [1] * x.ndim), x)
    return out


def concat(*xs, axis):
    shape = list(xs[0].shape)
    shape[axis] = sum(x.shape[axis] for x in xs)
    out = empty(xs[0].dc, shape, xs[0].dtype)
    start = 0
    for x in xs:
        n = x.shape[axis]
        starts = [0] * len(shape)
        stops = list(shape)
        starts[axis], stops[axis] = start, start + n
        copy_into(_slice_view(out, starts, stops, [1] * len(shape)), x)
        start += n
    return out


def upload(dc, array: np.ndarray, dtype: str) -> WTensor:
    arr = np.asarray(array, dtype=_NP[dtype], order="C")   # ascontiguousarray would make 0-d 1-d
    out = empty(dc, arr.shape, dtype)
    dc.upload(arr, out.buf, 0)
    return out


def download(x: WTensor) -> np.ndarray:
    x = contiguous(x)
    out = np.empty(x.shape, _NP[x.dtype])
    x.dc.download(x.buf, x.offset * x.itemsize, out)
    return out


def _copy_into_src(T):
    """dst (a strided view, input 0 of the index struct) = src (input 1, any layout)."""
    W = param_words(2)
    b0, b1 = 2 + MAX_DIMS, 2 + MAX_DIMS + (2 + MAX_DIMS)
    return f"""
__kernel void copy_into(burn_idx{W} p, __global {T}* dst, __global const {T}* src) {{
  int i = get_global_id(0); if (i >= p.v[0]) return;
  int nd = p.v[1];
  int c[{MAX_DIMS}];
  int r = i;
  for (int d = {MAX_DIMS - 1}; d >= 0; --d) {{
    if (d < nd) {{ int s = p.v[2 + d]; c[d] = r % s; r /= s; }} else c[d] = 0;
  }}
  int j0 = p.v[{b0}], j1 = p.v[{b1}];
  if (p.v[{b0 + 1}] == 0) j0 += i; else if (p.v[{b0 + 1}] == 2) for (int d = 0; d < nd; ++d) j0 += c[d] * p.v[{b0 + 2} + d];
  if (p.v[{b1 + 1}] == 0) j1 += i; else if (p.v[{b1 + 1}] == 2) for (int d = 0; d < nd; ++d) j1 += c[d] * p.v[{b1 + 2} + d];
  dst[j0] = src[j1];
}}"""


register("copy", ("copy_into",), lambda dtype, fp64: _copy_into_src(OPENCL.ctype(dtype)))
