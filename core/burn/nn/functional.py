"""Functional neural-network ops, written with burn ops (so every backend and
autodiff get them for free) except where a fused kernel pays off: softmax,
log-softmax, cross-entropy, layer norm and :func:`linear_relu` are the ``burn::``
extension ops of :mod:`burn.fused` (re-exported here), with kernels from the backends."""
from __future__ import annotations

from .. import dtypes as dt
from ..errors import DTypeError, ShapeError, describe, record_site
from ..fused import (layer_norm, layer_norm_fused, layer_norm_grad, linear_relu, log_softmax,  # noqa: F401
                     log_softmax_fused, log_softmax_grad, softmax, softmax_cross_entropy,
                     softmax_cross_entropy_grad, softmax_fused, softmax_grad)
from ..ops import elementwise as E, reduction as R, movement as M, linear as L
from ..ops.autocast import lower, to_float32
from ..tensor import Tensor

__all__ = ["relu", "leaky_relu", "gelu", "sigmoid", "tanh", "silu", "softplus", "softmax", "log_softmax", "cross_entropy",
           "softmax_cross_entropy", "softmax_cross_entropy_grad", "nll_loss", "mse_loss", "linear", "linear_relu",
           "embedding", "layer_norm", "dropout", "softmax_fused", "softmax_grad", "log_softmax_fused",
           "log_softmax_grad", "layer_norm_fused",
           "layer_norm_grad"]

relu, gelu, sigmoid, tanh, silu, softplus = E.relu, E.gelu, E.sigmoid, E.tanh, E.silu, E.softplus


def leaky_relu(x, negative_slope: float = 0.01):
    """``x`` where ``x > 0``, else ``negative_slope * x`` (torch's ``F.leaky_relu``; the gradient at 0 is the slope).

    Example:
        >>> import burn
        >>> assert burn.nn.functional.leaky_relu(burn.tensor([-2.0, 3.0]), 0.5).tolist() == [-1.0, 3.0]
    """
    return E.where(x > 0, x, x * negative_slope)


def _classes_last(x, target, op):
    """(N, C, d1, ...) scores and (N, d1, ...) targets -> (M, C) rows and (M,) targets, plus the
    shape a per-element loss takes back; (C,) with a 0-d target is one row (PyTorch's layouts)."""
    if x.ndim == 1 and target.ndim == 0:
        return M.reshape(x, (1, -1)), M.reshape(target, (1,)), ()
    if x.ndim < 2 or target.shape != x.shape[:1] + x.shape[2:]:
        raise ShapeError(f"{op}: expected scores [N, C] or [N, C, d1, ...] (or [C]) and class targets "
                         f"[N] or [N, d1, ...] (or []), got {describe(x)}, {describe(target)}")
    if x.ndim == 2:
        return x, target, tuple(target.shape)
    rows = M.reshape(M.permute_dims(x, (0,) + tuple(range(2, x.ndim)) + (1,)), (-1, x.shape[1]))
    return rows, M.reshape(target, (-1,)), tuple(target.shape)


def _class_weights(weight, n_classes, op):
    if weight is None:
        return None
    if weight.ndim != 1 or weight.shape[0] != n_classes:
        raise ShapeError(f"{op}: weight must hold one value per class ({n_classes}), got {describe(weight)}")
    if not weight.dtype.is_floating:
        raise DTypeError(f"{op}: weight must be floating, got {describe(weight)}")
    return weight


def _weighted_nll(lp, target, weight, ignore_index):
    """Per-row -w[y] lp[y] (0 where y == ignore_index) and the per-row weight w[y] (0 if ignored)."""
    keep = None
    if ignore_index is not None:
        keep = E.ne(target, ignore_index)
        target = E.where(keep, target, 0)     # any valid class: its loss is masked
    # a negative class is out of range (PyTorch rejects it), but a gather would wrap it to a
    # class from the end: shift it below -C, so the gather raises IndexOutOfRange for it
    target = E.where(target < 0, target - lp.shape[1], target)
    idx = M.reshape(target, (-1, 1))
    picked = -M.reshape(M.take_along_axis(lp, idx, axis=1), (-1,))
    w = None if weight is None else M.take(weight, target, axis=0)
    if keep is not None:
        kf = keep.astype(lp.dtype)
        w = kf if w is None else w * kf
    return (picked if w is None else picked * w), w


