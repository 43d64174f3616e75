"""The recurrent layers on cuda: ``burn::lstm_layer`` / ``burn::gru_layer`` and their gradients
(``burn.fused.recurrent`` defines them). Per time step one cuBLAS matmul (CuPy's, written into
the step's slice where it can) and one launch of the step's point-wise kernel from
``cu/recurrent.cu``; ``dW_hh`` is one matmul over all steps after the reverse loop."""
from __future__ import annotations

from functools import lru_cache

import numpy as np
from burn.codegen.sources import load_source
from burn.errors import DTypeError

from ..native import dtype_name
from .elementwise import _dc_of, on_device

_C = {"float32": "float", "float64": "double"}
KERNEL_DTYPES = tuple(_C)
NAMES = ("lstm_step", "lstm_step_grad", "gru_step", "gru_step_grad")


@lru_cache(maxsize=None)
def recurrent_source(dtype: str) -> str:
    """The CUDA module of ``cu/recurrent.cu`` for ``dtype``: kernels ``burn_<name>_<dtype>`` for
    each name of :data:`NAMES`, one thread per element of the [B, H] state.

    >>> assert "burn_lstm_step_grad_float64(" in recurrent_source("float64")
    """
    src = load_source(__package__, "cu/recurrent.cu")
    # the kernels' names carry the dtype literally (CuPy looks kernels up by name in the source)
    return f"#define T {_C[dtype]}\n" + src.replace("_DTYPE(", f"_{dtype}(")


def _fn(dc, dt, name):
    if dt not in _C:
        raise DTypeError(f"cuda: burn::{name.split('_')[0]}_layer needs float32 or float64, got {dt}")
    return dc.function(recurrent_source(dt), f"burn_{name}_{dt}")


def _order(T, reverse):
    return range(T - 1, -1, -1) if reverse else range(T)


def _c(cp, x):
    return x if x.flags.c_contiguous else cp.ascontiguousarray(x)


def _dw(cp, d, h0, out, reverse):
    T, B, G = d.shape
    H = out.shape[2]
    dw = d[T - 1 if reverse else 0].T @ h0
    if T > 1:
        ds, hs = (d[:-1], out[1:]) if reverse else (d[1:], out[:-1])
        dw += ds.reshape((T - 1) * B, G).T @ hs.reshape((T - 1) * B, H)
    return dw


def lstm_layer(xp, w_hh, h0, c0, reverse=False):
    """burn::lstm_layer: ``(out, h_n, c_n, gates, cells)``; per step a matmul and ``burn_lstm_step``.

    Example (on a GPU; what ``burn.nn.LSTM`` runs per layer and direction)::

        out, (h, c) = burn.nn.LSTM(128, 256, device=burn.Device.cuda(0))(x)
    """
    dc = _dc_of((xp,))
    cp = dc.cp
    xp, h0, c0 = _c(cp, xp), _c(cp, h0), _c(cp, c0)
    T, B, G = xp.shape
    H = G // 4
    out, cells = cp.empty((T, B, H), xp.dtype), cp.empty((T, B, H), xp.dtype)
    gates = cp.empty((T, 4, B, H), xp.dtype)
    fn = _fn(dc, dtype_name(xp), "lstm_step")
    wt = cp.ascontiguousarray(w_hh.T)
    h, c = h0, c0
    hh = cp.empty((B, G), xp.dtype)
    for t in _order(T, reverse):
        cp.matmul(h, wt, out=hh)
        dc.launch(fn, B * H, (np.int64(B * H), np.int32(H), xp[t], hh, c, gates[t], cells[t], out[t]))
        h, c = out[t], cells[t]
    return out, h.copy(), c.copy(), gates, cells


