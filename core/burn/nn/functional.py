"""Functional neural-network ops, written with burn ops (so every backend and
autodiff get them for free) except where a fused kernel pays off
(:func:`linear_relu`, a ``backend_extension`` with kernels from the backends)."""
from __future__ import annotations

from .. import dtypes as dt
from ..errors import DTypeError, ShapeError, describe
from ..library import backend_extension
from ..ops import elementwise as E, reduction as R, movement as M, linear as L
from ..primitives import TensorMeta
from ..tensor import Tensor

__all__ = ["relu", "gelu", "sigmoid", "tanh", "silu", "softplus", "softmax", "log_softmax", "cross_entropy",
           "softmax_cross_entropy", "softmax_cross_entropy_grad", "nll_loss", "mse_loss", "linear", "linear_relu",
           "embedding", "layer_norm", "dropout", "softmax_fused", "softmax_grad", "log_softmax_fused",
           "log_softmax_grad", "layer_norm_fused",
           "layer_norm_grad"]

relu, gelu, sigmoid, tanh, silu, softplus = E.relu, E.gelu, E.sigmoid, E.tanh, E.silu, E.softplus


def softmax(x, /, axis=-1) -> Tensor:
    """Softmax along ``axis`` (max-shifted, so large inputs do not overflow).

    Example:
        >>> import burn
        >>> p = burn.nn.functional.softmax(burn.tensor([[1.0, 2.0, 3.0]]))
        >>> assert abs(p.sum().item() - 1.0) < 1e-6
    """
    if (x.dtype is dt.float32 or x.dtype is dt.float64) and x.ndim:
        # one node each way (flex: a few numpy passes) instead of ~5 forward and ~6 backward ops
        return softmax_fused(x, _axis(x, axis, "softmax"))
    return _softmax_ops(x, axis)


def _softmax_ops(x, axis):
    from ..autodiff import no_grad
    with no_grad():
        m = R.max(x, axis=axis, keepdims=True).detach()
    e = E.exp(x - m)
    return e / R.sum(e, axis=axis, keepdims=True)


def _axis(x, axis, op):
    if not isinstance(axis, int) or not -x.ndim <= axis < x.ndim:
        raise ShapeError(f"{op}: axis {axis!r} is out of range for {describe(x)}")
    return axis % x.ndim


@backend_extension("burn::softmax")
def softmax_fused(x, axis):
    """Softmax of floating ``x`` along non-negative ``axis``, as one op with an analytic backward.

    What :func:`softmax` records for float32/float64. Its gradient is
    :func:`softmax_grad` of the output; elsewhere this reference (max-shifted
    burn ops) runs.

    Example:
        >>> import burn
        >>> p = burn.nn.functional.softmax_fused(burn.tensor([[0.0, 0.0]]), 1)
        >>> assert p.tolist() == [[0.5, 0.5]]
    """
    return _softmax_ops(x, axis)


@softmax_fused.meta
def _softmax_fused_meta(x, axis):
    if not x.dtype.is_floating or not (0 <= axis < max(x.ndim, 1)):
        raise DTypeError(f"softmax: needs a floating tensor and an axis in range, got {describe(x)}, axis={axis}")
    return TensorMeta(tuple(x.shape), x.dtype)


@softmax_fused.backward
def _softmax_fused_backward(ctx, g):
    return (softmax_grad(ctx.out, g, ctx.args[1]),)


@backend_extension("burn::softmax_grad")
def softmax_grad(y, g, axis):
    """Gradient of softmax for the output gradient ``g``, given the softmax output ``y``:
    ``y * (g - sum(g * y, axis))``. Differentiable (through these ops).

    Example:
        >>> import burn
        >>> y = burn.tensor([[0.5, 0.5]])
        >>> assert burn.nn.functional.softmax_grad(y, burn.tensor([[1.0, 0.0]]), 1).tolist() == [[0.25, -0.25]]
    """
    return y * (g - R.sum(g * y, axis=axis, keepdims=True))


@softmax_grad.meta
def _softmax_grad_meta(y, g, axis):
    if tuple(y.shape) != tuple(g.shape) or y.dtype is not g.dtype:
        raise ShapeError(f"softmax backward: gradient {describe(g)} does not match the output {describe(y)}")
    return TensorMeta(tuple(y.shape), y.dtype)