def _reduce_weighted(loss, w, reduction, op, shape):
    if reduction == "mean" and w is not None:
        return R.sum(loss) / R.sum(w)     # PyTorch: the weighted mean over the targets kept
    if reduction == "none":
        return M.reshape(loss, shape)
    return _reduce(loss, reduction, op)


def nll_loss(log_probs, target, /, *, weight=None, ignore_index=None, reduction="mean") -> Tensor:
    """Negative log-likelihood of integer class ``target`` under ``log_probs``, as PyTorch's.

    ``log_probs`` is [N, C], [N, C, d1, ...] or [C]; ``target`` [N], [N, d1, ...] or [].
    ``weight`` [C] scales each class (the mean divides by the summed weights of the targets);
    targets equal to ``ignore_index`` contribute nothing (unlike PyTorch, nothing is ignored
    by default: a stray -100 is an out-of-range error, not a silently dropped sample).

    Example:
        >>> import burn
        >>> lp = burn.nn.functional.log_softmax(burn.zeros((2, 4)))
        >>> assert abs(burn.nn.functional.nll_loss(lp, burn.tensor([0, 3])).item() - 1.3862944) < 1e-5
        >>> kept = burn.nn.functional.nll_loss(lp, burn.tensor([0, -1]), ignore_index=-1, reduction="sum")
        >>> assert abs(kept.item() - 1.3862944) < 1e-5
    """
    if not target.dtype.is_integer:
        raise DTypeError(f"nll_loss: target must hold integer class indices, got {describe(target)}")
    log_probs, weight = to_float32(log_probs, weight)       # burn.autocast's float32 list
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"nll_loss: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
    lp, t, shape = _classes_last(log_probs, target, "nll_loss")
    w = _class_weights(weight, lp.shape[1], "nll_loss")
    loss, wt = _weighted_nll(lp, t, w, ignore_index)
    return _reduce_weighted(loss, wt, reduction, "nll_loss", shape)


def _reduce(loss, reduction, op):
    if reduction == "mean":
        return R.mean(loss)
    if reduction == "sum":
        return R.sum(loss)
    if reduction == "none":
        return loss
    raise ValueError(f"{op}: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")


