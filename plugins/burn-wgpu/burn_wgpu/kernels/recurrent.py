"""The recurrent layers on wgpu: ``burn::lstm_layer`` / ``burn::gru_layer`` and their gradients
(``burn.fused.recurrent`` defines them). Per time step one matmul (the library's, on views:
``W_hh^T`` is a permuted view, never copied) and one launch of the step's point-wise kernel
from ``cl/recurrent.cl``, which reads and writes the step's slices of the saved arrays by
offset; ``dW_hh`` is one matmul over all steps after the reverse loop."""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from burn.codegen import OPENCL
from burn.codegen.sources import with_defines
from burn.errors import DTypeError

from ..native import empty
from .elementwise import elementwise
from .linear import matmul
from .movement import _filled, contiguous, permute, reshape
from .source import cl_source

_i32 = np.int32


@lru_cache(maxsize=None)
def _source(dtype: str, fp64: bool) -> str:
    pre = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" if fp64 else ""
    return pre + with_defines(cl_source("recurrent.cl"), {"T": OPENCL.ctype(dtype)})


def _kernel(dc, dtype, name):
    if dtype not in ("float32", "float64"):
        raise DTypeError(f"wgpu: burn::{name.split('_')[0]}_layer needs float32 or float64, got {dtype}")
    return dc.kernel(_source(dtype, dc.fp64), name)


def _order(T, reverse):
    return range(T - 1, -1, -1) if reverse else range(T)


def _copy(x):
    """A fresh contiguous copy (kernels below write into it)."""
    return elementwise("positive")(x)


