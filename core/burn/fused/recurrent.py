"""One recurrent layer (one direction) over a whole sequence as one op: ``burn::lstm_layer`` and
``burn::gru_layer``, with their gradients ``burn::lstm_layer_grad`` / ``burn::gru_layer_grad``.

``burn.nn.LSTM`` / ``GRU`` project the input of every time step with one matmul per layer
and direction (``xp = x @ W_ih^T + b``, recorded as burn ops, so autodiff handles ``W_ih``,
the biases and ``x``); what depends on the previous step is one of these ops: per step one
``h @ W_hh^T`` matmul and the cell's fused point-wise part (the gates), inside the backend's
kernel. A training step therefore records a handful of ops per layer instead of a dozen per
time step, and the backward runs the reverse recurrence in one op too, with ``dW_hh`` as one
matmul over all steps.

Layouts are PyTorch's: ``xp`` [T, B, G*H] time-major, ``w_hh`` [G*H, H] with the gates in
torch's order (LSTM ``i, f, g, o``; GRU ``r, z, n``), ``h0`` / ``c0`` [B, H]. ``reverse``
runs the steps from T-1 down to 0 (a bidirectional layer's second direction); outputs stay
at their time index. The extra outputs (the activated gates, the cell states) are what the
backward reads, gate-major per step ([T, 4, B, H]: each gate a contiguous [B, H] block, so the
kernels' point-wise passes run on contiguous memory); a gradient reaching them (a second-order pass) is differentiated through the
reference definition.

The reference definitions (burn ops, a Python loop over steps) run where a backend has no
kernel and define the ops' meaning; the flex, wgpu and cuda kernels compute the same.
"""
from __future__ import annotations

from .. import dtypes as dt
from ..errors import DTypeError, ShapeError, describe
from ..library import backend_extension
from ..ops import elementwise as E, movement as M, reduction as R
from ..ops.creation import zeros
from ..primitives import TensorMeta

__all__ = ["lstm_layer", "lstm_layer_grad", "gru_layer", "gru_layer_grad"]


def _order(T, reverse):
    return range(T - 1, -1, -1) if reverse else range(T)


def _prev(t, T, reverse):
    """The step before ``t`` in the recurrence's order (None at its start)."""
    p = t + 1 if reverse else t - 1
    return p if 0 <= p < T else None


def _h_prev_all(h0, out, reverse):
    """[T, B, H]: the hidden state each step read (h0 at the first step of the order)."""
    if out.shape[0] == 1:
        return M.expand_dims(h0, axis=0)
    if reverse:
        return M.concat([out[1:], M.expand_dims(h0, axis=0)], axis=0)
    return M.concat([M.expand_dims(h0, axis=0), out[:-1]], axis=0)


def _check(op, gates, xp, w_hh, states, b_hh=None):
    """Shapes [T, B, G*H], [G*H, H], states [B, H] (and b_hh [G*H]); one float32/float64 dtype."""
    ok = xp.ndim == 3 and w_hh.ndim == 2 and xp.shape[0] >= 1
    if ok:
        GH, H = w_hh.shape
        B = xp.shape[1]
        ok = GH == gates * H and xp.shape[2] == GH and all(tuple(s.shape) == (B, H) for s in states)
        ok = ok and (b_hh is None or tuple(b_hh.shape) == (GH,))
    if not ok:
        names = "xp [T>=1, B, {g}H], w_hh [{g}H, H], ".format(g=gates) + ", ".join("[B, H]" for _ in states)
        got = ", ".join(describe(t) for t in (xp, w_hh, *states, *((b_hh,) if b_hh is not None else ())))
        raise ShapeError(f"{op}: expected {names}{', b_hh [' + str(gates) + 'H]' if b_hh is not None else ''}; "
                         f"got {got}")
    ts = [xp, w_hh, *states] + ([b_hh] if b_hh is not None else [])
    if xp.dtype not in (dt.float32, dt.float64) or any(t.dtype is not xp.dtype for t in ts):
        raise DTypeError(f"{op}: needs float32 or float64 operands of one dtype, got "
                         f"{', '.join(describe(t) for t in ts)}; cast with .astype(burn.float32)")


def _check_grads(op, out, grads):
    for name, g, shape in grads:
        if g is not None and (tuple(g.shape) != tuple(shape) or g.dtype is not out.dtype):
            raise ShapeError(f"{op}: gradient {name} {describe(g)} should be {out.dtype} of shape {tuple(shape)}")


def _nonzero(g):
    """``g``, or None where it is known to be zero: autodiff fills the gradient of an output
    nobody used with ``zeros`` when another output has one (no need to read them)."""
    if g is None:
        return None
    n = g._h.node
    if n is not None and n.prim.name == "full" and n.attrs.get("value") == 0:
        return None
    return g


