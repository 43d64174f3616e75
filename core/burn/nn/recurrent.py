"""Recurrent layers with PyTorch's API and meaning: ``LSTM``, ``GRU``, ``LSTMCell``, ``GRUCell``.

Parameters have torch's names and layouts (``weight_ih_l0`` [G*H, input], ``weight_hh_l0``
[G*H, H], ``bias_ih_l0``, ``bias_hh_l0``, ``..._reverse`` for the second direction; G = 4
for LSTM with the gates ``i, f, g, o``, 3 for GRU with ``r, z, n``), so a torch
``state_dict``'s arrays copy in by name (``load_state_dict`` or ``load_torch_state``), and
torch's initialization (uniform in ``±1/sqrt(hidden_size)``).

How it runs: per layer and direction the input of every step is projected by one matmul
(burn ops: autodiff gives ``W_ih``, the biases and the input their gradients), then the
recurrence is one op, ``burn::lstm_layer`` / ``burn::gru_layer`` (:mod:`burn.fused.recurrent`):
each backend's kernel runs per step one ``h @ W_hh^T`` and the fused gates, and the backward
is one op too. float32/float64 take those ops; other floating dtypes run their reference
definitions (the same math as burn ops).
"""
from __future__ import annotations

import math
import warnings

from .. import dtypes as dt
from ..errors import BurnError, DTypeError, ShapeError, describe
from ..fused.recurrent import gru_layer, lstm_layer
from ..ops import movement as M
from ..ops.creation import _device, zeros
from . import functional as F
from . import init
from .module import Module, Parameter

__all__ = ["LSTM", "GRU", "LSTMCell", "GRUCell"]

_FUSED = (dt.float32, dt.float64)


def _layer_op(op, x):
    """The extension op for float32/float64, its reference (burn ops) for other floating dtypes."""
    return op if x.dtype in _FUSED else op.reference


def _check_dtype(name, x, w):
    if not x.dtype.is_floating:
        raise DTypeError(f"{name}: input {describe(x)} must be floating")
    if x.dtype is not w.dtype:
        raise DTypeError(f"{name}: input {describe(x)} and parameters ({w.dtype}) differ in dtype; cast the "
                         f"input with .astype(burn.{w.dtype}) or build the module with dtype=burn.{x.dtype}")


def _project(x2, w_ih, b):
    """``x2 @ w_ih^T (+ b)``: every step's input projection as one matmul."""
    y = x2 @ M.matrix_transpose(w_ih)
    return y if b is None else y + b