def cross_entropy(logits, target, /, *, weight=None, ignore_index=None, reduction="mean",
                  label_smoothing=0.0) -> Tensor:
    """Cross-entropy of ``logits`` against integer classes or class probabilities, as PyTorch's.

    ``logits`` is [N, C], [N, C, d1, ...] (e.g. per-pixel classes) or [C]; ``target`` holds
    class indices of shape [N], [N, d1, ...] or [], or probabilities of the logits' shape.
    ``weight`` [C] rescales each class; with class targets the mean divides by the summed
    weights of the targets, as PyTorch. Class targets equal to ``ignore_index`` contribute
    nothing (nothing is ignored by default, unlike PyTorch's -100). ``label_smoothing`` mixes
    the target with the uniform distribution.

    Example:
        >>> import burn
        >>> loss = burn.nn.functional.cross_entropy(burn.zeros((2, 4)), burn.tensor([1, 2]))
        >>> assert abs(loss.item() - 1.3862944) < 1e-5
        >>> w = burn.tensor([1.0, 3.0, 1.0, 1.0])
        >>> loss = burn.nn.functional.cross_entropy(burn.zeros((2, 4)), burn.tensor([1, 2]), weight=w)
        >>> assert abs(loss.item() - 1.3862944) < 1e-5
    """
    logits, target, weight = to_float32(logits, target, weight)      # burn.autocast's float32 list
    # validate before recording any work, so a bad call leaves the graph untouched
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"cross_entropy: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
    if not 0.0 <= float(label_smoothing) <= 1.0:
        raise ValueError(f"cross_entropy: label_smoothing must be in [0, 1], got {label_smoothing}")
    if target.dtype.is_integer:
        plain = logits.ndim == 2 and weight is None and ignore_index is None
        if plain and target.shape != logits.shape[:1]:
            raise ShapeError(f"cross_entropy: expected logits [N, C] and class targets [N], got "
                             f"{describe(logits)}, {describe(target)}")
        if plain and logits.dtype.is_floating:
            # one node forward and one backward (softmax - one-hot) instead of ~30 recorded ops
            return record_site(softmax_cross_entropy(logits, target, reduction, float(label_smoothing)))
        rows, t, shape = _classes_last(logits, target, "cross_entropy")
        w = _class_weights(weight, rows.shape[1], "cross_entropy")
        return _cross_entropy_classes(rows, t, reduction, label_smoothing, w, ignore_index, shape)
    if target.shape != logits.shape:
        raise ShapeError(f"cross_entropy: probability targets need the logits' shape ({describe(logits)}, "
                         f"{describe(target)})")
    if ignore_index is not None:
        raise ValueError("cross_entropy: ignore_index applies to class-index targets, not probabilities")
    cax = 0 if logits.ndim == 1 else 1
    _class_weights(weight, logits.shape[cax], "cross_entropy")
    lp = log_softmax(logits, axis=cax)
    if label_smoothing:
        # torch smooths probability targets too: mix with the uniform distribution
        target = target * (1 - label_smoothing) + label_smoothing / logits.shape[cax]
    terms = target * lp
    if weight is not None:
        terms = terms * M.reshape(weight, (-1,) + (1,) * (logits.ndim - cax - 1))
    return _reduce(-R.sum(terms, axis=cax), reduction, "cross_entropy")


def _cross_entropy_classes(logits, target, reduction, label_smoothing, weight=None, ignore_index=None,
                           shape=None):
    lp = log_softmax(logits, axis=-1)
    loss_t, w = _weighted_nll(lp, target, weight, ignore_index)
    if label_smoothing:
        # PyTorch: the uniform part weighs each class by its weight, ignored rows drop out
        smooth = -(R.mean(lp, axis=-1) if weight is None else R.sum(lp * weight, axis=-1) / lp.shape[-1])
        if ignore_index is not None:
            smooth = smooth * E.ne(target, ignore_index).astype(lp.dtype)
        loss_t = loss_t * (1 - label_smoothing) + smooth * label_smoothing
    return _reduce_weighted(loss_t, w, reduction, "cross_entropy", shape if shape is not None else target.shape)


def _warn_if_broadcast(op, input, target):
    """PyTorch's warning for an element-wise loss whose target broadcasts against its input:
    (4, 1) against (4,) gives a (4, 4) loss, almost always a bug."""
    ts, xs = tuple(getattr(target, "shape", ())), tuple(getattr(input, "shape", ()))
    if ts != xs:
        import warnings
        from ..errors import user_stacklevel
        warnings.warn(f"{op}: using a target shape {ts} that is different to the input shape {xs}; this will "
                      f"likely lead to incorrect results due to broadcasting. Please ensure they have the same shape.",
                      UserWarning, stacklevel=user_stacklevel())


def mse_loss(input, target, /, *, reduction="mean") -> Tensor:
    """Mean squared error. As PyTorch's, a target whose shape differs from the input's is
    broadcast with a ``UserWarning`` naming both shapes.

    Example:
        >>> import burn
        >>> assert burn.nn.functional.mse_loss(burn.ones((3,)), burn.zeros((3,))).item() == 1.0
    """
    _warn_if_broadcast("mse_loss", input, target)
    input, target = to_float32(input, target)               # burn.autocast's float32 list
    d = input - target
    return _reduce(d * d, reduction, "mse_loss")


