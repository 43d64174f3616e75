"""Activation modules, as torch.nn's: ``Tanh``, ``Sigmoid``, ``LeakyReLU``, ``GELU``, ``SiLU``, ``Softmax``.

Each wraps the element-wise op (or the fused softmax) of the same name; they hold no parameters.
``ReLU`` lives in layers (``Sequential`` fuses ``Linear`` + ``ReLU``).
"""
from __future__ import annotations

import math

from . import functional as F
from ..ops import elementwise as E
from .module import Module

__all__ = ["Tanh", "Sigmoid", "LeakyReLU", "GELU", "SiLU", "Softmax"]


class Tanh(Module):
    """Element-wise ``tanh``.

    Example:
        >>> import burn
        >>> assert burn.nn.Tanh()(burn.tensor([0.0])).tolist() == [0.0]
    """

    def forward(self, x):
        """``tanh(x)`` element-wise.

        Example:
            >>> import burn
            >>> assert abs(burn.nn.Tanh().forward(burn.tensor([20.0])).item() - 1.0) < 1e-6
        """
        return E.tanh(x)


class Sigmoid(Module):
    """Element-wise ``1 / (1 + exp(-x))``.

    Example:
        >>> import burn
        >>> assert burn.nn.Sigmoid()(burn.tensor([0.0])).tolist() == [0.5]
    """

    def forward(self, x):
        """``sigmoid(x)`` element-wise.

        Example:
            >>> import burn
            >>> assert burn.nn.Sigmoid().forward(burn.tensor([0.0, 50.0])).tolist() == [0.5, 1.0]
        """
        return E.sigmoid(x)


class LeakyReLU(Module):
    """Element-wise ``x if x > 0 else negative_slope * x``, as ``torch.nn.LeakyReLU``.

    Example:
        >>> import burn
        >>> assert burn.nn.LeakyReLU(0.5)(burn.tensor([-1.0, 2.0])).tolist() == [-0.5, 2.0]
    """

    def __init__(self, negative_slope: float = 0.01):
        self.negative_slope = float(negative_slope)

    def forward(self, x):
        """``leaky_relu(x, negative_slope)``.

        Example:
            >>> import burn
            >>> assert burn.nn.LeakyReLU().forward(burn.tensor([-100.0])).tolist() == [-1.0]
        """
        return F.leaky_relu(x, self.negative_slope)

    def extra_repr(self) -> str:
        """The slope, shown in ``repr``.

        Example:
            >>> import burn
            >>> assert burn.nn.LeakyReLU(0.2).extra_repr() == "negative_slope=0.2"
        """
        return f"negative_slope={self.negative_slope}"


_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


class GELU(Module):
    """Element-wise GELU: exact ``x * Phi(x)`` (``approximate="none"``) or torch's tanh form
    ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`` (``approximate="tanh"``).

    Example:
        >>> import burn
        >>> assert burn.nn.GELU()(burn.tensor([0.0])).item() == 0.0
        >>> assert abs(burn.nn.GELU(approximate="tanh")(burn.tensor([1.0])).item() - 0.841192) < 1e-5
    """

    def __init__(self, approximate: str = "none"):
        if approximate not in ("none", "tanh"):
            raise ValueError(f"GELU: approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def forward(self, x):
        """GELU of ``x`` element-wise, exact or tanh-approximated as configured.

        Example:
            >>> import burn
            >>> y = burn.nn.GELU().forward(burn.tensor([0.0, 10.0]))
            >>> assert y[0].item() == 0.0 and abs(y[1].item() - 10.0) < 1e-5
        """
        if self.approximate == "none":
            return F.gelu(x)
        return 0.5 * x * (1.0 + E.tanh(_SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)))

    def extra_repr(self) -> str:
        """The approximation, shown in ``repr``.

        Example:
            >>> import burn
            >>> assert burn.nn.GELU("tanh").extra_repr() == "approximate='tanh'"
        """
        return f"approximate={self.approximate!r}"


class SiLU(Module):
    """Element-wise ``x * sigmoid(x)`` (swish).

    Example:
        >>> import burn
        >>> assert burn.nn.SiLU()(burn.tensor([0.0])).item() == 0.0
    """

    def forward(self, x):
        """``x * sigmoid(x)`` element-wise.

        Example:
            >>> import burn
            >>> y = burn.nn.SiLU().forward(burn.tensor([0.0, 20.0]))
            >>> assert y[0].item() == 0.0 and abs(y[1].item() - 20.0) < 1e-4
        """
        return F.silu(x)


class Softmax(Module):
    """Softmax along ``axis`` (default -1); ``dim=`` is accepted as torch's name for it (not both).

    Example:
        >>> import burn
        >>> y = burn.nn.Softmax(dim=0)(burn.tensor([[1.0, 2.0], [1.0, 2.0]]))
        >>> assert y.tolist() == [[0.5, 0.5], [0.5, 0.5]]
    """

    def __init__(self, axis: int | None = None, *, dim: int | None = None):
        if axis is not None and dim is not None:
            raise TypeError(f"Softmax: got both axis={axis} and dim={dim}; dim is torch's name for axis, give one")
        ax = dim if axis is None else axis
        ax = -1 if ax is None else ax
        if isinstance(ax, bool) or not isinstance(ax, int):
            raise TypeError(f"Softmax: axis must be an int, got {type(ax).__name__}")
        self.axis = ax

    def forward(self, x):
        """``softmax(x, axis)``: non-negative values summing to 1 along the axis.

        Example:
            >>> import burn
            >>> assert burn.nn.Softmax().forward(burn.tensor([0.0, 0.0])).tolist() == [0.5, 0.5]
        """
        return F.softmax(x, axis=self.axis)

    def extra_repr(self) -> str:
        """The axis, shown in ``repr``.

        Example:
            >>> import burn
            >>> assert burn.nn.Softmax(1).extra_repr() == "axis=1"
        """
        return f"axis={self.axis}"
