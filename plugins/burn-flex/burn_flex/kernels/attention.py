"""``burn::attention`` and ``burn::attention_grad`` on flex: scaled dot-product attention
with the scale, the additive mask and the softmax fused into one pass over the scores,
the batch (axis 0) split over ``burn_flex.threads``. float32 runs the softmax and its gradient
through flex's JIT row kernels (nn.softmax's, ``kernels/ll/rows.ll``).

Each chunk of the batch runs its own GEMMs (numpy's matmul: one BLAS call per
[L, E] @ [E, S] matrix) and its softmax rows in place, so nothing of one chunk
waits for another. When one of those GEMMs is large enough for OpenBLAS to thread
it (``m * n * k`` above the conv kernels' ``_BLAS_ONE_THREAD``), the chunks run in
order on the calling thread instead, as the convolutions do.
"""
from __future__ import annotations

import numpy as np

from .. import threads
from .conv import _BLAS_ONE_THREAD, _TASK_MACS
from .nn import _jit_rows

__all__ = ["attention", "attention_grad"]


def _split(q, k, v, body):
    """``body(a, b)`` over batch items [a, b) of axis 0, in parallel chunks."""
    if q.ndim == 2:
        body(None, None)
        return
    n = q.shape[0]
    l_, e = q.shape[-2:]
    s, ev = k.shape[-2], v.shape[-1]
    per_item = int(np.prod(q.shape[1:-2])) * l_ * s * (e + ev)      # multiply-adds of one item
    gemm = l_ * s * max(e, ev)
    min_chunk = n if gemm > _BLAS_ONE_THREAD else -(-_TASK_MACS // max(1, per_item))
    threads.parallel_for(n, body, max(1, min_chunk), blas=True)     # each item's products are GEMMs


def _rows(m, q, a, b):
    """The batch items [a, b) of mask ``m`` (broadcasting to the scores), or all of it."""
    if m is None or a is None or m.ndim < q.ndim or m.shape[0] == 1:
        return m
    return m[a:b]


def _sl(x, a, b):
    return x if a is None else x[a:b]


def _compute(*arrays):
    """Half-precision operands are computed in float32 (the other kernels' rule)."""
    return [None if a is None or a.dtype.itemsize >= 4 else a.astype(np.float32) for a in arrays]


def attention(q, k, v, mask, scale):
    """burn::attention: per chunk ``s = (q * scale) @ kᵀ + mask``, softmax in place, ``s @ v``."""
    if q.dtype.itemsize < 4:
        out, w = attention(*_compute(q, k, v, mask), scale)
        return out.astype(q.dtype), w.astype(q.dtype)
    lead = q.shape[:-1]
    out = np.empty(lead + (v.shape[-1],), dtype=q.dtype)
    w = np.empty(lead + (k.shape[-2],), dtype=q.dtype)
    sc = q.dtype.type(scale)

    jk = _jit_rows(q, k, v) if w.flags.c_contiguous else None

    def body(a, b):
        qa = np.multiply(_sl(q, a, b), sc)
        s = _sl(w, a, b)
        np.matmul(qa, np.swapaxes(_sl(k, a, b), -1, -2), out=s)
        m = _rows(mask, q, a, b)
        if m is not None:
            s += m
        if jk is not None:                       # one compiled pass per row (nn.softmax's kernel)
            s2 = s.reshape(-1, s.shape[-1])
            jk.softmax_rows(s2, s2)
        else:
            with np.errstate(invalid="ignore"):  # an all -inf row gives NaN, as the reference
                s -= s.max(axis=-1, keepdims=True)
                np.exp(s, out=s)
                s /= s.sum(axis=-1, keepdims=True)
        np.matmul(s, _sl(v, a, b), out=_sl(out, a, b))
    if w.size:
        _split(q, k, v, body)
    else:
        out[...] = 0
    return out, w


def attention_grad(q, k, v, w, g_out, g_w, scale):
    """burn::attention_grad: ``dv = wᵀ g``, ``ds = w * (dw - rowsum(dw * w))`` with
    ``dw = g vᵀ (+ g_w)``, ``dq = ds k * scale``, ``dk = dsᵀ q * scale``, per chunk."""
    if q.dtype.itemsize < 4:
        return tuple(t.astype(q.dtype) for t in attention_grad(*_compute(q, k, v, w, g_out, g_w), scale))
    dq, dk, dv = np.empty_like(q), np.empty_like(k), np.empty_like(v)
    ds = np.empty_like(w)
    sc = q.dtype.type(scale)
    w = np.ascontiguousarray(w)
    jk = _jit_rows(w, g_out)

    def body(a, b):
        wa, ga = _sl(w, a, b), _sl(g_out, a, b)
        np.matmul(np.swapaxes(wa, -1, -2), ga, out=_sl(dv, a, b))
        d = _sl(ds, a, b)
        np.matmul(ga, np.swapaxes(_sl(v, a, b), -1, -2), out=d)
        if g_w is not None:
            d += _sl(g_w, a, b)
        if jk is not None:                       # (d - rowsum(d * w)) * w in one compiled pass
            d2, w2 = d.reshape(-1, d.shape[-1]), wa.reshape(-1, wa.shape[-1])
            jk.softmax_grad_rows(w2, d2, d2)
        else:
            t = np.multiply(d, wa)
            d -= t.sum(axis=-1, keepdims=True)
            d *= wa
        dqa = _sl(dq, a, b)
        np.matmul(d, _sl(k, a, b), out=dqa)
        dqa *= sc
        dka = _sl(dk, a, b)
        np.matmul(np.swapaxes(d, -1, -2), _sl(q, a, b), out=dka)
        dka *= sc
    if w.size:
        _split(q, k, v, body)
    else:
        for t in (dq, dk, dv, ds):
            t[...] = 0
    return dq, dk, dv, ds
