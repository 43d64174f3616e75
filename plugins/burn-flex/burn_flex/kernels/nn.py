"""The ``burn::`` fused nn ops on flex: softmax, log_softmax, layer_norm, cross-entropy and
their gradients, per row with numpy (half types computed in float32). float32 softmax and its
gradient and float32 layer_norm and its gradient (rows of a multiple of 8) run flex's JIT row
kernels (``kernels/ll/rows.ll``: one compiled pass per row, softmax's own exp within 1 ulp, 8-lane
sums; not numpy's bits, the same NaN and inf positions); so do float32 log_softmax and the
cross-entropy's loss and gradient without label smoothing (the row's log once, libm's logf).

softmax, log_softmax, layer_norm and their gradients run large inputs by chunks of rows on
the flex pool (:mod:`burn_flex.threads`). Chunk boundaries fall on multiples of 16 rows and
each row goes through the same numpy and BLAS calls as in one call, so results do not
depend on the thread count; layer_norm_grad's column sums (dweight, dbias) stay whole-array
BLAS products on the calling thread."""
from __future__ import annotations

import numpy as np

from .. import jit, threads

# elements per thread at least: a region costs ~15-20 us of hand-off (docs/benchmarks.md, round 7)
PAR_ROWS = 1 << 15
_ROW_GRAIN = 16


def _ce_prepare(logits, target):
    """Max-shifted float32/64 logits and the checked class indices of one cross-entropy call."""
    x = logits if logits.dtype.itemsize >= 4 else logits.astype(np.float32)
    n, c = x.shape
    if n and (target.min() < 0 or target.max() >= c):
        raise IndexError(f"cross_entropy: target class indices must lie in [0, {c}), got values from "
                         f"{target.min()} to {target.max()}")
    # numpy reduces short rows slowly (~8 us for [128, 10]); over a transposed copy
    # the max is a few vectorized passes
    m = (np.ascontiguousarray(x.T).max(axis=0) if c <= 64 else x.max(axis=1))[:, None]
    # an all -inf row is shifted by 0 (its loss is then nan, as torch's); a +inf max stays,
    # so the row is nan everywhere (torch), not inf
    if (m == -np.inf).any():
        m = np.where(m == -np.inf, 0, m)
    return x - m, np.arange(n), target


def _row_sums(e):
    # a BLAS matrix-vector product sums short rows ~3x faster than e.sum(axis=1)
    return e @ np.ones(e.shape[1], e.dtype)


def _ce_kernels(logits, label_smoothing):
    """flex's JIT kernels when this cross-entropy may take its row kernels (float32 [n, c]
    logits, no label smoothing), else None."""
    if label_smoothing or logits.ndim != 2:
        return None
    return _jit_rows(logits)


def _ce_rows(fn, x, target, *rest):
    """Run a cross-entropy row kernel over chunks of rows on the pool; raises as
    ``_ce_prepare`` does when a class index lies outside [0, c)."""
    t = np.ascontiguousarray(target, dtype=np.int64)
    n = x.shape[0]
    bad = []

    if x.size < PAR_ROWS:          # one chunk: no region to set up
        bad.append(fn(x, t, *rest))
    else:
        def work(a, b):       # per-row arrays (loss, out, a scale per row) are cut with the rows
            bad.append(fn(x[a:b], t[a:b], *[r[a:b] if r.shape[0] == n else r for r in rest]))
        _by_rows(x, work, blas=False)
    if any(bad):
        _ce_prepare(x, target)          # raises the index error, with the offending values
        raise AssertionError("cross_entropy: the row kernel counted a class index the check did not")


def softmax_cross_entropy(logits, target, reduction="mean", label_smoothing=0.0):
    """Fused log-softmax + gather + reduction (burn::softmax_cross_entropy)."""
    k = _ce_kernels(logits, label_smoothing)
    if k is not None:        # one compiled pass per row (kernels/ll/rows.ll): lse - z[t]
        x = np.ascontiguousarray(logits)
        n = x.shape[0]
        loss = np.empty(n, np.float32)
        _ce_rows(k.ce_loss_rows, x, target, loss)
    else:
        z, rows, target = _ce_prepare(logits, target)
        n, c = z.shape
        lse = np.log(_row_sums(np.exp(z)))
        loss = lse - z[rows, target]
        if label_smoothing:
            loss *= 1.0 - label_smoothing
            loss += (lse - z.mean(axis=1)) * label_smoothing
    if reduction == "mean":
        loss = loss.sum() / n if n else np.asarray(np.nan, loss.dtype)
    elif reduction == "sum":
        loss = loss.sum()
    return np.asarray(loss, dtype=logits.dtype)


