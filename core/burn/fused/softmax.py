"""Softmax, log-softmax and softmax cross-entropy as ``burn::`` extension ops.

Each is one node forward and one backward (``*_grad``, itself an extension with an
analytic backward) instead of the handful of recorded ops of its reference
definition; the backends register kernels for these names (flex, wgpu, cuda).
:func:`softmax` and :func:`log_softmax` pick the fused op for float32/float64 and the
op-by-op reference otherwise; ``burn.nn.functional`` re-exports all of them.
"""
from __future__ import annotations

from .. import dtypes as dt
from ..errors import DTypeError, ShapeError, describe
from ..library import backend_extension
from ..ops import elementwise as E, reduction as R, movement as M
from ..ops.autocast import to_float32
from ..ops.creation import arange, ones
from ..primitives import TensorMeta
from ..tensor import Tensor
from ..tape import no_grad

__all__ = ["softmax", "log_softmax", "softmax_fused", "softmax_grad", "log_softmax_fused", "log_softmax_grad",
           "softmax_cross_entropy", "softmax_cross_entropy_grad"]


def softmax(x, /, axis=-1) -> Tensor:
    """Softmax along ``axis`` (max-shifted, so large inputs do not overflow).

    Example:
        >>> import burn
        >>> p = burn.nn.functional.softmax(burn.tensor([[1.0, 2.0, 3.0]]))
        >>> assert abs(p.sum().item() - 1.0) < 1e-6
    """
    (x,) = to_float32(x)            # burn.autocast's float32 list
    if (x.dtype is dt.float32 or x.dtype is dt.float64) and x.ndim:
        # one node each way (flex: a few numpy passes) instead of ~5 forward and ~6 backward ops
        return softmax_fused(x, _axis(x, axis, "softmax"))
    return _softmax_ops(x, axis)


def _softmax_ops(x, axis):
    with no_grad():
        m = R.max(x, axis=axis, keepdims=True).detach()
    e = E.exp(x - m)
    return e / R.sum(e, axis=axis, keepdims=True)


def _axis(x, axis, op):
    if not isinstance(axis, int) or not -x.ndim <= axis < x.ndim:
        raise ShapeError(f"{op}: axis {axis!r} is out of range for {describe(x)}")
    return axis % x.ndim


@backend_extension("burn::softmax", autocast="float32")
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


def _along_axis_meta(op):
    """The meta rule of a fused op along one axis: same shape and dtype, floating only."""
    def meta(x, axis):
        if not x.dtype.is_floating or not (0 <= axis < max(x.ndim, 1)):
            raise DTypeError(f"{op}: needs a floating tensor and an axis in range, got {describe(x)}, axis={axis}")
        return TensorMeta(tuple(x.shape), x.dtype)
    return meta


def _backward_from_output(grad_op):
    """The backward rule of a fused op whose gradient is ``grad_op(output, g, axis)``."""
    def backward(ctx, g):
        return (grad_op(ctx.out, g, ctx.args[1]),)
    return backward


softmax_fused.meta(_along_axis_meta("softmax"))


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
    (x,) = to_float32(x)            # burn.autocast's float32 list
    if (x.dtype is dt.float32 or x.dtype is dt.float64) and x.ndim:
        # one node each way (a row kernel on wgpu/flex) instead of ~8 forward and backward ops
        return log_softmax_fused(x, _axis(x, axis, "log_softmax"))
    return _log_softmax_ops(x, axis)


def _log_softmax_ops(x, axis):
    return x - R.logsumexp(x, axis=axis, keepdims=True)


@backend_extension("burn::log_softmax", autocast="float32")
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


log_softmax_fused.meta(_along_axis_meta("log_softmax"))


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


softmax_fused.backward(_backward_from_output(softmax_grad))
log_softmax_fused.backward(_backward_from_output(log_softmax_grad))


@log_softmax_grad.meta
def _log_softmax_grad_meta(y, g, axis):
    if tuple(y.shape) != tuple(g.shape) or y.dtype is not g.dtype:
        raise ShapeError(f"log_softmax backward: gradient {describe(g)} does not match the output {describe(y)}")
    return TensorMeta(tuple(y.shape), y.dtype)


@backend_extension("burn::softmax_cross_entropy", autocast="float32")
def softmax_cross_entropy(logits, target, reduction="mean", label_smoothing=0.0):
    """Cross-entropy of floating ``logits`` [N, C] against integer classes ``target`` [N].

    What :func:`burn.nn.functional.cross_entropy` calls for class targets without
    weights or ignored classes. A backend extension: flex runs it as one kernel, and
    its gradient ``(softmax - smoothed one-hot) * g`` as another
    (``burn::softmax_cross_entropy_grad``); elsewhere this reference definition
    (log_softmax and a gather) runs.

    Example:
        >>> import burn, math
        >>> loss = burn.nn.functional.softmax_cross_entropy(burn.zeros((2, 4)), burn.tensor([1, 2]))
        >>> assert abs(loss.item() - math.log(4)) < 1e-6
    """
    lp = log_softmax(logits, axis=-1)
    loss = -M.reshape(M.take_along_axis(lp, M.reshape(target, (-1, 1)), axis=1), (-1,))
    if label_smoothing:
        smooth = -R.mean(lp, axis=-1)
        loss = loss * (1 - label_smoothing) + smooth * label_smoothing
    if reduction == "none":
        return loss
    return R.mean(loss) if reduction == "mean" else R.sum(loss)


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
        st = softmax_cross_entropy_grad(logits, target, ones((n,), dtype=logits.dtype, device=logits.device),
                                        "none", smoothing)
        g_g = R.sum(gg * st, axis=-1) if reduction == "none" else R.sum(gg * st)
        if reduction == "mean":
            g_g = g_g * (1.0 / n)
    return gl, None, g_g