def _saved_grads(grads):
    """Whether a gradient reached the saved outputs (gates, cells): only in a second-order pass,
    where the gradient ops' references read them. Then the VJP runs through the reference
    definition, which computes those outputs from the inputs too (slow, and exact)."""
    return any(_nonzero(g) is not None for g in grads)


def _saved_check(op, gates, w_hh, states, out, saved, cells=None):
    """The backward's operands: w_hh [G*H, H], states [B, H], out (and cells) [T, B, H], the
    saved gates [T, 4, B, H]; one float32/float64 dtype."""
    ts = [w_hh, *states, out, saved] + ([cells] if cells is not None else [])
    T, B, H = out.shape if out.ndim == 3 else (-1, -1, -1)
    if (out.ndim != 3 or tuple(w_hh.shape) != (gates * H, H) or any(tuple(s.shape) != (B, H) for s in states)
            or tuple(saved.shape) != (T, 4, B, H) or (cells is not None and tuple(cells.shape) != (T, B, H))):
        raise ShapeError(f"{op}: expected w_hh [{gates}H, H], states [B, H], out [T, B, H], saved gates "
                         f"[T, 4, B, H]{' and cells [T, B, H]' if cells is not None else ''}; got "
                         f"{', '.join(describe(t) for t in ts)}")
    if out.dtype not in (dt.float32, dt.float64) or any(t.dtype is not out.dtype for t in ts):
        raise DTypeError(f"{op}: needs float32 or float64 operands of one dtype, got "
                         f"{', '.join(describe(t) for t in ts)}")


# -- LSTM ------------------------------------------------------------------------------------

@backend_extension("burn::lstm_layer")
def lstm_layer(xp, w_hh, h0, c0, reverse=False):
    """One LSTM layer direction over a sequence: ``(out, h_n, c_n, gates, cells)``.

    ``xp`` [T, B, 4H] is the projected input with both biases (``x @ W_ih^T + b_ih + b_hh``),
    ``w_hh`` [4H, H] (torch's ``weight_hh_l*``), ``h0``, ``c0`` [B, H]. Per step, with
    ``a = xp[t] + h @ w_hh^T`` split as ``i, f, g, o``: ``c = sigmoid(f) * c + sigmoid(i) * tanh(g)``,
    ``h = sigmoid(o) * tanh(c)``. ``out`` [T, B, H] holds every ``h``, ``gates`` [T, 4, B, H] the
    activated gates and ``cells`` [T, B, H] every ``c`` (saved for the backward).

    Example:
        >>> import burn
        >>> out, h, c, _, _ = burn.fused.lstm_layer(burn.zeros((3, 2, 8)), burn.zeros((8, 2)),
        ...                                         burn.zeros((2, 2)), burn.ones((2, 2)))
        >>> assert out.shape == (3, 2, 2) and abs(c[0, 0].item() - 0.125) < 1e-6   # f = 1/2 each step
    """
    T, H = xp.shape[0], w_hh.shape[1]
    wt = M.matrix_transpose(w_hh)
    h, c = h0, c0
    outs, gates, cells = [None] * T, [None] * T, [None] * T
    for t in _order(T, reverse):
        a = xp[t] + h @ wt
        i, f = E.sigmoid(a[:, :H]), E.sigmoid(a[:, H:2 * H])
        g, o = E.tanh(a[:, 2 * H:3 * H]), E.sigmoid(a[:, 3 * H:])
        c = f * c + i * g
        h = o * E.tanh(c)
        outs[t], cells[t], gates[t] = h, c, M.stack([i, f, g, o], axis=0)
    return M.stack(outs), h, c, M.stack(gates), M.stack(cells)


@lstm_layer.meta
def _lstm_layer_meta(xp, w_hh, h0, c0, reverse=False):
    _check("lstm_layer", 4, xp, w_hh, (h0, c0))
    T, B, G = xp.shape
    H = G // 4
    return (TensorMeta((T, B, H), xp.dtype), TensorMeta((B, H), xp.dtype), TensorMeta((B, H), xp.dtype),
            TensorMeta((T, 4, B, H), xp.dtype), TensorMeta((T, B, H), xp.dtype))


@lstm_layer.backward
def _lstm_layer_backward(ctx, g_out, g_hn, g_cn, g_gates, g_cells):
    if _saved_grads((g_gates, g_cells)):
        return lstm_layer._vjp_reference(ctx._ctx, g_out, g_hn, g_cn, g_gates, g_cells)
    xp, w_hh, h0, c0 = ctx.inputs
    out, _, _, gates, cells = ctx.outputs
    reverse = ctx.args[4] if len(ctx.args) > 4 else ctx.kwargs.get("reverse", False)
    return lstm_layer_grad(w_hh, h0, c0, out, gates, cells, _nonzero(g_out), _nonzero(g_hn), _nonzero(g_cn),
                           bool(reverse))