def lstm_layer_grad(w_hh, h0, c0, out, gates, cells, g_out, g_hn, g_cn, reverse=False):
    """burn::lstm_layer_grad: ``(d_xp, d_w_hh, d_h0, d_c0)``; per step ``burn_lstm_step_grad`` and a matmul."""
    dc = _dc_of((out,))
    cp = dc.cp
    h0, c0, out, gates, cells, w_hh = (_c(cp, a) for a in (h0, c0, out, gates, cells, w_hh))
    T, B, H = out.shape
    d_xp = cp.empty((T, B, 4 * H), out.dtype)
    dmm = cp.zeros((B, H), out.dtype) if g_hn is None else _c(cp, g_hn)
    dcar = cp.zeros((B, H), out.dtype) if g_cn is None else g_cn.copy()
    go = _c(cp, g_out) if g_out is not None else None
    fn = _fn(dc, dtype_name(out), "lstm_step_grad")
    for t in _order(T, not reverse):
        p = t + 1 if reverse else t - 1
        cprev = c0 if not 0 <= p < T else cells[p]
        dc.launch(fn, B * H, (np.int64(B * H), np.int32(H), dmm, np.int32(go is not None),
                              go[t] if go is not None else dmm, gates[t], cells[t], cprev, dcar, d_xp[t]))
        dmm = d_xp[t] @ w_hh
    return d_xp, _dw(cp, d_xp, h0, out, reverse), dmm, dcar


def gru_layer(xp, w_hh, b_hh, h0, reverse=False):
    """burn::gru_layer: ``(out, h_n, saved)``; per step a matmul and ``burn_gru_step``."""
    dc = _dc_of((xp,))
    cp = dc.cp
    xp, h0 = _c(cp, xp), _c(cp, h0)
    T, B, G = xp.shape
    H = G // 3
    out, saved = cp.empty((T, B, H), xp.dtype), cp.empty((T, 4, B, H), xp.dtype)
    bias = _c(cp, b_hh) if b_hh is not None else xp
    fn = _fn(dc, dtype_name(xp), "gru_step")
    wt = cp.ascontiguousarray(w_hh.T)
    gh = cp.empty((B, G), xp.dtype)
    h = h0
    for t in _order(T, reverse):
        cp.matmul(h, wt, out=gh)
        dc.launch(fn, B * H, (np.int64(B * H), np.int32(H), xp[t], gh, np.int32(b_hh is not None), bias, h,
                              saved[t], out[t]))
        h = out[t]
    return out, h.copy(), saved


def gru_layer_grad(w_hh, h0, out, saved, g_out, g_hn, reverse=False):
    """burn::gru_layer_grad: ``(d_xp, d_w_hh, d_b_hh, d_h0)``; per step ``burn_gru_step_grad`` and a matmul."""
    dc = _dc_of((out,))
    cp = dc.cp
    h0, out, saved, w_hh = (_c(cp, a) for a in (h0, out, saved, w_hh))
    T, B, H = out.shape
    d_xp, d_gh = cp.empty((T, B, 3 * H), out.dtype), cp.empty((T, B, 3 * H), out.dtype)
    dmm = cp.zeros((B, H), out.dtype) if g_hn is None else _c(cp, g_hn)
    carry = cp.zeros((B, H), out.dtype)
    go = _c(cp, g_out) if g_out is not None else None
    fn = _fn(dc, dtype_name(out), "gru_step_grad")
    for t in _order(T, not reverse):
        p = t + 1 if reverse else t - 1
        hp = h0 if not 0 <= p < T else out[p]
        dc.launch(fn, B * H, (np.int64(B * H), np.int32(H), dmm, carry, np.int32(go is not None),
                              go[t] if go is not None else dmm, saved[t], hp, d_xp[t], d_gh[t]))
        dmm = d_gh[t] @ w_hh
    d_b = d_gh.reshape(T * B, 3 * H).sum(axis=0)
    return d_xp, _dw(cp, d_gh, h0, out, reverse), d_b, dmm + carry


def recurrent_kernels() -> dict:
    """``burn::`` recurrent extension op -> cuda kernel, for registration.

    >>> assert set(recurrent_kernels()) == {"burn::lstm_layer", "burn::lstm_layer_grad", "burn::gru_layer",
    ...                                     "burn::gru_layer_grad"}
    """
    return {"burn::lstm_layer": on_device(lstm_layer), "burn::lstm_layer_grad": on_device(lstm_layer_grad),
            "burn::gru_layer": on_device(gru_layer), "burn::gru_layer_grad": on_device(gru_layer_grad)}