class _RNNBase(Module):
    """What LSTM and GRU share: torch's arguments, parameters and the layer loop."""

    _gates = 0
    _name = ""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 *, device=None, dtype=None):
        n = self._name
        if proj_size:
            raise BurnError(f"{n}: proj_size={proj_size} is not supported (burn's {n} has no projection); "
                            f"add a burn.nn.Linear(hidden_size, {proj_size}) after it instead")
        if int(hidden_size) <= 0 or int(input_size) <= 0 or int(num_layers) <= 0:
            raise ValueError(f"{n}: input_size, hidden_size and num_layers must be positive, got "
                             f"{input_size}, {hidden_size}, {num_layers}")
        if not 0.0 <= float(dropout) <= 1.0 or isinstance(dropout, bool):
            raise ValueError(f"{n}: dropout must be a probability in [0, 1], got {dropout!r}")
        if dropout > 0 and num_layers == 1:
            warnings.warn(f"{n}: dropout={dropout} has no effect with num_layers=1 (it is applied between "
                          f"layers), as in PyTorch", UserWarning, stacklevel=3)
        device = _device(device)
        self.input_size, self.hidden_size, self.num_layers = int(input_size), int(hidden_size), int(num_layers)
        self.bias, self.batch_first, self.dropout = bool(bias), bool(batch_first), float(dropout)
        self.bidirectional = bool(bidirectional)
        self.proj_size = 0
        dirs = 2 if bidirectional else 1
        G, H = self._gates * self.hidden_size, self.hidden_size
        k = 1.0 / math.sqrt(H)
        for layer in range(self.num_layers):
            d_in = self.input_size if layer == 0 else H * dirs
            for sfx in ("", "_reverse")[:dirs]:
                # torch's order, so named_parameters() lists them as torch does
                setattr(self, f"weight_ih_l{layer}{sfx}", Parameter(init.uniform((G, d_in), k, device=device,
                                                                                  dtype=dtype)))
                setattr(self, f"weight_hh_l{layer}{sfx}", Parameter(init.uniform((G, H), k, device=device,
                                                                                  dtype=dtype)))
                if self.bias:
                    setattr(self, f"bias_ih_l{layer}{sfx}", Parameter(init.uniform((G,), k, device=device,
                                                                                    dtype=dtype)))
                    setattr(self, f"bias_hh_l{layer}{sfx}", Parameter(init.uniform((G,), k, device=device,
                                                                                    dtype=dtype)))

    def _params(self, layer, sfx):
        g = self.__dict__
        return (g[f"weight_ih_l{layer}{sfx}"], g[f"weight_hh_l{layer}{sfx}"],
                g.get(f"bias_ih_l{layer}{sfx}"), g.get(f"bias_hh_l{layer}{sfx}"))

    def _prepare(self, x):
        """``x`` as time-major [T, B, I]; whether it was unbatched."""
        n = self._name
        steps = x.shape[1] if x.ndim == 3 and self.batch_first else x.shape[0] if x.ndim else 0
        if x.ndim not in (2, 3) or x.shape[-1] != self.input_size or steps == 0:
            want = "[B, T, input_size]" if self.batch_first else "[T, B, input_size]"
            raise ShapeError(f"{n}: expected input {want} or unbatched [T, input_size] with input_size="
                             f"{self.input_size} and T >= 1, got {describe(x)}")
        _check_dtype(n, x, self.weight_hh_l0)
        if x.ndim == 2:
            return M.expand_dims(x, axis=1), True
        return (M.permute_dims(x, (1, 0, 2)) if self.batch_first else x), False

    def _state(self, what, s, B, unbatched, x):
        """An initial state [L*D, B, H] checked as torch checks it (None: zeros)."""
        L = self.num_layers * (2 if self.bidirectional else 1)
        want = (L, self.hidden_size) if unbatched else (L, B, self.hidden_size)
        if s is None:
            return None
        if tuple(s.shape) != want:
            raise ShapeError(f"{self._name}: expected {what} of shape {want} for input {describe(x)}, got "
                             f"{describe(s)}")
        if s.dtype is not x.dtype:
            raise DTypeError(f"{self._name}: {what} {describe(s)} must have the input's dtype {x.dtype}")
        return M.expand_dims(s, axis=1) if unbatched else s

    def _run(self, x, states):
        """The layer loop: returns output [T, B, D*H] and the final states, one list per state."""
        T, B = x.shape[0], x.shape[1]
        dirs = 2 if self.bidirectional else 1
        finals = [[] for _ in states]
        zero = None
        if any(s is None for s in states):      # one zero state serves every layer and direction
            zero = zeros((B, self.hidden_size), dtype=x.dtype, device=x.device)
        for layer in range(self.num_layers):
            x2 = M.reshape(x, (T * B, x.shape[2]))
            outs = []
            for d in range(dirs):
                k = layer * dirs + d
                init = [zero if s is None else s[k] for s in states]
                out, fin = self._direction(x2, T, B, layer, ("", "_reverse")[d], init, d == 1)
                outs.append(out)
                for f, v in zip(finals, fin):
                    f.append(v)
            x = outs[0] if dirs == 1 else M.concat(outs, axis=-1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, training=True)
        return x, finals

    def _finish(self, out, finals, unbatched):
        if unbatched:
            out = M.squeeze(out, axis=1)
        elif self.batch_first:
            out = M.permute_dims(out, (1, 0, 2))
        fin = [M.stack(f) for f in finals]
        return out, [M.squeeze(f, axis=1) if unbatched else f for f in fin]

    def flatten_parameters(self) -> None:
        """Does nothing (torch's cuDNN weight packing); kept so ported code runs.

        Example:
            >>> import burn
            >>> assert burn.nn.GRU(2, 3).flatten_parameters() is None
        """
        return None

    def extra_repr(self) -> str:
        """The layer's arguments, shown in ``repr``.

        Example:
            >>> import burn
            >>> assert burn.nn.LSTM(4, 8, 2).extra_repr() == "4, 8, num_layers=2"
        """
        s = f"{self.input_size}, {self.hidden_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        for name, default in (("bias", True), ("batch_first", False), ("dropout", 0.0), ("bidirectional", False)):
            if getattr(self, name) != default:
                s += f", {name}={getattr(self, name)}"
        return s


