"""Scaled dot-product attention as ``burn::`` extension ops: ``burn::attention`` (forward:
scores, scale, additive mask, softmax and the weighted sum in one node) and
``burn::attention_grad`` (its backward: the four GEMMs and the softmax gradient in one node).

A backend kernel can then fuse the scaling and the mask into the softmax pass and split
the batch over its threads (flex does both, ``burn_flex.kernels.attention``); backends
without a kernel run the reference definitions, the op-by-op path written in burn ops.
``burn.nn.functional.scaled_dot_product_attention`` and ``MultiHeadAttention`` call
:func:`attention_fused` when q, k and v share their batch dimensions and no dropout
applies; the mask is additive there (a bool mask is turned into 0 / -inf first).
"""
from __future__ import annotations

import numpy as np

from ..errors import DTypeError, ShapeError, describe
from ..library import backend_extension
from ..ops import elementwise as E, linear as L, movement as M, reduction as R
from ..primitives import TensorMeta

__all__ = ["attention_fused", "attention_grad"]


def _scores(q, k, mask, scale):
    s = L.matmul(q * scale, M.matrix_transpose(k))
    return s if mask is None else s + mask


def _softmax_rows(s):
    from .softmax import softmax_fused
    return softmax_fused(s, s.ndim - 1)


@backend_extension("burn::attention")
def attention_fused(q, k, v, mask, scale):
    """``(softmax(q @ kᵀ * scale + mask) @ v, weights)`` over the last two axes, one node.

    ``q`` [..., L, E], ``k`` [..., S, E], ``v`` [..., S, Ev] with the same batch
    dimensions and floating dtype; ``mask`` None or a floating tensor broadcasting to
    [..., L, S] that is added to the scores (-inf hides a pair); ``scale`` a float.
    Its gradient is :func:`attention_grad`.

    Example:
        >>> import burn
        >>> q = burn.ones((1, 2, 4))
        >>> out, w = burn.fused.attention_fused(q, q, q, None, 0.5)
        >>> assert out.shape == (1, 2, 4) and w.tolist() == [[[0.5, 0.5], [0.5, 0.5]]]
    """
    w = _softmax_rows(_scores(q, k, mask, scale))
    return L.matmul(w, v), w


@attention_fused.meta
def _attention_meta(q, k, v, mask, scale):
    op = "burn::attention"
    if (q.ndim < 2 or k.ndim != q.ndim or v.ndim != q.ndim or q.shape[:-2] != k.shape[:-2]
            or k.shape[:-2] != v.shape[:-2] or q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2]):
        raise ShapeError(f"{op}: expected query [..., L, E], key [..., S, E], value [..., S, Ev] with the "
                         f"same batch dimensions; got {describe(q)}, {describe(k)}, {describe(v)}")
    if not q.dtype.is_floating or k.dtype is not q.dtype or v.dtype is not q.dtype:
        raise DTypeError(f"{op}: query, key and value need one floating dtype; got {describe(q)}, "
                         f"{describe(k)}, {describe(v)}")
    lead, s = tuple(q.shape[:-1]), k.shape[-2]
    if mask is not None:
        if mask.dtype is not q.dtype:
            raise DTypeError(f"{op}: the additive mask must have the query's dtype {q.dtype}; got {describe(mask)}")
        try:
            ok = np.broadcast_shapes(tuple(mask.shape), lead + (s,)) == lead + (s,)
        except ValueError:
            ok = False
        if not ok:
            raise ShapeError(f"{op}: mask {describe(mask)} does not broadcast to the scores "
                             f"[..., L, S] = {lead + (s,)}")
    return TensorMeta(lead + (v.shape[-1],), q.dtype), TensorMeta(lead + (s,), q.dtype)


def _sum_to(t, shape):
    """``t`` summed over the axes that ``shape`` broadcasts (a mask's gradient)."""
    shape = tuple(shape)
    extra = t.ndim - len(shape)
    axes = tuple(range(extra)) + tuple(extra + i for i, d in enumerate(shape) if d == 1 and t.shape[extra + i] != 1)
    if axes:
        t = R.sum(t, axis=axes, keepdims=True)
    return M.reshape(t, shape)


@attention_fused.backward
def _attention_backward(ctx, g_out, g_w):
    q, k, v, mask, scale = ctx.args
    out, w = ctx.outputs
    if g_out is None:
        g_out = out * 0.0
    dq, dk, dv, ds = attention_grad(q, k, v, w, g_out, g_w, scale)
    grads = (dq if q.requires_grad else None, dk if k.requires_grad else None, dv if v.requires_grad else None)
    if mask is not None:
        grads += (_sum_to(ds, mask.shape) if mask.requires_grad else None,)
    return grads


@backend_extension("burn::attention_grad")
def attention_grad(q, k, v, w, g_out, g_w, scale):
    """Gradients ``(dq, dk, dv, ds)`` of :func:`attention_fused` given its weights ``w`` and
    the output gradients ``g_out`` (and ``g_w`` for the weights, or None); ``ds`` is the
    gradient of the masked scores (the additive mask's, before its broadcast is summed).
    Differentiable (through these reference ops).

    Example:
        >>> import burn
        >>> q = burn.ones((1, 2, 4))
        >>> out, w = burn.fused.attention_fused(q, q, q, None, 0.5)
        >>> dq, dk, dv, ds = burn.fused.attention_grad(q, q, q, w, burn.ones((1, 2, 4)), None, 0.5)
        >>> assert dv.tolist() == [[[1.0] * 4] * 2] and abs(dq).max().item() == 0.0
    """
    dv = L.matmul(M.matrix_transpose(w), g_out)
    dw = L.matmul(g_out, M.matrix_transpose(v))
    if g_w is not None:
        dw = dw + g_w
    ds = w * (dw - R.sum(dw * w, axis=-1, keepdims=True))
    dq = L.matmul(ds, k) * scale
    dk = L.matmul(M.matrix_transpose(ds), q) * scale
    return dq, dk, dv, ds


@attention_grad.meta
def _attention_grad_meta(q, k, v, w, g_out, g_w, scale):
    lead = tuple(q.shape[:-1])
    want = {"weights": (w, lead + (k.shape[-2],)), "output gradient": (g_out, lead + (v.shape[-1],))}
    if g_w is not None:
        want["weights gradient"] = (g_w, lead + (k.shape[-2],))
    for what, (t, shape) in want.items():
        if tuple(t.shape) != shape or t.dtype is not q.dtype:
            raise ShapeError(f"burn::attention_grad: {what} {describe(t)} does not match {shape} {q.dtype}")
    return (TensorMeta(tuple(q.shape), q.dtype), TensorMeta(tuple(k.shape), q.dtype),
            TensorMeta(tuple(v.shape), q.dtype), TensorMeta(lead + (k.shape[-2],), q.dtype))


def additive_mask(mask, keep_true, dtype):
    """A bool mask (True = take part when ``keep_true``, else masked out) as 0 / -inf of
    ``dtype``; a floating mask cast to ``dtype``.

    Example:
        >>> import burn
        >>> m = additive_mask(burn.tensor([True, False]), True, burn.float32)
        >>> assert m.tolist() == [0.0, float("-inf")]
    """
    if mask.dtype.is_bool:
        keep = mask if keep_true else E.logical_not(mask)
        return E.where(keep, 0.0, float("-inf")).astype(dtype)
    return mask if mask.dtype is dtype else mask.astype(dtype)
