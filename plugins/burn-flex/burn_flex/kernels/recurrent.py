"""The recurrent layers on flex: ``burn::lstm_layer`` / ``burn::gru_layer`` and their gradients
(``burn.fused.recurrent`` defines them). Per time step one BLAS matmul written into its
destination (``out=``) and the cell's point-wise part as in-place ufuncs on the step's slices
of the saved arrays: no temporary bigger than one [B, H] scratch per step. ``dW_hh`` is one
matmul over all steps after the reverse loop. The saved gates are gate-major ([T, 4, B, H]):
numpy's passes over a contiguous [B, H] block run ~4x faster than over a column block of a
[B, 4H] row (measured), and a per-gate [H, H] product is no slower than one [H, 4H]. Inputs may be
strided views (numpy reads them as they are)."""
from __future__ import annotations

import numpy as np


def _sigmoid_(a):
    """sigmoid in place, as ``0.5 * tanh(0.5 * a) + 0.5`` (three passes, no overflow for large |a|)."""
    a *= 0.5
    np.tanh(a, out=a)
    a *= 0.5
    a += 0.5
    return a


def _order(T, reverse):
    return range(T - 1, -1, -1) if reverse else range(T)


def _dw(d, h0, out, reverse):
    """``sum_t d[t]^T @ h_prev(t)``: one matmul over the steps that read an output, one for h0."""
    T, B, G = d.shape
    H = out.shape[2]
    first = T - 1 if reverse else 0
    dw = d[first].T @ h0
    if T > 1:
        ds, hs = (d[:-1], out[1:]) if reverse else (d[1:], out[:-1])
        dw += ds.reshape((T - 1) * B, G).T @ hs.reshape((T - 1) * B, H)
    return dw


def _per_gate(w_hh, G):
    """``[G, H, H]`` contiguous: each gate's block of ``w_hh`` transposed, so ``h @ it`` gives the
    gate-major pre-activations [G, B, H] (G BLAS calls, each gate contiguous)."""
    H = w_hh.shape[1]
    return np.ascontiguousarray(w_hh.reshape(G, H, H).transpose(0, 2, 1))


def _gate_major(x, G):
    """A view of ``x`` [B, G*H] as [G, B, H] (strided: read once per step)."""
    B = x.shape[0]
    return x.reshape(B, G, -1).transpose(1, 0, 2)


def lstm_layer(xp, w_hh, h0, c0, reverse=False):
    """burn::lstm_layer: ``(out, h_n, c_n, gates, cells)``; gates [T, 4, B, H] activated (i, f, g, o)."""
    T, B, G = xp.shape
    H = G // 4
    dt = xp.dtype
    out, cells = np.empty((T, B, H), dt), np.empty((T, B, H), dt)
    gates = np.empty((T, 4, B, H), dt)
    w4 = _per_gate(w_hh, 4)
    tmp = np.empty((B, H), dt)
    h, c = h0, c0
    for t in _order(T, reverse):
        a = gates[t]
        np.matmul(h, w4, out=a)
        np.add(a, _gate_major(xp[t], 4), out=a)
        i, f, g, o = a
        _sigmoid_(a[:2])
        np.tanh(g, out=g)
        _sigmoid_(o)
        cn, hn = cells[t], out[t]
        np.multiply(f, c, out=cn)
        np.multiply(i, g, out=tmp)
        cn += tmp
        np.tanh(cn, out=hn)
        hn *= o
        h, c = hn, cn
    return out, h.copy(), c.copy(), gates, cells


def lstm_layer_grad(w_hh, h0, c0, out, gates, cells, g_out, g_hn, g_cn, reverse=False):
    """burn::lstm_layer_grad: ``(d_xp, d_w_hh, d_h0, d_c0)`` by the reverse recurrence; the gate
    gradients are computed gate-major (contiguous passes), then written into d_xp[t] once."""
    T, B, H = out.shape
    dt = out.dtype
    w_hh = np.ascontiguousarray(w_hh)
    d_xp = np.empty((T, B, 4 * H), dt)
    dh = np.zeros((B, H), dt) if g_hn is None else np.array(g_hn, dtype=dt)
    dc = np.zeros((B, H), dt) if g_cn is None else np.array(g_cn, dtype=dt)
    tc, s = np.empty((B, H), dt), np.empty((B, H), dt)
    d4 = np.empty((4, B, H), dt)
    di, df, dg, do = d4
    for t in _order(T, not reverse):
        p = t + 1 if reverse else t - 1
        c_prev = c0 if not 0 <= p < T else cells[p]
        i, f, g, o = gates[t]
        if g_out is not None:
            dh += g_out[t]
        np.tanh(cells[t], out=tc)
        np.multiply(dh, tc, out=do)                 # do = dh * tanh(c) * o (1 - o)
        np.subtract(1.0, o, out=s)
        s *= o
        do *= s
        np.multiply(tc, tc, out=tc)                 # dc += dh * o * (1 - tanh(c)^2)
        np.subtract(1.0, tc, out=tc)
        tc *= o
        tc *= dh
        dc += tc
        np.subtract(1.0, i, out=s)                  # di = dc * g * i (1 - i)
        s *= i
        s *= g
        np.multiply(dc, s, out=di)
        np.multiply(g, g, out=s)                    # dg = dc * i * (1 - g^2)
        np.subtract(1.0, s, out=s)
        s *= i
        np.multiply(dc, s, out=dg)
        np.subtract(1.0, f, out=s)                  # df = dc * c_prev * f (1 - f)
        s *= f
        s *= c_prev
        np.multiply(dc, s, out=df)
        dc *= f
        d = d_xp[t]
        np.copyto(_gate_major(d, 4), d4)
        dh = d @ w_hh
    return d_xp, _dw(d_xp, h0, out, reverse), dh, dc