def linear(x, weight, bias=None) -> Tensor:
    """``x @ weight + bias`` with Burn's layout: ``weight`` is [d_in, d_out].

    Example:
        >>> import burn
        >>> y = burn.nn.functional.linear(burn.ones((2, 3)), burn.ones((3, 4)), burn.zeros((4,)))
        >>> assert y.shape == (2, 4) and y[0, 0].item() == 3.0
    """
    x, weight, bias = lower(x, weight, bias, op="linear")      # burn.autocast: linear runs in the low dtype
    if x.ndim > 2 and weight.ndim == 2 and x.shape[-1] == weight.shape[0]:
        # one [rows, d_in] @ [d_in, d_out] GEMM (and a 2-D weight gradient) instead of a batched matmul
        y = M.reshape(L.matmul(M.reshape(x, (-1, x.shape[-1])), weight), tuple(x.shape[:-1]) + (weight.shape[1],))
    else:
        y = L.matmul(x, weight)
    return y + bias if bias is not None else y


def embedding(indices, weight) -> Tensor:
    """Rows of ``weight`` [num, dim] at integer ``indices`` (any shape).

    Example:
        >>> import burn
        >>> w = burn.arange(6, dtype=burn.float32).reshape((3, 2))
        >>> assert burn.nn.functional.embedding(burn.tensor([2, 0]), w).tolist() == [[4.0, 5.0], [0.0, 1.0]]
    """
    if not indices.dtype.is_integer:
        raise DTypeError(f"embedding: indices must be integers, got {describe(indices)}")
    return M.take(weight, indices, axis=0)


def dropout(x, p=0.5, *, training=True) -> Tensor:
    """Zero each element with probability ``p`` and scale the rest by ``1/(1-p)``.

    Example:
        >>> import burn
        >>> x = burn.ones((1000,))
        >>> assert burn.nn.functional.dropout(x, 0.5, training=False) is x
    """
    if not 0.0 <= p < 1.0:
        if p == 1.0:
            return x * 0.0
        raise ValueError(f"dropout: p must be in [0, 1], got {p}")
    if not training or p == 0.0:
        return x
    keep = rand(x.shape, dtype=x.dtype if x.dtype.is_floating else dt.float32, device=x.device) >= p
    return E.where(keep, x * (1.0 / (1.0 - p)), 0.0)


# convolution and pooling live with their primitives in burn.ops.conv
from ..ops.conv import (conv1d, conv2d, conv_transpose1d, conv_transpose2d, max_pool1d, max_pool2d,  # noqa: E402
                        avg_pool1d, avg_pool2d)
from ..ops.creation import arange, rand, tensor
from ..autodiff import no_grad

__all__ += ["conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d", "max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d"]


# -- ops of the layer modules (burn.nn.norm, conv_layers, attention, losses) --------------

def bce_with_logits(logits, target, /, *, weight=None, pos_weight=None, reduction="mean") -> Tensor:
    """Binary cross-entropy of ``sigmoid(logits)`` against ``target`` in [0, 1], computed stably.

    ``-[pos_weight * t * log σ(x) + (1 - t) * log(1 - σ(x))]`` written with
    ``softplus(-x) = -log σ(x)`` so large logits neither overflow nor lose
    precision. ``pos_weight`` (broadcast over the last axis, one per class)
    weighs the positive term and ``weight`` each element, as in
    ``torch.nn.functional.binary_cross_entropy_with_logits``.

    Example:
        >>> import burn, math
        >>> loss = burn.nn.functional.bce_with_logits(burn.zeros((4,)), burn.ones((4,)))
        >>> assert abs(loss.item() - math.log(2)) < 1e-6
    """
    logits, target, weight, pos_weight = to_float32(logits, target, weight, pos_weight)   # autocast's float32 list
    if tuple(target.shape) != tuple(logits.shape):
        raise ShapeError(f"bce_with_logits: target must have the logits' shape, got logits {describe(logits)}, "
                         f"target {describe(target)}")
    if not logits.dtype.is_floating or not target.dtype.is_floating:
        raise DTypeError(f"bce_with_logits: logits and target must be floating (targets are probabilities), got "
                         f"{describe(logits)}, {describe(target)}; cast integer labels with .astype(burn.float32)")
    sp = E.softplus(-logits)                     # -log σ(x); -log(1 - σ(x)) = x + softplus(-x)
    if pos_weight is None:
        loss = (1.0 - target) * logits + sp
    else:
        loss = (1.0 - target) * logits + (1.0 + (pos_weight - 1.0) * target) * sp
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction, "bce_with_logits")