def _step(x, t):
    """Element offset of step ``t`` of a contiguous [T, ...] array."""
    return _i32(x.offset + t * (x.size // x.shape[0]))


def _dw(d, h0, out, reverse):
    """``sum_t d[t]^T @ h_prev(t)`` as one matmul over the steps that read an output, one for h0."""
    T, B, G = d.shape
    H = out.shape[2]
    first = T - 1 if reverse else 0
    dw = matmul(permute(d.view((B, G), (G, 1), d.offset + first * B * G), axes=(1, 0)), h0)
    if T == 1:
        return dw
    n = (T - 1) * B
    ds = d.view((n, G), (G, 1), d.offset + (0 if reverse else B * G))
    hs = out.view((n, H), (H, 1), out.offset + (B * H if reverse else 0))
    return elementwise("add")(dw, matmul(permute(ds, axes=(1, 0)), hs))


def lstm_layer(xp, w_hh, h0, c0, reverse=False):
    """burn::lstm_layer: ``(out, h_n, c_n, gates, cells)``; per step a matmul and ``lstm_step``."""
    xp, h0, c0 = contiguous(xp), contiguous(h0), contiguous(c0)
    dc, dtype = xp.dc, xp.dtype
    T, B, G = xp.shape
    H = G // 4
    out, cells, gates = empty(dc, (T, B, H), dtype), empty(dc, (T, B, H), dtype), empty(dc, (T, 4, B, H), dtype)
    k = _kernel(dc, dtype, "lstm_step")
    wt = permute(w_hh, axes=(1, 0))
    h, c, c_off = h0, c0.buf, _i32(c0.offset)
    for t in _order(T, reverse):
        hh = matmul(h, wt)
        dc.launch(k, B * H, [_i32(B), _i32(H), xp.buf, _step(xp, t), hh.buf, _i32(hh.offset), c, c_off,
                             gates.buf, _step(gates, t), cells.buf, _step(cells, t), out.buf, _step(out, t)])
        h = out.view((B, H), (H, 1), int(_step(out, t)))
        c, c_off = cells.buf, _step(cells, t)
    last = 0 if reverse else T - 1
    hn, cn = out.view((B, H), (H, 1), int(_step(out, last))), cells.view((B, H), (H, 1), int(_step(cells, last)))
    return out, _copy(hn), _copy(cn), gates, cells


def lstm_layer_grad(w_hh, h0, c0, out, gates, cells, g_out, g_hn, g_cn, reverse=False):
    """burn::lstm_layer_grad: ``(d_xp, d_w_hh, d_h0, d_c0)``; per step ``lstm_step_grad`` and a matmul."""
    h0, c0, out, gates, cells = (contiguous(a) for a in (h0, c0, out, gates, cells))
    dc, dtype = out.dc, out.dtype
    T, B, H = out.shape
    d_xp = empty(dc, (T, B, 4 * H), dtype)
    dmm = _filled(dc, (B, H), dtype, 0) if g_hn is None else contiguous(g_hn)
    dcar = _filled(dc, (B, H), dtype, 0) if g_cn is None else _copy(g_cn)
    go = contiguous(g_out) if g_out is not None else dmm
    k = _kernel(dc, dtype, "lstm_step_grad")
    for t in _order(T, not reverse):
        p = t + 1 if reverse else t - 1
        cp, cp_off = (c0.buf, _i32(c0.offset)) if not 0 <= p < T else (cells.buf, _step(cells, p))
        dc.launch(k, B * H, [_i32(B), _i32(H), dmm.buf, _i32(dmm.offset), _i32(g_out is not None), go.buf,
                             _step(go, t) if g_out is not None else _i32(0), gates.buf, _step(gates, t), cells.buf,
                             _step(cells, t), cp, cp_off, dcar.buf, d_xp.buf, _step(d_xp, t)])
        dmm = matmul(d_xp.view((B, 4 * H), (4 * H, 1), int(_step(d_xp, t))), w_hh)
    return d_xp, _dw(d_xp, h0, out, reverse), dmm, dcar


def gru_layer(xp, w_hh, b_hh, h0, reverse=False):
    """burn::gru_layer: ``(out, h_n, saved)``; per step a matmul and ``gru_step``."""
    xp, h0 = contiguous(xp), contiguous(h0)
    dc, dtype = xp.dc, xp.dtype
    T, B, G = xp.shape
    H = G // 3
    out, saved = empty(dc, (T, B, H), dtype), empty(dc, (T, 4, B, H), dtype)
    bias = contiguous(b_hh) if b_hh is not None else xp
    k = _kernel(dc, dtype, "gru_step")
    wt = permute(w_hh, axes=(1, 0))
    h = h0
    for t in _order(T, reverse):
        gh = matmul(h, wt)
        dc.launch(k, B * H, [_i32(B), _i32(H), xp.buf, _step(xp, t), gh.buf, _i32(gh.offset),
                             _i32(b_hh is not None), bias.buf, _i32(bias.offset), h.buf, _i32(h.offset),
                             saved.buf, _step(saved, t), out.buf, _step(out, t)])
        h = out.view((B, H), (H, 1), int(_step(out, t)))
    return out, _copy(h), saved


def gru_layer_grad(w_hh, h0, out, saved, g_out, g_hn, reverse=False):
    """burn::gru_layer_grad: ``(d_xp, d_w_hh, d_b_hh, d_h0)``; per step ``gru_step_grad`` and a matmul."""
    h0, out, saved = contiguous(h0), contiguous(out), contiguous(saved)
    dc, dtype = out.dc, out.dtype
    T, B, H = out.shape
    d_xp, d_gh = empty(dc, (T, B, 3 * H), dtype), empty(dc, (T, B, 3 * H), dtype)
    dmm = _filled(dc, (B, H), dtype, 0) if g_hn is None else contiguous(g_hn)
    carry = _filled(dc, (B, H), dtype, 0)
    go = contiguous(g_out) if g_out is not None else dmm
    k = _kernel(dc, dtype, "gru_step_grad")
    for t in _order(T, not reverse):
        p = t + 1 if reverse else t - 1
        hp, hp_off = (h0.buf, _i32(h0.offset)) if not 0 <= p < T else (out.buf, _step(out, p))
        dc.launch(k, B * H, [_i32(B), _i32(H), dmm.buf, _i32(dmm.offset), carry.buf, _i32(g_out is not None),
                             go.buf, _step(go, t) if g_out is not None else _i32(0), saved.buf, _step(saved, t), hp,
                             hp_off, d_xp.buf, d_gh.buf, _step(d_xp, t)])
        dmm = matmul(d_gh.view((B, 3 * H), (3 * H, 1), int(_step(d_gh, t))), w_hh)
    flat = reshape(d_gh, shape=(T * B, 3 * H))
    d_b = reshape(matmul(_filled(dc, (1, T * B), dtype, 1), flat), shape=(3 * H,))
    return d_xp, _dw(d_gh, h0, out, reverse), d_b, elementwise("add")(dmm, carry)


KERNELS = {"burn::lstm_layer": lstm_layer, "burn::lstm_layer_grad": lstm_layer_grad,
           "burn::gru_layer": gru_layer, "burn::gru_layer_grad": gru_layer_grad}