@backend_extension("burn::lstm_layer_grad")
def lstm_layer_grad(w_hh, h0, c0, out, gates, cells, g_out, g_hn, g_cn, reverse=False):
    """Gradients ``(d_xp, d_w_hh, d_h0, d_c0)`` of :func:`lstm_layer` for the output gradients
    ``g_out`` [T, B, H], ``g_hn``, ``g_cn`` [B, H] (each may be None: zero).

    The reverse recurrence: per step the gate gradients from the saved gates and cells, then
    ``dh = d_xp[t] @ w_hh``; ``d_w_hh`` is one matmul over all steps,
    ``d_xp^T @ h_prev``. Written with burn ops, so it is differentiable again.

    Example:
        >>> import burn
        >>> args = (burn.zeros((3, 2, 8)), burn.zeros((8, 2)), burn.zeros((2, 2)), burn.zeros((2, 2)))
        >>> out, h, c, gates, cells = burn.fused.lstm_layer(*args)
        >>> d_xp, d_w, d_h0, d_c0 = burn.fused.lstm_layer_grad(args[1], args[2], args[3], out, gates, cells,
        ...                                                    None, burn.ones((2, 2)), None)
        >>> assert d_xp.shape == (3, 2, 8) and d_w.shape == (8, 2) and d_c0.shape == (2, 2)
    """
    T, B, H = out.shape
    dh = g_hn if g_hn is not None else zeros((B, H), dtype=out.dtype, device=out.device)
    dc = g_cn if g_cn is not None else zeros((B, H), dtype=out.dtype, device=out.device)
    dxs = [None] * T
    for t in _order(T, not reverse):
        p = _prev(t, T, reverse)
        c_prev = c0 if p is None else cells[p]
        a = gates[t]
        i, f, g, o = a[0], a[1], a[2], a[3]
        if g_out is not None:
            dh = dh + g_out[t]
        tc = E.tanh(cells[t])
        do = dh * tc * o * (1.0 - o)
        dc = dc + dh * o * (1.0 - tc * tc)
        d = M.concat([dc * g * i * (1.0 - i), dc * c_prev * f * (1.0 - f), dc * i * (1.0 - g * g), do], axis=-1)
        dxs[t] = d
        dc = dc * f
        dh = d @ w_hh
    d_xp = M.stack(dxs)
    hp = _h_prev_all(h0, out, reverse)
    d_w = M.matrix_transpose(M.reshape(d_xp, (T * B, 4 * H))) @ M.reshape(hp, (T * B, H))
    return d_xp, d_w, dh, dc


@lstm_layer_grad.meta
def _lstm_layer_grad_meta(w_hh, h0, c0, out, gates, cells, g_out, g_hn, g_cn, reverse=False):
    T, B, H = out.shape if out.ndim == 3 else (0, 0, 0)
    _saved_check("lstm_layer backward", 4, w_hh, (h0, c0), out, gates, cells)
    _check_grads("lstm_layer backward", out, (("g_out", g_out, (T, B, H)), ("g_hn", g_hn, (B, H)),
                                               ("g_cn", g_cn, (B, H))))
    m = out.dtype
    return (TensorMeta((T, B, 4 * H), m), TensorMeta((4 * H, H), m), TensorMeta((B, H), m), TensorMeta((B, H), m))


# -- GRU -------------------------------------------------------------------------------------

@backend_extension("burn::gru_layer")
def gru_layer(xp, w_hh, b_hh, h0, reverse=False):
    """One GRU layer direction over a sequence: ``(out, h_n, saved)``.

    ``xp`` [T, B, 3H] is the projected input with ``b_ih`` (``x @ W_ih^T + b_ih``), ``w_hh``
    [3H, H], ``b_hh`` [3H] or None, ``h0`` [B, H]. Per step, with ``gh = h @ w_hh^T + b_hh``
    split as ``r, z, n`` (torch's): ``r = sigmoid(xp_r + gh_r)``, ``z = sigmoid(xp_z + gh_z)``,
    ``n = tanh(xp_n + r * gh_n)``, ``h = (1 - z) * n + z * h``. ``saved`` [T, 4, B, H] holds
    ``r, z, n, gh_n`` per step for the backward.

    Example:
        >>> import burn
        >>> out, h, _ = burn.fused.gru_layer(burn.zeros((3, 2, 6)), burn.zeros((6, 2)), None, burn.ones((2, 2)))
        >>> assert out.shape == (3, 2, 2) and abs(h[0, 0].item() - 0.125) < 1e-6    # z = 1/2, n = 0
    """
    T, H = xp.shape[0], w_hh.shape[1]
    wt = M.matrix_transpose(w_hh)
    h = h0
    outs, saved = [None] * T, [None] * T
    for t in _order(T, reverse):
        gh = h @ wt
        if b_hh is not None:
            gh = gh + b_hh
        x = xp[t]
        r = E.sigmoid(x[:, :H] + gh[:, :H])
        z = E.sigmoid(x[:, H:2 * H] + gh[:, H:2 * H])
        ghn = gh[:, 2 * H:]
        n = E.tanh(x[:, 2 * H:] + r * ghn)
        h = n + z * (h - n)
        outs[t], saved[t] = h, M.stack([r, z, n, ghn], axis=0)
    return M.stack(outs), h, M.stack(saved)


