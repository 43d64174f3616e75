"""numpy kernels of convolution and pooling (the primitives of ``burn.ops.conv``).

Convolutions are im2col + batched BLAS matmuls. The columns are laid out
[N, groups, C/groups * kH * kW, OH * OW], the order of the strided window view,
so im2col is one copy, the forward output comes out NCHW without a transpose,
and numpy's matmul runs one small GEMM per image and group. Inverse scatters
(col2im, pooling gradients) loop over the kH * kW window offsets, each step one
vectorized add into a slice; no Python loop ever runs over pixels or images.
The stride-1 input gradient (the common case) skips col2im: it runs as a full
correlation over a batch-innermost layout, one GEMM per input row position and
kH adds (``_grad_input_rows``).

float32 with flex's JIT, one group: the forward runs without columns (``conv_direct``,
``kernels/ll/direct.ll``: register tiles over the padded input), except a single large image
on several threads, which keeps the threaded BLAS GEMM below.

float32 with flex's JIT (``burn_flex.jit``, ``kernels/ll/conv.ll``): im2col is one
compiled pass over the input (no padded copy; numpy's strided copy runs OW-element
inner loops, slow for LeNet's OW = 8), for every stride / padding / dilation, so the
wide layout is not needed; the input gradient is per-image GEMMs (columns = W^T @ g)
and a compiled col2im that adds the columns straight into the unpadded result (it
replaces the rows path: 0.6-0.8x its time on the LeNet and 32->64 3x3 shapes, one
thread). Other dtypes, or ``BURN_FLEX_JIT=0``, run the numpy paths below.

Threads (``burn_flex.threads``): every kernel splits its images (or, for the
batch-innermost input gradient, its row positions) into contiguous chunks run
by ``parallel_for``; each chunk does its own im2col copy, GEMMs and scatters.
numpy releases the GIL in all of them, so the chunks run on separate cores.
The algorithm per shape:

- per-image GEMMs small enough that OpenBLAS runs them on one thread anyway
  (``m * n * k <= _BLAS_ONE_THREAD``, OpenBLAS's own threshold): chunks of
  images in parallel, so im2col, GEMMs and col2im all use every core;
- larger per-image GEMMs: OpenBLAS threads each GEMM itself, so the images run
  on the calling thread in order (splitting them as well would oversubscribe
  the cores);
- float32 with the JIT, one group, at most ``_FOLDED_MAX_POSITIONS`` output
  positions per image: one GEMM with the batch folded into N ([C_out, K] @
  [K, N * P]; conv.ll's im2col writes that layout directly, the output takes one
  transposing copy). Per-image GEMMs of 64 or 16 columns run far below BLAS's
  speed; folded, LeNet's second conv took 0.72x the time forward + weight
  gradient and 0.8x the input gradient, the digits CNN's 4 x 4 conv 0.9x (two
  threads, same run). With the numpy im2col (a batch-strided copy) folding was
  slower, and it still is for wide outputs (LeNet's 24 x 24 first conv).

Chunks hold at least ``_TASK_MACS`` multiply-adds (or ``_TASK_ELEMS`` elements
for pooling and copies), so small convolutions stay on the calling thread.
"""
from __future__ import annotations

import functools

import numpy as np
from numpy.lib.stride_tricks import as_strided

from burn.ops.conv import avg_divisor as _avg_divisor
from burn.ops.conv import compute_dtype as _compute_dtype
from burn.ops.conv import conv_out_hw as _out_hw
from burn.ops.conv import pad_nchw
from burn.ops.conv import window_offsets as _offsets

from .. import jit, native_pool, threads
from .conv_direct import (direct_conv, direct_grad_input, direct_grad_input_ok, direct_grad_weight,
                          direct_grad_weight_ok, grad_weight_rows, grad_weight_rows_ok, use_direct)
from .elementwise import where as _where

__all__ = ["conv_kernels"]

# OpenBLAS runs a GEMM on one thread when m * n * k <= SMP_THRESHOLD_MIN (65536) *
# GEMM_MULTITHREAD_THRESHOLD (4): below it, images in parallel; above it BLAS threads
_BLAS_ONE_THREAD = 65536 * 4
# the least work a chunk gets, so a thread hand-off (~20-50 us) stays a small share
_TASK_MACS = 1 << 19
_TASK_ELEMS = 1 << 16


