"""Normalization layers: BatchNorm1d/2d (running statistics as buffers), LayerNorm, RMSNorm."""
from __future__ import annotations

from ..autodiff import no_grad
from ..errors import ShapeError, describe
from ..ops.creation import _device, ones, zeros, tensor
from ..dtypes import int64
from . import functional as F
from .module import Module, Parameter
from .conv_layers import _label

__all__ = ["BatchNorm1d", "BatchNorm2d", "LayerNorm", "RMSNorm"]


class _BatchNorm(Module):
    _ndims: tuple = ()
    _layout = ""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, *, device=None, dtype=None):
        device = _device(device)
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        self.weight = Parameter(ones((num_features,), device=device, dtype=dtype)) if affine else None
        self.bias = Parameter(zeros((num_features,), device=device, dtype=dtype)) if affine else None
        if track_running_stats:
            # plain tensors, hence buffers: saved in state_dict, moved by to_device, never trained
            self.running_mean = zeros((num_features,), device=device, dtype=dtype)
            self.running_var = ones((num_features,), device=device, dtype=dtype)
            self.num_batches_tracked = tensor(0, device=device, dtype=int64)
        else:
            self.running_mean = self.running_var = self.num_batches_tracked = None

    def forward(self, x):
        """Normalize each channel of ``x`` (batch statistics in training, running ones in eval).

        Training mode also updates ``running_mean`` and ``running_var``.

        Example:
            >>> import burn
            >>> bn = burn.nn.BatchNorm1d(2)
            >>> y = bn.forward(burn.tensor([[1.0, 10.0], [3.0, 30.0]]))
            >>> assert [round(v, 3) for v in y[:, 0].tolist()] == [-1.0, 1.0]
        """
        if x.ndim not in self._ndims or x.shape[1] != self.num_features:
            raise ShapeError(f"{_label(self)}: expected input {self._layout.format(c=self.num_features)}, "
                             f"got {describe(x)}")
        use_batch = self.training or not self.track_running_stats
        momentum = self.momentum
        if self.training and self.track_running_stats:
            with no_grad():
                self.num_batches_tracked.assign_(self.num_batches_tracked + 1)
            if momentum is None:
                # cumulative moving average, as torch with momentum=None
                momentum = 1.0 / int(self.num_batches_tracked.item())
        return F.batch_norm(x, self.running_mean if self.track_running_stats else None,
                            self.running_var if self.track_running_stats else None,
                            self.weight, self.bias, training=use_batch, momentum=momentum or 0.0, eps=self.eps)

    def extra_repr(self) -> str:
        """Features and settings, shown in ``repr``.

        Example:
            >>> import burn
            >>> assert burn.nn.BatchNorm1d(3).extra_repr().startswith("3, eps=1e-05, momentum=0.1")
        """
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    """Batch normalization of [N, C] or [N, C, L] per channel.

    Training normalizes with the batch's statistics and updates the buffers
    ``running_mean``/``running_var`` (momentum 0.1, unbiased variance, as
    PyTorch); after ``eval()`` the running statistics normalize.

    Example:
        >>> import burn
        >>> bn = burn.nn.BatchNorm1d(2)
        >>> y = bn(burn.tensor([[1.0, 10.0], [3.0, 30.0]]))
        >>> assert abs(y[1, 1].item() - 1.0) < 1e-3
        >>> assert abs(bn.running_mean.numpy() - [0.2, 2.0]).max() < 1e-6 and "running_var" in bn.state_dict()
    """
    _ndims = (2, 3)
    _layout = "[N, {c}] or [N, {c}, L]"


class BatchNorm2d(_BatchNorm):
    """Batch normalization of [N, C, H, W] per channel (see :class:`BatchNorm1d`).

    Example:
        >>> import burn
        >>> bn = burn.nn.BatchNorm2d(3).eval()
        >>> x = burn.ones((2, 3, 4, 4))
        >>> assert abs(bn(x).numpy() - 1 / (1 + 1e-5) ** 0.5).max() < 1e-6
    """
    _ndims = (4,)
    _layout = "[N, {c}, H, W]"


def _norm_shape(normalized_shape):
    return (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)


class LayerNorm(Module):
    """Normalize over the trailing ``normalized_shape`` axes, then scale (ones) and shift (zeros).

    Example:
        >>> import burn
        >>> ln = burn.nn.LayerNorm(4)
        >>> y = ln(burn.tensor([[1.0, 2.0, 3.0, 4.0]]))
        >>> assert abs(y.mean().item()) < 1e-6 and ln.num_params() == 8
    """

    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True, bias: bool = True,
                 *, device=None, dtype=None):
        device = _device(device)
        self.normalized_shape, self.eps = _norm_shape(normalized_shape), eps
        affine = elementwise_affine
        self.weight = Parameter(ones(self.normalized_shape, device=device, dtype=dtype)) if affine else None
        self.bias = Parameter(zeros(self.normalized_shape, device=device, dtype=dtype)) if affine and bias else None

    def forward(self, x):
        """Normalize over the trailing ``normalized_shape`` axes, then scale and shift.

        Example:
            >>> import burn
            >>> y = burn.nn.LayerNorm(2).forward(burn.tensor([[1.0, 3.0]]))
            >>> assert [round(v, 3) for v in y[0].tolist()] == [-1.0, 1.0]
        """
        k = len(self.normalized_shape)
        if x.ndim < k or tuple(x.shape[-k:]) != self.normalized_shape:
            want = ", ".join(map(str, self.normalized_shape))
            raise ShapeError(f"{_label(self)}: expected input [..., {want}], got {describe(x)}")
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        """The normalized shape and settings, shown in ``repr``.

        Example:
            >>> import burn
            >>> assert burn.nn.LayerNorm(4).extra_repr() == "(4,), eps=1e-05, elementwise_affine=True"
        """
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.weight is not None}"


class RMSNorm(Module):
    """``x / rms(x) * weight`` over the trailing ``normalized_shape`` axes (no centering).

    ``eps`` defaults to the input dtype's machine epsilon, as ``torch.nn.RMSNorm``.

    Example:
        >>> import burn
        >>> y = burn.nn.RMSNorm(2)(burn.tensor([[3.0, -3.0]]))
        >>> assert abs(y[0, 1].item() + 1.0) < 1e-5
    """

    def __init__(self, normalized_shape, eps: float | None = None, elementwise_affine: bool = True, *,
                 device=None, dtype=None):
        device = _device(device)
        self.normalized_shape, self.eps = _norm_shape(normalized_shape), eps
        self.weight = Parameter(ones(self.normalized_shape, device=device, dtype=dtype)) if elementwise_affine \
            else None

    def forward(self, x):
        """Divide by the root mean square over the trailing axes, then scale.

        Example:
            >>> import burn
            >>> y = burn.nn.RMSNorm(2).forward(burn.tensor([[3.0, -3.0]]))
            >>> assert [round(v, 3) for v in y[0].tolist()] == [1.0, -1.0]
        """
        k = len(self.normalized_shape)
        if x.ndim < k or tuple(x.shape[-k:]) != self.normalized_shape:
            want = ", ".join(map(str, self.normalized_shape))
            raise ShapeError(f"{_label(self)}: expected input [..., {want}], got {describe(x)}")
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        """The normalized shape and settings, shown in ``repr``.

        Example:
            >>> import burn
            >>> assert burn.nn.RMSNorm(4).extra_repr() == "(4,), eps=None, elementwise_affine=True"
        """
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.weight is not None}"