class LSTM(_RNNBase):
    """A multi-layer LSTM, as ``torch.nn.LSTM`` (same arguments, parameters, shapes and math).

    ``LSTM(input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
    bidirectional=False, proj_size=0)``; ``dropout`` applies to each layer's output but the
    last, in training mode only; ``proj_size`` other than 0 is refused. ``lstm(x, (h0, c0))``
    with ``x`` [T, B, input_size] ([B, T, input_size] if batch_first, or unbatched
    [T, input_size]) returns ``(output, (h_n, c_n))``: output [T, B, D*H], h_n and c_n
    [num_layers*D, B, H] (D = 2 if bidirectional); ``hx`` defaults to zeros.

    Example:
        >>> import burn
        >>> lstm = burn.nn.LSTM(4, 8, num_layers=2, batch_first=True)
        >>> out, (h, c) = lstm(burn.ones((3, 5, 4)))
        >>> assert out.shape == (3, 5, 8) and h.shape == c.shape == (2, 3, 8)
        >>> assert [n for n, _ in lstm.named_parameters()][:2] == ["weight_ih_l0", "weight_hh_l0"]
    """

    _gates, _name = 4, "LSTM"

    def forward(self, x, hx=None):
        """``(output, (h_n, c_n))`` for the input sequence ``x`` and the initial ``hx = (h0, c0)``.

        Example:
            >>> import burn
            >>> out, (h, c) = burn.nn.LSTM(2, 3, bidirectional=True).forward(burn.ones((5, 2)))
            >>> assert out.shape == (5, 6) and h.shape == (2, 3)
        """
        x, unbatched = self._prepare(x)
        if hx is not None and not (isinstance(hx, (tuple, list)) and len(hx) == 2):
            raise BurnError(f"LSTM: hx must be a tuple (h0, c0), got {type(hx).__name__}")
        h0, c0 = (None, None) if hx is None else hx
        B = x.shape[1]
        states = [self._state("h0", h0, B, unbatched, x), self._state("c0", c0, B, unbatched, x)]
        out, finals = self._run(x, states)
        out, (h, c) = self._finish(out, finals, unbatched)
        return out, (h, c)

    def _direction(self, x2, T, B, layer, sfx, states, reverse):
        w_ih, w_hh, b_ih, b_hh = self._params(layer, sfx)
        xp = M.reshape(_project(x2, w_ih, None if b_ih is None else b_ih + b_hh), (T, B, w_ih.shape[0]))
        out, h, c, _, _ = _layer_op(lstm_layer, xp)(xp, w_hh, states[0], states[1], reverse)
        return out, (h, c)


class GRU(_RNNBase):
    """A multi-layer GRU, as ``torch.nn.GRU`` (same arguments, parameters, shapes and math).

    ``GRU(input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
    bidirectional=False)``; gates ``r, z, n`` with ``n = tanh(W_in x + b_in + r * (W_hn h + b_hn))``.
    ``gru(x, h0)`` returns ``(output, h_n)`` with torch's shapes (see :class:`LSTM`).

    Example:
        >>> import burn
        >>> gru = burn.nn.GRU(4, 8, num_layers=2, bidirectional=True)
        >>> out, h = gru(burn.ones((5, 3, 4)))
        >>> assert out.shape == (5, 3, 16) and h.shape == (4, 3, 8)
    """

    _gates, _name = 3, "GRU"

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, *, device=None,
                 dtype=None):
        super().__init__(input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional, 0,
                         device=device, dtype=dtype)

    def forward(self, x, hx=None):
        """``(output, h_n)`` for the input sequence ``x`` and the initial state ``hx`` (zeros if None).

        Example:
            >>> import burn
            >>> out, h = burn.nn.GRU(2, 3).forward(burn.ones((5, 2)), burn.zeros((1, 3)))
            >>> assert out.shape == (5, 3) and h.shape == (1, 3)
        """
        x, unbatched = self._prepare(x)
        states = [self._state("hx", hx, x.shape[1], unbatched, x)]
        out, finals = self._run(x, states)
        out, (h,) = self._finish(out, finals, unbatched)
        return out, h

    def _direction(self, x2, T, B, layer, sfx, states, reverse):
        w_ih, w_hh, b_ih, b_hh = self._params(layer, sfx)
        xp = M.reshape(_project(x2, w_ih, b_ih), (T, B, w_ih.shape[0]))
        out, h, _ = _layer_op(gru_layer, xp)(xp, w_hh, b_hh, states[0], reverse)
        return out, (h,)