def softmax_cross_entropy_grad(logits, target, g, reduction="mean", label_smoothing=0.0):
    """``(softmax - smoothed one-hot) * g`` (burn::softmax_cross_entropy_grad)."""
    k = _ce_kernels(logits, label_smoothing)
    if k is not None and logits.shape[0]:
        x = np.ascontiguousarray(logits)
        n = x.shape[0]
        g = np.asarray(g, dtype=np.float32)
        # the scale the numpy path multiplies by, in its precision: g[:, None], g / n or g
        scale = np.ascontiguousarray(g if reduction == "none" else (g / n if reduction == "mean" else g),
                                     dtype=np.float32).reshape(-1)
        out = np.empty_like(x)
        _ce_rows(k.ce_grad_rows, x, target, scale, out)
        return out
    z, rows, target = _ce_prepare(logits, target)
    n, c = z.shape
    p = np.exp(z)
    p /= _row_sums(p)[:, None]
    if label_smoothing:
        p -= label_smoothing / c
    p[rows, target] -= 1.0 - label_smoothing
    g = np.asarray(g, dtype=p.dtype)
    if reduction == "none":
        p *= g[:, None]
    else:
        p *= g / n if reduction == "mean" else g
    return p.astype(logits.dtype, copy=False)


def _rows(x, axis):
    """``x`` as a C-contiguous [rows, n] array with ``axis`` last, and a function putting
    a result of that layout back into ``x``'s."""
    if axis == x.ndim - 1:
        shape = x.shape
        return np.ascontiguousarray(x).reshape(-1, shape[-1]), lambda r: r.reshape(shape)
    xm = np.moveaxis(x, axis, -1)
    shape = xm.shape
    return (np.ascontiguousarray(xm).reshape(-1, shape[-1]),
            lambda r: np.ascontiguousarray(np.moveaxis(r.reshape(shape), -1, axis)))


