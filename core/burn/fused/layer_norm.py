"""Layer normalization over the last axis as ``burn::layer_norm`` (one node forward) and
``burn::layer_norm_grad`` (one node giving all three input gradients, with an analytic
backward of its own); the backends register kernels for both names.
``burn.nn.functional.layer_norm`` (re-exported from here) picks the fused op for
LayerNorm's case and burn ops otherwise.
"""
from __future__ import annotations

from .. import dtypes as dt
from ..errors import DTypeError, ShapeError, describe
from ..library import backend_extension
from ..ops import elementwise as E, reduction as R, movement as M
from ..ops.autocast import to_float32
from ..primitives import TensorMeta
from ..tensor import Tensor

__all__ = ["layer_norm", "layer_norm_fused", "layer_norm_grad"]


def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5) -> Tensor:
    """Normalize over the trailing ``normalized_shape`` axes, then scale and shift.

    Example:
        >>> import burn
        >>> y = burn.nn.functional.layer_norm(burn.tensor([[1.0, 3.0]]), (2,))
        >>> assert abs(y[0, 0].item() + 1.0) < 1e-3
    """
    x, weight, bias = to_float32(x, weight, bias)      # burn.autocast's float32 list
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


@backend_extension("burn::layer_norm", autocast="float32")
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
            gg_ = M._broadcast(gg_, tuple(g.shape))
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
