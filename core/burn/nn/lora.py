"""LoRA and QLoRA: fine-tune a frozen model through small low-rank adapters.

:func:`apply_lora` freezes every parameter of a model and wraps each targeted
:class:`~burn.nn.Linear` (weight ``W`` [d_in, d_out]) in a :class:`LoRALinear`,
which computes

    ``y = x @ W + b + dropout(x) @ A @ B * (alpha / rank)``

with trainable ``A`` [d_in, rank] (uniform in ``±1/sqrt(d_in)``, the
kaiming-uniform of PEFT) and ``B`` [rank, d_out] (zeros), so the adapted model
starts out computing exactly what the base did. The frozen Linear stays
inside as ``.base``; the adapters are ordinary Parameters named
``<path>.lora_A`` / ``<path>.lora_B``, so ``ParamGroup.from_regex(r"lora_")``
gives them their own optimizer settings. Wrapping (rather than adding
parameters to the Linear) keeps the base layer untouched, makes
:func:`merge_lora` a plain swap back, and lets QLoRA put a quantized base in
the same place.

:func:`apply_qlora` does the same with the base weights stored as 4-bit NF4
(:mod:`burn.nn.quant`, double-quantized blockwise scales) in an
:class:`NF4Linear`, whose forward is the ``burn::nf4_matmul`` extension.

:func:`merge_lora` folds ``W + (alpha/rank) A @ B`` back into plain Linear
layers; :func:`save_lora` / :func:`load_lora` store the adapters alone;
:func:`lora_summary` counts trainable parameters and base-weight bytes.

Models that read a layer's ``.weight`` instead of calling it (e.g. through
``F.linear_relu(h, layer.weight, layer.bias)``) still work: ``.weight`` of a
LoRALinear is the effective weight ``W + scale * A @ B`` (without dropout).

Convolutions and embeddings are adapted as PEFT does, when ``targets``
selects them: :class:`LoRAConv` adds ``conv(conv(x, A), B)`` with ``A`` a
``rank``-channel convolution of the base's kernel size, stride, padding and
dilation and ``B`` a 1x1 convolution (zeros), so the update is the rank-r
kernel ``B @ A``; :class:`LoRAEmbedding` adds ``embedding(i, A) @ B`` with
``A`` [num_embeddings, rank] (zeros) and ``B`` [rank, dim] (normal).
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass

from .. import dtypes as dt
from ..errors import BurnError
from ..ops.creation import arange, randn, zeros
from ..ops.linear import matmul
from . import functional as F
from . import init
from .conv_layers import Conv1d, Conv2d
from .layers import Embedding, Linear
from .module import Module, Parameter
from .quant import NF4Tensor, nf4_matmul, quantize_nf4
from ..autodiff import no_grad
from .state import _read_arrays, load_metadata, save_state_dict
from ..ops.elementwise import where
from ..ops.movement import expand_dims

__all__ = ["LoRALinear", "LoRAConv", "LoRAEmbedding", "NF4Linear",
           "apply_lora", "apply_qlora", "merge_lora", "lora_state_dict",
           "save_lora", "load_lora", "lora_summary", "LoRASummary"]

_META_KEY = "burn.lora"


class NF4Linear(Module):
    """A frozen Linear whose weight is stored as NF4 (``burn.nn.quant``); ``bias`` stays float.

    The storage tensors are buffers (``codes``, ``scale_codes``, ``steps``,
    ``offset``), so they are saved with the model and move with ``to_device``.
    ``.weight`` dequantizes (float32); ``forward`` runs ``burn::nf4_matmul``.

    Example:
        >>> import burn
        >>> lin = burn.nn.Linear(64, 8)
        >>> q = burn.nn.NF4Linear.from_linear(lin)
        >>> x = burn.randn((2, 64))
        >>> assert (q(x) - x @ q.weight - q.bias).abs().max().item() < 1e-5
        >>> assert q.weight_nbytes < 0.52 * 64 * 8 + 8
    """

    def __init__(self, qweight: NF4Tensor, bias=None):
        if len(qweight.shape) != 2:
            raise BurnError(f"NF4Linear: the weight must be 2-D [d_in, d_out], got shape {qweight.shape}")
        self.d_in, self.d_out = qweight.shape
        self.block_size, self.scale_block = qweight.block_size, qweight.scale_block
        self.codes, self.scale_codes, self.steps, self.offset = qweight.tensors
        self.bias = bias

    @classmethod
    def from_linear(cls, linear: Linear, *, block_size: int = 64, scale_block: int = 256) -> "NF4Linear":
        """Quantize ``linear``'s weight; its bias is kept (frozen).

        Example:
            >>> import burn
            >>> q = burn.nn.NF4Linear.from_linear(burn.nn.Linear(8, 4))
            >>> assert q.codes.shape == (32,) and q.bias.frozen
        """
        q = quantize_nf4(linear.weight, block_size=block_size, scale_block=scale_block)
        bias = None if linear.bias is None else Parameter(linear.bias.detach(), frozen=True)
        return cls(q, bias)

    @property
    def qweight(self) -> NF4Tensor:
        """The weight as an NF4Tensor (codes and scales; nothing dequantized).

        Example:
            >>> import burn
            >>> q = burn.nn.NF4Linear.from_linear(burn.nn.Linear(64, 4))
            >>> assert q.qweight.shape == (64, 4)
        """
        return NF4Tensor(self.codes, self.scale_codes, self.steps, self.offset, (self.d_in, self.d_out),
                         self.block_size, self.scale_block)

    @property
    def weight(self):
        """The dequantized float32 weight [d_in, d_out].

        Example:
            >>> import burn, numpy as np
            >>> lin = burn.nn.Linear(64, 4)
            >>> q = burn.nn.NF4Linear.from_linear(lin)
            >>> err = np.abs(q.weight.numpy() - lin.weight.numpy()).max()
            >>> assert q.weight.dtype is burn.float32 and err < 0.05
        """
        return self.qweight.dequantize()

    @property
    def weight_nbytes(self) -> int:
        """Bytes the quantized weight takes (about 0.5 per element plus scales).

        Example:
            >>> import burn
            >>> q = burn.nn.NF4Linear.from_linear(burn.nn.Linear(64, 4))
            >>> assert q.weight_nbytes < 64 * 4 * 4 / 4
        """
        return self.qweight.nbytes

    def forward(self, x):
        """``x @ dequantize(qweight) + bias``, computed without materializing the float weight.

        Example:
            >>> import burn, numpy as np
            >>> q = burn.nn.NF4Linear.from_linear(burn.nn.Linear(64, 4))
            >>> x = burn.ones((2, 64))
            >>> assert np.allclose(q.forward(x).numpy(), (x @ q.weight + q.bias).numpy(), atol=1e-4)
        """
        q = self.qweight
        y = nf4_matmul(x, *q.tensors, **q.attrs)
        return y if self.bias is None else y + self.bias

    def extra_repr(self) -> str:
        """Sizes and quantization block size, shown in ``repr``.

        Example:
            >>> import burn
            >>> q = burn.nn.NF4Linear.from_linear(burn.nn.Linear(64, 4))
            >>> assert q.extra_repr() == "d_in=64, d_out=4, bias=True, nf4 block_size=64"
        """
        return (f"d_in={self.d_in}, d_out={self.d_out}, bias={self.bias is not None}, nf4 "
                f"block_size={self.block_size}")


class _LoRALayer(Module):
    """What every adapter shares: a frozen ``base``, ``lora_A`` / ``lora_B`` and the scale."""

    def _setup(self, base, rank, alpha, dropout):
        name = type(self).__name__
        if not isinstance(rank, int) or rank < 1:
            raise BurnError(f"{name}: rank must be a positive int, got {rank!r}")
        if not 0.0 <= dropout < 1.0:
            raise BurnError(f"{name}: dropout must be in [0, 1), got {dropout!r}")
        alpha = float(rank if alpha is None else alpha)
        for p in base.parameters():
            p.freeze()
        self.base = base
        self.rank, self.alpha, self.scale, self.dropout = rank, alpha, alpha / rank, float(dropout)

    @property
    def weight(self):
        """The effective weight ``W + delta()`` (for code that reads ``.weight``).

        Example:
            >>> import burn
            >>> base = burn.nn.Linear(5, 3)
            >>> assert burn.nn.LoRALinear(base, rank=2).weight.tolist() == base.weight.tolist()
        """
        return self.base.weight + self.delta()

    @property
    def bias(self):
        """The base layer's bias (None if it has none).

        Example:
            >>> import burn
            >>> base = burn.nn.Linear(5, 3)
            >>> assert burn.nn.LoRALinear(base, rank=2).bias is base.bias
        """
        return getattr(self.base, "bias", None)

    def extra_repr(self) -> str:
        """Rank, alpha and dropout, shown in ``repr``.

        Example:
            >>> import burn
            >>> assert burn.nn.LoRALinear(burn.nn.Linear(5, 3), rank=2).extra_repr() == "rank=2, alpha=2.0"
        """
        drop = f", dropout={self.dropout}" if self.dropout else ""
        return f"rank={self.rank}, alpha={self.alpha}{drop}"

    def _dropped(self, x):
        return F.dropout(x, self.dropout, training=self.training) if self.dropout else x


class LoRALinear(_LoRALayer):
    """A frozen linear layer (``base``: :class:`Linear` or :class:`NF4Linear`) plus a
    trainable low-rank update: ``base(x) + dropout(x) @ lora_A @ lora_B * alpha / rank``.

    Example:
        >>> import burn
        >>> lin = burn.nn.Linear(6, 4)
        >>> lora = burn.nn.LoRALinear(lin, rank=2, alpha=4)
        >>> x = burn.randn((3, 6))
        >>> assert (lora(x) - lin(x)).abs().max().item() == 0.0      # B starts at zero
        >>> assert lora.lora_A.shape == (6, 2) and lora.scale == 2.0 and lin.weight.frozen
    """

    def __init__(self, base, rank: int, alpha: float | None = None, dropout: float = 0.0):
        if not isinstance(base, (Linear, NF4Linear)):
            raise BurnError(f"LoRALinear: base must be a burn.nn.Linear or NF4Linear, got {type(base).__name__}")
        self._setup(base, rank, alpha, dropout)
        dev, dtype = _device_dtype(base)
        self.d_in, self.d_out = base.d_in, base.d_out
        self.lora_A = Parameter(init.uniform((self.d_in, rank), 1.0 / math.sqrt(self.d_in), device=dev, dtype=dtype))
        self.lora_B = Parameter(zeros((rank, self.d_out), device=dev, dtype=dtype))

    def delta(self):
        """The update ``scale * A @ B`` [d_in, d_out].

        Example:
            >>> import burn
            >>> lora = burn.nn.LoRALinear(burn.nn.Linear(5, 3), rank=2)
            >>> assert lora.delta().shape == (5, 3) and lora.delta().abs().max().item() == 0.0
        """
        return matmul(self.lora_A, self.lora_B) * self.scale

    def forward(self, x):
        """``base(x) + scale * dropout(x) @ lora_A @ lora_B``.

        Example:
            >>> import burn
            >>> base = burn.nn.Linear(5, 3)
            >>> x = burn.ones((1, 5))
            >>> assert burn.nn.LoRALinear(base, rank=2).forward(x).tolist() == base(x).tolist()  # B starts at 0
        """
        return self.base(x) + matmul(matmul(self._dropped(x), self.lora_A), self.lora_B) * self.scale


class LoRAConv(_LoRALayer):
    """A frozen :class:`~burn.nn.Conv2d` / :class:`~burn.nn.Conv1d` plus a rank-``rank`` update
    (PEFT's layout): ``base(x) + conv(conv(dropout(x), lora_A), lora_B) * alpha / rank`` where
    ``lora_A`` [rank, C_in, *kernel] convolves with the base's stride, padding and dilation
    and ``lora_B`` [C_out, rank, 1, ...] is a 1x1 convolution starting at zero.

    Example:
        >>> import burn
        >>> conv = burn.nn.Conv2d(3, 8, 3, padding=1)
        >>> lora = burn.nn.LoRAConv(conv, rank=2)
        >>> x = burn.randn((2, 3, 6, 6))
        >>> assert (lora(x) - conv(x)).abs().max().item() == 0.0 and lora.lora_A.shape == (2, 3, 3, 3)
    """

    def __init__(self, base, rank: int, alpha: float | None = None, dropout: float = 0.0):
        if not isinstance(base, (Conv1d, Conv2d)):
            raise BurnError(f"LoRAConv: base must be a burn.nn.Conv2d or Conv1d, got {type(base).__name__}")
        if base.groups != 1:
            raise BurnError(f"LoRAConv: grouped convolutions (groups={base.groups}) are not supported: the "
                            f"rank-{rank} update would mix the groups; exclude this layer from targets")
        self._setup(base, rank, alpha, dropout)
        w = base.weight
        fan_in = base.in_channels * math.prod(base.kernel_size)
        self.lora_A = Parameter(init.uniform((rank, base.in_channels) + base.kernel_size, 1.0 / math.sqrt(fan_in),
                                             device=w.device, dtype=w.dtype))
        self.lora_B = Parameter(zeros((base.out_channels, rank) + (1,) * len(base.kernel_size), device=w.device,
                                      dtype=w.dtype))

    def delta(self):
        """The update of the kernel: ``scale * (B @ A)`` shaped as the base weight.

        Example:
            >>> import burn
            >>> lora = burn.nn.LoRAConv(burn.nn.Conv2d(3, 4, 3), rank=2)
            >>> assert lora.delta().shape == (4, 3, 3, 3) and lora.delta().abs().max().item() == 0.0
        """
        b = self.base
        flat = matmul(self.lora_B.reshape((b.out_channels, self.rank)), self.lora_A.reshape((self.rank, -1)))
        return flat.reshape(tuple(b.weight.shape)) * self.scale

    def forward(self, x):
        """``base(x) + scale * conv(conv(dropout(x), lora_A), lora_B)``.

        Example:
            >>> import burn
            >>> conv = burn.nn.Conv1d(2, 4, 3)
            >>> x = burn.ones((1, 2, 7))
            >>> assert burn.nn.LoRAConv(conv, rank=1).forward(x).tolist() == conv(x).tolist()
        """
        b = self.base
        fn = F.conv2d if isinstance(b, Conv2d) else F.conv1d
        one = (lambda t: t[0]) if isinstance(b, Conv1d) else (lambda t: t)
        pad = b.padding if isinstance(b.padding, str) else one(b.padding)
        h = fn(self._dropped(x), self.lora_A, None, stride=one(b.stride), padding=pad, dilation=one(b.dilation))
        return b(x) + fn(h, self.lora_B, None) * self.scale


class LoRAEmbedding(_LoRALayer):
    """A frozen :class:`~burn.nn.Embedding` plus a rank-``rank`` update (PEFT's layout):
    ``base(i) + embedding(i, lora_A) @ lora_B * alpha / rank`` with ``lora_A``
    [num_embeddings, rank] starting at zero and ``lora_B`` [rank, dim] normal. The
    ``padding_idx`` row gets no update, as in the base layer.

    Example:
        >>> import burn
        >>> emb = burn.nn.Embedding(10, 4)
        >>> lora = burn.nn.LoRAEmbedding(emb, rank=2)
        >>> i = burn.tensor([[1, 7], [3, 3]])
        >>> assert (lora(i) - emb(i)).abs().max().item() == 0.0 and lora.lora_B.shape == (2, 4)
    """

    def __init__(self, base, rank: int, alpha: float | None = None, dropout: float = 0.0):
        if not isinstance(base, Embedding):
            raise BurnError(f"LoRAEmbedding: base must be a burn.nn.Embedding, got {type(base).__name__}")
        if dropout:
            raise BurnError("LoRAEmbedding: dropout applies to the input of a layer, and an embedding's input "
                            "is integer indices; use dropout=0.0")
        self._setup(base, rank, alpha, dropout)
        w = base.weight
        self.lora_A = Parameter(zeros((base.num_embeddings, rank), device=w.device, dtype=w.dtype))
        self.lora_B = Parameter(randn((rank, base.embedding_dim), device=w.device, dtype=w.dtype))

    def delta(self):
        """The update of the table: ``scale * A @ B`` [num_embeddings, dim] (0 at ``padding_idx``).

        Example:
            >>> import burn
            >>> lora = burn.nn.LoRAEmbedding(burn.nn.Embedding(6, 3), rank=2)
            >>> assert lora.delta().shape == (6, 3) and lora.delta().abs().max().item() == 0.0
        """
        d = matmul(self.lora_A, self.lora_B) * self.scale
        return d if self.base.padding_idx is None else self._mask_rows(d)

    def _mask_rows(self, d):
        rows = arange(d.shape[0], device=d.device).reshape((-1, 1))
        return where(rows == self.base.padding_idx, 0.0, d)

    def forward(self, indices):
        """``base(i) + scale * embedding(i, lora_A) @ lora_B``.

        Example:
            >>> import burn
            >>> emb = burn.nn.Embedding(5, 2)
            >>> i = burn.tensor([4, 0])
            >>> assert burn.nn.LoRAEmbedding(emb, rank=1).forward(i).tolist() == emb(i).tolist()
        """
        y = self.base(indices)
        upd = matmul(F.embedding(indices, self.lora_A), self.lora_B) * self.scale
        if self.base.padding_idx is not None:
            upd = where(expand_dims(indices == self.base.padding_idx, -1), 0.0, upd)
        return y + upd


def _device_dtype(base):
    if isinstance(base, Linear):
        return base.weight.device, base.weight.dtype
    return base.codes.device, dt.float32


# -- model surgery ---------------------------------------------------------------------------

def _replace(value, path, fn, memo):
    """``value`` with every module ``fn(path, module)`` replaces swapped (lists and dicts in place)."""
    if isinstance(value, Module):
        if id(value) in memo:
            return memo[id(value)]
        new = fn(path, value)
        if new is None:
            new = value
            if not isinstance(value, _LoRALayer):
                for name, v in list(vars(value).items()):
                    r = _replace(v, f"{path}.{name}" if path else name, fn, memo)
                    if r is not v:
                        object.__setattr__(value, name, r)
        memo[id(value)] = new
        return new
    if isinstance(value, list):
        for i, v in enumerate(value):
            value[i] = _replace(v, f"{path}.{i}", fn, memo)
        return value
    if isinstance(value, tuple):
        new = tuple(_replace(v, f"{path}.{i}", fn, memo) for i, v in enumerate(value))
        return value if all(a is b for a, b in zip(new, value)) else new
    if isinstance(value, dict):
        for k in list(value):
            value[k] = _replace(value[k], f"{path}.{k}", fn, memo)
        return value
    return value


def _join(path, name):
    return f"{path}.{name}" if path else name


_ADAPTABLE = (Linear, Conv1d, Conv2d, Embedding)


def _targets(model, targets):
    """Paths of the layers whose weight ``targets`` selects (all Linears if None)."""
    mods = list(model.named_modules())
    if any(isinstance(m, _LoRALayer) for _, m in mods):
        raise BurnError("apply_lora: the model already has LoRA adapters; merge them first with "
                        "burn.nn.merge_lora(model)")
    layer_weights = {_join(p, "weight"): p for p, m in mods if isinstance(m, _ADAPTABLE)}
    linear_weights = {_join(p, "weight"): p for p, m in mods if isinstance(m, Linear)}
    if targets is None:
        chosen = set(linear_weights.values())
    else:
        # a burn.optim.ParamGroup (optim builds on nn: recognised by its select method)
        if not callable(getattr(targets, "select", None)):
            raise BurnError(f"apply_lora: targets must be a burn.optim.ParamGroup or None, "
                            f"got {type(targets).__name__}")
        selected = targets.select(model)
        others = [n for n, p in selected if n not in layer_weights and p.ndim >= 2]
        if others:
            raise BurnError(f"apply_lora: targets {targets!r} select weights that are not weights of "
                            f"Linear, Conv1d, Conv2d or Embedding layers: {', '.join(others)}; LoRA adapts "
                            f"those layers only. Narrow the selection, e.g. "
                            f"ParamGroup(..., exclude=ParamGroup.from_paths({others[0]!r}))")
        chosen = {layer_weights[n] for n, _ in selected if n in layer_weights}
    if not chosen:
        what = "has no burn.nn.Linear layer" if targets is None else f"has no layer weight selected by {targets!r}"
        raise BurnError(f"apply_lora: the model {what}; adaptable weights are: "
                        f"{', '.join(layer_weights) or '(none)'}")
    return chosen


def apply_lora(model: Module, rank: int, alpha: float | None = None, dropout: float = 0.0, *, targets=None):
    """Freeze ``model`` and add LoRA adapters to the layers ``targets`` selects.

    ``targets`` is a :class:`burn.optim.ParamGroup` matched against the
    layers' weight paths (``"head.weight"``); None adapts every Linear.
    Linear layers get a :class:`LoRALinear`, Conv1d/Conv2d a :class:`LoRAConv`
    and Embedding a :class:`LoRAEmbedding`. The
    scale is ``alpha / rank`` (``alpha`` defaults to ``rank``). Every base
    parameter is frozen; the adapters (``<layer>.lora_A``, ``<layer>.lora_B``)
    are the only trainable parameters. The model is changed in place and
    returned; use the return value (a bare Linear becomes a LoRALinear).

    Example:
        >>> import burn
        >>> from burn.optim import ParamGroup
        >>> m = burn.nn.Sequential(burn.nn.Linear(4, 8), burn.nn.ReLU(), burn.nn.Linear(8, 2))
        >>> x = burn.randn((5, 4))
        >>> before = m(x).numpy()
        >>> m = burn.nn.apply_lora(m, rank=2, alpha=4, targets=ParamGroup.from_paths("layers.2"))
        >>> assert [n for n, p in m.named_parameters() if not p.frozen] == ["layers.2.lora_A", "layers.2.lora_B"]
        >>> assert (m(x).numpy() == before).all()
    """
    return _apply(model, rank, alpha, dropout, targets, quantize=None)


def apply_qlora(model: Module, rank: int, alpha: float | None = None, dropout: float = 0.0, *, targets=None,
                block_size: int = 64, scale_block: int = 256):
    """:func:`apply_lora` with each targeted Linear's base weight stored as 4-bit NF4
    (selected convolutions and embeddings keep float base weights).

    The frozen weights become :class:`NF4Linear` storage (codes two per byte,
    absmax per ``block_size`` elements, those scales 8-bit quantized per
    ``scale_block`` blocks): about 0.516 bytes per weight instead of 4. The
    forward pass dequantizes inside ``burn::nf4_matmul``.

    Example:
        >>> import burn
        >>> m = burn.nn.Sequential(burn.nn.Linear(64, 32), burn.nn.ReLU(), burn.nn.Linear(32, 4))
        >>> m = burn.nn.apply_qlora(m, rank=4, alpha=8)
        >>> s = burn.nn.lora_summary(m)
        >>> assert s.base_bytes_per_param < 0.53 and s.trainable == 64 * 4 + 4 * 32 + 32 * 4 + 4 * 4
        >>> assert m(burn.randn((2, 64))).shape == (2, 4)
    """
    def quantize(lin):
        return NF4Linear.from_linear(lin, block_size=block_size, scale_block=scale_block)
    return _apply(model, rank, alpha, dropout, targets, quantize=quantize)


def _apply(model, rank, alpha, dropout, targets, quantize):
    if not isinstance(model, Module):
        raise BurnError(f"apply_lora: expected a burn.nn.Module, got {type(model).__name__}")
    chosen = _targets(model, targets)
    model.freeze()

    def swap(path, m):
        if path not in chosen:
            return None
        if isinstance(m, Linear):
            return LoRALinear(quantize(m) if quantize else m, rank, alpha, dropout)
        if isinstance(m, (Conv1d, Conv2d)):
            return LoRAConv(m, rank, alpha, dropout)
        if isinstance(m, Embedding):
            return LoRAEmbedding(m, rank, alpha, 0.0)
        return None
    return _replace(model, "", swap, {})


def merge_lora(model: Module):
    """Fold every adapter into its base: each LoRALinear becomes a plain Linear with
    weight ``W + (alpha/rank) A @ B`` (dequantized first under QLoRA), each LoRAConv /
    LoRAEmbedding its base layer with the merged weight.

    The merged parameters are frozen, like the rest of the base after
    :func:`apply_lora`; unfreeze them (``p.unfreeze()``) to train the whole
    model. Returns the model (a bare LoRALinear becomes a Linear).

    Example:
        >>> import burn
        >>> m = burn.nn.apply_lora(burn.nn.Sequential(burn.nn.Linear(3, 2)), rank=1)
        >>> _ = m.layers[0].lora_B.assign_(burn.ones((1, 2)))   # as if trained
        >>> x = burn.randn((4, 3))
        >>> y = m(x).numpy()
        >>> m = burn.nn.merge_lora(m)
        >>> assert type(m.layers[0]) is burn.nn.Linear and abs(m(x).numpy() - y).max() < 1e-5
    """

    def swap(path, m):
        if not isinstance(m, _LoRALayer):
            return None
        with no_grad():
            w = (m.base.weight.detach() + m.delta().detach()).detach()
        if not isinstance(m, LoRALinear):
            import copy
            layer = copy.copy(m.base)          # same settings; a fresh attribute dict
            layer.weight = Parameter(w, frozen=True)
            layer.training = m.training
            return layer
        lin = object.__new__(Linear)
        lin.d_in, lin.d_out = m.d_in, m.d_out
        lin.weight = Parameter(w, frozen=True)
        bias = m.base.bias
        lin.bias = None if bias is None else Parameter(bias.detach(), frozen=True)
        lin.training = m.training
        return lin
    return _replace(model, "", swap, {})


# -- adapters alone ---------------------------------------------------------------------------

def _adapters(model):
    return [(p, m) for p, m in model.named_modules() if isinstance(m, _LoRALayer)]


def lora_state_dict(model: Module) -> dict:
    """``{path: Parameter}`` of the adapters only (``"<layer>.lora_A"``, ``"<layer>.lora_B"``).

    Example:
        >>> import burn
        >>> m = burn.nn.apply_lora(burn.nn.Sequential(burn.nn.Linear(3, 2)), rank=1)
        >>> assert list(burn.nn.lora_state_dict(m)) == ["layers.0.lora_A", "layers.0.lora_B"]
    """
    out = {}
    for path, m in _adapters(model):
        out[_join(path, "lora_A")] = m.lora_A
        out[_join(path, "lora_B")] = m.lora_B
    return out


def save_lora(model: Module, path, metadata: dict | None = None) -> None:
    """Write the adapters alone to a safetensors file (atomically, see :mod:`burn.nn.state`);
    each layer's rank and alpha are recorded in the metadata.

    Example:
        >>> import burn, os, tempfile
        >>> p = os.path.join(tempfile.mkdtemp(), "adapters.safetensors")
        >>> m = burn.nn.apply_lora(burn.nn.Sequential(burn.nn.Linear(3, 2)), rank=1)
        >>> burn.nn.save_lora(m, p)
        >>> assert sorted(burn.nn.load_state_dict(p)) == ["layers.0.lora_A", "layers.0.lora_B"]
    """
    state = lora_state_dict(model)
    if not state:
        raise BurnError("save_lora: the model has no LoRA adapters (apply_lora adds them)")
    info = {p: {"rank": m.rank, "alpha": m.alpha} for p, m in _adapters(model)}
    meta = dict(metadata or {})
    meta[_META_KEY] = json.dumps(info)
    save_state_dict(state, path, meta)


def load_lora(model: Module, path) -> Module:
    """Load adapters written by :func:`save_lora` into a model adapted the same way
    (same layers, ranks and alphas); every mismatch is listed in one BurnError.

    Example:
        >>> import burn, os, tempfile
        >>> p = os.path.join(tempfile.mkdtemp(), "adapters.safetensors")
        >>> a = burn.nn.apply_lora(burn.nn.Sequential(burn.nn.Linear(3, 2)), rank=1)
        >>> burn.nn.save_lora(a, p)
        >>> b = burn.nn.load_lora(burn.nn.apply_lora(burn.nn.Sequential(burn.nn.Linear(3, 2)), rank=1), p)
        >>> assert (b.layers[0].lora_A.numpy() == a.layers[0].lora_A.numpy()).all()
    """
    path_s = os.fspath(path)
    arrays, _ = _read_arrays(path_s)
    try:
        info = json.loads(load_metadata(path_s).get(_META_KEY, "{}"))
    except json.JSONDecodeError:
        info = {}
    own = lora_state_dict(model)
    if not own:
        raise BurnError(f"load_lora: the model has no LoRA adapters; call apply_lora(model, ...) as when "
                        f"{path_s!r} was saved, then load")
    problems = [f"missing: {k}" for k in own if k not in arrays]
    problems += [f"unexpected: {k}" for k in arrays if k not in own]
    for k, p in own.items():
        if k in arrays:
            a = arrays[k]
            if tuple(a.shape) != tuple(p.shape):
                problems.append(f"shape of {k}: file {tuple(a.shape)}, model {tuple(p.shape)} (another rank?)")
            elif dt.as_dtype(a.dtype) is not p.dtype:
                problems.append(f"dtype of {k}: file {a.dtype}, model {p.dtype.name}")
    for p, m in _adapters(model):
        saved = info.get(p) if isinstance(info, dict) else None
        if isinstance(saved, dict) and float(saved.get("alpha", m.alpha)) != m.alpha:
            problems.append(f"alpha of {p}: file {saved['alpha']}, model {m.alpha}")
    if problems:
        raise BurnError(f"load_lora: adapters in {path_s!r} do not match the model:\n  " + "\n  ".join(problems))
    model.load_state_dict(arrays, strict=False)
    return model


# -- summary ------------------------------------------------------------------------------

@dataclass
class LoRASummary:
    """Counts of :func:`lora_summary`; ``str()`` gives one line.

    Example:
        >>> import burn
        >>> s = burn.nn.lora_summary(burn.nn.apply_lora(burn.nn.Sequential(burn.nn.Linear(8, 8)), rank=2))
        >>> assert (s.adapted_layers, s.trainable) == (1, 32) and "trainable 32" in str(s)
    """

    trainable: int            # scalar parameters that train (the adapters)
    total: int                # all weights of the model, quantized ones counted by element
    adapted_layers: int
    base_params: int          # elements of the adapted layers' base weights
    base_bytes: int           # bytes those weights take as stored (fp32, or NF4 storage)
    base_fp32_bytes: int      # the same weights in float32

    @property
    def fraction(self) -> float:
        """The share of parameters that train, in [0, 1].

        Example:
            >>> import burn
            >>> s = burn.nn.lora_summary(burn.nn.apply_lora(burn.nn.Sequential(burn.nn.Linear(8, 8)), rank=2))
            >>> assert s.fraction == s.trainable / s.total
        """
        return self.trainable / max(self.total, 1)

    @property
    def base_bytes_per_param(self) -> float:
        """Stored bytes per base weight: 4.0 for float32, about 0.5 for NF4.

        Example:
            >>> import burn
            >>> s = burn.nn.lora_summary(burn.nn.apply_lora(burn.nn.Sequential(burn.nn.Linear(8, 8)), rank=2))
            >>> assert s.base_bytes_per_param == 4.0
        """
        return self.base_bytes / max(self.base_params, 1)

    def __str__(self):
        return (f"{self.adapted_layers} adapted layers, trainable {self.trainable:,} / {self.total:,} "
                f"({100 * self.fraction:.2f}%); adapted base weights {self.base_bytes:,} bytes "
                f"({self.base_bytes_per_param:.3f} B/param; fp32 {self.base_fp32_bytes:,} bytes)")


def lora_summary(model: Module) -> LoRASummary:
    """Trainable-parameter fraction and base-weight memory of an adapted model.

    Example:
        >>> import burn
        >>> m = burn.nn.apply_lora(burn.nn.Sequential(burn.nn.Linear(100, 10)), rank=2)
        >>> s = burn.nn.lora_summary(m)
        >>> assert s.trainable == 100 * 2 + 2 * 10 and s.total == 1010 + 220
        >>> assert s.base_bytes == s.base_fp32_bytes == 4000
    """
    trainable = sum(p.size for p in model.parameters() if not p.frozen)
    total = sum(p.size for p in model.parameters())
    layers = _adapters(model)
    base_params = base_bytes = 0
    for _, m in layers:
        if isinstance(m.base, NF4Linear):
            n = m.d_in * m.d_out
            total += n                        # the quantized weights are buffers, not parameters
            base_bytes += m.base.weight_nbytes
        else:
            n = m.base.weight.size
            base_bytes += n * m.base.weight.dtype.itemsize
        base_params += n
    return LoRASummary(trainable, total, len(layers), base_params, base_bytes, 4 * base_params)
