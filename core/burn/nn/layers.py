"""Layers built on Module."""
from __future__ import annotations

import math

from ..ops.creation import _device, zeros
from . import functional as F
from . import init
from .module import Module, Parameter

__all__ = ["Linear", "ReLU", "GELU", "Sequential"]


class Linear(Module):
    """``y = x @ weight + bias`` with Burn's layout: ``weight`` [d_in, d_out], ``bias`` [d_out].

    Initialized like Burn/PyTorch: weight and bias uniform in ``±1/sqrt(d_in)``.

    Example:
        >>> import burn
        >>> lin = burn.nn.Linear(3, 2)
        >>> assert lin.weight.shape == (3, 2) and lin(burn.ones((5, 3))).shape == (5, 2)
    """

    def __init__(self, d_in: int, d_out: int, *, bias: bool = True, device=None, dtype=None):
        device = _device(device)
        bound = 1.0 / math.sqrt(d_in)
        self.d_in, self.d_out = d_in, d_out
        self.weight = Parameter(init.uniform((d_in, d_out), bound, device=device, dtype=dtype))
        self.bias = Parameter(init.uniform((d_out,), bound, device=device, dtype=dtype)) if bias else None

    def forward(self, x):
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"d_in={self.d_in}, d_out={self.d_out}, bias={self.bias is not None}"


class ReLU(Module):
    """Element-wise ``max(x, 0)``.

    Example:
        >>> import burn
        >>> assert burn.nn.ReLU()(burn.tensor([-1.0, 2.0])).tolist() == [0.0, 2.0]
    """

    def forward(self, x):
        return F.relu(x)


class GELU(Module):
    """Element-wise exact GELU.

    Example:
        >>> import burn
        >>> assert burn.nn.GELU()(burn.tensor([0.0])).item() == 0.0
    """

    def forward(self, x):
        return F.gelu(x)


class Sequential(Module):
    """Apply modules in order.

    Example:
        >>> import burn
        >>> m = burn.nn.Sequential(burn.nn.Linear(4, 8), burn.nn.ReLU(), burn.nn.Linear(8, 2))
        >>> assert m(burn.ones((3, 4))).shape == (3, 2)
        >>> assert [n for n, _ in m.named_parameters()][0] == "layers.0.weight"
    """

    def __init__(self, *layers: Module):
        self.layers = list(layers)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x