@softmax_grad.backward
def _softmax_grad_backward(ctx, gg):
    # out = y * (g - s), s = sum(g * y): linear in g with a symmetric Jacobian, so the g part
    # is softmax_grad again (any order stays analytic); the y part is gg (g - s) - g sum(gg y)
    y, g = ctx.inputs
    axis = ctx.args[2]
    gy = gg * (g - R.sum(g * y, axis=axis, keepdims=True)) - g * R.sum(gg * y, axis=axis, keepdims=True)
    return (gy if y.requires_grad else None), (softmax_grad(y, gg, axis) if g.requires_grad else None)


def log_softmax(x, /, axis=-1) -> Tensor:
    """``log(softmax(x))`` computed stably.

    Example:
        >>> import burn, math
        >>> y = burn.nn.functional.log_softmax(burn.tensor([0.0, 0.0]))
        >>> assert abs(y[0].item() + math.log(2)) < 1e-6
    """
    if (x.dtype is dt.float32 or x.dtype is dt.float64) and x.ndim:
        # one node each way (a row kernel on wgpu/flex) instead of ~8 forward and backward ops
        return log_softmax_fused(x, _axis(x, axis, "log_softmax"))
    return _log_softmax_ops(x, axis)


def _log_softmax_ops(x, axis):
    return x - R.logsumexp(x, axis=axis, keepdims=True)


@backend_extension("burn::log_softmax")
def log_softmax_fused(x, axis):
    """Log-softmax of floating ``x`` along non-negative ``axis``, as one op with an analytic backward.

    What :func:`log_softmax` records for float32/float64. Its gradient is
    :func:`log_softmax_grad` of the output; elsewhere this reference
    (``x - logsumexp(x)``) runs.

    Example:
        >>> import burn, math
        >>> y = burn.nn.functional.log_softmax_fused(burn.tensor([[0.0, 0.0]]), 1)
        >>> assert abs(y[0, 1].item() + math.log(2)) < 1e-6
    """
    return _log_softmax_ops(x, axis)


@log_softmax_fused.meta
def _log_softmax_fused_meta(x, axis):
    if not x.dtype.is_floating or not (0 <= axis < max(x.ndim, 1)):
        raise DTypeError(f"log_softmax: needs a floating tensor and an axis in range, got {describe(x)}, axis={axis}")
    return TensorMeta(tuple(x.shape), x.dtype)


@log_softmax_fused.backward
def _log_softmax_fused_backward(ctx, g):
    return (log_softmax_grad(ctx.out, g, ctx.args[1]),)


@backend_extension("burn::log_softmax_grad")
def log_softmax_grad(y, g, axis):
    """Gradient of log-softmax for the output gradient ``g``, given the log-softmax output ``y``:
    ``g - exp(y) * sum(g, axis)``. Differentiable (through these ops).

    Example:
        >>> import burn, math
        >>> y = burn.tensor([[math.log(0.5), math.log(0.5)]])
        >>> d = burn.nn.functional.log_softmax_grad(y, burn.tensor([[1.0, 0.0]]), 1)
        >>> assert max(abs(a - b) for a, b in zip(d.tolist()[0], [0.5, -0.5])) < 1e-6
    """
    return g - E.exp(y) * R.sum(g, axis=axis, keepdims=True)


@log_softmax_grad.backward
def _log_softmax_grad_backward(ctx, gg):
    # out_j = g_j - e^{y_j} S, S = sum_k g_k: d out_j / d y_j = -e^{y_j} S (diagonal) and
    # d out_j / d g_k = [j = k] - e^{y_j}; analytic, so third derivatives stay cheap too
    y, g = ctx.inputs
    axis = ctx.args[2]
    e = E.exp(y)
    gy = -(gg * e) * R.sum(g, axis=axis, keepdims=True) if y.requires_grad else None
    gg_g = gg - R.sum(gg * e, axis=axis, keepdims=True) if g.requires_grad else None
    return gy, gg_g


@log_softmax_grad.meta
def _log_softmax_grad_meta(y, g, axis):
    if tuple(y.shape) != tuple(g.shape) or y.dtype is not g.dtype:
        raise ShapeError(f"log_softmax backward: gradient {describe(g)} does not match the output {describe(y)}")
    return TensorMeta(tuple(y.shape), y.dtype)


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
            return softmax_cross_entropy(logits, target, reduction, float(label_smoothing))
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