def _image_chunks(n, body, *, macs_per_image=0, elems_per_image=0, gemm_macs=0, bytes_per_image=0):
    """Run ``body(a, b)`` over images [0, n): chunks (in parallel only where BLAS chunks may run on
    the pool, see ``threads``), each chunk in memory blocks.

    ``gemm_macs`` is the size of one of the chunk's GEMMs: above ``_BLAS_ONE_THREAD``
    BLAS threads it, so the chunks run one after another on the calling thread.
    Blocks keep each chunk's im2col buffer under ``_COLS_BYTES / threads``.
    """
    if gemm_macs > _BLAS_ONE_THREAD:
        min_chunk = n
    elif macs_per_image:
        min_chunk = -(-_TASK_MACS // macs_per_image)
    else:
        min_chunk = -(-_TASK_ELEMS // max(1, elems_per_image))
    step = max(1, _COLS_BYTES // max(1, bytes_per_image * threads.num_threads()))

    def work(a, b):
        for s in range(a, b, step):
            body(s, min(b, s + step))
    threads.parallel_for(n, work, max(1, min_chunk), blas=True)      # every body runs a GEMM


def _pad(x, padding, value=0):
    return pad_nchw(x, padding, value, np.full)


def _windows(xp, kernel, stride, dilation, out_hw):
    """Read-only view [N, C, kH, kW, OH, OW] of the padded input."""
    s0, s1, s2, s3 = xp.strides
    return as_strided(xp, xp.shape[:2] + tuple(kernel) + tuple(out_hw),
                      (s0, s1, s2 * dilation[0], s3 * dilation[1], s2 * stride[0], s3 * stride[1]),
                      writeable=False)


# tests switch this off to compare the JIT im2col / col2im with the numpy paths
_JIT_COLUMNS = True


def _jit_columns(dt):
    """flex's JIT kernels when float32 columns may use its im2col / col2im, else None."""
    if not _JIT_COLUMNS or dt != np.float32:
        return None
    return jit.kernels()


@functools.lru_cache(maxsize=64)
def _geometry(hw, kernel, stride, padding, dilation, out_hw):
    """The loop bounds of ``kernels/ll/conv.ll`` for one conv geometry (see its header):
    ``(d without its plane count, rowoff, colr)``, int64 arrays, read-only (cached)."""
    h, w = hw
    kh, kw = kernel
    oh, ow = out_hw
    ih = np.arange(oh)[None, :] * stride[0] + np.arange(kh)[:, None] * dilation[0] - padding[0]
    rowoff = np.where((ih >= 0) & (ih < h), ih * w, -1).astype(np.int64)
    # per kernel row: 1 when none of its output rows reads padding (conv.ll's fast path)
    rowoff = np.concatenate([rowoff.reshape(-1), (rowoff >= 0).all(axis=1).astype(np.int64)])
    co = np.arange(kw) * dilation[1] - padding[2]
    sw = stride[1]
    lo = np.where(co >= 0, 0, (-co + sw - 1) // sw)
    hi = np.where(w - co > 0, (w - co + sw - 1) // sw, 0)
    lo = np.minimum(lo, ow)
    hi = np.maximum(np.minimum(hi, ow), lo)
    colr = np.concatenate([lo, hi, co]).astype(np.int64)
    d = np.array([0, h * w, kh, kw, oh, ow, sw, 1, 0, 0, 0], np.int64)      # P and the layout: _run_columns
    for a in (rowoff, colr, d):
        a.flags.writeable = False
    return d, rowoff, colr


@functools.lru_cache(maxsize=64)
def _gather_geometry(hw, kernel, stride, padding, dilation, out_hw):
    """conv.ll's gathering im2col geometry: ``(d without P and the layout, tab)`` (see its header),
    read-only (cached). ``tab[q, e]`` is the plane offset kernel offset q reads for output
    position e, -1 for padding and for the positions past OH * OW that round each row up to 8."""
    h, w = hw
    kh, kw = kernel
    oh, ow = out_hw
    ih = (np.arange(kh)[:, None, None, None] * dilation[0] + np.arange(oh)[None, None, :, None] * stride[0]
          - padding[0])
    iw = (np.arange(kw)[None, :, None, None] * dilation[1] + np.arange(ow)[None, None, None, :] * stride[1]
          - padding[2])
    tab = np.where((ih >= 0) & (ih < h) & (iw >= 0) & (iw < w), ih * w + iw, -1).reshape(kh * kw, oh * ow)
    length = oh * ow
    len8 = -(-length // 8) * 8
    tab = np.pad(tab, ((0, 0), (0, len8 - length)), constant_values=-1).astype(np.int32)
    d = np.array([0, h * w, 1, kh * kw, length, len8, 0, 0, 0], np.int64)
    for a in (tab, d):
        a.flags.writeable = False
    return d, tab


def _run_columns(fn, arrays, planes, geometry, channels=1, folded_images=0):
    """``fn(*arrays, d, rowoff, colr)`` over ``planes`` planes (im2col / col2im of conv.ll) of
    images of ``channels`` planes each: columns per image ([P, KH, KW, OH * OW]), or with
    ``folded_images`` = N the batch folded into the columns ([C * KH * KW, N * OH * OW])."""
    d, rowoff, colr = geometry
    d = d.copy()
    d[0], d[7] = planes, channels
    d[8:11] = _column_layout(int(d[4] * d[5]), int(d[2] * d[3]), channels, folded_images)
    fn(*arrays, d, rowoff, colr)


def _column_layout(p_len, kk, channels, folded_images):
    """``(RS, IS, CS)`` of conv.ll's column layouts (its header): the row, image and channel
    strides of the per-image columns, or of the folded ones for ``folded_images`` = N."""
    rs = folded_images * p_len if folded_images else p_len
    return (rs, p_len, kk * rs) if folded_images else (rs, channels * kk * rs, kk * rs)


def _run_gather(k, x, out, planes, geometry, channels, folded_images=0):
    """conv.ll's gathering im2col of ``planes`` planes into ``out``, in :func:`_run_columns`'s layouts."""
    d, tab = geometry
    d = d.copy()
    d[0], d[2] = planes, channels
    d[6:9] = _column_layout(int(d[4]), int(d[3]), channels, folded_images)
    k.im2col_gather(x, out, d, tab)


def _im2col_jit(k, x, kernel, stride, padding, dilation, groups, out_hw, out=None):
    """:func:`_im2col` by the JIT kernel (float32): the same columns, one pass, no padded copy."""
    n, c = x.shape[:2]
    if out is None:
        out = np.empty((n, groups, c // groups * kernel[0] * kernel[1], out_hw[0] * out_hw[1]), np.float32)
    if out.size:
        _columns(k, np.ascontiguousarray(x), out, kernel, stride, padding, dilation, out_hw)
    return out


def _use_gather(hw, stride, out_hw):
    """Whether im2col gathers (conv.ll's ``im2col_gather_f32``) instead of copying rows: for output
    rows shorter than a vector, or strided ones up to two vectors, where the row copies' per-row
    tests and scalar loads cost more (one thread: the digits CNN's 4 x 4 planes 160 -> 73 us, its 8 x 8
    ones 25 -> 20 us, a stride-2 15 x 15 -> 8 x 8 16 -> 11 us; 7 x 7 outputs 179 -> 122 us; at 16 wide
    or more the row copies win: 14 x 14 outputs 732 vs 980 us)."""
    return hw[0] * hw[1] < 2 ** 31 and (out_hw[1] < 8 or (stride[1] != 1 and out_hw[1] < 16))


def _columns(k, x, out, kernel, stride, padding, dilation, out_hw, folded_images=0):
    """conv.ll's im2col of contiguous float32 ``x`` [N, C, H, W] into ``out``: per-image columns,
    or with ``folded_images`` = N the folded layout (see :func:`_run_columns`)."""
    n, c = x.shape[:2]
    args = (tuple(x.shape[2:]), tuple(kernel), tuple(stride), tuple(padding), tuple(dilation), tuple(out_hw))
    if _use_gather(args[0], args[2], args[5]):
        _run_gather(k, x, out, n * c, _gather_geometry(*args), c, folded_images)
    else:
        _run_columns(k.im2col, (x, out), n * c, _geometry(*args), channels=c, folded_images=folded_images)


def _im2col(x, kernel, stride, padding, dilation, groups, out_hw, out=None):
    """Columns [N, G, C/G * kH * kW, OH * OW]: one copy of the window view, in its own order
    (into ``out`` when given)."""
    v = _windows(_pad(x, padding), kernel, stride, dilation, out_hw)
    if out is None:
        return np.ascontiguousarray(v).reshape(x.shape[0], groups, -1, out_hw[0] * out_hw[1])
    np.copyto(out.reshape(v.shape), v)
    return out


def _im2col_wide(x, kernel, padding, dilation, groups, out_h, out=None):
    """Stride-1 columns [N, G, C/G * kH * kW, OH * Wp] over the padded width Wp.

    Each window offset (i, j) is then one flat shift of the padded image, so the
    copy runs over OH * Wp contiguous elements instead of OW-element rows (which
    numpy copies slowly when OW is small). Columns OW..Wp-1 of each row are junk
    that callers drop (forward) or multiply by zero (weight gradient).
    """
    n, c, h, w = x.shape
    pt, pb, pl, pr = padding
    hp, wp = h + pt + pb, w + pl + pr
    flat = np.zeros((n, c, hp * wp + dilation[1] * (kernel[1] - 1)), dtype=x.dtype)
    flat[:, :, :hp * wp].reshape(n, c, hp, wp)[:, :, pt:pt + h, pl:pl + w] = x
    s0, s1, e = flat.strides[0], flat.strides[1], flat.strides[2]
    v = as_strided(flat, (n, c) + tuple(kernel) + (out_h * wp,),
                   (s0, s1, dilation[0] * wp * e, dilation[1] * e, e), writeable=False)
    if out is None:
        return np.ascontiguousarray(v).reshape(n, groups, -1, out_h * wp), wp
    np.copyto(out.reshape(v.shape), v)
    return out, wp


# wide columns cost Wp / OW more GEMM work; past this ratio the cheaper copy does not pay
_WIDE_MAX = 1.25
# im2col buffers are built for blocks of images no larger than this, so a big
# batch of big images never allocates gigabytes of columns at once
_COLS_BYTES = 64 << 20


def _use_wide(stride, w, padding, ow):
    return stride == (1, 1) and w + padding[2] + padding[3] <= _WIDE_MAX * ow


def _cols_bytes(c, kernel, out_hw, width, itemsize):
    return c * kernel[0] * kernel[1] * out_hw[0] * width * itemsize


# The forward convolution's columns, kept for the weight gradient of the same input
# (autodiff hands the very same input array to conv2d_grad_weight): saves the second
# im2col copy, the largest single cost of a small CNN's backward pass. Entries are
# keyed by the input array's identity (checked through a weak reference, so a new
# array at a recycled address never matches) and the conv attributes; the weight
# gradient takes its entry out, and the cache holds at most a few entries / bytes,
# so forward-only use keeps only the latest columns alive.
_COLS_CACHE: dict = {}
_COLS_CACHE_MAX_BYTES = 64 << 20
_COLS_CACHE_MAX_ENTRIES = 8


def _cols_key(x, kernel, stride, padding, dilation, groups):
    return (id(x), x.shape, x.dtype.str, tuple(kernel), stride, padding, dilation, groups)


def _cols_put(x, key, value, nbytes):
    import weakref
    try:
        ref = weakref.ref(x)
    except TypeError:
        return
    if nbytes > _COLS_CACHE_MAX_BYTES:
        return
    _COLS_CACHE[key] = (ref, value, nbytes)
    total = sum(e[2] for e in _COLS_CACHE.values())
    while _COLS_CACHE and (len(_COLS_CACHE) > _COLS_CACHE_MAX_ENTRIES or total > _COLS_CACHE_MAX_BYTES):
        old = next(iter(_COLS_CACHE))
        total -= _COLS_CACHE.pop(old)[2]


def _cols_take(x, key):
    e = _COLS_CACHE.pop(key, None)
    if e is None or e[0]() is not x:
        return None
    return e[1]


# Batch-folded convolutions (float32 with flex's JIT, groups 1): the columns of the whole batch as one
# [C * kH * kW, N * OH * OW] matrix (conv.ll writes that layout directly), so each pass is one GEMM
# that OpenBLAS threads and runs at full width, instead of N small per-image GEMMs it runs on one
# thread (LeNet's [16, 150] @ [150, 64], the digits CNN's [32, 144] @ [144, 16]). The forward output
# and the gradient come in [C_out, N, OH * OW] and take one transposing copy. Used where the
# per-image GEMMs are small enough that OpenBLAS would not thread them, and the columns fit
# _COLS_BYTES; larger per-image GEMMs already run threaded and keep the per-image layout.
_FOLDED = True


# output positions per image at most: past this, the per-image GEMMs are wide enough that
# folding buys nothing (LeNet's first conv, 24 x 24: measured 5-10% slower folded, one and two threads)
_FOLDED_MAX_POSITIONS = 256


def _folded(k, groups, n, out_hw, per_image_gemm, cols_bytes):
    return (_FOLDED and k is not None and groups == 1 and n > 1 and out_hw[0] * out_hw[1] <= _FOLDED_MAX_POSITIONS
            and per_image_gemm <= _BLAS_ONE_THREAD and n * cols_bytes <= _COLS_BYTES)


def _im2col_folded(k, x, kernel, stride, padding, dilation, out_hw):
    """Columns [C * kH * kW, N * OH * OW] of float32 ``x`` (conv.ll's folded layout)."""
    n, c = x.shape[:2]
    p_len = out_hw[0] * out_hw[1]
    cols = np.empty((c * kernel[0] * kernel[1], n * p_len), np.float32)
    _columns(k, np.ascontiguousarray(x), cols, kernel, stride, padding, dilation, out_hw, folded_images=n)
    return cols


def _unfold(y2, n, shape):
    """[C, N * P] -> a fresh C-contiguous [N, C, ...] array of ``shape``."""
    out = np.empty(shape, y2.dtype)
    np.copyto(out.reshape(n, y2.shape[0], -1), y2.reshape(y2.shape[0], n, -1).transpose(1, 0, 2))
    return out


def _fold(g):
    """[N, C, ...] -> a fresh [C, N * P] array (the folded layout of a gradient)."""
    n, c = g.shape[:2]
    out = np.empty((c, n, g[0, 0].size), g.dtype)
    np.copyto(out, g.reshape(n, c, -1).transpose(1, 0, 2))
    return out.reshape(c, -1)


def conv2d(x, w, *, stride, padding, dilation, groups):
    x_in = x
    dt = x.dtype
    ct = _compute_dtype(dt)
    x, w = x.astype(ct, copy=False), w.astype(ct, copy=False)
    n, c = x.shape[:2]
    c_out, kernel = w.shape[0], w.shape[2:]
    oh, ow = out_hw = _out_hw(x.shape, kernel, stride, padding, dilation)
    wg = w.reshape(groups, c_out // groups, -1)
    k = _jit_columns(ct)
    if dt == ct and use_direct(k, dt, groups, n, wg[0].size * oh * ow):
        return direct_conv(k, x, w, stride, padding, dilation, out_hw)
    if dt == ct and _folded(k, groups, n, out_hw, wg.shape[1] * wg.shape[2] * oh * ow,
                            _cols_bytes(c, kernel, out_hw, ow, x.itemsize)):
        cols = _im2col_folded(k, x, kernel, stride, padding, dilation, out_hw)
        y = _unfold(np.matmul(wg[0], cols), n, (n, c_out) + out_hw)
        if cols.nbytes <= _COLS_CACHE_MAX_BYTES:
            _cols_put(x_in, _cols_key(x_in, kernel, stride, padding, dilation, groups), (cols, "folded"),
                      cols.nbytes)
        return y
    wide = k is None and _use_wide(stride, x.shape[3], padding, ow)
    width = x.shape[3] + padding[2] + padding[3] if wide else ow
    y = np.empty((n, c_out) + out_hw, dtype=dt)
    per_image = _cols_bytes(c, kernel, out_hw, width, x.itemsize)
    # the whole batch's columns are kept for the weight gradient when they are small enough
    keep = n * per_image <= _COLS_CACHE_MAX_BYTES
    cols_all = np.empty((n, groups, wg.shape[2], oh * width), dtype=ct) if keep else None
    direct = not wide and dt == ct          # the GEMM writes straight into y (NCHW, contiguous)

    def body(a, b):
        out = cols_all[a:b] if keep else None
        if wide:
            cols, wp = _im2col_wide(x[a:b], kernel, padding, dilation, groups, oh, out)
            y[a:b] = np.matmul(wg, cols).reshape(-1, c_out, oh, wp)[..., :ow]
        else:
            if k is not None:
                cols = _im2col_jit(k, x[a:b], kernel, stride, padding, dilation, groups, out_hw, out)
            else:
                cols = _im2col(x[a:b], kernel, stride, padding, dilation, groups, out_hw, out)
            if direct:
                np.matmul(wg, cols, out=y[a:b].reshape(b - a, groups, c_out // groups, oh * ow))
            else:
                y[a:b] = np.matmul(wg, cols).reshape((-1, c_out) + out_hw)
    gemm = wg.shape[1] * wg.shape[2] * oh * width
    _image_chunks(n, body, macs_per_image=groups * gemm, gemm_macs=gemm, bytes_per_image=per_image)
    if keep:
        key = _cols_key(x_in, kernel, stride, padding, dilation, groups)
        _cols_put(x_in, key, (cols_all, width if wide else None), cols_all.nbytes)
    return y


def _widen(g, wp):
    """[N, C, OH, OW] -> [N, C, OH * Wp] with zeros in the junk columns of wide im2col."""
    n, c, oh, ow = g.shape
    out = np.zeros((n, c, oh, wp), dtype=g.dtype)
    out[..., :ow] = g
    return out.reshape(n, c, oh * wp)


# output positions per image from which the per-image weight gradient takes the JIT's dot products,
# for weights of at most _DOT_MAX_OUTPUTS elements (a larger gradient is a GEMM BLAS runs well: a
# 32->64 3x3 conv's [64, 256] @ [256, 288] per image took 3x longer as dot products)
_DOT_MIN_POSITIONS = 256
_DOT_MAX_OUTPUTS = 512


def conv2d_grad_weight(x, g, *, stride, padding, dilation, groups, kernel_hw):
    cached = _cols_take(x, _cols_key(x, kernel_hw, stride, padding, dilation, groups))
    dt = x.dtype
    ct = _compute_dtype(dt)
    x, g = x.astype(ct, copy=False), g.astype(ct, copy=False)
    jk = _jit_columns(ct)
    taps = x.shape[1] * kernel_hw[0] * kernel_hw[1]
    if dt == ct and direct_grad_weight_ok(jk, dt, groups, g.shape[0] * g.shape[2] * g.shape[3], g.shape[1], taps):
        return direct_grad_weight(jk, x, g, stride, padding, dilation, kernel_hw)
    if dt == ct and grad_weight_rows_ok(jk, dt, groups, stride, g.shape[1], taps):
        return grad_weight_rows(jk, x, g, padding, dilation, kernel_hw)
    n, c = x.shape[:2]
    c_out, out_hw = g.shape[1], g.shape[2:]
    k = c // groups * kernel_hw[0] * kernel_hw[1]
    folded = cached[1] == "folded" if cached is not None else \
        _folded(jk, groups, n, out_hw, c_out * k * out_hw[0] * out_hw[1], _cols_bytes(c, kernel_hw, out_hw, out_hw[1], 4))
    if folded:                   # one GEMM over the whole batch: [C_out, N * P] @ [N * P, K]
        if not g.size:
            return np.zeros((c_out, c) + tuple(kernel_hw), dtype=dt)
        cols = cached[0] if cached is not None else \
            _im2col_folded(jk, x, kernel_hw, stride, padding, dilation, out_hw)
        gw = np.matmul(_fold(g), cols.T)
        return gw.reshape((c_out, c) + tuple(kernel_hw)).astype(dt, copy=False)
    if cached is not None:       # the columns the forward made decide the layout
        wide = cached[1] is not None
    else:
        wide = jk is None and _use_wide(stride, x.shape[3], padding, out_hw[1])
    width = x.shape[3] + padding[2] + padding[3] if wide else out_hw[1]
    # long rows (LeNet's first conv: 576 positions, a [6, 576] @ [576, 25] GEMM per image, which
    # OpenBLAS runs at a fraction of its speed): the JIT's dot products, 0.8x the batched matmul's time
    dot_rows = (jk is not None and not wide and groups == 1       # jk: float32 columns
                and out_hw[0] * out_hw[1] >= _DOT_MIN_POSITIONS and c_out * k <= _DOT_MAX_OUTPUTS)
    partial = {}                 # chunk start -> its sum over images [G, C_out/G, K]

    def body(a, b):
        if cached is not None:   # the forward's columns of this very input
            cols, wp = cached[0][a:b], cached[1]
        elif wide:
            cols, wp = _im2col_wide(x[a:b], kernel_hw, padding, dilation, groups, out_hw[0])
        elif jk is not None:
            cols = _im2col_jit(jk, x[a:b], kernel_hw, stride, padding, dilation, groups, out_hw)
        else:
            cols = _im2col(x[a:b], kernel_hw, stride, padding, dilation, groups, out_hw)
        gr = _widen(g[a:b], wp) if wide else g[a:b]
        if dot_rows:             # per image, one dot product per output (rows.ll), images in order
            partial[a] = jk.dot_nt_sum(np.ascontiguousarray(gr).reshape(b - a, c_out, -1),
                                       np.ascontiguousarray(cols).reshape(b - a, k, -1),
                                       np.empty((c_out, k), np.float32)).reshape(1, c_out, k)
            return
        gr = gr.reshape(b - a, groups, c_out // groups, -1)
        partial[a] = np.matmul(gr, cols.transpose(0, 1, 3, 2)).sum(axis=0)
    gemm = c_out // groups * k * out_hw[0] * width
    _image_chunks(n, body, macs_per_image=groups * gemm, gemm_macs=gemm,
                  bytes_per_image=_cols_bytes(c, kernel_hw, out_hw, width, x.itemsize))
    gw = np.zeros((groups, c_out // groups, k), dtype=ct)
    for a in sorted(partial):    # a fixed order: the same sum for the same chunking
        gw += partial[a]
    return gw.reshape((c_out, c // groups) + tuple(kernel_hw)).astype(dt, copy=False)


# tests switch this off to check the fast input gradient against the general path
_ROWS_GRAD_INPUT = True
_JIT_GRAD_INPUT = True


def _grad_input_rows(g, w, padding, input_hw):
    """Stride-1, undilated, ungrouped input gradient as a full correlation, batch innermost.

    The gradient is laid out [position, C_out, N] over the padded input width Wp
    (flat positions, zero columns past OW, kW - 1 zero positions in front). For a
    kernel row i, the contribution to input position r + i*Wp is
    ``sum_j w[:, :, i, j].T @ g[r - j]``, and the kW gradient blocks g[r - kW + 1 .. r]
    are one contiguous [kW * C_out, N] matrix: a strided view, no im2col copy. So one
    batched GEMM (``W' [(i, c), (j, o)] @ view[r]``) gives every row's contribution,
    and kH adds of long contiguous runs [R, C * N] assemble them (col2im with C * N
    elements per row instead of OW). About 2x faster than GEMM + col2im on a LeNet conv.
    Threads split the row positions (GEMMs, adds) and the images (the copies in and out).
    """
    n, c_out, oh, ow = g.shape
    c = w.shape[1]
    kh, kw = w.shape[2:]
    h, wd = input_hw
    pt, pb, pl, pr = padding
    hp, wp = h + pt + pb, wd + pl + pr
    rows = oh * wp + kw - 1
    gpad = np.zeros((rows + kw - 1, c_out, n), dtype=g.dtype)
    gt = g.transpose(2, 3, 1, 0)
    inner = gpad[kw - 1:kw - 1 + oh * wp].reshape(oh, wp, c_out, n)

    def spread(a, b):            # gradient rows a..b-1 into the batch-innermost layout
        inner[a:b, :ow] = gt[a:b]
    threads.parallel_for(oh, spread, max(1, _TASK_ELEMS // (ow * c_out * n)))
    e = gpad.itemsize
    view = as_strided(gpad, (rows, kw * c_out, n), (c_out * n * e, n * e, e), writeable=False)
    # W'[(i, c), (j', o)] = w[o, c, i, kW-1-j']: view[r] holds g[r - kW + 1 + j'] at block j'
    wf = w[:, :, :, ::-1].transpose(2, 1, 3, 0).reshape(kh * c, kw * c_out)
    part = np.empty((rows, kh * c, n), dtype=g.dtype)
    gemm = kh * c * kw * c_out * n

    def gemms(a, b):
        np.matmul(wf, view[a:b], out=part[a:b])
    threads.parallel_for(rows, gemms, rows if gemm > _BLAS_ONE_THREAD else -(-_TASK_MACS // gemm), blas=True)
    part = part.reshape(rows, kh, c * n)
    flat = np.zeros((hp * wp + kw - 1, c * n), dtype=g.dtype)

    def assemble(a, b):          # flat positions a..b-1: each kernel row's overlap with them
        for i in range(kh):
            lo, hi = max(a, i * wp), min(b, i * wp + rows)
            if lo < hi:
                flat[lo:hi] += part[lo - i * wp:hi - i * wp, i]
    threads.parallel_for(len(flat), assemble, max(1, _TASK_ELEMS // (kh * c * n)))
    gx = flat[:hp * wp].reshape(hp, wp, c, n)[pt:pt + h, pl:pl + wd].transpose(3, 2, 0, 1)
    out = np.empty(gx.shape, dtype=g.dtype)

    def back(a, b):              # images a..b-1 back to NCHW
        out[a:b] = gx[a:b]
    threads.parallel_for(n, back, max(1, _TASK_ELEMS // (c * h * wd)))
    return out


def _grad_input_jit(k, g, w, stride, padding, dilation, groups, input_hw):
    """Input gradient as per-image GEMMs (columns = W^T @ g) and the JIT col2im, which adds the
    columns straight into the unpadded NCHW result (float32, any stride / dilation / groups)."""
    n, c_out, oh, ow = g.shape
    c = w.shape[1] * groups
    kernel = tuple(w.shape[2:])
    wt = w.reshape(groups, c_out // groups, -1).transpose(0, 2, 1)     # [G, C/G*kH*kW, C_out/G]
    gx = np.zeros((n, c) + tuple(input_hw), dtype=np.float32)
    geo = _geometry(tuple(input_hw), kernel, tuple(stride), tuple(padding), tuple(dilation), (oh, ow))
    if _folded(k, groups, n, (oh, ow), wt.shape[1] * c_out * oh * ow, _cols_bytes(c, kernel, (oh, ow), ow, 4)):
        cols = np.matmul(wt[0], _fold(g))                                # [C*kH*kW, N * P], one GEMM
        _run_columns(k.col2im, (cols, gx), n * c, geo, channels=c, folded_images=n)
        return gx
    gr = np.ascontiguousarray(g).reshape(n, groups, c_out // groups, oh * ow)

    def body(a, b):
        cols = np.matmul(wt, gr[a:b])                                    # [b-a, G, C/G*kH*kW, P]
        _run_columns(k.col2im, (cols, gx[a:b]), (b - a) * c, geo, channels=c)
    gemm = wt.shape[1] * wt.shape[2] * oh * ow
    _image_chunks(n, body, macs_per_image=groups * gemm, gemm_macs=gemm,
                  bytes_per_image=_cols_bytes(c, kernel, (oh, ow), ow, 4))
    return gx


def conv2d_grad_input(g, w, *, stride, padding, dilation, groups, input_hw):
    dt = g.dtype
    ct = _compute_dtype(dt)
    g, w = g.astype(ct, copy=False), w.astype(ct, copy=False)
    k = _jit_columns(ct)
    if dt == ct and g.size and direct_grad_input_ok(k, dt, groups, stride, padding, dilation, w.shape[2:],
                                                       input_hw, g.shape[2:], w.shape[1]):
        return direct_grad_input(k, g, w, padding, dilation, input_hw)
    if k is not None and g.size and _JIT_GRAD_INPUT:
        return _grad_input_jit(k, g, w, stride, padding, dilation, groups, input_hw).astype(dt, copy=False)
    if _ROWS_GRAD_INPUT and stride == (1, 1) and dilation == (1, 1) and groups == 1 and g.size:
        n = g.shape[0]
        per_image = (g.shape[2] * (input_hw[1] + padding[2] + padding[3]) + 2 * w.shape[3]) \
            * w.shape[2] * w.shape[1] * g.itemsize
        if n * per_image <= _COLS_BYTES:
            return _grad_input_rows(g, w, padding, input_hw).astype(dt, copy=False)
        gx = np.empty((n, w.shape[1]) + tuple(input_hw), dtype=ct)
        step = max(1, _COLS_BYTES // per_image)
        for a in range(0, n, step):
            gx[a:a + step] = _grad_input_rows(g[a:a + step], w, padding, input_hw)
        return gx.astype(dt, copy=False)
    n, c_out, oh, ow = g.shape
    c = w.shape[1] * groups
    kh, kw = kernel = w.shape[2:]
    h, wd = input_hw
    pt, pb, pl, pr = padding
    hp, wp = h + pt + pb, wd + pl + pr
    wt = w.reshape(groups, c_out // groups, -1).transpose(0, 2, 1)     # [G, C/G*kH*kW, C_out/G]
    gemm = wt.shape[1] * wt.shape[2] * oh * (wp if stride == (1, 1) else ow)
    if stride == (1, 1):
        # Widen the gradient rows to the padded input width: the window offset (i, j)
        # then is one flat shift i*dh*Wp + j*dw, so col2im adds long contiguous runs
        # instead of OW-element rows. The extra columns hold zeros and add nothing.
        span = oh * wp
        flat = np.zeros((n, c, hp * wp + dilation[1] * (kw - 1)), dtype=ct)

        def body(a, b):
            gr = _widen(g[a:b], wp).reshape(-1, groups, c_out // groups, span)
            cols = np.matmul(wt, gr).reshape(-1, c, kh * kw, span)
            fb = flat[a:b]
            for i in range(kh):
                for j in range(kw):
                    off = i * dilation[0] * wp + j * dilation[1]
                    fb[:, :, off:off + span] += cols[:, :, i * kw + j]
        _image_chunks(n, body, macs_per_image=groups * gemm, gemm_macs=gemm,
                      bytes_per_image=_cols_bytes(c, kernel, (oh, ow), wp, flat.itemsize))
        gxp = flat[:, :, :hp * wp].reshape(n, c, hp, wp)
    else:
        gxp = np.zeros((n, c, hp, wp), dtype=ct)

        def body(a, b):
            cols = np.matmul(wt, g[a:b].reshape(-1, groups, c_out // groups, oh * ow))
            cols = cols.reshape((-1, c) + tuple(kernel) + (oh, ow))
            gb = gxp[a:b]
            for i, j, rs, cs in _offsets(kernel, stride, dilation, (oh, ow)):
                gb[:, :, rs, cs] += cols[:, :, i, j]
        _image_chunks(n, body, macs_per_image=groups * gemm, gemm_macs=gemm,
                      bytes_per_image=_cols_bytes(c, kernel, (oh, ow), ow, gxp.itemsize))
    return _crop(gxp, padding, input_hw).astype(dt, copy=False)


def _crop(xp, padding, hw):
    pt, _, pl, _ = padding
    if xp.shape[2:] == tuple(hw):
        return xp
    return np.ascontiguousarray(xp[:, :, pt:pt + hw[0], pl:pl + hw[1]])


def _lowest(dt):
    return np.iinfo(dt).min if dt.kind in "iu" else -np.inf


def _pool_chunks(n, per_image, body):
    """Pooling splits its images over the threads (element-wise work: ``_TASK_ELEMS`` a chunk)."""
    threads.parallel_for(n, body, max(1, _TASK_ELEMS // max(1, per_image)))


# tests switch this off to compare the JIT max pooling with the numpy paths
_JIT_POOL = True
# JIT max pooling splits images over the native pool from _SPLIT_ELEMS input elements (~0.5 ms), in
# chunks of _CHUNK_ELEMS at least (smaller ones lost inside a training step: conv_direct._SPLIT_MACS)
_SPLIT_ELEMS, _CHUNK_ELEMS = 1 << 21, 1 << 16


def _jit_pool2(x, kernel, stride, padding, dilation):
    """flex's JIT kernels when this is a float32 2x2 / stride-2 max pooling without padding or
    dilation (``kernels/ll/pool.ll``), else None."""
    if (not _JIT_POOL or x.dtype != np.float32 or tuple(kernel) != (2, 2) or tuple(stride) != (2, 2)
            or any(padding) or tuple(dilation) != (1, 1) or 0 in x.shape or min(x.shape[2:]) < 2):
        return None
    return jit.kernels()


def _run_pool2(kernel, x, arrays):
    """pool.ll's ``kernel`` over ``arrays`` (C-contiguous, per image; the geometry appended): split
    over the native pool from ``_SPLIT_ELEMS``, else as element-wise work."""
    n, c, h, w = x.shape

    def dims(planes):                  # pool.ll's d = [P, H, W, OH, OW]
        return np.array([planes, h, w, h // 2, w // 2], np.int64)
    if x.size >= _SPLIT_ELEMS and native_pool.run_strided(
            kernel, n, arrays + (dims(n * c),), tuple(a[0].nbytes for a in arrays) + (0,),
            -(-_CHUNK_ELEMS // (x.size // n)), geometry=len(arrays), count_per_item=c):
        return
    _pool_chunks(n, x.size // n, lambda a, b: kernel(*[t[a:b] for t in arrays], dims((b - a) * c)))


def max_pool2d(x, *, kernel, stride, padding, dilation):
    out_hw = _out_hw(x.shape, kernel, stride, padding, dilation)
    out = np.empty(x.shape[:2] + out_hw, dtype=x.dtype)
    k = _jit_pool2(x, kernel, stride, padding, dilation)
    if k is not None:        # one compiled pass, the numpy path's maxima bit for bit (pool.ll)
        _run_pool2(k.maxpool2, x, (np.ascontiguousarray(x), out))
        return out

    def body(a, b):
        xp = _pad(x[a:b], padding, _lowest(x.dtype))
        o = out[a:b]
        for k, (_, _, rs, cs) in enumerate(_offsets(kernel, stride, dilation, out_hw)):
            if k == 0:
                o[...] = xp[:, :, rs, cs]
            else:
                np.maximum(o, xp[:, :, rs, cs], out=o)
    _pool_chunks(x.shape[0], x.size // max(1, x.shape[0]), body)
    return out


def _max_pool2d_grad_numpy(x, out, g, kernel, stride, padding, dilation, gx):
    """PyTorch's max-pool gradient with numpy (pool.ll's rule): each window's g goes to one
    input, the first (row-major) element equal to its maximum, or the last NaN of a window whose
    maximum is NaN; padding is never chosen; every other input gets +0.0, whatever g holds.

    The window offsets run in order; each adds ``where(hit, g, 0)`` into its inputs (written once
    where windows do not overlap). Without NaN maxima a hit is the first element equal to the
    maximum (``taken`` remembers the windows served); with them, a first pass picks each
    window's offset (a later NaN replaces an earlier one) and the second adds."""
    xp = _pad(x, padding, _lowest(x.dtype))
    valid = None
    if any(padding):             # padding is never a window's choice, even at a maximum of -inf
        valid = _pad(np.ones(x.shape[2:], bool)[None, None], padding, False)
    offsets = list(_offsets(kernel, stride, dilation, out.shape[2:]))
    mnan = np.isnan(out) if out.dtype.kind in "fc" else None
    sel = None
    if mnan is not None and mnan.any():
        sel = np.full(out.shape, -1, np.int32)
        for k, (_, _, rs, cs) in enumerate(offsets):
            v = xp[:, :, rs, cs]
            pick = (v == out) & (sel < 0)
            if valid is not None:
                pick &= valid[:, :, rs, cs]
            pick &= ~mnan
            pick |= mnan & np.isnan(v)           # a NaN maximum: the last NaN wins
            step = k - sel                       # sel = pick ? k : sel, branch-free (a masked
            step *= pick                         # assignment or np.where branches per element)
            sel += step
    disjoint = all(s >= d * (k - 1) + 1 for k, s, d in zip(kernel, stride, dilation))
    gxp = np.zeros(xp.shape, dtype=g.dtype)
    zero = np.zeros((), g.dtype)
    hit = np.empty(out.shape, dtype=bool)
    taken = None
    for k, (_, _, rs, cs) in enumerate(offsets):
        if sel is not None:
            np.equal(sel, k, out=hit)
        else:
            np.equal(xp[:, :, rs, cs], out, out=hit)
            if valid is not None:
                hit &= valid[:, :, rs, cs]
            if taken is None:
                taken = hit.copy()
            else:
                np.greater(hit, taken, out=hit)  # hit and not taken
                taken |= hit
        part = _where(hit, g, zero)
        if disjoint:
            gxp[:, :, rs, cs] = part
        else:
            gxp[:, :, rs, cs] += part
    gx[...] = _crop(gxp, padding, x.shape[2:])


def max_pool2d_grad(x, out, g, *, kernel, stride, padding, dilation):
    gx = np.empty(x.shape, dtype=g.dtype)
    k = _jit_pool2(x, kernel, stride, padding, dilation) if out.dtype == g.dtype == np.float32 else None
    if k is not None:        # PyTorch's rule per window (pool.ll): the first maximum, or the last NaN
        _run_pool2(k.maxpool2_grad, x, tuple(np.ascontiguousarray(a) for a in (x, out, g)) + (gx,))
        return gx

    def body(a, b):
        _max_pool2d_grad_numpy(x[a:b], out[a:b], g[a:b], kernel, stride, padding, dilation, gx[a:b])
    if x.size:
        _pool_chunks(x.shape[0], x.size // x.shape[0], body)
    else:
        gx[...] = 0
    return gx


def avg_pool2d(x, *, kernel, stride, padding, count_include_pad, dilation=(1, 1)):
    dt = x.dtype
    ct = _compute_dtype(dt)
    out_hw = _out_hw(x.shape, kernel, stride, padding, (1, 1))
    out = np.zeros(x.shape[:2] + out_hw, dtype=ct)
    div = _avg_divisor(x.shape[2:], kernel, stride, padding, count_include_pad, out_hw, ct)

    def body(a, b):
        xp = _pad(x[a:b].astype(ct, copy=False), padding)
        o = out[a:b]
        for _, _, rs, cs in _offsets(kernel, stride, (1, 1), out_hw):
            o += xp[:, :, rs, cs]
        o /= div
    _pool_chunks(x.shape[0], x.size // max(1, x.shape[0]), body)
    return out.astype(dt, copy=False)


def avg_pool2d_grad(g, *, kernel, stride, padding, count_include_pad, input_hw, dilation=(1, 1)):
    dt = g.dtype
    ct = _compute_dtype(dt)
    out_hw = g.shape[2:]
    div = _avg_divisor(input_hw, kernel, stride, padding, count_include_pad, out_hw, ct)
    h, w = input_hw
    pt, pb, pl, pr = padding
    gx = np.empty(g.shape[:2] + tuple(input_hw), dtype=ct)

    def body(a, b):
        gs = g[a:b].astype(ct) / div
        gxp = np.zeros(gs.shape[:2] + (h + pt + pb, w + pl + pr), dtype=ct)
        for _, _, rs, cs in _offsets(kernel, stride, (1, 1), out_hw):
            gxp[:, :, rs, cs] += gs
        gx[a:b] = _crop(gxp, padding, input_hw)
    _pool_chunks(g.shape[0], g.shape[1] * h * w, body)
    return gx.astype(dt, copy=False)


def conv_kernels():
    """Op name -> flex kernel, for ``burn_register_kernels``."""
    return {"conv2d": conv2d, "conv2d_grad_input": conv2d_grad_input, "conv2d_grad_weight": conv2d_grad_weight,
            "max_pool2d": max_pool2d, "max_pool2d_grad": max_pool2d_grad,
            "avg_pool2d": avg_pool2d, "avg_pool2d_grad": avg_pool2d_grad}
