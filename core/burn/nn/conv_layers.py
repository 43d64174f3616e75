"""Convolution, pooling and flattening layers (NCHW / NCL layouts, as PyTorch and Burn)."""
from __future__ import annotations

import math

from ..errors import ShapeError, describe
from ..ops import movement as M
from ..ops.creation import _device
from . import functional as F
from . import init
from .module import Module, Parameter

__all__ = ["Conv1d", "Conv2d", "ConvTranspose1d", "ConvTranspose2d", "MaxPool1d", "MaxPool2d", "AvgPool1d", "AvgPool2d", "AdaptiveAvgPool2d",
           "Flatten"]


def _label(m) -> str:
    """One-line name of a module for error messages (its repr may span lines)."""
    return f"{type(m).__name__}({m.extra_repr()})"


def _tuple(v, n, what, layer):
    t = tuple(v) if isinstance(v, (tuple, list)) else (v,) * n
    if len(t) != n:
        raise ValueError(f"{layer}: {what} must be an int or {n} ints, got {v!r}")
    return tuple(int(i) for i in t)


class _ConvNd(Module):
    _n = 0
    _fn = None
    _layout = ""

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, *, device=None, dtype=None):
        name = type(self).__name__
        if in_channels % groups or out_channels % groups:
            raise ValueError(f"{name}: in_channels ({in_channels}) and out_channels ({out_channels}) must be "
                             f"divisible by groups ({groups})")
        device = _device(device)
        n = self._n
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = _tuple(kernel_size, n, "kernel_size", name)
        self.stride = _tuple(stride, n, "stride", name)
        self.padding = padding if isinstance(padding, str) else _tuple(padding, n, "padding", name)
        self.dilation = _tuple(dilation, n, "dilation", name)
        fan_in = in_channels // groups * math.prod(self.kernel_size)
        # PyTorch's default: kaiming_uniform(a=sqrt(5)) i.e. bound 1/sqrt(fan_in), bias the same bound
        shape = (out_channels, in_channels // groups) + self.kernel_size
        self.weight = Parameter(init.kaiming_uniform(shape, fan_in, gain=math.sqrt(1.0 / 3.0), device=device,
                                                     dtype=dtype))
        bound = 1.0 / math.sqrt(fan_in)
        self.bias = Parameter(init.uniform((out_channels,), bound, device=device, dtype=dtype)) if bias else None

    def forward(self, x):
        """Convolve ``x`` [N, C_in, *spatial] (or unbatched [C_in, *spatial]) with ``weight``, add ``bias``.

        Example:
            >>> import burn
            >>> conv = burn.nn.Conv1d(2, 4, 3, padding=1)
            >>> assert conv.forward(burn.ones((1, 2, 10))).shape == (1, 4, 10)
        """
        n = self._n
        if x.ndim not in (n + 1, n + 2) or x.shape[-n - 1] != self.in_channels:
            raise ShapeError(f"{_label(self)}: expected input {self._layout.format(c=self.in_channels)}, "
                             f"got {describe(x)}")
        p = self.padding if isinstance(self.padding, str) else (self.padding[0] if n == 1 else self.padding)
        one = (lambda t: t[0]) if n == 1 else (lambda t: t)
        return type(self)._fn(x, self.weight, self.bias, stride=one(self.stride), padding=p,
                              dilation=one(self.dilation), groups=self.groups)

    def extra_repr(self) -> str:
        """Channels and non-default settings, shown in ``repr``.

        Example:
            >>> import burn
            >>> assert burn.nn.Conv1d(2, 4, 3).extra_repr() == "2, 4, kernel_size=(3,), stride=(1,)"
        """
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != "valid" and self.padding != (0,) * self._n:
            s += f", padding={self.padding!r}"
        if self.dilation != (1,) * self._n:
            s += f", dilation={self.dilation}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        return s


class Conv1d(_ConvNd):
    """1-D convolution of [N, C_in, L] (or [C_in, L]) with ``weight`` [C_out, C_in/groups, K].

    Options as :func:`burn.nn.functional.conv1d`; initialized as PyTorch's.

    Example:
        >>> import burn
        >>> conv = burn.nn.Conv1d(2, 4, 3, padding=1)
        >>> assert conv.weight.shape == (4, 2, 3) and conv(burn.ones((5, 2, 7))).shape == (5, 4, 7)
    """
    _n = 1
    _fn = staticmethod(F.conv1d)
    _layout = "[N, {c}, L] or [{c}, L]"


class Conv2d(_ConvNd):
    """2-D convolution of [N, C_in, H, W] (or [C_in, H, W]) with ``weight`` [C_out, C_in/groups, kH, kW].

    Options as :func:`burn.nn.functional.conv2d` (``padding`` may be ``"same"``);
    initialized as PyTorch's (uniform in ``±1/sqrt(fan_in)``).

    Example:
        >>> import burn
        >>> conv = burn.nn.Conv2d(3, 8, 3, stride=2, padding=1)
        >>> assert conv(burn.ones((2, 3, 8, 8))).shape == (2, 8, 4, 4) and conv.num_params() == 8 * 27 + 8
    """
    _n = 2
    _fn = staticmethod(F.conv2d)
    _layout = "[N, {c}, H, W] or [{c}, H, W]"


class _ConvTransposeNd(Module):
    _n = 0
    _fn = None
    _layout = ""

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0,
                 groups: int = 1, bias: bool = True, dilation=1, padding_mode: str = "zeros", *, device=None,
                 dtype=None):
        name = type(self).__name__
        if in_channels % groups or out_channels % groups:
            raise ValueError(f"{name}: in_channels ({in_channels}) and out_channels ({out_channels}) must be "
                             f"divisible by groups ({groups})")
        if padding_mode != "zeros":
            raise ValueError(f"{name}: only padding_mode='zeros' is supported (as in PyTorch), "
                             f"got {padding_mode!r}")
        device = _device(device)
        n = self._n
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = _tuple(kernel_size, n, "kernel_size", name)
        self.stride = _tuple(stride, n, "stride", name)
        self.padding = _tuple(padding, n, "padding", name)
        self.output_padding = _tuple(output_padding, n, "output_padding", name)
        self.dilation = _tuple(dilation, n, "dilation", name)
        for o, s, d in zip(self.output_padding, self.stride, self.dilation):
            if o >= s and o >= d:
                raise ValueError(f"{name}: output_padding {self.output_padding} must be smaller than either "
                                 f"stride {self.stride} or dilation {self.dilation}, as in PyTorch")
        # PyTorch's default, with its fan-in of a [C_in, C_out/groups, *k] weight: C_out/groups * prod(k)
        fan_in = out_channels // groups * math.prod(self.kernel_size)
        shape = (in_channels, out_channels // groups) + self.kernel_size
        self.weight = Parameter(init.kaiming_uniform(shape, fan_in, gain=math.sqrt(1.0 / 3.0), device=device,
                                                     dtype=dtype))
        bound = 1.0 / math.sqrt(fan_in)
        self.bias = Parameter(init.uniform((out_channels,), bound, device=device, dtype=dtype)) if bias else None

    def _output_padding(self, x, output_size):
        """torch's rule: the output_padding that gives ``output_size`` (the spatial sizes, or the
        full shape), which must lie within one stride of the smallest output."""
        n = self._n
        size = list(output_size)
        if len(size) in (n + 1, n + 2):
            size = size[-n:]
        if len(size) != n:
            raise ShapeError(f"{_label(self)}: output_size must have {n} (or {n + 2}) elements, got {output_size!r}")
        pads = []
        for i in range(n):
            lo = ((x.shape[x.ndim - n + i] - 1) * self.stride[i] - 2 * self.padding[i]
                  + self.dilation[i] * (self.kernel_size[i] - 1) + 1)
            hi = lo + self.stride[i] - 1
            if not lo <= size[i] <= hi:
                raise ShapeError(f"{_label(self)}: requested output_size {tuple(output_size)}, but valid sizes "
                                 f"along axis {i} range from {lo} to {hi} for input {describe(x)}")
            pads.append(size[i] - lo)
        return tuple(pads)

    def forward(self, x, output_size=None):
        """Transposed convolution of ``x`` [N, C_in, *spatial] (or [C_in, *spatial]); ``output_size``
        (spatial sizes) picks the output_padding that reaches it, as PyTorch.

        Example:
            >>> import burn
            >>> up = burn.nn.ConvTranspose1d(2, 4, 3, stride=2, padding=1)
            >>> assert up.forward(burn.ones((1, 2, 5)), output_size=[10]).shape == (1, 4, 10)
        """
        n = self._n
        if x.ndim not in (n + 1, n + 2) or x.shape[-n - 1] != self.in_channels:
            raise ShapeError(f"{_label(self)}: expected input {self._layout.format(c=self.in_channels)}, "
                             f"got {describe(x)}")
        out_pad = self.output_padding if output_size is None else self._output_padding(x, output_size)
        one = (lambda t: t[0]) if n == 1 else (lambda t: t)
        return type(self)._fn(x, self.weight, self.bias, one(self.stride), one(self.padding), one(out_pad),
                              self.groups, one(self.dilation))

    def extra_repr(self) -> str:
        """Channels and non-default settings, shown in ``repr``.

        Example:
            >>> import burn
            >>> assert burn.nn.ConvTranspose1d(2, 4, 3).extra_repr() == "2, 4, kernel_size=(3,), stride=(1,)"
        """
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        for what, v, default in (("padding", self.padding, 0), ("output_padding", self.output_padding, 0),
                                 ("dilation", self.dilation, 1)):
            if v != (default,) * self._n:
                s += f", {what}={v}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        return s


class ConvTranspose1d(_ConvTransposeNd):
    """1-D transposed convolution of [N, C_in, L] (or [C_in, L]) with ``weight`` [C_in, C_out/groups, K].

    Options as :func:`burn.nn.functional.conv_transpose1d` and ``torch.nn.ConvTranspose1d``
    (same argument names and weight layout, so torch's state dicts load as they are);
    initialized as PyTorch's. ``forward(x, output_size=)`` as in PyTorch.

    Example:
        >>> import burn
        >>> up = burn.nn.ConvTranspose1d(4, 2, 4, stride=2, padding=1)
        >>> assert up.weight.shape == (4, 2, 4) and up(burn.ones((3, 4, 8))).shape == (3, 2, 16)
    """
    _n = 1
    _fn = staticmethod(F.conv_transpose1d)
    _layout = "[N, {c}, L] or [{c}, L]"


class ConvTranspose2d(_ConvTransposeNd):
    """2-D transposed convolution of [N, C_in, H, W] (or [C_in, H, W]) with ``weight`` [C_in, C_out/groups, kH, kW].

    Options as :func:`burn.nn.functional.conv_transpose2d` and ``torch.nn.ConvTranspose2d``
    (same argument names and weight layout); initialized as PyTorch's.
    ``forward(x, output_size=)`` picks the output padding, as in PyTorch.

    Example:
        >>> import burn
        >>> up = burn.nn.ConvTranspose2d(8, 3, 3, stride=2, padding=1, output_padding=1)
        >>> assert up(burn.ones((2, 8, 4, 4))).shape == (2, 3, 8, 8) and up.num_params() == 8 * 27 + 3
    """
    _n = 2
    _fn = staticmethod(F.conv_transpose2d)
    _layout = "[N, {c}, H, W] or [{c}, H, W]"


class _Pool(Module):
    _dims = 2

    def _check(self, x):
        lo = self._dims + 1
        if x.ndim not in (lo, lo + 1):
            want = "[N, C, H, W] or [C, H, W]" if self._dims == 2 else "[N, C, L] or [C, L]"
            raise ShapeError(f"{_label(self)}: expected input {want}, got {describe(x)}")


class MaxPool2d(_Pool):
    """Maximum over ``kernel_size`` windows of [N, C, H, W] (``stride`` defaults to the kernel).

    Example:
        >>> import burn
        >>> x = burn.arange(16, dtype=burn.float32).reshape((1, 1, 4, 4))
        >>> assert burn.nn.MaxPool2d(2)(x).tolist() == [[[[5.0, 7.0], [13.0, 15.0]]]]
    """

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, *, ceil_mode: bool = False):
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.dilation, self.ceil_mode = dilation, ceil_mode

    def forward(self, x):
        """Window maxima of ``x`` [N, C, H, W].

        Example:
            >>> import burn
            >>> x = burn.arange(16, dtype=burn.float32).reshape(1, 1, 4, 4)
            >>> assert burn.nn.MaxPool2d(2).forward(x).tolist() == [[[[5.0, 7.0], [13.0, 15.0]]]]
        """
        self._check(x)
        return F.max_pool2d(x, self.kernel_size, self.stride, self.padding, self.dilation, ceil_mode=self.ceil_mode)

    def extra_repr(self) -> str:
        """Window settings, shown in ``repr``.

        Example:
            >>> import burn
            >>> assert burn.nn.MaxPool2d(2).extra_repr() == "kernel_size=2, stride=None, padding=0"
        """
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxPool1d(MaxPool2d):
    """Maximum over windows of [N, C, L].

    Example:
        >>> import burn
        >>> assert burn.nn.MaxPool1d(2)(burn.tensor([[[1.0, 3.0, 2.0, 0.0]]])).tolist() == [[[3.0, 2.0]]]
    """
    _dims = 1

    def forward(self, x):
        """Window maxima of ``x`` [N, C, L].

        Example:
            >>> import burn
            >>> x = burn.tensor([[[1.0, 3.0, 2.0, 0.0]]])
            >>> assert burn.nn.MaxPool1d(2).forward(x).tolist() == [[[3.0, 2.0]]]
        """
        self._check(x)
        return F.max_pool1d(x, self.kernel_size, self.stride, self.padding, self.dilation, ceil_mode=self.ceil_mode)


