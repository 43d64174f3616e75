"""Multi-head attention and the Transformer encoder (batch-first: [batch, seq, d_model])."""
from __future__ import annotations

from ..errors import DTypeError, ShapeError, describe
from ..ops import elementwise as E, movement as M
from ..ops.creation import _device, tensor
from ..tensor import Tensor
from . import functional as F
from . import init
from .containers import ModuleList
from .layers import Dropout, Linear
from .module import Module, Parameter
from .norm import LayerNorm
from .conv_layers import _label

__all__ = ["MultiHeadAttention", "TransformerEncoderLayer", "TransformerEncoder"]


def _as_mask(mask, like):
    """Masks given as numpy arrays or lists land on the query's device."""
    if mask is None or isinstance(mask, Tensor):
        return mask
    return tensor(mask, device=like.device)


def _additive(mask, dtype, what, layer):
    """A bool mask (True = masked out) as 0/-inf, a float mask as is."""
    if mask.dtype.is_bool:
        return E.where(mask, float("-inf"), 0.0).astype(dtype)
    if mask.dtype.is_floating:
        return mask if mask.dtype is dtype else mask.astype(dtype)
    raise DTypeError(f"{layer}: {what} must be bool (True = masked out) or floating (added to the scores), "
                     f"got {describe(mask)}")


