"""Layers built on Module."""
from __future__ import annotations

import math

from ..ops.creation import _device, arange, randn, zeros
from . import functional as F
from . import init
from .containers import ModuleList
from .module import Module, Parameter
from .activations import GELU, SiLU  # noqa: F401  (re-exported: they lived here)
from ..ops.elementwise import where
from ..ops.movement import expand_dims, reshape
from ..errors import describe, DTypeError

__all__ = ["Linear", "ReLU", "GELU", "Sequential", "SiLU", "Identity", "Dropout", "Embedding"]


class Linear(Module):
    """``y = x @ weight + bias`` with Burn's layout: ``weight`` [d_in, d_out], ``bias`` [d_out].

    Initialized like Burn/PyTorch: weight and bias uniform in ``±1/sqrt(d_in)``.

    Example:
        >>> import burn
        >>> lin = burn.nn.Linear(3, 2)
        >>> assert lin.weight.shape == (3, 2) and lin(burn.ones((5, 3))).shape == (5, 2)
    """

    _torch_transposed = ("weight",)     # torch stores [out, in] (burn.nn.state.load_torch_state)

    def __init__(self, d_in: int, d_out: int, *, bias: bool = True, device=None, dtype=None):
        device = _device(device)
        bound = 1.0 / math.sqrt(d_in)
        self.d_in, self.d_out = d_in, d_out
        self.weight = Parameter(init.uniform((d_in, d_out), bound, device=device, dtype=dtype))
        self.bias = Parameter(init.uniform((d_out,), bound, device=device, dtype=dtype)) if bias else None

    def forward(self, x):
        """``x @ weight + bias`` over the last axis of ``x`` [..., d_in] -> [..., d_out].

        Example:
            >>> import burn, numpy as np
            >>> lin = burn.nn.Linear(2, 1)
            >>> x = burn.tensor([[1.0, 2.0]])
            >>> assert np.allclose(lin.forward(x).numpy(), (x @ lin.weight + lin.bias).numpy())
        """
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self) -> str:
        """The layer's sizes, shown in ``repr``.

        Example:
            >>> import burn
            >>> assert burn.nn.Linear(4, 2, bias=False).extra_repr() == "d_in=4, d_out=2, bias=False"
        """
        return f"d_in={self.d_in}, d_out={self.d_out}, bias={self.bias is not None}"


class ReLU(Module):
    """Element-wise ``max(x, 0)``.

    Example:
        >>> import burn
        >>> assert burn.nn.ReLU()(burn.tensor([-1.0, 2.0])).tolist() == [0.0, 2.0]
    """

    def forward(self, x):
        """``max(x, 0)`` element-wise.

        Example:
            >>> import burn
            >>> assert burn.nn.ReLU().forward(burn.tensor([-1.0, 2.0])).tolist() == [0.0, 2.0]
        """
        return F.relu(x)


class Sequential(Module):
    """Apply modules in order.

    Example:
        >>> import burn
        >>> m = burn.nn.Sequential(burn.nn.Linear(4, 8), burn.nn.ReLU(), burn.nn.Linear(8, 2))
        >>> assert m(burn.ones((3, 4))).shape == (3, 2)
        >>> assert [n for n, _ in m.named_parameters()][0] == "layers.0.weight"
        >>> assert len(m) == 3 and isinstance(m[1], burn.nn.ReLU) and len(m[:2]) == 2
    """

    _torch_flat = "layers"      # torch names the layers by index alone (burn.nn.state.torch_names)

    def __init__(self, *layers: Module):
        self.layers = ModuleList(layers)

    def __len__(self) -> int:
        return len(self.layers)

    def __iter__(self):
        return iter(self.layers)

    def __getitem__(self, i):
        """``seq[i]`` is the i-th layer; ``seq[a:b]`` a Sequential of those layers (shared, as torch's).

        Example:
            >>> import burn
            >>> m = burn.nn.Sequential(burn.nn.Linear(2, 4), burn.nn.ReLU(), burn.nn.Linear(4, 1))
            >>> assert m[-1].d_out == 1 and m[:2](burn.ones((1, 2))).shape == (1, 4)
        """
        if isinstance(i, slice):
            return Sequential(*self.layers[i])
        return self.layers[i]

    def append(self, layer: Module) -> "Sequential":
        """Add ``layer`` at the end; returns the Sequential.

        Example:
            >>> import burn
            >>> assert len(burn.nn.Sequential().append(burn.nn.ReLU())) == 1
        """
        self.layers.append(layer)
        return self

    def forward(self, x):
        """Feed ``x`` through each layer in order.

        Example:
            >>> import burn
            >>> seq = burn.nn.Sequential(burn.nn.ReLU(), burn.nn.Flatten(start_dim=0))
            >>> assert seq.forward(burn.tensor([[-1.0], [3.0]])).tolist() == [0.0, 3.0]
        """
        for layer in self.layers:
            x = layer(x)
        return x