class AvgPool2d(_Pool):
    """Mean over ``kernel_size`` windows of [N, C, H, W] (zero padding counted unless
    ``count_include_pad=False``).

    Example:
        >>> import burn
        >>> x = burn.arange(16, dtype=burn.float32).reshape((1, 1, 4, 4))
        >>> assert burn.nn.AvgPool2d(2)(x).tolist() == [[[[2.5, 4.5], [10.5, 12.5]]]]
    """

    def __init__(self, kernel_size, stride=None, padding=0, *, ceil_mode: bool = False,
                 count_include_pad: bool = True):
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad

    def forward(self, x):
        """Window means of ``x`` [N, C, H, W].

        Example:
            >>> import burn
            >>> x = burn.arange(16, dtype=burn.float32).reshape(1, 1, 4, 4)
            >>> assert burn.nn.AvgPool2d(2).forward(x).tolist() == [[[[2.5, 4.5], [10.5, 12.5]]]]
        """
        self._check(x)
        return F.avg_pool2d(x, self.kernel_size, self.stride, self.padding, ceil_mode=self.ceil_mode,
                            count_include_pad=self.count_include_pad)

    def extra_repr(self) -> str:
        """Window settings, shown in ``repr``.

        Example:
            >>> import burn
            >>> assert burn.nn.AvgPool2d(3, 1, 1).extra_repr() == "kernel_size=3, stride=1, padding=1"
        """
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool1d(AvgPool2d):
    """Mean over windows of [N, C, L].

    Example:
        >>> import burn
        >>> assert burn.nn.AvgPool1d(2)(burn.tensor([[[1.0, 3.0, 2.0, 0.0]]])).tolist() == [[[2.0, 1.0]]]
    """
    _dims = 1

    def forward(self, x):
        """Window means of ``x`` [N, C, L].

        Example:
            >>> import burn
            >>> x = burn.tensor([[[1.0, 3.0, 2.0, 0.0]]])
            >>> assert burn.nn.AvgPool1d(2).forward(x).tolist() == [[[2.0, 1.0]]]
        """
        self._check(x)
        return F.avg_pool1d(x, self.kernel_size, self.stride, self.padding, ceil_mode=self.ceil_mode,
                            count_include_pad=self.count_include_pad)