@backend_extension("burn::softmax_cross_entropy")
def softmax_cross_entropy(logits, target, reduction="mean", label_smoothing=0.0):
    """Cross-entropy of floating ``logits`` [N, C] against integer classes ``target`` [N].

    What :func:`cross_entropy` calls for class targets. A backend extension:
    flex runs it as one kernel, and its gradient ``(softmax - smoothed
    one-hot) * g`` as another (``burn::softmax_cross_entropy_grad``);
    elsewhere this reference definition (log_softmax and a gather) runs.

    Example:
        >>> import burn, math
        >>> loss = burn.nn.functional.softmax_cross_entropy(burn.zeros((2, 4)), burn.tensor([1, 2]))
        >>> assert abs(loss.item() - math.log(4)) < 1e-6
    """
    return _cross_entropy_classes(logits, target, reduction, label_smoothing)


def _check_ce(op, logits, target, reduction):
    if logits.ndim != 2 or target.shape != logits.shape[:1]:
        raise ShapeError(f"{op}: expected logits [N, C] and class targets [N], got {describe(logits)}, "
                         f"{describe(target)}")
    if logits.shape[1] == 0:
        raise ShapeError(f"{op}: logits {describe(logits)} have no classes")
    if not logits.dtype.is_floating or not target.dtype.is_integer:
        raise DTypeError(f"{op}: needs floating logits and integer class targets, got {describe(logits)}, "
                         f"{describe(target)}")
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{op}: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")


@softmax_cross_entropy.meta
def _softmax_cross_entropy_meta(logits, target, reduction="mean", label_smoothing=0.0):
    _check_ce("cross_entropy", logits, target, reduction)
    return TensorMeta(logits.shape[:1] if reduction == "none" else (), logits.dtype)


@softmax_cross_entropy.backward
def _softmax_cross_entropy_backward(ctx, g):
    logits, target = ctx.inputs
    return softmax_cross_entropy_grad(logits, target, g, *ctx.args[2:]), None


@backend_extension("burn::softmax_cross_entropy_grad")
def softmax_cross_entropy_grad(logits, target, g, reduction="mean", label_smoothing=0.0):
    """Gradient of :func:`softmax_cross_entropy` w.r.t. ``logits`` for the output gradient ``g``.

    ``(softmax(logits) - t) * g`` per row, where ``t`` is the one-hot target
    smoothed towards uniform by ``label_smoothing`` (``g`` divided by N for
    ``reduction="mean"``). Written with burn ops, so it is differentiable
    again; backends may register one kernel for it.

    Example:
        >>> import burn
        >>> d = burn.nn.functional.softmax_cross_entropy_grad(burn.zeros((1, 2)), burn.tensor([0]), burn.tensor(1.0))
        >>> assert d.tolist() == [[-0.5, 0.5]]
    """
    from ..ops.creation import arange
    n, c = logits.shape
    onehot = (M.reshape(target, (n, 1)) == arange(c, dtype=target.dtype, device=target.device)).astype(logits.dtype)
    t = onehot * (1.0 - label_smoothing) + label_smoothing / c if label_smoothing else onehot
    if reduction == "none":
        scale = M.reshape(g, (n, 1))
    else:
        scale = g * (1.0 / n) if reduction == "mean" else g
    return (softmax(logits, axis=-1) - t) * scale


@softmax_cross_entropy_grad.meta
def _softmax_cross_entropy_grad_meta(logits, target, g, reduction="mean", label_smoothing=0.0):
    _check_ce("cross_entropy backward", logits, target, reduction)
    want = logits.shape[:1] if reduction == "none" else ()
    if tuple(g.shape) != want:
        raise ShapeError(f"cross_entropy backward: output gradient {describe(g)} should have shape {want}")
    return TensorMeta(logits.shape, logits.dtype)