class _CellBase(Module):
    _gates = 0
    _name = ""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, *, device=None, dtype=None):
        if int(hidden_size) <= 0 or int(input_size) <= 0:
            raise ValueError(f"{self._name}: input_size and hidden_size must be positive, got "
                             f"{input_size}, {hidden_size}")
        device = _device(device)
        self.input_size, self.hidden_size, self.bias = int(input_size), int(hidden_size), bool(bias)
        G, H = self._gates * self.hidden_size, self.hidden_size
        k = 1.0 / math.sqrt(H)
        self.weight_ih = Parameter(init.uniform((G, self.input_size), k, device=device, dtype=dtype))
        self.weight_hh = Parameter(init.uniform((G, H), k, device=device, dtype=dtype))
        self.bias_ih = Parameter(init.uniform((G,), k, device=device, dtype=dtype)) if bias else None
        self.bias_hh = Parameter(init.uniform((G,), k, device=device, dtype=dtype)) if bias else None

    def _prepare(self, x):
        if x.ndim not in (1, 2) or x.shape[-1] != self.input_size:
            raise ShapeError(f"{self._name}: expected input [B, {self.input_size}] or unbatched "
                             f"[{self.input_size}], got {describe(x)}")
        _check_dtype(self._name, x, self.weight_hh)
        return (M.expand_dims(x, axis=0), True) if x.ndim == 1 else (x, False)

    def _state(self, what, s, x, unbatched):
        B = x.shape[0]
        if s is None:
            return zeros((B, self.hidden_size), dtype=x.dtype, device=x.device)
        want = (self.hidden_size,) if unbatched else (B, self.hidden_size)
        if tuple(s.shape) != want:
            raise ShapeError(f"{self._name}: expected {what} of shape {want} for input {describe(x)}, got "
                             f"{describe(s)}")
        if s.dtype is not x.dtype:
            raise DTypeError(f"{self._name}: {what} {describe(s)} must have the input's dtype {x.dtype}")
        return M.expand_dims(s, axis=0) if unbatched else s

    def extra_repr(self) -> str:
        """The cell's arguments, shown in ``repr``.

        Example:
            >>> import burn
            >>> assert burn.nn.GRUCell(4, 8, bias=False).extra_repr() == "4, 8, bias=False"
        """
        return f"{self.input_size}, {self.hidden_size}" + ("" if self.bias else ", bias=False")


class LSTMCell(_CellBase):
    """One LSTM step, as ``torch.nn.LSTMCell``: ``cell(x, (h, c))`` -> ``(h', c')``.

    ``x`` [B, input_size] or unbatched [input_size]; ``hx`` defaults to zeros. Parameters
    ``weight_ih`` [4H, input_size], ``weight_hh`` [4H, H], ``bias_ih``, ``bias_hh`` [4H].

    Example:
        >>> import burn
        >>> cell = burn.nn.LSTMCell(4, 8)
        >>> h, c = cell(burn.ones((3, 4)))
        >>> h, c = cell(burn.ones((3, 4)), (h, c))
        >>> assert h.shape == c.shape == (3, 8)
    """

    _gates, _name = 4, "LSTMCell"

    def forward(self, x, hx=None):
        """``(h', c')`` after one step from ``hx = (h, c)``.

        Example:
            >>> import burn
            >>> h, c = burn.nn.LSTMCell(2, 3).forward(burn.ones((2,)))
            >>> assert h.shape == (3,)
        """
        x, unbatched = self._prepare(x)
        if hx is not None and not (isinstance(hx, (tuple, list)) and len(hx) == 2):
            raise BurnError(f"LSTMCell: hx must be a tuple (h, c), got {type(hx).__name__}")
        h0, c0 = (None, None) if hx is None else hx
        h0, c0 = self._state("h", h0, x, unbatched), self._state("c", c0, x, unbatched)
        b = None if self.bias_ih is None else self.bias_ih + self.bias_hh
        xp = M.expand_dims(_project(x, self.weight_ih, b), axis=0)
        _, h, c, _, _ = _layer_op(lstm_layer, xp)(xp, self.weight_hh, h0, c0, False)
        return (h[0], c[0]) if unbatched else (h, c)


class GRUCell(_CellBase):
    """One GRU step, as ``torch.nn.GRUCell``: ``cell(x, h)`` -> ``h'``.

    Example:
        >>> import burn
        >>> cell = burn.nn.GRUCell(4, 8)
        >>> h = cell(burn.ones((3, 4)))
        >>> assert cell(burn.ones((3, 4)), h).shape == (3, 8)
    """

    _gates, _name = 3, "GRUCell"

    def forward(self, x, hx=None):
        """``h'`` after one step from ``hx`` (zeros if None).

        Example:
            >>> import burn
            >>> assert burn.nn.GRUCell(2, 3).forward(burn.ones((2,))).shape == (3,)
        """
        x, unbatched = self._prepare(x)
        h0 = self._state("hx", hx, x, unbatched)
        xp = M.expand_dims(_project(x, self.weight_ih, self.bias_ih), axis=0)
        _, h, _ = _layer_op(gru_layer, xp)(xp, self.weight_hh, self.bias_hh, h0, False)
        return h[0] if unbatched else h