def _out_pair(op, output_size, hw):
    if isinstance(output_size, int) or output_size is None:
        output_size = (output_size, output_size)
    if len(output_size) != 2:
        raise ValueError(f"{op}: output_size must be an int or an (H, W) pair, got {output_size!r}")
    out = tuple(s if o is None else o for o, s in zip(output_size, hw))
    if any(not isinstance(o, int) or o < 1 for o in out):
        raise ValueError(f"{op}: output_size must hold positive ints (or None to keep a size), got {output_size!r}")
    return out


def _adaptive_matrix(n_in, n_out, dtype, device):
    """[n_out, n_in] averaging matrix with PyTorch's windows [floor(i*n/o), ceil((i+1)*n/o))."""
    import numpy as np
    a = np.zeros((n_out, n_in))
    for i in range(n_out):
        lo, hi = (i * n_in) // n_out, -((-(i + 1) * n_in) // n_out)
        a[i, lo:hi] = 1.0 / (hi - lo)
    return tensor(a, dtype=dtype, device=device)


def adaptive_avg_pool2d(x, output_size) -> Tensor:
    """Average ``x`` [N, C, H, W] (or [C, H, W]) over windows chosen to give ``output_size``.

    Windows follow PyTorch (``[floor(i*H/oh), ceil((i+1)*H/oh))``, so they may
    overlap); ``None`` in ``output_size`` keeps that size. Each axis is one
    matmul with a constant averaging matrix, so autodiff and every backend work.

    Example:
        >>> import burn
        >>> x = burn.arange(16, dtype=burn.float32).reshape((1, 1, 4, 4))
        >>> assert burn.nn.functional.adaptive_avg_pool2d(x, 1).tolist() == [[[[7.5]]]]
        >>> assert burn.nn.functional.adaptive_avg_pool2d(x, (2, None)).shape == (1, 1, 2, 4)
    """
    if x.ndim not in (3, 4):
        raise ShapeError(f"adaptive_avg_pool2d: expected input [N, C, H, W] or [C, H, W], got {describe(x)}")
    if not x.dtype.is_floating:
        raise DTypeError(f"adaptive_avg_pool2d: not defined for {describe(x)}; cast it with .astype(burn.float32)")
    h, w = x.shape[-2:]
    oh, ow = _out_pair("adaptive_avg_pool2d", output_size, (h, w))
    if h % oh == 0 and w % ow == 0 and x.ndim == 4:
        return avg_pool2d(x, (h // oh, w // ow))        # disjoint windows: the pooling kernel is cheaper
    y = x
    if oh != h:
        y = L.matmul(_adaptive_matrix(h, oh, x.dtype, x.device), y)
    if ow != w:
        y = L.matmul(y, M.matrix_transpose(_adaptive_matrix(w, ow, x.dtype, x.device)))
    return y


_FINFO_EPS = {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7, "float32": 2.0 ** -23, "float64": 2.0 ** -52}


def rms_norm(x, normalized_shape, weight=None, eps=None) -> Tensor:
    """``x / sqrt(mean(x², trailing axes) + eps) * weight``, normalizing the scale without centering.

    ``eps`` defaults to the dtype's machine epsilon, as in torch.

    Example:
        >>> import burn
        >>> y = burn.nn.functional.rms_norm(burn.tensor([[3.0, -3.0]]), (2,))
        >>> assert abs(y[0, 0].item() - 1.0) < 1e-5
    """
    x, weight = to_float32(x, weight)                       # burn.autocast's float32 list
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    k = len(normalized_shape)
    if k == 0 or x.ndim < k or tuple(x.shape[-k:]) != tuple(normalized_shape):
        raise ShapeError(f"rms_norm: trailing shape of {describe(x)} is not {tuple(normalized_shape)}")
    if not x.dtype.is_floating:
        raise DTypeError(f"rms_norm: needs a floating input, got {describe(x)}")
    if eps is None:
        eps = _FINFO_EPS[x.dtype.name]
    axes = tuple(range(x.ndim - k, x.ndim))
    y = x * E.rsqrt(R.mean(x * x, axis=axes, keepdims=True) + eps)
    return y * weight if weight is not None else y


def batch_norm(x, running_mean=None, running_var=None, weight=None, bias=None, *, training=False,
               momentum=0.1, eps=1e-5) -> Tensor:
    """Normalize ``x`` [N, C, ...] per channel (axis 1), as ``torch.nn.functional.batch_norm``.

    In training (or without running statistics) the batch's mean and biased
    variance normalize; then ``running_mean``/``running_var`` are updated in
    place (``(1 - momentum) * running + momentum * batch``, with the unbiased
    variance), outside autodiff. Otherwise the running statistics normalize.

    Example:
        >>> import burn
        >>> x = burn.tensor([[1.0], [3.0]])
        >>> rm, rv = burn.zeros((1,)), burn.ones((1,))
        >>> y = burn.nn.functional.batch_norm(x, rm, rv, training=True)
        >>> assert abs(y[0, 0].item() + 1.0) < 1e-3 and abs(rm.item() - 0.2) < 1e-6
    """
    if x.ndim < 2:
        raise ShapeError(f"batch_norm: expected input [N, C, ...], got {describe(x)}")
    x, weight, bias = to_float32(x, weight, bias)           # burn.autocast's float32 list
    c = x.shape[1]
    bshape = (1, c) + (1,) * (x.ndim - 2)
    axes = (0,) + tuple(range(2, x.ndim))
    if training or running_mean is None:
        n = x.size // c
        if training and n < 2:
            raise ShapeError(f"batch_norm: training needs more than one value per channel, got {describe(x)}")
        mean = R.mean(x, axis=axes, keepdims=True)
        d = x - mean
        var = R.mean(d * d, axis=axes, keepdims=True)
        if training and running_mean is not None:
            with no_grad():
                bm = M.reshape(mean.detach(), (c,))
                bv = M.reshape(var.detach(), (c,)) * (n / (n - 1))
                running_mean.assign_(running_mean * (1.0 - momentum) + bm * momentum)
                running_var.assign_(running_var * (1.0 - momentum) + bv * momentum)
        y = d * E.rsqrt(var + eps)
    else:
        y = (x - M.reshape(running_mean, bshape)) * E.rsqrt(M.reshape(running_var, bshape) + eps)
    if weight is not None:
        y = y * M.reshape(weight, bshape)
    if bias is not None:
        y = y + M.reshape(bias, bshape)
    return y


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, *, is_causal=False,
                                 scale=None, training=True) -> Tensor:
    """``softmax(q @ kᵀ * scale + mask) @ v`` over the last two axes ([..., L, E] and [..., S, E]).

    ``attn_mask`` broadcasts to [..., L, S]: a bool mask marks with True the
    pairs that **take part** (as in ``torch.nn.functional.scaled_dot_product_attention``;
    note MultiHeadAttention's masks use the opposite, True = masked out), a float
    mask is added to the scores. ``is_causal`` hides later keys; ``scale``
    defaults to ``1/sqrt(E)``; ``dropout_p`` drops attention weights in training.

    Example:
        >>> import burn
        >>> q = burn.ones((2, 3, 4))
        >>> v = burn.arange(12, dtype=burn.float32).reshape((1, 3, 4))
        >>> y = burn.nn.functional.scaled_dot_product_attention(q, q, v, is_causal=True)
        >>> assert y.shape == (2, 3, 4) and y[0, 0].tolist() == [0.0, 1.0, 2.0, 3.0]
    """
    return _attention(query, key, value, attn_mask, dropout_p, is_causal, scale, training, keep_true=True)[0]


def _attention(q, k, v, mask, dropout_p, is_causal, scale, training, *, keep_true):
    """(output, weights); bool ``mask`` keeps True pairs when ``keep_true``, else hides them."""
    import math
    if q.ndim < 2 or k.ndim < 2 or v.ndim < 2 or q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2]:
        raise ShapeError(f"scaled_dot_product_attention: expected query [..., L, E], key [..., S, E], "
                         f"value [..., S, Ev]; got {describe(q)}, {describe(k)}, {describe(v)}")
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    if (not (dropout_p and training) and q.dtype in (dt.float32, dt.float64) and k.dtype is q.dtype
            and v.dtype is q.dtype and q.ndim == k.ndim == v.ndim and q.shape[:-2] == k.shape[:-2] == v.shape[:-2]):
        return _attention_one_node(q, k, v, mask, is_causal, float(scale), keep_true)
    scores = L.matmul(q * scale, M.matrix_transpose(k))
    ls = scores.shape[-2:]
    if is_causal:
        rows = M.reshape(arange(ls[0], device=q.device), (-1, 1))
        allowed = E.greater_equal(rows, arange(ls[1], device=q.device))    # key j <= query i
        scores = E.where(allowed, scores, float("-inf"))
    if mask is not None:
        try:
            np_shape = __import__("numpy").broadcast_shapes(tuple(mask.shape), tuple(scores.shape))
        except ValueError:
            np_shape = None
        if np_shape != tuple(scores.shape):
            raise ShapeError(f"scaled_dot_product_attention: attn_mask {describe(mask)} does not broadcast to "
                             f"the attention scores [..., L, S] = {tuple(scores.shape)}")
        if mask.dtype.is_bool:
            keep = mask if keep_true else E.logical_not(mask)
            scores = E.where(keep, scores, float("-inf"))
        elif mask.dtype.is_floating:
            scores = scores + (mask if mask.dtype is scores.dtype else mask.astype(scores.dtype))
        else:
            raise DTypeError(f"scaled_dot_product_attention: attn_mask must be bool or floating, got {describe(mask)}")
    w = softmax(scores, axis=-1)
    # the weights returned are the ones applied (after dropout), as torch's MultiheadAttention
    w = dropout(w, dropout_p, training=training) if dropout_p else w
    return L.matmul(w, v), w