class AdaptiveAvgPool2d(_Pool):
    """Average [N, C, H, W] down to ``output_size`` (an int, a pair, ``None`` keeps a size),
    with PyTorch's windows.

    Example:
        >>> import burn
        >>> pool = burn.nn.AdaptiveAvgPool2d((1, 1))
        >>> assert pool(burn.ones((2, 5, 7, 3))).shape == (2, 5, 1, 1)
    """

    def __init__(self, output_size):
        self.output_size = output_size

    def forward(self, x):
        """Average ``x`` [N, C, H, W] down to ``output_size``.

        Example:
            >>> import burn
            >>> x = burn.arange(16, dtype=burn.float32).reshape(1, 1, 4, 4)
            >>> assert burn.nn.AdaptiveAvgPool2d(1).forward(x).tolist() == [[[[7.5]]]]
        """
        self._check(x)
        return F.adaptive_avg_pool2d(x, self.output_size)

    def extra_repr(self) -> str:
        """The output size, shown in ``repr``.

        Example:
            >>> import burn
            >>> assert burn.nn.AdaptiveAvgPool2d((2, 3)).extra_repr() == "output_size=(2, 3)"
        """
        return f"output_size={self.output_size}"


class Flatten(Module):
    """Merge axes ``start_dim..end_dim`` into one (default: all but the batch axis).

    Example:
        >>> import burn
        >>> assert burn.nn.Flatten()(burn.ones((2, 3, 4, 5))).shape == (2, 60)
        >>> assert burn.nn.Flatten(0, 1)(burn.ones((2, 3, 4))).shape == (6, 4)
    """

    def __init__(self, start_dim: int = 1, end_dim: int = -1):
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x):
        """``x`` with axes ``start_dim..end_dim`` merged.

        Example:
            >>> import burn
            >>> assert burn.nn.Flatten().forward(burn.zeros((2, 3, 4))).shape == (2, 12)
        """
        s, e = self.start_dim % max(x.ndim, 1), self.end_dim % max(x.ndim, 1)
        if not (-x.ndim <= self.start_dim < x.ndim and -x.ndim <= self.end_dim < x.ndim) or s > e:
            raise ShapeError(f"{_label(self)}: cannot flatten axes {self.start_dim}..{self.end_dim} "
                             f"of {describe(x)}")
        merged = math.prod(x.shape[s:e + 1])
        return M.reshape(x, tuple(x.shape[:s]) + (merged,) + tuple(x.shape[e + 1:]))

    def extra_repr(self) -> str:
        """The merged axes, shown in ``repr``.

        Example:
            >>> import burn
            >>> assert burn.nn.Flatten().extra_repr() == "start_dim=1, end_dim=-1"
        """
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"