def gru_layer(xp, w_hh, b_hh, h0, reverse=False):
    """burn::gru_layer: ``(out, h_n, saved)``; saved [T, 4, B, H] holds r, z, n and gh_n per step."""
    T, B, G = xp.shape
    H = G // 3
    dt = xp.dtype
    out, saved = np.empty((T, B, H), dt), np.empty((T, 4, B, H), dt)
    w3 = _per_gate(w_hh, 3)
    b3 = None if b_hh is None else np.asarray(b_hh).reshape(3, 1, H)
    gh = np.empty((3, B, H), dt)
    h = h0
    for t in _order(T, reverse):
        np.matmul(h, w3, out=gh)
        if b3 is not None:
            gh += b3
        x, s, hn = _gate_major(xp[t], 3), saved[t], out[t]
        r, z, n, ghn = s
        np.add(x[:2], gh[:2], out=s[:2])
        _sigmoid_(s[:2])
        np.copyto(ghn, gh[2])
        np.multiply(r, ghn, out=n)                  # n = tanh(x_n + r * gh_n)
        n += x[2]
        np.tanh(n, out=n)
        np.subtract(h, n, out=hn)                   # h = n + z * (h - n)
        hn *= z
        hn += n
        h = hn
    return out, h.copy(), saved


def gru_layer_grad(w_hh, h0, out, saved, g_out, g_hn, reverse=False):
    """burn::gru_layer_grad: ``(d_xp, d_w_hh, d_b_hh, d_h0)`` by the reverse recurrence (gate-major
    passes, written into d_xp[t] and d_gh[t] once per step)."""
    T, B, H = out.shape
    dt = out.dtype
    w_hh = np.ascontiguousarray(w_hh)
    d_xp, d_gh = np.empty((T, B, 3 * H), dt), np.empty((T, B, 3 * H), dt)
    dh = np.zeros((B, H), dt) if g_hn is None else np.array(g_hn, dtype=dt)
    s1 = np.empty((B, H), dt)
    d3 = np.empty((3, B, H), dt)
    dr, dz, dn = d3
    for t in _order(T, not reverse):
        p = t + 1 if reverse else t - 1
        h_prev = h0 if not 0 <= p < T else out[p]
        r, z, n, ghn = saved[t]
        if g_out is not None:
            dh += g_out[t]
        np.subtract(1.0, z, out=dn)                 # dn = dh (1 - z) (1 - n^2)
        dn *= dh
        np.multiply(n, n, out=s1)
        np.subtract(1.0, s1, out=s1)
        dn *= s1
        np.subtract(1.0, r, out=dr)                 # dr = dn * gh_n * r (1 - r)
        dr *= r
        dr *= ghn
        dr *= dn
        np.subtract(h_prev, n, out=dz)              # dz = dh (h_prev - n) z (1 - z)
        dz *= dh
        np.subtract(1.0, z, out=s1)
        s1 *= z
        dz *= s1
        np.copyto(_gate_major(d_xp[t], 3), d3)
        dg = _gate_major(d_gh[t], 3)
        np.copyto(dg[:2], d3[:2])
        np.multiply(dn, r, out=dg[2])
        dh = dh * z
        dh += d_gh[t] @ w_hh
    d_b = np.ones(T * B, dt) @ d_gh.reshape(T * B, 3 * H)
    return d_xp, _dw(d_gh, h0, out, reverse), d_b, dh


KERNELS = {"burn::lstm_layer": lstm_layer, "burn::lstm_layer_grad": lstm_layer_grad,
           "burn::gru_layer": gru_layer, "burn::gru_layer_grad": gru_layer_grad}