class MultiHeadAttention(Module):
    """Multi-head scaled dot-product attention, batch first (``torch.nn.MultiheadAttention(batch_first=True)``).

    ``q_proj``, ``k_proj``, ``v_proj`` and ``out_proj`` are :class:`Linear`
    layers (weights [d_in, d_out]); PyTorch's ``in_proj_weight`` [3E, E] is
    ``concat([q_proj.weight.T, k_proj.weight.T, v_proj.weight.T])``. Initialized
    like PyTorch: Xavier-uniform input projections, zero biases.

    ``forward(query, key=None, value=None, *, key_padding_mask=None, attn_mask=None,
    need_weights=False)``: ``query`` [N, L, E] (or unbatched [L, E]), ``key``/``value``
    [N, S, kdim/vdim] (default: ``query``, i.e. self-attention). Masks follow
    PyTorch: a bool mask hides the True positions, a float mask is added to the
    scores; ``key_padding_mask`` is [N, S], ``attn_mask`` is [L, S] or
    [N * num_heads, L, S]. Returns the output [N, L, E], or ``(output, weights)``
    with ``need_weights=True`` (weights [N, L, S] averaged over heads, or
    [N, num_heads, L, S] with ``average_attn_weights=False``).

    Example:
        >>> import burn
        >>> mha = burn.nn.MultiHeadAttention(8, 2)
        >>> x = burn.ones((3, 5, 8))
        >>> pad = burn.tensor([[False] * 4 + [True]] * 3)
        >>> y, w = mha(x, key_padding_mask=pad, need_weights=True)
        >>> assert y.shape == (3, 5, 8) and w.shape == (3, 5, 5) and w[0, 0, 4].item() == 0.0
    """

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True, *,
                 kdim: int | None = None, vdim: int | None = None, device=None, dtype=None):
        if embed_dim % num_heads:
            raise ValueError(f"MultiHeadAttention: embed_dim ({embed_dim}) must be divisible by num_heads "
                             f"({num_heads})")
        device = _device(device)
        self.embed_dim, self.num_heads, self.head_dim = embed_dim, num_heads, embed_dim // num_heads
        self.kdim, self.vdim = kdim or embed_dim, vdim or embed_dim
        self.q_proj = Linear(embed_dim, embed_dim, bias=bias, device=device, dtype=dtype)
        self.k_proj = Linear(self.kdim, embed_dim, bias=bias, device=device, dtype=dtype)
        self.v_proj = Linear(self.vdim, embed_dim, bias=bias, device=device, dtype=dtype)
        self.out_proj = Linear(embed_dim, embed_dim, bias=bias, device=device, dtype=dtype)
        same = self.kdim == self.vdim == embed_dim
        for proj in (self.q_proj, self.k_proj, self.v_proj):
            # torch draws one [3E, E] Xavier matrix when the dims agree, else one per projection
            fan_out = 3 * embed_dim if same else embed_dim
            proj.weight = Parameter(init.xavier_uniform(proj.weight.shape, proj.d_in, fan_out, device=device,
                                                        dtype=dtype))
        for proj in (self.q_proj, self.k_proj, self.v_proj, self.out_proj):
            if bias:
                proj.bias = Parameter(proj.bias * 0.0)
        self.dropout = Dropout(dropout)

    def _heads(self, t, n):
        # [N, S, E] -> [N, heads, S, head_dim]
        return M.permute_dims(M.reshape(t, (n, t.shape[1], self.num_heads, self.head_dim)), (0, 2, 1, 3))


    def _torch_unpack(self, path, names, arrays) -> set:
        """burn.nn.state.load_torch_state's hook: add ``q_proj.weight`` ... entries to ``arrays``
        from torch's packed ``in_proj_weight`` / ``in_proj_bias`` (or the separate
        ``q/k/v_proj_weight`` when kdim/vdim differ); returns the packed names it consumed.

        Example:
            >>> import burn, numpy as np
            >>> mha = burn.nn.MultiHeadAttention(2, 1)
            >>> arrays = {"in_proj_weight": np.arange(12.0).reshape(6, 2)}
            >>> assert mha._torch_unpack("", {"q_proj.weight": "q_proj.weight"}, arrays) == {"in_proj_weight"}
            >>> assert arrays["k_proj.weight"].tolist() == [[4.0, 5.0], [6.0, 7.0]]
        """
        used = set()
        q_name = names.get(f"{path}.q_proj.weight" if path else "q_proj.weight")
        if q_name is None:
            return used
        prefix = q_name[: -len("q_proj.weight")]          # torch's path of this module, with the dot
        e = self.embed_dim
        packed_w, packed_b = f"{prefix}in_proj_weight", f"{prefix}in_proj_bias"
        if packed_w in arrays:
            w = arrays[packed_w]
            if w.shape[0] != 3 * e:
                return used                               # reported as unexpected / missing below
            for i, proj in enumerate("qkv"):
                arrays[f"{prefix}{proj}_proj.weight"] = w[i * e:(i + 1) * e]
            used.add(packed_w)
        for proj in "qkv":                                # separate weights when kdim/vdim differ
            sep = f"{prefix}{proj}_proj_weight"
            if sep in arrays:
                arrays[f"{prefix}{proj}_proj.weight"] = arrays[sep]
                used.add(sep)
        if packed_b in arrays and arrays[packed_b].shape == (3 * e,):
            b = arrays[packed_b]
            for i, proj in enumerate("qkv"):
                arrays[f"{prefix}{proj}_proj.bias"] = b[i * e:(i + 1) * e]
            used.add(packed_b)
        return used

    def forward(self, query, key=None, value=None, *, key_padding_mask=None, attn_mask=None,
                need_weights: bool = False, average_attn_weights: bool = True, is_causal: bool = False):
        """Attend from ``query`` to ``key``/``value`` (self-attention when they are omitted).

        Returns the output [N, S, E], or ``(output, weights)`` with ``need_weights=True``.

        Example:
            >>> import burn
            >>> mha = burn.nn.MultiHeadAttention(8, 2)
            >>> out, w = mha.forward(burn.ones((2, 5, 8)), need_weights=True)
            >>> assert out.shape == (2, 5, 8) and w.shape == (2, 5, 5)
        """
        attn_mask, key_padding_mask = _as_mask(attn_mask, query), _as_mask(key_padding_mask, query)
        key = query if key is None else key
        value = key if value is None else value
        unbatched = query.ndim == 2
        if unbatched:
            query, key, value = (M.expand_dims(t, axis=0) for t in (query, key, value))
            if key_padding_mask is not None:
                key_padding_mask = M.expand_dims(key_padding_mask, axis=0)
        n, l_ = query.shape[0], query.shape[1] if query.ndim == 3 else -1
        if (query.ndim != 3 or key.ndim != 3 or value.ndim != 3 or query.shape[-1] != self.embed_dim
                or key.shape[-1] != self.kdim or value.shape[-1] != self.vdim or key.shape[:2] != value.shape[:2]
                or key.shape[0] != n):
            raise ShapeError(f"{_label(self)}: expected query [N, L, {self.embed_dim}], "
                             f"key [N, S, {self.kdim}], value [N, S, {self.vdim}] (or unbatched without N); "
                             f"got query {describe(query)}, key {describe(key)}, value {describe(value)}")
        s = key.shape[1]
        heads = self.num_heads
        mask = None
        if attn_mask is not None:
            if tuple(attn_mask.shape) == (l_, s):
                mask = _additive(attn_mask, query.dtype, "attn_mask", _label(self))
            elif tuple(attn_mask.shape) == (n * heads, l_, s):
                mask = M.reshape(_additive(attn_mask, query.dtype, "attn_mask", _label(self)),
                                 (n, heads, l_, s))
            else:
                raise ShapeError(f"{_label(self)}: attn_mask must be [L, S] = ({l_}, {s}) or "
                                 f"[N * num_heads, L, S] = ({n * heads}, {l_}, {s}); got {describe(attn_mask)}")
        if key_padding_mask is not None:
            if tuple(key_padding_mask.shape) != (n, s):
                raise ShapeError(f"{_label(self)}: key_padding_mask must be [N, S] = ({n}, {s}); got "
                                 f"{describe(key_padding_mask)}")
            kpm = M.reshape(_additive(key_padding_mask, query.dtype, "key_padding_mask", _label(self)),
                            (n, 1, 1, s))
            mask = kpm if mask is None else mask + kpm
        q = self._heads(self.q_proj(query), n)
        k = self._heads(self.k_proj(key), n)
        v = self._heads(self.v_proj(value), n)
        ctx, w = F._attention(q, k, v, mask, self.dropout.p, is_causal, None, self.training, keep_true=True)
        ctx = M.reshape(M.permute_dims(ctx, (0, 2, 1, 3)), (n, l_, self.embed_dim))
        out = self.out_proj(ctx)
        if unbatched:
            out = M.reshape(out, out.shape[1:])
        if not need_weights:
            return out
        if average_attn_weights:
            w = w.mean(axis=1)
        return out, (M.reshape(w, w.shape[1:]) if unbatched else w)

    def extra_repr(self) -> str:
        """Sizes and dropout, shown in ``repr``.

        Example:
            >>> import burn
            >>> assert burn.nn.MultiHeadAttention(8, 2).extra_repr() == "embed_dim=8, num_heads=2, dropout=0.0"
        """
        return f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, dropout={self.dropout.p}"


_ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu}


class TransformerEncoderLayer(Module):
    """Self-attention then a feed-forward block, each with a residual connection and LayerNorm
    (``torch.nn.TransformerEncoderLayer(batch_first=True)``).

    ``norm_first=False`` (post-norm): ``x = norm1(x + sa(x)); x = norm2(x + ff(x))``;
    ``norm_first=True`` (pre-norm): ``x = x + sa(norm1(x)); x = x + ff(norm2(x))``.
    Sub-modules carry PyTorch's names (``self_attn``, ``linear1``, ``linear2``,
    ``norm1``, ``norm2``). ``forward(src, src_mask=None, src_key_padding_mask=None)``
    takes masks as :class:`MultiHeadAttention`.

    Example:
        >>> import burn
        >>> layer = burn.nn.TransformerEncoderLayer(16, 4, dim_feedforward=32, dropout=0.0)
        >>> assert layer(burn.ones((2, 7, 16))).shape == (2, 7, 16)
    """

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation: str = "relu", layer_norm_eps: float = 1e-5, norm_first: bool = False,
                 bias: bool = True, *, device=None, dtype=None):
        if activation not in _ACTIVATIONS:
            raise ValueError(f"TransformerEncoderLayer: activation must be one of {sorted(_ACTIVATIONS)}, "
                             f"got {activation!r}")
        device = _device(device)
        self.config = dict(d_model=d_model, nhead=nhead, dim_feedforward=dim_feedforward, dropout=dropout,
                           activation=activation, layer_norm_eps=layer_norm_eps, norm_first=norm_first, bias=bias)
        kw = dict(device=device, dtype=dtype)
        self.self_attn = MultiHeadAttention(d_model, nhead, dropout, bias, **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm1 = LayerNorm(d_model, layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, layer_norm_eps, bias=bias, **kw)
        self.dropout, self.dropout1, self.dropout2 = Dropout(dropout), Dropout(dropout), Dropout(dropout)
        self.norm_first, self.activation = norm_first, activation

    def _sa(self, x, mask, kpm, is_causal):
        return self.dropout1(self.self_attn(x, x, x, attn_mask=mask, key_padding_mask=kpm, is_causal=is_causal))

    def _ff(self, x):
        if (self.activation == "relu" and (self.dropout.p == 0 or not self.training) and type(self.linear1) is Linear
                and self.linear1.bias is not None):
            # rows as one 2-D GEMM each, the first with its bias + relu fused (one node each way)
            x2 = M.reshape(x, (-1, x.shape[-1]))
            h = F.linear_relu(x2, self.linear1.weight, self.linear1.bias)
            return self.dropout2(M.reshape(self.linear2(h), tuple(x.shape)))
        return self.dropout2(self.linear2(self.dropout(_ACTIVATIONS[self.activation](self.linear1(x)))))

    def forward(self, src, src_mask=None, src_key_padding_mask=None, *, is_causal: bool = False):
        """Self-attention then feed-forward (each with residual and norm) over ``src`` [N, S, d_model].

        Example:
            >>> import burn
            >>> layer = burn.nn.TransformerEncoderLayer(8, 2, 16)
            >>> assert layer.forward(burn.ones((2, 5, 8)), is_causal=True).shape == (2, 5, 8)
        """
        d = self.config["d_model"]
        if src.ndim not in (2, 3) or src.shape[-1] != d:
            raise ShapeError(f"TransformerEncoderLayer(d_model={d}): expected src [N, S, {d}] or [S, {d}], "
                             f"got {describe(src)}")
        x = src
        if self.norm_first:
            x = x + self._sa(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            return x + self._ff(self.norm2(x))
        x = self.norm1(x + self._sa(x, src_mask, src_key_padding_mask, is_causal))
        return self.norm2(x + self._ff(x))

    def extra_repr(self) -> str:
        """Sizes and options, shown in ``repr``.

        Example:
            >>> import burn
            >>> assert burn.nn.TransformerEncoderLayer(8, 2, 16).extra_repr().startswith("d_model=8, nhead=2")
        """
        c = self.config
        return (f"d_model={c['d_model']}, nhead={c['nhead']}, dim_feedforward={c['dim_feedforward']}, "
                f"activation={c['activation']}, norm_first={c['norm_first']}")


class TransformerEncoder(Module):
    """A stack of ``num_layers`` copies of ``encoder_layer`` and an optional final ``norm``
    (``torch.nn.TransformerEncoder``: every copy starts with the same weights).

    Example:
        >>> import burn
        >>> layer = burn.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0)
        >>> enc = burn.nn.TransformerEncoder(layer, 3, norm=burn.nn.LayerNorm(8))
        >>> assert enc(burn.ones((2, 5, 8))).shape == (2, 5, 8)
        >>> assert enc.num_params() == 3 * layer.num_params() + 16
        >>> assert "layers.2.self_attn.q_proj.weight" in dict(enc.named_parameters())
    """

    def __init__(self, encoder_layer: TransformerEncoderLayer, num_layers: int, norm: Module | None = None):
        if not isinstance(encoder_layer, TransformerEncoderLayer):
            raise TypeError(f"TransformerEncoder: encoder_layer must be a TransformerEncoderLayer, got "
                            f"{type(encoder_layer).__name__}")
        if num_layers < 1:
            raise ValueError(f"TransformerEncoder: num_layers must be >= 1, got {num_layers}")
        self.layers = ModuleList([encoder_layer] + [_clone(encoder_layer) for _ in range(num_layers - 1)])
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, src, mask=None, src_key_padding_mask=None, *, is_causal: bool = False):
        """Run ``src`` through every layer (then the final norm, if any).

        Example:
            >>> import burn
            >>> enc = burn.nn.TransformerEncoder(burn.nn.TransformerEncoderLayer(8, 2, 16), 2)
            >>> assert enc.forward(burn.ones((2, 5, 8))).shape == (2, 5, 8)
        """
        x = src
        for layer in self.layers:
            x = layer(x, mask, src_key_padding_mask, is_causal=is_causal)
        return self.norm(x) if self.norm is not None else x


def _clone(layer: TransformerEncoderLayer) -> TransformerEncoderLayer:
    w = layer.self_attn.q_proj.weight
    new = TransformerEncoderLayer(**layer.config, device=w.device, dtype=w.dtype)
    new.load_state_dict(layer.state_dict())    # handles are immutable, so sharing them is a copy
    for (_, a), (_, b) in zip(layer.named_parameters(), new.named_parameters()):
        if a.frozen:
            b.freeze()
    new.train(layer.training)
    return new
