"""numpy kernels of convolution and pooling (the primitives of ``burn.ops.conv``).

Convolutions are im2col + one batched BLAS matmul. The columns are laid out
[N, groups, C/groups * kH * kW, OH * OW], the order of the strided window view,
so im2col is one copy, the forward output comes out NCHW without a transpose,
and numpy's matmul runs one small GEMM per image and group (faster here than
one wide GEMM whose M = C_out is tiny). Inverse scatters (col2im, pooling
gradients) loop over the kH * kW window offsets, each step one vectorized add
into a slice; no Python loop ever runs over pixels or images. The stride-1
input gradient (the common case) skips col2im: it runs as a full correlation
over a batch-innermost layout, one GEMM and kH adds (``_grad_input_rows``).
"""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from burn.ops.conv import avg_divisor as _avg_divisor
from burn.ops.conv import compute_dtype as _compute_dtype
from burn.ops.conv import conv_out_hw as _out_hw
from burn.ops.conv import pad_nchw
from burn.ops.conv import window_offsets as _offsets

__all__ = ["conv_kernels"]


def _pad(x, padding, value=0):
    return pad_nchw(x, padding, value, np.full)


def _windows(xp, kernel, stride, dilation, out_hw):
    """Read-only view [N, C, kH, kW, OH, OW] of the padded input."""
    s0, s1, s2, s3 = xp.strides
    return as_strided(xp, xp.shape[:2] + tuple(kernel) + tuple(out_hw),
                      (s0, s1, s2 * dilation[0], s3 * dilation[1], s2 * stride[0], s3 * stride[1]),
                      writeable=False)


def _im2col(x, kernel, stride, padding, dilation, groups, out_hw):
    """Columns [N, G, C/G * kH * kW, OH * OW]: one copy of the window view, in its own order."""
    v = _windows(_pad(x, padding), kernel, stride, dilation, out_hw)
    return np.ascontiguousarray(v).reshape(x.shape[0], groups, -1, out_hw[0] * out_hw[1])


def _im2col_wide(x, kernel, padding, dilation, groups, out_h):
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
    return np.ascontiguousarray(v).reshape(n, groups, -1, out_h * wp), wp


# wide columns cost Wp / OW more GEMM work; past this ratio the cheaper copy does not pay
_WIDE_MAX = 1.25
# im2col buffers are built for blocks of images no larger than this, so a big
# batch of big images never allocates gigabytes of columns at once
_COLS_BYTES = 64 << 20


def _use_wide(stride, w, padding, ow):
    return stride == (1, 1) and w + padding[2] + padding[3] <= _WIDE_MAX * ow