@softmax_cross_entropy_grad.backward
def _softmax_cross_entropy_grad_backward(ctx, gg):
    # out = (s - t) * scale with s = softmax(logits) and scale g (per row for "none", g/N for
    # "mean"): the logits part is softmax's Jacobian on gg * scale (softmax_grad, analytic at any
    # order); the g part contracts gg with s - t, which is this op again with unit row gradients
    logits, target, g = ctx.inputs
    opts = dict(zip(("reduction", "label_smoothing"), ctx.args[3:]), **ctx.kwargs)
    reduction, smoothing = opts.get("reduction", "mean"), opts.get("label_smoothing", 0.0)
    n = logits.shape[0]
    if reduction == "none":
        scale = M.reshape(g, (n, 1))
    else:
        scale = g * (1.0 / n) if reduction == "mean" else g
    gl = softmax_grad(softmax(logits, axis=-1), gg * scale, 1) if logits.requires_grad else None
    g_g = None
    if g.requires_grad:
        from ..ops.creation import ones
        st = softmax_cross_entropy_grad(logits, target, ones((n,), dtype=logits.dtype, device=logits.device),
                                        "none", smoothing)
        g_g = R.sum(gg * st, axis=-1) if reduction == "none" else R.sum(gg * st)
        if reduction == "mean":
            g_g = g_g * (1.0 / n)
    return gl, None, g_g


def mse_loss(input, target, /, *, reduction="mean") -> Tensor:
    """Mean squared error.

    Example:
        >>> import burn
        >>> assert burn.nn.functional.mse_loss(burn.ones((3,)), burn.zeros((3,))).item() == 1.0
    """
    d = input - target
    return _reduce(d * d, reduction, "mse_loss")


def linear(x, weight, bias=None) -> Tensor:
    """``x @ weight + bias`` with Burn's layout: ``weight`` is [d_in, d_out].

    Example:
        >>> import burn
        >>> y = burn.nn.functional.linear(burn.ones((2, 3)), burn.ones((3, 4)), burn.zeros((4,)))
        >>> assert y.shape == (2, 4) and y[0, 0].item() == 3.0
    """
    if x.ndim > 2 and weight.ndim == 2 and x.shape[-1] == weight.shape[0]:
        # one [rows, d_in] @ [d_in, d_out] GEMM (and a 2-D weight gradient) instead of a batched matmul
        y = M.reshape(L.matmul(M.reshape(x, (-1, x.shape[-1])), weight), tuple(x.shape[:-1]) + (weight.shape[1],))
    else:
        y = L.matmul(x, weight)
    return y + bias if bias is not None else y


@backend_extension("burn::linear_relu")
def linear_relu(x, weight, bias):
    """Fused ``relu(x @ weight + bias)`` (weight [d_in, d_out], bias [d_out]).

    A backend extension: backends register one fused kernel (flex: BLAS
    matmul with an in-place bias + relu epilogue); elsewhere this reference
    definition runs. Autodiff differentiates through the reference.

    Example:
        >>> import burn
        >>> y = burn.nn.functional.linear_relu(burn.ones((2, 3)), -burn.ones((3, 4)), burn.ones((4,)))
        >>> assert y.tolist() == [[0.0] * 4] * 2
    """
    return E.relu(L.matmul(x, weight) + bias)


@linear_relu.backward
def _linear_relu_backward(ctx, g):
    # analytic: the output's sign is the relu mask, so nothing is recomputed
    x, weight, bias = ctx.inputs
    gz = E.where(ctx.out > 0.0, g, 0.0)
    gz2 = gz if gz.ndim == 2 else M.reshape(gz, (-1, gz.shape[-1]))
    x2 = x if x.ndim == 2 else M.reshape(x, (-1, x.shape[-1]))
    gx = L.matmul(gz, L._transpose2(weight)) if x.requires_grad else None
    gw = L.matmul(L._transpose2(x2), gz2) if weight.requires_grad else None
    gb = R.sum(gz2, axis=0) if bias.requires_grad else None
    return gx, gw, gb


@linear_relu.meta
def _linear_relu_meta(x, weight, bias):
    if x.ndim < 1 or weight.ndim != 2 or bias.shape != (weight.shape[1],) or x.shape[-1] != weight.shape[0]:
        raise ShapeError(f"linear_relu: expected x [..., d_in], weight [d_in, d_out], bias [d_out]; got "
                         f"{describe(x)}, {describe(weight)}, {describe(bias)}")
    if not (x.dtype is weight.dtype is bias.dtype) or not x.dtype.is_floating:
        raise DTypeError(f"linear_relu: x, weight and bias need one floating dtype; got "
                         f"{describe(x)}, {describe(weight)}, {describe(bias)}")
    return TensorMeta(tuple(x.shape[:-1]) + (weight.shape[1],), x.dtype)


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


