"""The ``burn::`` fused nn ops on cuda: softmax, log_softmax, layer_norm, cross-entropy and
their gradients, per row with CuPy's reductions (float16 / bfloat16 accumulate in float32)."""
from __future__ import annotations

import numpy as np

from .elementwise import _cp
from .linear import _half


def _rows(x, axis):
    cp = _cp()
    xm = cp.moveaxis(x, axis, -1)
    shape = xm.shape
    return (cp.ascontiguousarray(xm).reshape(-1, shape[-1]),
            lambda r: cp.ascontiguousarray(cp.moveaxis(r.reshape(shape), -1, axis)))


def softmax(x, axis):
    """burn::softmax (max shift, exp, divide by the row sums)."""
    cp = _cp()
    if x.size == 0:
        return x.copy()
    x2, back = _rows(x, axis)
    acc = x2.astype(np.float32) if _half(x2) else x2
    e = cp.exp(acc - acc.max(axis=1, keepdims=True))
    e /= e.sum(axis=1, keepdims=True)
    return back(e.astype(x.dtype, copy=False))


def softmax_grad(y, g, axis):
    """burn::softmax_grad: ``y * (g - sum(g * y))`` along ``axis``."""
    if y.size == 0:
        return _cp().zeros_like(y)
    y2, back = _rows(y, axis)
    g2, _ = _rows(g, axis)
    if _half(y2):
        y2, g2 = y2.astype(np.float32), g2.astype(np.float32)
    t = g2 * y2
    return back(((g2 - t.sum(axis=1, keepdims=True)) * y2).astype(y.dtype, copy=False))


def log_softmax(x, axis):
    """burn::log_softmax: ``(x - max) - log(sum(exp(x - max)))`` per row. As torch and flex: an
    all -inf row shifts by 0 and gives NaN; a row holding +inf or NaN is NaN everywhere."""
    cp = _cp()
    if x.size == 0:
        return x.copy()
    x2, back = _rows(x, axis)
    acc = x2.astype(np.float32) if _half(x2) else x2
    m = acc.max(axis=1, keepdims=True)
    z = acc - cp.where(m == -np.inf, 0, m)      # a +inf max stays: the row's sum is NaN
    z -= cp.log(cp.exp(z).sum(axis=1, keepdims=True))
    return back(z.astype(x.dtype, copy=False))


def log_softmax_grad(y, g, axis):
    """burn::log_softmax_grad: ``g - exp(y) * sum(g)`` along ``axis``."""
    cp = _cp()
    if y.size == 0:
        return cp.zeros_like(y)
    y2, back = _rows(y, axis)
    g2, _ = _rows(g, axis)
    if _half(y2):
        y2, g2 = y2.astype(np.float32), g2.astype(np.float32)
    return back((g2 - cp.exp(y2) * g2.sum(axis=1, keepdims=True)).astype(y.dtype, copy=False))


def layer_norm(x, w, b, eps):
    """burn::layer_norm over the last axis (statistics in float32 for float16/bfloat16 inputs)."""
    cp = _cp()
    if x.size == 0:
        return x.copy()
    x2 = cp.ascontiguousarray(x).reshape(-1, x.shape[-1])
    a = x2.astype(np.float32) if _half(x2) else x2
    if _half(w):
        w, b = w.astype(np.float32), b.astype(np.float32)
    d = a - a.mean(axis=1, keepdims=True)
    r = 1 / cp.sqrt((d * d).mean(axis=1, keepdims=True) + a.dtype.type(eps))
    return (d * r * w + b).astype(x.dtype, copy=False).reshape(x.shape)


def _ce(logits, target):
    cp = _cp()
    x = logits if logits.dtype.itemsize >= 4 else logits.astype(np.float32)
    n, c = x.shape
    if n:
        lo, hi = int(target.min()), int(target.max())
        if lo < 0 or hi >= c:
            raise IndexError(f"cross_entropy: target class indices must lie in [0, {c}), got values from "
                             f"{lo} to {hi}")
    m = x.max(axis=1, keepdims=True)
    m = cp.where(m == -np.inf, 0, m)      # all -inf rows shift by 0; a +inf max makes the row nan (torch)
    return x - m, cp.arange(n), target


def softmax_cross_entropy(logits, target, reduction="mean", label_smoothing=0.0):
    """burn::softmax_cross_entropy: log-softmax, gather, reduction."""
    cp = _cp()
    z, rows, target = _ce(logits, target)
    n = z.shape[0]
    lse = cp.log(cp.exp(z).sum(axis=1))
    loss = lse - z[rows, target]
    if label_smoothing:
        loss = loss * (1.0 - label_smoothing) + (lse - z.mean(axis=1)) * label_smoothing
    if reduction == "mean":
        loss = loss.sum() / n if n else cp.asarray(np.nan, loss.dtype)
    elif reduction == "sum":
        loss = loss.sum()
    return loss.astype(logits.dtype)


def softmax_cross_entropy_grad(logits, target, g, reduction="mean", label_smoothing=0.0):
    """burn::softmax_cross_entropy_grad: ``(softmax - smoothed one-hot) * g``."""
    cp = _cp()
    z, rows, target = _ce(logits, target)
    n, c = z.shape
    p = cp.exp(z)
    p /= p.sum(axis=1, keepdims=True)
    if label_smoothing:
        p -= label_smoothing / c
    p[rows, target] -= 1.0 - label_smoothing
    g = g.astype(p.dtype)
    if reduction == "none":
        p *= g[:, None]
    else:
        p *= g / n if reduction == "mean" else g
    return p.astype(logits.dtype, copy=False)