def _by_rows(x2, work, blas=True):
    """``work(a, b)`` over chunks of the rows of ``x2`` on the pool (BLAS pinned to one thread
    while chunks run: they call matrix-vector products; ``blas=False``: chunks that do not).
    Boundaries at multiples of 16 rows."""
    n, d = x2.shape
    g = _ROW_GRAIN
    threads.parallel_for(-(-n // g), lambda a, b: work(a * g, min(b * g, n)),
                         min_chunk=max(1, PAR_ROWS // (g * max(1, d))), blas=blas)


def _jit_rows(*arrays):
    """flex's JIT kernels when these float32 rows may take its row kernels (softmax, layer norm), else None."""
    if not _JIT_ROWS or any(a.dtype != np.float32 for a in arrays):
        return None
    return jit.kernels()


# tests switch this off to compare the JIT row kernels with the numpy path
_JIT_ROWS = True


def _row_max(x2):
    # numpy reduces short contiguous rows slowly (~1.4 ns per element for rows of 64);
    # folding the halves with element-wise maximum first is ~1.5x faster (NaN propagates)
    a = x2
    while a.shape[1] >= 16 and a.shape[1] % 2 == 0:
        h = a.shape[1] // 2
        a = np.maximum(a[:, :h], a[:, h:])
    return a.max(axis=1)


def softmax(x, axis):
    """burn::softmax: max shift, exp, row sums as a BLAS matrix-vector product, divide."""
    if x.size == 0:
        return x.copy()
    x2, back = _rows(x, axis)
    e = np.empty_like(x2)
    k = _jit_rows(x2)
    if k is not None:        # one compiled pass per row (kernels/ll/rows.ll), no BLAS
        _by_rows(x2, lambda a, b: k.softmax_rows(x2[a:b], e[a:b]), blas=False)
        return back(e)

    def work(a, b):
        xs, es = x2[a:b], e[a:b]
        with np.errstate(invalid="ignore"):        # all -inf rows give NaN, as in torch
            np.subtract(xs, _row_max(xs)[:, None], out=es)
            np.exp(es, out=es)
            es /= _row_sums(es)[:, None]
    _by_rows(x2, work)
    return back(e)


def softmax_grad(y, g, axis):
    """burn::softmax_grad: ``y * (g - sum(g * y))`` along ``axis``."""
    if y.size == 0:
        return np.zeros_like(y)
    y2, back = _rows(y, axis)
    g2, _ = _rows(g, axis)
    t = np.empty(np.broadcast_shapes(g2.shape, y2.shape), np.result_type(g2, y2))
    k = _jit_rows(y2, g2) if g2.shape == y2.shape else None
    if k is not None:
        _by_rows(t, lambda a, b: k.softmax_grad_rows(y2[a:b], g2[a:b], t[a:b]), blas=False)
        return back(t)

    def work(a, b):
        ys, gs, ts = y2[a:b], g2[a:b], t[a:b]
        np.multiply(gs, ys, out=ts)
        s = _row_sums(ts)
        np.subtract(gs, s[:, None], out=ts)
        ts *= ys
    _by_rows(t, work)
    return back(t)


def log_softmax(x, axis):
    """burn::log_softmax: ``(x - max) - log(sum(exp(x - max)))`` per row. As torch: an all -inf
    row shifts by 0 and gives NaN (-inf - log 0); a row holding +inf or NaN is NaN everywhere
    (its max is kept: x - (+inf) is -inf or NaN, so the row's sum is NaN)."""
    if x.size == 0:
        return x.copy()
    x2, back = _rows(x, axis)
    z = np.empty_like(x2)
    k = _jit_rows(x2)
    if k is not None:        # one compiled pass per row (kernels/ll/rows.ll), no BLAS
        _by_rows(x2, lambda a, b: k.log_softmax_rows(x2[a:b], z[a:b]), blas=False)
        return back(z)

    def work(a, b):
        xs, zs = x2[a:b], z[a:b]
        with np.errstate(invalid="ignore", divide="ignore"):
            m = _row_max(xs)
            m = np.where(m == -np.inf, 0, m).astype(xs.dtype)
            np.subtract(xs, m[:, None], out=zs)
            zs -= np.log(_row_sums(np.exp(zs)))[:, None]
    _by_rows(x2, work)
    return back(z)


def log_softmax_grad(y, g, axis):
    """burn::log_softmax_grad: ``g - exp(y) * sum(g)`` along ``axis``."""
    if y.size == 0:
        return np.zeros_like(y)
    y2, back = _rows(y, axis)
    g2, _ = _rows(g, axis)
    t = np.empty(np.broadcast_shapes(g2.shape, y2.shape), np.result_type(g2, y2))

    def work(a, b):
        ys, gs, ts = y2[a:b], g2[a:b], t[a:b]
        np.exp(ys, out=ts)
        ts *= _row_sums(gs)[:, None]
        np.subtract(gs, ts, out=ts)
    _by_rows(t, work)
    return back(t)


def _ln_stats(x2, eps, d=None, sq=None):
    """Centered rows and 1/sqrt(var + eps) (row means as BLAS products with 1/D)."""
    inv = np.full(x2.shape[1], 1.0 / x2.shape[1], dtype=x2.dtype)
    d = np.subtract(x2, (x2 @ inv)[:, None], out=d)
    sq = np.multiply(d, d, out=sq)
    r = sq @ inv
    r += np.asarray(eps, r.dtype)
    np.sqrt(r, out=r)
    np.reciprocal(r, out=r)
    return d, r, inv, sq


def layer_norm(x, w, b, eps):
    """burn::layer_norm over the last axis, with weight and bias."""
    if x.size == 0:
        return x.copy()
    x2 = np.ascontiguousarray(x).reshape(-1, x.shape[-1])
    out = np.empty_like(x2)
    k = _jit_rows(x2, w, b) if x2.shape[1] % 8 == 0 and w.shape == b.shape == x2.shape[1:] else None
    if k is not None:        # one compiled kernel per chunk of rows (kernels/ll/rows.ll), no BLAS
        wc, bc = np.ascontiguousarray(w), np.ascontiguousarray(b)
        _by_rows(x2, lambda a, c: k.layer_norm_rows(x2[a:c], wc, bc, out[a:c], eps), blas=False)
        return out.reshape(x.shape)

    def work(a, c):
        d, r, _, _ = _ln_stats(x2[a:c], eps, d=out[a:c])
        d *= r[:, None]
        d *= w
        d += b
    _by_rows(x2, work)
    return out.reshape(x.shape)


def layer_norm_grad(x, w, g, eps):
    """burn::layer_norm_grad: (dx, dweight, dbias) in a few passes over [rows, D]."""
    n = x.shape[-1]
    if x.size == 0:
        return np.zeros_like(x), np.zeros(n, x.dtype), np.zeros(n, x.dtype)
    x2 = np.ascontiguousarray(x).reshape(-1, n)
    g2 = np.ascontiguousarray(g).reshape(-1, n)
    xh, t = np.empty_like(x2), np.empty_like(x2)
    k = _jit_rows(x2, w, g2) if n % 8 == 0 and w.shape == (n,) else None
    if k is not None:        # dx and t = g * x-hat per row compiled; the column sums stay BLAS, whole
        gh, wc = xh, np.ascontiguousarray(w)
        _by_rows(x2, lambda a, b: k.layer_norm_grad_rows(x2[a:b], wc, g2[a:b], gh[a:b], t[a:b], eps), blas=False)
        ones = np.ones(x2.shape[0], x2.dtype)
        return gh.reshape(x.shape), ones @ t, ones @ g2
    r = np.empty(x2.shape[0], x2.dtype)
    inv = np.full(n, 1.0 / n, dtype=x2.dtype)

    def normalized(a, b):               # x-hat and g * x-hat, per row
        _, r[a:b], _, _ = _ln_stats(x2[a:b], eps, d=xh[a:b], sq=t[a:b])
        xh[a:b] *= r[a:b, None]
        np.multiply(g2[a:b], xh[a:b], out=t[a:b])
    _by_rows(x2, normalized)
    ones = np.ones(x2.shape[0], x2.dtype)
    gb = ones @ g2                         # column sums as BLAS products, whole (BLAS's threads)
    gw = ones @ t
    gh = np.empty_like(x2)

    def input_grad(a, b):
        ghs, xhs, ts = gh[a:b], xh[a:b], t[a:b]
        np.multiply(g2[a:b], w, out=ghs)
        mean_gh = ghs @ inv
        np.multiply(ghs, xhs, out=ts)
        mean_ghxh = ts @ inv
        ghs -= mean_gh[:, None]
        xhs *= mean_ghxh[:, None]
        ghs -= xhs
        ghs *= r[a:b, None]
    _by_rows(x2, input_grad)
    return gh.reshape(x.shape), gw, gb