@gru_layer.meta
def _gru_layer_meta(xp, w_hh, b_hh, h0, reverse=False):
    _check("gru_layer", 3, xp, w_hh, (h0,), b_hh)
    T, B, G = xp.shape
    H = G // 3
    return (TensorMeta((T, B, H), xp.dtype), TensorMeta((B, H), xp.dtype), TensorMeta((T, 4, B, H), xp.dtype))


@gru_layer.backward
def _gru_layer_backward(ctx, g_out, g_hn, g_saved):
    if _saved_grads((g_saved,)):
        return gru_layer._vjp_reference(ctx._ctx, g_out, g_hn, g_saved)
    xp, w_hh, b_hh, h0 = ctx.args[:4]
    out, _, saved = ctx.outputs
    reverse = ctx.args[4] if len(ctx.args) > 4 else ctx.kwargs.get("reverse", False)
    d_xp, d_w, d_b, d_h0 = gru_layer_grad(w_hh, h0, out, saved, _nonzero(g_out), _nonzero(g_hn), bool(reverse))
    return (d_xp, d_w, d_h0) if b_hh is None else (d_xp, d_w, d_b, d_h0)


@backend_extension("burn::gru_layer_grad")
def gru_layer_grad(w_hh, h0, out, saved, g_out, g_hn, reverse=False):
    """Gradients ``(d_xp, d_w_hh, d_b_hh, d_h0)`` of :func:`gru_layer` for the output gradients
    ``g_out`` [T, B, H] and ``g_hn`` [B, H] (each may be None: zero).

    Per step (reverse order) from the saved ``r, z, n, gh_n``: ``d_xp[t] = (dr, dz, dn)`` at the
    gates' pre-activations and ``d_gh = (dr, dz, dn * r)``; ``dh = dh * z + d_gh @ w_hh``.
    ``d_w_hh = d_gh^T @ h_prev`` and ``d_b_hh = sum(d_gh)`` over all steps. Written with burn ops.

    Example:
        >>> import burn
        >>> args = (burn.zeros((3, 2, 6)), burn.zeros((6, 2)), None, burn.ones((2, 2)))
        >>> out, h, saved = burn.fused.gru_layer(*args)
        >>> d_xp, d_w, d_b, d_h0 = burn.fused.gru_layer_grad(args[1], args[3], out, saved, None, burn.ones((2, 2)))
        >>> assert abs(d_h0[0, 0].item() - 0.125) < 1e-6 and d_b.shape == (6,)
    """
    T, B, H = out.shape
    dh = g_hn if g_hn is not None else zeros((B, H), dtype=out.dtype, device=out.device)
    dxs, dghs = [None] * T, [None] * T
    for t in _order(T, not reverse):
        p = _prev(t, T, reverse)
        h_prev = h0 if p is None else out[p]
        s = saved[t]
        r, z, n, ghn = s[0], s[1], s[2], s[3]
        if g_out is not None:
            dh = dh + g_out[t]
        dn = dh * (1.0 - z) * (1.0 - n * n)
        dr = dn * ghn * r * (1.0 - r)
        dz = dh * (h_prev - n) * z * (1.0 - z)
        dxs[t] = M.concat([dr, dz, dn], axis=-1)
        dgh = M.concat([dr, dz, dn * r], axis=-1)
        dghs[t] = dgh
        dh = dh * z + dgh @ w_hh
    d_gh = M.stack(dghs)
    hp = _h_prev_all(h0, out, reverse)
    flat = M.reshape(d_gh, (T * B, 3 * H))
    d_w = M.matrix_transpose(flat) @ M.reshape(hp, (T * B, H))
    return M.stack(dxs), d_w, R.sum(flat, axis=0), dh


@gru_layer_grad.meta
def _gru_layer_grad_meta(w_hh, h0, out, saved, g_out, g_hn, reverse=False):
    T, B, H = out.shape if out.ndim == 3 else (0, 0, 0)
    _saved_check("gru_layer backward", 3, w_hh, (h0,), out, saved)
    _check_grads("gru_layer backward", out, (("g_out", g_out, (T, B, H)), ("g_hn", g_hn, (B, H))))
    m = out.dtype
    return (TensorMeta((T, B, 3 * H), m), TensorMeta((3 * H, H), m), TensorMeta((3 * H,), m), TensorMeta((B, H), m))