def _blocks(n, bytes_per_image):
    step = max(1, _COLS_BYTES // max(1, bytes_per_image))
    for b in range(0, n, step):
        yield slice(b, min(n, b + step))


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


def conv2d(x, w, *, stride, padding, dilation, groups):
    x_in = x
    dt = x.dtype
    ct = _compute_dtype(dt)
    x, w = x.astype(ct, copy=False), w.astype(ct, copy=False)
    n, c = x.shape[:2]
    c_out, kernel = w.shape[0], w.shape[2:]
    oh, ow = out_hw = _out_hw(x.shape, kernel, stride, padding, dilation)
    # one small GEMM per image and group beats one wide GEMM: M = C_out is tiny in CNNs
    wg = w.reshape(groups, c_out // groups, -1)
    wide = _use_wide(stride, x.shape[3], padding, ow)
    width = x.shape[3] + padding[2] + padding[3] if wide else ow
    y = np.empty((n, c_out) + out_hw, dtype=dt)
    blocks = list(_blocks(n, _cols_bytes(c, kernel, out_hw, width, x.itemsize)))
    for b in blocks:
        if wide:
            cols, wp = _im2col_wide(x[b], kernel, padding, dilation, groups, oh)
            y[b] = np.matmul(wg, cols).reshape(-1, c_out, oh, wp)[..., :ow]
        else:
            cols = _im2col(x[b], kernel, stride, padding, dilation, groups, out_hw)
            y[b] = np.matmul(wg, cols).reshape((-1, c_out) + out_hw)
    if len(blocks) == 1:
        key = _cols_key(x_in, kernel, stride, padding, dilation, groups)
        _cols_put(x_in, key, (cols, wp if wide else None), cols.nbytes)
    return y


def _widen(g, wp):
    """[N, C, OH, OW] -> [N, C, OH * Wp] with zeros in the junk columns of wide im2col."""
    n, c, oh, ow = g.shape
    out = np.zeros((n, c, oh, wp), dtype=g.dtype)
    out[..., :ow] = g
    return out.reshape(n, c, oh * wp)


def conv2d_grad_weight(x, g, *, stride, padding, dilation, groups, kernel_hw):
    cached = _cols_take(x, _cols_key(x, kernel_hw, stride, padding, dilation, groups))
    dt = x.dtype
    ct = _compute_dtype(dt)
    x, g = x.astype(ct, copy=False), g.astype(ct, copy=False)
    n, c = x.shape[:2]
    c_out, out_hw = g.shape[1], g.shape[2:]
    wide = _use_wide(stride, x.shape[3], padding, out_hw[1])
    width = x.shape[3] + padding[2] + padding[3] if wide else out_hw[1]
    gw = 0
    for b in _blocks(n, _cols_bytes(c, kernel_hw, out_hw, width, x.itemsize)):
        if cached is not None:        # one block: the forward's columns of this very input
            cols, wp = cached
            gr = _widen(g[b], wp) if wide else g[b]
        elif wide:
            cols, wp = _im2col_wide(x[b], kernel_hw, padding, dilation, groups, out_hw[0])
            gr = _widen(g[b], wp)
        else:
            cols = _im2col(x[b], kernel_hw, stride, padding, dilation, groups, out_hw)
            gr = g[b]
        gr = gr.reshape(cols.shape[0], groups, c_out // groups, -1)
        gw = gw + np.matmul(gr, cols.transpose(0, 1, 3, 2)).sum(axis=0)   # [G, C_out/G, C/G*kH*kW]
    return gw.reshape((c_out, c // groups) + tuple(kernel_hw)).astype(dt, copy=False)


# tests switch this off to check the fast input gradient against the general path
_ROWS_GRAD_INPUT = True


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
    """
    n, c_out, oh, ow = g.shape
    c = w.shape[1]
    kh, kw = w.shape[2:]
    h, wd = input_hw
    pt, pb, pl, pr = padding
    hp, wp = h + pt + pb, wd + pl + pr
    rows = oh * wp + kw - 1
    gpad = np.zeros((rows + kw - 1, c_out, n), dtype=g.dtype)
    gpad[kw - 1:kw - 1 + oh * wp].reshape(oh, wp, c_out, n)[:, :ow] = g.transpose(2, 3, 1, 0)
    e = gpad.itemsize
    view = as_strided(gpad, (rows, kw * c_out, n), (c_out * n * e, n * e, e), writeable=False)
    # W'[(i, c), (j', o)] = w[o, c, i, kW-1-j']: view[r] holds g[r - kW + 1 + j'] at block j'
    wf = w[:, :, :, ::-1].transpose(2, 1, 3, 0).reshape(kh * c, kw * c_out)
    part = np.matmul(wf, view).reshape(rows, kh, c * n)
    flat = np.zeros((hp * wp + kw - 1, c * n), dtype=g.dtype)
    for i in range(kh):
        flat[i * wp:i * wp + rows] += part[:, i]
    gx = flat[:hp * wp].reshape(hp, wp, c, n)[pt:pt + h, pl:pl + wd]
    return np.ascontiguousarray(gx.transpose(3, 2, 0, 1))


def conv2d_grad_input(g, w, *, stride, padding, dilation, groups, input_hw):
    dt = g.dtype
    ct = _compute_dtype(dt)
    g, w = g.astype(ct, copy=False), w.astype(ct, copy=False)
    if _ROWS_GRAD_INPUT and stride == (1, 1) and dilation == (1, 1) and groups == 1 and g.size:
        n = g.shape[0]
        per_image = (g.shape[2] * (input_hw[1] + padding[2] + padding[3]) + 2 * w.shape[3]) \
            * w.shape[2] * w.shape[1] * g.itemsize
        blocks = list(_blocks(n, per_image))
        if len(blocks) == 1:
            return _grad_input_rows(g, w, padding, input_hw).astype(dt, copy=False)
        gx = np.empty((n, w.shape[1]) + tuple(input_hw), dtype=ct)
        for b in blocks:
            gx[b] = _grad_input_rows(g[b], w, padding, input_hw)
        return gx.astype(dt, copy=False)
    n, c_out, oh, ow = g.shape
    c = w.shape[1] * groups
    kh, kw = kernel = w.shape[2:]
    h, wd = input_hw
    pt, pb, pl, pr = padding
    hp, wp = h + pt + pb, wd + pl + pr
    wt = w.reshape(groups, c_out // groups, -1).transpose(0, 2, 1)     # [G, C/G*kH*kW, C_out/G]
    if stride == (1, 1):
        # Widen the gradient rows to the padded input width: the window offset (i, j)
        # then is one flat shift i*dh*Wp + j*dw, so col2im adds long contiguous runs
        # instead of OW-element rows. The extra columns hold zeros and add nothing.
        span = oh * wp
        flat = np.zeros((n, c, hp * wp + dilation[1] * (kw - 1)), dtype=ct)
        for b in _blocks(n, _cols_bytes(c, kernel, (oh, ow), wp, flat.itemsize)):
            gr = _widen(g[b], wp).reshape(-1, groups, c_out // groups, span)
            cols = np.matmul(wt, gr).reshape(-1, c, kh * kw, span)
            fb = flat[b]
            for i in range(kh):
                for j in range(kw):
                    off = i * dilation[0] * wp + j * dilation[1]
                    fb[:, :, off:off + span] += cols[:, :, i * kw + j]
        gxp = flat[:, :, :hp * wp].reshape(n, c, hp, wp)
    else:
        gxp = np.zeros((n, c, hp, wp), dtype=ct)
        for b in _blocks(n, _cols_bytes(c, kernel, (oh, ow), ow, gxp.itemsize)):
            cols = np.matmul(wt, g[b].reshape(-1, groups, c_out // groups, oh * ow))
            cols = cols.reshape((-1, c) + tuple(kernel) + (oh, ow))
            gb = gxp[b]
            for i, j, rs, cs in _offsets(kernel, stride, dilation, (oh, ow)):
                gb[:, :, rs, cs] += cols[:, :, i, j]
    return _crop(gxp, padding, input_hw).astype(dt, copy=False)


def _crop(xp, padding, hw):
    pt, _, pl, _ = padding
    if xp.shape[2:] == tuple(hw):
        return xp
    return np.ascontiguousarray(xp[:, :, pt:pt + hw[0], pl:pl + hw[1]])


def _lowest(dt):
    return np.iinfo(dt).min if dt.kind in "iu" else -np.inf


def max_pool2d(x, *, kernel, stride, padding, dilation):
    xp = _pad(x, padding, _lowest(x.dtype))
    out_hw = _out_hw(x.shape, kernel, stride, padding, dilation)
    out = None
    for _, _, rs, cs in _offsets(kernel, stride, dilation, out_hw):
        s = xp[:, :, rs, cs]
        if out is None:
            out = s.copy()
        else:
            np.maximum(out, s, out=out)
    return out


def _max_pool2d_grad_tiled(x, out, g, kernel):
    """Windows tiling the input (stride = kernel, no padding or dilation): each input
    element belongs to one window, so every window offset writes its slice of the
    result once (no zero fill, no accumulation, no padded copy)."""
    oh, ow = out.shape[2:]
    kh, kw = kernel
    exact = x.shape[2] == oh * kh and x.shape[3] == ow * kw
    gx = (np.empty if exact else np.zeros)(x.shape, dtype=g.dtype)
    hit = np.empty(out.shape, dtype=bool)
    taken = None
    last = kh * kw - 1
    for i in range(kh):
        for j in range(kw):
            rs, cs = slice(i, i + kh * (oh - 1) + 1, kh), slice(j, j + kw * (ow - 1) + 1, kw)
            np.equal(x[:, :, rs, cs], out, out=hit)
            # PyTorch routes each window's gradient to its first maximum (row-major):
            # ties are common after a relu (all-zero windows)
            if taken is None:
                taken = hit.copy()
            else:
                np.greater(hit, taken, out=hit)          # hit and not taken
                if i * kw + j < last:
                    taken |= hit
            np.multiply(hit, g, out=gx[:, :, rs, cs])
    return gx


def max_pool2d_grad(x, out, g, *, kernel, stride, padding, dilation):
    if tuple(stride) == tuple(kernel) and not any(padding) and tuple(dilation) == (1, 1) and x.size:
        return _max_pool2d_grad_tiled(x, out, g, kernel)
    xp = _pad(x, padding, _lowest(x.dtype))
    gxp = np.zeros(xp.shape, dtype=g.dtype)
    # windows that do not overlap write each input once: assign instead of accumulate
    disjoint = all(s >= d * (k - 1) + 1 for k, s, d in zip(kernel, stride, dilation))
    offsets = list(_offsets(kernel, stride, dilation, out.shape[2:]))
    hit = np.empty(out.shape, dtype=bool)
    taken = None
    for k, (_, _, rs, cs) in enumerate(offsets):
        np.equal(xp[:, :, rs, cs], out, out=hit)
        # PyTorch routes each window's gradient to its first maximum (row-major)
        if taken is None:
            taken = hit.copy()
        else:
            np.greater(hit, taken, out=hit)          # hit and not taken
            if k + 1 < len(offsets):
                taken |= hit
        if disjoint:
            np.multiply(hit, g, out=gxp[:, :, rs, cs])
        else:
            gxp[:, :, rs, cs] += hit * g
    return _crop(gxp, padding, x.shape[2:])


def avg_pool2d(x, *, kernel, stride, padding, count_include_pad, dilation=(1, 1)):
    dt = x.dtype
    ct = _compute_dtype(dt)
    xp = _pad(x.astype(ct, copy=False), padding)
    out_hw = _out_hw(x.shape, kernel, stride, padding, (1, 1))
    out = np.zeros(x.shape[:2] + out_hw, dtype=ct)
    for _, _, rs, cs in _offsets(kernel, stride, (1, 1), out_hw):
        out += xp[:, :, rs, cs]
    out /= _avg_divisor(x.shape[2:], kernel, stride, padding, count_include_pad, out_hw, ct)
    return out.astype(dt, copy=False)


def avg_pool2d_grad(g, *, kernel, stride, padding, count_include_pad, input_hw, dilation=(1, 1)):
    dt = g.dtype
    ct = _compute_dtype(dt)
    out_hw = g.shape[2:]
    gs = g.astype(ct) / _avg_divisor(input_hw, kernel, stride, padding, count_include_pad, out_hw, ct)
    h, w = input_hw
    pt, pb, pl, pr = padding
    gxp = np.zeros(g.shape[:2] + (h + pt + pb, w + pl + pr), dtype=ct)
    for _, _, rs, cs in _offsets(kernel, stride, (1, 1), out_hw):
        gxp[:, :, rs, cs] += gs
    return _crop(gxp, padding, input_hw).astype(dt, copy=False)


def conv_kernels():
    """Op name -> flex kernel, for ``burn_register_kernels``."""
    return {"conv2d": conv2d, "conv2d_grad_input": conv2d_grad_input, "conv2d_grad_weight": conv2d_grad_weight,
            "max_pool2d": max_pool2d, "max_pool2d_grad": max_pool2d_grad,
            "avg_pool2d": avg_pool2d, "avg_pool2d_grad": avg_pool2d_grad}
