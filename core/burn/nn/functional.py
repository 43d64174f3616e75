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
           "nll_loss", "mse_loss", "linear", "linear_relu", "embedding", "layer_norm", "dropout"]

relu, gelu, sigmoid, tanh, silu, softplus = E.relu, E.gelu, E.sigmoid, E.tanh, E.silu, E.softplus


def softmax(x, /, axis=-1) -> Tensor:
    """Softmax along ``axis`` (max-shifted, so large inputs do not overflow).

    Example:
        >>> import burn
        >>> p = burn.nn.functional.softmax(burn.tensor([[1.0, 2.0, 3.0]]))
        >>> assert abs(p.sum().item() - 1.0) < 1e-6
    """
    from ..autodiff import no_grad
    with no_grad():
        m = R.max(x, axis=axis, keepdims=True).detach()
    e = E.exp(x - m)
    return e / R.sum(e, axis=axis, keepdims=True)


def log_softmax(x, /, axis=-1) -> Tensor:
    """``log(softmax(x))`` computed stably.

    Example:
        >>> import burn, math
        >>> y = burn.nn.functional.log_softmax(burn.tensor([0.0, 0.0]))
        >>> assert abs(y[0].item() + math.log(2)) < 1e-6
    """
    return x - R.logsumexp(x, axis=axis, keepdims=True)


def nll_loss(log_probs, target, /, *, reduction="mean") -> Tensor:
    """Negative log-likelihood of integer class ``target`` under ``log_probs`` [N, C].

    Example:
        >>> import burn
        >>> lp = burn.nn.functional.log_softmax(burn.zeros((2, 4)))
        >>> assert abs(burn.nn.functional.nll_loss(lp, burn.tensor([0, 3])).item() - 1.3862944) < 1e-5
    """
    if not target.dtype.is_integer:
        raise DTypeError(f"nll_loss: target must hold integer class indices, got {describe(target)}")
    if log_probs.ndim != 2 or target.shape != log_probs.shape[:1]:
        raise ShapeError(f"nll_loss: expected log_probs [N, C] and target [N], got {describe(log_probs)}, "
                         f"{describe(target)}")
    picked = M.take_along_axis(log_probs, M.reshape(target, (-1, 1)), axis=1)
    loss = -M.reshape(picked, (-1,))
    return _reduce(loss, reduction, "nll_loss")


def _reduce(loss, reduction, op):
    if reduction == "mean":
        return R.mean(loss)
    if reduction == "sum":
        return R.sum(loss)
    if reduction == "none":
        return loss
    raise ValueError(f"{op}: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")


def cross_entropy(logits, target, /, *, reduction="mean", label_smoothing=0.0) -> Tensor:
    """Cross-entropy of ``logits`` [N, C] against integer classes [N] or probabilities [N, C].

    Example:
        >>> import burn
        >>> loss = burn.nn.functional.cross_entropy(burn.zeros((2, 4)), burn.tensor([1, 2]))
        >>> assert abs(loss.item() - 1.3862944) < 1e-5
    """
    # validate before recording any work, so a bad call leaves the graph untouched
    if target.dtype.is_integer:
        if logits.ndim != 2 or target.shape != logits.shape[:1]:
            raise ShapeError(f"cross_entropy: expected logits [N, C] and class targets [N], got "
                             f"{describe(logits)}, {describe(target)}")
    elif target.shape != logits.shape:
        raise ShapeError(f"cross_entropy: probability targets need the logits' shape ({describe(logits)}, "
                         f"{describe(target)})")
    lp = log_softmax(logits, axis=-1)
    if target.dtype.is_integer:
        loss_t = nll_loss(lp, target, reduction="none")
        if label_smoothing:
            smooth = -R.mean(lp, axis=-1)
            loss_t = loss_t * (1 - label_smoothing) + smooth * label_smoothing
        return _reduce(loss_t, reduction, "cross_entropy")
    return _reduce(-R.sum(target * lp, axis=-1), reduction, "cross_entropy")


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