def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5) -> Tensor:
    """Normalize over the trailing ``normalized_shape`` axes, then scale and shift.

    Example:
        >>> import burn
        >>> y = burn.nn.functional.layer_norm(burn.tensor([[1.0, 3.0]]), (2,))
        >>> assert abs(y[0, 0].item() + 1.0) < 1e-3
    """
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    k = len(normalized_shape)
    if tuple(x.shape[-k:]) != tuple(normalized_shape):
        raise ShapeError(f"layer_norm: trailing shape of {describe(x)} is not {tuple(normalized_shape)}")
    if (k == 1 and weight is not None and bias is not None and x.ndim >= 1
            and (x.dtype is dt.float32 or x.dtype is dt.float64) and weight.dtype is x.dtype
            and bias.dtype is x.dtype and tuple(weight.shape) == tuple(bias.shape) == tuple(normalized_shape)):
        # LayerNorm's case: one node forward, one backward (vs ~9 and ~20 recorded ops)
        return layer_norm_fused(x, weight, bias, float(eps))
    return _layer_norm_ops(x, k, weight, bias, eps)


def _layer_norm_ops(x, k, weight, bias, eps):
    axes = tuple(range(x.ndim - k, x.ndim))
    mu = R.mean(x, axis=axes, keepdims=True)
    d = x - mu
    var = R.mean(d * d, axis=axes, keepdims=True)
    y = d * E.rsqrt(var + eps)
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y


@backend_extension("burn::layer_norm")
def layer_norm_fused(x, weight, bias, eps):
    """:func:`layer_norm` over the last axis with ``weight`` and ``bias`` [D], as one op.

    Its gradient is :func:`layer_norm_grad` (one op giving all three input
    gradients); elsewhere this reference (burn ops) runs.

    Example:
        >>> import burn
        >>> y = burn.nn.functional.layer_norm_fused(burn.tensor([[1.0, 3.0]]), burn.ones((2,)), burn.zeros((2,)), 0.0)
        >>> assert y.tolist() == [[-1.0, 1.0]]
    """
    return _layer_norm_ops(x, 1, weight, bias, eps)


def _check_ln(op, x, weight, bias):
    d = x.shape[-1] if x.ndim else None
    if x.ndim < 1 or tuple(weight.shape) != (d,) or (bias is not None and tuple(bias.shape) != (d,)):
        raise ShapeError(f"{op}: expected x [..., D], weight [D] and bias [D], got {describe(x)}, {describe(weight)}"
                         + (f", {describe(bias)}" if bias is not None else ""))
    if not x.dtype.is_floating or weight.dtype is not x.dtype or (bias is not None and bias.dtype is not x.dtype):
        raise DTypeError(f"{op}: x, weight and bias need one floating dtype, got {describe(x)}, {describe(weight)}")


@layer_norm_fused.meta
def _layer_norm_fused_meta(x, weight, bias, eps):
    _check_ln("layer_norm", x, weight, bias)
    return TensorMeta(tuple(x.shape), x.dtype)


@layer_norm_fused.backward
def _layer_norm_fused_backward(ctx, g):
    x, weight, _ = ctx.inputs
    return layer_norm_grad(x, weight, g, ctx.args[3])


@backend_extension("burn::layer_norm_grad")
def layer_norm_grad(x, weight, g, eps):
    """Gradients ``(dx, dweight, dbias)`` of :func:`layer_norm_fused` for the output gradient ``g``.

    With ``r = 1/sqrt(var + eps)``, ``xh = (x - mean) * r`` and ``gh = g * weight``:
    ``dx = r * (gh - mean(gh) - xh * mean(gh * xh))``, ``dweight = sum(g * xh)`` and
    ``dbias = sum(g)`` over all leading axes. Written with burn ops (differentiable).

    Example:
        >>> import burn
        >>> gx, gw, gb = burn.nn.functional.layer_norm_grad(burn.tensor([[1.0, 3.0]]), burn.ones((2,)),
        ...                                                  burn.tensor([[1.0, 1.0]]), 0.0)
        >>> assert gx.tolist() == [[0.0, 0.0]] and gw.tolist() == [-1.0, 1.0] and gb.tolist() == [1.0, 1.0]
    """
    mu = R.mean(x, axis=-1, keepdims=True)
    d = x - mu
    r = E.rsqrt(R.mean(d * d, axis=-1, keepdims=True) + eps)
    xh = d * r
    gh = g * weight
    gx = r * (gh - R.mean(gh, axis=-1, keepdims=True) - xh * R.mean(gh * xh, axis=-1, keepdims=True))
    lead = tuple(range(x.ndim - 1))
    return gx, R.sum(g * xh, axis=lead), R.sum(g, axis=lead)