def _attention_one_node(q, k, v, mask, is_causal, scale, keep_true):
    """The fused path (``burn::attention``): causal and bool masks become one additive mask."""
    from ..fused.attention import additive_mask, attention_fused
    ls = (q.shape[-2], k.shape[-2])
    add = None
    if is_causal:
        rows = M.reshape(arange(ls[0], device=q.device), (-1, 1))
        add = additive_mask(E.greater_equal(rows, arange(ls[1], device=q.device)), True, q.dtype)
    if mask is not None:
        if not (mask.dtype.is_bool or mask.dtype.is_floating):
            raise DTypeError(f"scaled_dot_product_attention: attn_mask must be bool or floating, got {describe(mask)}")
        m = additive_mask(mask, keep_true, q.dtype)
        add = m if add is None else add + m
    if add is not None:
        try:
            ok = __import__("numpy").broadcast_shapes(tuple(add.shape), tuple(q.shape[:-1]) + (ls[1],))
        except ValueError:
            ok = None
        if ok != tuple(q.shape[:-1]) + (ls[1],):
            raise ShapeError(f"scaled_dot_product_attention: attn_mask {describe(mask)} does not broadcast to "
                             f"the attention scores [..., L, S] = {tuple(q.shape[:-1]) + (ls[1],)}")
    return attention_fused(q, k, v, add, scale)


__all__ += ["bce_with_logits", "adaptive_avg_pool2d", "rms_norm", "batch_norm", "scaled_dot_product_attention"]


from .._methods import alias_dims as _alias_dims  # noqa: E402

_alias_dims(globals())      # F.softmax(x, dim=1) as in torch.nn.functional (dim is PyTorch's axis)