class Identity(Module):
    """Returns its input (a placeholder, e.g. for an optional norm).

    Example:
        >>> import burn
        >>> x = burn.ones((2,))
        >>> assert burn.nn.Identity()(x) is x
    """

    def forward(self, x):
        """Return ``x`` unchanged.

        Example:
            >>> import burn
            >>> x = burn.ones((2,))
            >>> assert burn.nn.Identity().forward(x) is x
        """
        return x


class Dropout(Module):
    """Zero each element with probability ``p`` in training and scale the rest by ``1/(1-p)``;
    the identity after ``eval()``.

    Example:
        >>> import burn
        >>> d = burn.nn.Dropout(0.5)
        >>> x = burn.ones((1000,))
        >>> assert 300 < int((d(x) == 0).sum().item()) < 700
        >>> assert d.eval()(x) is x
    """

    def __init__(self, p: float = 0.5):
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"Dropout: p must be in [0, 1], got {p}")
        self.p = float(p)

    def forward(self, x):
        """Drop and rescale in training mode; return ``x`` unchanged in eval mode.

        Example:
            >>> import burn
            >>> y = burn.nn.Dropout(0.5).forward(burn.ones((1000,)))
            >>> assert set(y.tolist()) <= {0.0, 2.0}
        """
        return F.dropout(x, self.p, training=self.training)

    def extra_repr(self) -> str:
        """The drop probability, shown in ``repr``.

        Example:
            >>> import burn
            >>> assert burn.nn.Dropout(0.25).extra_repr() == "p=0.25"
        """
        return f"p={self.p}"


class Embedding(Module):
    """Lookup table: integer indices (any shape) -> rows of ``weight`` [num_embeddings, embedding_dim].

    Initialized like PyTorch: ``weight`` ~ N(0, 1), the ``padding_idx`` row (if
    given) zero; that row also gets no gradient, so it stays as set.

    Example:
        >>> import burn
        >>> emb = burn.nn.Embedding(10, 3, padding_idx=0)
        >>> y = emb(burn.tensor([[0, 4], [9, 9]]))
        >>> assert y.shape == (2, 2, 3) and y[0, 0].tolist() == [0.0, 0.0, 0.0]
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, *, padding_idx: int | None = None,
                 device=None, dtype=None):
        device = _device(device)
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise ValueError(f"Embedding: padding_idx {padding_idx} is outside [0, {num_embeddings})")
            padding_idx %= num_embeddings
        self.num_embeddings, self.embedding_dim, self.padding_idx = num_embeddings, embedding_dim, padding_idx
        w = randn((num_embeddings, embedding_dim), device=device, dtype=dtype)
        if padding_idx is not None:
            rows = reshape(arange(num_embeddings, device=device), (-1, 1))
            w = where(rows == padding_idx, 0.0, w)
        self.weight = Parameter(w)

    def forward(self, indices):
        """Rows of ``weight`` for integer ``indices`` of any shape: [...] -> [..., embedding_dim].

        Float indices raise :class:`burn.DTypeError`.

        Example:
            >>> import burn
            >>> emb = burn.nn.Embedding(4, 2)
            >>> assert emb.forward(burn.tensor([3])).tolist() == [emb.weight[3].tolist()]
        """
        if not indices.dtype.is_integer:
            raise DTypeError(f"{type(self).__name__}({self.extra_repr()}): indices must be integers, "
                             f"got {describe(indices)}; cast them with .astype(burn.int64)")
        y = F.embedding(indices, self.weight)
        if self.padding_idx is not None:
            # the padding row's lookups are cut from autodiff, as torch leaves that row's gradient zero
            y = where(expand_dims(indices == self.padding_idx, axis=-1), y.detach(), y)
        return y

    def extra_repr(self) -> str:
        """Table size and padding row, shown in ``repr``.

        Example:
            >>> import burn
            >>> assert burn.nn.Embedding(10, 3, padding_idx=0).extra_repr() == "10, 3, padding_idx=0"
        """
        pad = f", padding_idx={self.padding_idx}" if self.padding_idx is not None else ""
        return f"{self.num_embeddings}, {self.embedding_dim}{pad}"