@layer_norm_grad.meta
def _layer_norm_grad_meta(x, weight, g, eps):
    _check_ln("layer_norm backward", x, weight, None)
    if tuple(g.shape) != tuple(x.shape) or g.dtype is not x.dtype:
        raise ShapeError(f"layer_norm backward: gradient {describe(g)} does not match the input {describe(x)}")
    return (TensorMeta(tuple(x.shape), x.dtype), TensorMeta(tuple(weight.shape), x.dtype),
            TensorMeta(tuple(weight.shape), x.dtype))


@layer_norm_grad.backward
def _layer_norm_grad_backward(ctx, ax, aw, ab):
    # Analytic: the reference VJP would rerun the forward and a nested reverse pass per call.
    # With J = r (I - 1/D - xh xh^T / D) (symmetric), gx = J (g w), gw = sum(g xh), gb = sum(g).
    # g and w enter linearly through J; x enters through d = x - mean(x) and r, so its part is
    # the gradient G over d (r's own dependence on d folded in), centered.
    x, weight, g = ctx.inputs
    eps = ctx.args[3]
    lead = tuple(range(x.ndim - 1))
    mu = R.mean(x, axis=-1, keepdims=True)
    d = x - mu
    r = E.rsqrt(R.mean(d * d, axis=-1, keepdims=True) + eps)
    xh = d * r

    def mean(t):
        return R.mean(t, axis=-1, keepdims=True)

    ja = None if ax is None else r * (ax - mean(ax) - xh * mean(ax * xh))       # J ax
    gx_ = gw_ = gg_ = None
    if g.requires_grad:
        for t in (ab, None if aw is None else aw * xh, None if ja is None else weight * ja):
            if t is not None:
                gg_ = t if gg_ is None else gg_ + t
        if gg_ is not None and tuple(gg_.shape) != tuple(g.shape):      # only ab given: [D]
            gg_ = M.broadcast_to(gg_, tuple(g.shape))
    if weight.requires_grad and ja is not None:
        gw_ = R.sum(g * ja, axis=lead)
    if x.requires_grad:
        gd = None
        if ax is not None:
            h = g * weight
            p, q = mean(ax * xh), mean(h * xh)
            gd = -(r * r) * (p * h + q * ax + xh * (mean(ax * h) - mean(ax) * mean(h) - 3.0 * p * q))
        if aw is not None:
            u = g * aw
            t = r * (u - xh * mean(u * xh))
            gd = t if gd is None else gd + t
        if gd is not None:
            gx_ = gd - mean(gd)
    return gx_, gw_, gg_


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
    from ..ops.creation import rand
    keep = rand(x.shape, dtype=x.dtype if x.dtype.is_floating else dt.float32, device=x.device) >= p
    return E.where(keep, x * (1.0 / (1.0 - p)), 0.0)


# convolution and pooling live with their primitives in burn.ops.conv
from ..ops.conv import conv1d, conv2d, max_pool1d, max_pool2d, avg_pool1d, avg_pool2d  # noqa: E402

__all__ += ["conv1d", "conv2d", "max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d"]


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
    from ..ops.creation import tensor
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
    from ..autodiff import no_grad
    if x.ndim < 2:
        raise ShapeError(f"batch_norm: expected input [N, C, ...], got {describe(x)}")
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
    from ..ops.creation import arange
    if q.ndim < 2 or k.ndim < 2 or v.ndim < 2 or q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2]:
        raise ShapeError(f"scaled_dot_product_attention: expected query [..., L, E], key [..., S, E], "
                         f"value [..., S, Ev]; got {describe(q)}, {describe(k)}, {describe(v)}")
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
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


__all__ += ["bce_with_logits", "adaptive_avg_pool2d", "rms_norm", "batch_norm", "scaled_dot_product_attention"]
