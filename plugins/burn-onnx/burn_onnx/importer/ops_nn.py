"""Import rules of the network operators: MatMul/Gemm (and the importer's own
``burn.Linear`` node, a MatMul/Gemm whose weight became a :class:`burn.nn.Linear`), Conv,
pooling, normalization (batch, layer, instance), Softmax/LogSoftmax, Resize (nearest, linear, cubic),
PRelu, DepthToSpace/SpaceToDepth and the recurrent LSTM/GRU (unrolled per planned sequence length).

Example:
    >>> from burn_onnx.importer.registry import OPS
    >>> assert {"Conv", "MaxPool", "LayerNormalization", "Resize"} <= set(OPS)
"""
from __future__ import annotations

import numpy as np

import burn
import burn.nn.functional as F

from .registry import rule

__all__: list = []


@rule("burn.Linear")
def _linear(node, x, layer):
    return lambda x, layer: layer(x)


@rule("MatMul", note="with an initializer weight: a burn.nn.Linear layer")
def _matmul(node, a, b):
    return burn.matmul


@rule("Gemm", note="with an initializer weight (transA=0, alpha=beta=1): a burn.nn.Linear layer")
def _gemm(node, a, b, c=None):
    ta, tb = node.attr("transA", 0), node.attr("transB", 0)
    alpha, beta = float(node.attr("alpha", 1.0)), float(node.attr("beta", 1.0))

    def run(a, b, c=None):
        y = burn.matmul(burn.matrix_transpose(a) if ta else a, burn.matrix_transpose(b) if tb else b)
        y = y if alpha == 1.0 else y * alpha
        return y if c is None else y + (c if beta == 1.0 else c * beta)
    return run


# -- convolution and pooling -------------------------------------------------------------

def _spatial(node, x, kernel):
    """(strides, dilations, pads as [(lo, hi)] per spatial axis) with auto_pad resolved."""
    nd = len(x.shape) - 2
    if nd not in (1, 2):
        raise node.fail(f"{nd}-D spatial input {tuple(x.shape)} is not supported (1-D and 2-D are)")
    strides = list(node.attr("strides", [1] * nd))
    dil = list(node.attr("dilations", [1] * nd))
    auto = node.attr("auto_pad", "NOTSET")
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        pads = []
        for size, k, s, d in zip(x.shape[2:], kernel, strides, dil):
            out = -(-size // s)
            total = max(0, (out - 1) * s + (k - 1) * d + 1 - size)
            small, big = total // 2, total - total // 2
            pads.append((small, big) if auto == "SAME_UPPER" else (big, small))
    elif auto == "VALID":
        pads = [(0, 0)] * nd
    else:
        p = list(node.attr("pads", [0] * (2 * nd)))
        pads = [(p[i], p[i + nd]) for i in range(nd)]
    return strides, dil, pads


def _pre_pad(pads, value):
    """Symmetric pads for the op, and a function that applies the asymmetric rest first."""
    sym = [min(lo, hi) for lo, hi in pads]
    extra = ((0, 0),) * 2 + tuple((lo - s, hi - s) for (lo, hi), s in zip(pads, sym))
    if all(a == b == 0 for a, b in extra):
        return sym, lambda x: x
    return sym, lambda x: burn.pad(x, extra, value=value)


def _to2d(nd, fn):
    """Run a 2-D op on 1-D input [N, C, L] as [N, C, 1, L]."""
    if nd == 2:
        return fn

    def run(x, *rest):
        n, c, length = x.shape
        y = fn(burn.reshape(x, (n, c, 1, length)), *rest)
        return burn.reshape(y, y.shape[:2] + (y.shape[3],))
    return run


@rule("Conv", note="1-D/2-D, any pads/auto_pad, groups, dilations")
def _conv(node, x, w, b=None):
    strides, dil, pads = _spatial(node, x, w.shape[2:])
    nd, groups = len(x.shape) - 2, int(node.attr("group", 1))
    sym, prepad = _pre_pad(pads, 0.0)
    if nd == 1:
        strides, dil, sym = [1] + strides, [1] + dil, [0] + sym

    def conv(x, w, b=None):
        if nd == 1:
            w = burn.reshape(w, w.shape[:2] + (1, w.shape[2]))
        return F.conv2d(prepad(x), w, b, stride=tuple(strides), padding=tuple(sym), dilation=tuple(dil),
                        groups=groups)
    return _to2d(nd, conv) if nd == 1 else conv


@rule("ConvTranspose", note="1-D/2-D, explicit symmetric pads")
def _conv_transpose(node, x, w, b=None):
    strides, dil, pads = _spatial(node, x, w.shape[2:])
    if node.attr("auto_pad", "NOTSET") != "NOTSET" or node.attr("output_shape") is not None:
        raise node.fail("auto_pad / output_shape are not supported (explicit pads are)")
    if any(lo != hi for lo, hi in pads):
        raise node.fail(f"asymmetric pads {pads} are not supported")
    nd, groups = len(x.shape) - 2, int(node.attr("group", 1))
    outpad = list(node.attr("output_padding", [0] * nd))
    fn = F.conv_transpose2d if nd == 2 else F.conv_transpose1d
    p = tuple(lo for lo, _ in pads)
    return lambda x, w, b=None: fn(x, w, b, stride=tuple(strides), padding=p, output_padding=tuple(outpad),
                                   groups=groups, dilation=tuple(dil))


def _pool(node, x, is_max):
    kernel = list(node.attr("kernel_shape"))
    strides, dil, pads = _spatial(node, x, kernel)
    nd = len(x.shape) - 2
    ceil = bool(node.attr("ceil_mode", 0))
    include = bool(node.attr("count_include_pad", 0))
    if not is_max and not include and any(lo != hi for lo, hi in pads):
        raise node.fail(f"asymmetric pads {pads} with count_include_pad=0 are not supported")
    sym, prepad = _pre_pad(pads, -np.inf if is_max else 0.0)
    if nd == 1:
        kernel, strides, dil, sym = [1] + kernel, [1] + strides, [1] + dil, [0] + sym
    k, s, p, d = tuple(kernel), tuple(strides), tuple(sym), tuple(dil)
    if is_max:
        if len(node.outputs) > 1 and node.outputs[1]:
            raise node.fail("the Indices output of MaxPool is not supported")
        fn = lambda x: F.max_pool2d(prepad(x), k, s, p, d, ceil_mode=ceil)  # noqa: E731
    else:
        if any(v != 1 for v in d):
            raise node.fail(f"dilations {list(d)} are not supported for AveragePool")
        fn = lambda x: F.avg_pool2d(prepad(x), k, s, p, ceil_mode=ceil, count_include_pad=include)  # noqa: E731
    return _to2d(nd, fn)


rule("MaxPool", note="1-D/2-D, ceil_mode; not the Indices output")(lambda node, x: _pool(node, x, True))
rule("AveragePool", note="1-D/2-D, ceil_mode, count_include_pad")(lambda node, x: _pool(node, x, False))


@rule("GlobalAveragePool", "GlobalMaxPool")
def _global_pool(node, x):
    axes = tuple(range(2, len(x.shape)))
    fn = burn.mean if node.op == "GlobalAveragePool" else burn.max
    return lambda x: fn(x, axis=axes, keepdims=True)


# -- normalization and softmax -------------------------------------------------------------

@rule("BatchNormalization", buffers=(3, 4), note="inference form (running statistics)")
def _batch_norm(node, x, scale, bias, mean, var):
    if node.attr("training_mode", 0) or len([o for o in node.outputs if o]) > 1:
        raise node.fail("training_mode BatchNormalization is not supported (export the model in eval mode)")
    eps = float(node.attr("epsilon", 1e-5))
    return lambda x, s, b, m, v: F.batch_norm(x, m, v, s, b, training=False, eps=eps)


@rule("LayerNormalization", note="the Y output")
def _layer_norm(node, x, scale, bias=None):
    nd = len(x.shape)
    axis = node.attr("axis", -1) % nd
    if len([o for o in node.outputs if o]) > 1:
        raise node.fail("the Mean / InvStdDev outputs of LayerNormalization are not supported")
    eps = float(node.attr("epsilon", 1e-5))
    shape = tuple(x.shape[axis:])
    return lambda x, s, b=None: F.layer_norm(x, shape, s, b, eps)


def _softmax(fn):
    def build(node, x):
        nd = len(x.shape)
        if node.opset >= 13:
            axis = node.attr("axis", -1) % nd
            return lambda x: fn(x, axis=axis)
        axis = node.attr("axis", 1) % nd          # older opsets: softmax of the 2-D coercion
        flat = (int(np.prod(x.shape[:axis], dtype=np.int64)), int(np.prod(x.shape[axis:], dtype=np.int64)))
        shape = tuple(x.shape)
        return lambda x: burn.reshape(fn(burn.reshape(x, flat), axis=1), shape)
    return build


rule("Softmax", note="opset < 13: the 2-D coercion")(_softmax(burn.softmax))
rule("LogSoftmax")(_softmax(burn.log_softmax))


# -- Resize ---------------------------------------------------------------------------------

_COORD = {
    "half_pixel": lambda o, s, n, m: (o + 0.5) / s - 0.5,
    "pytorch_half_pixel": lambda o, s, n, m: (o + 0.5) / s - 0.5 if m > 1 else np.full_like(o, -0.5),
    "asymmetric": lambda o, s, n, m: o / s,
    "tf_half_pixel_for_nn": lambda o, s, n, m: (o + 0.5) / s,
    "align_corners": lambda o, s, n, m: o * ((n - 1) / (m - 1)) if m > 1 else np.zeros_like(o),
    "half_pixel_symmetric": lambda o, s, n, m: n / 2 * (1 - int(m) / m) + (o + 0.5) / s - 0.5,
}
_NEAREST = {"round_prefer_floor": lambda v: np.ceil(v - 0.5), "round_prefer_ceil": lambda v: np.floor(v + 0.5),
            "floor": np.floor, "ceil": np.ceil}


def _linear_coeffs(ratio, a):
    return np.stack([1 - ratio, ratio], axis=-1)


def _cubic_coeffs(r, a):
    """Keys' cubic convolution weights of the 4 taps around a point at ``r`` past the 2nd."""
    def near(t):                # |t| <= 1
        return ((a + 2) * t - (a + 3)) * t * t + 1

    def far(t):                 # 1 < |t| < 2
        return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a
    return np.stack([far(r + 1), near(r), near(1 - r), far(2 - r)], axis=-1)


def _taps(node, n, m, scale, coord, coeffs, cubic_a, exclude_outside):
    """(source indices [m, taps], weights [m, taps]) of linear/cubic Resize along one axis, the
    ONNX reference's rule: taps nearest the source coordinate, edge-clamped."""
    out_width = scale * n
    x = _COORD[coord](np.arange(m, dtype=np.float64), scale, n, out_width)
    x = np.asarray(x, dtype=np.float64)
    base = np.floor(x)
    ratio = np.where(x == base, 1.0, x - base)          # an exact point is the right tap of a window
    w = coeffs(ratio, cubic_a)
    k = w.shape[1]
    pad = -(-k // 2)
    xp = x + pad
    p = np.floor(xp).astype(np.int64)
    start = p + np.where(xp - p == 0, -(k // 2), -(k // 2) + 1)
    idx = start[:, None] + np.arange(k)[None, :] - pad
    if exclude_outside:
        w = np.where((idx < 0) | (idx >= n), 0.0, w)
        total = w.sum(axis=1, keepdims=True)
        w = w / np.where(total == 0, 1.0, total)
    return np.clip(idx, 0, n - 1), w


@rule("Resize", "Upsample", static=(1, 2, 3),
      note="nearest (every nearest_mode), linear and cubic; every coordinate mode but tf_crop_and_resize")
def _resize(node, x, roi=None, scales=None, sizes=None):
    if node.op == "Upsample":
        scales, roi = roi, None
    mode = node.attr("mode", "nearest")
    coord = node.attr("coordinate_transformation_mode", "asymmetric" if node.opset < 11 else "half_pixel")
    nearest = node.attr("nearest_mode", "round_prefer_floor")
    if mode not in ("nearest", "linear", "cubic") or coord not in _COORD or nearest not in _NEAREST:
        raise node.fail(f"mode={mode!r}, coordinate_transformation_mode={coord!r}, nearest_mode={nearest!r} "
                        f"is not supported (nearest, linear and cubic with every coordinate mode but "
                        f"tf_crop_and_resize are)")
    if node.attr("keep_aspect_ratio_policy", "stretch") != "stretch":
        raise node.fail(f"keep_aspect_ratio_policy={node.attr('keep_aspect_ratio_policy')!r} is not supported "
                        f"(stretch is)")
    nd = len(x.shape)
    axes = node.attr("axes")                  # opset 18+: scales/sizes for these axes only
    axes = list(range(nd)) if axes is None else [int(a) % nd for a in axes]
    given = [x.shape[a] for a in axes]
    if sizes is not None and np.asarray(sizes).size:
        part_out = [int(v) for v in np.asarray(sizes).reshape(-1)]
        part_sc = [o / i for o, i in zip(part_out, given)]
    else:
        part_sc = [float(v) for v in np.asarray(scales).reshape(-1)]
        part_out = [int(np.floor(i * s)) for i, s in zip(given, part_sc)]
    if len(part_out) != len(axes):
        raise node.fail(f"scales/sizes of length {len(part_out)} for {len(axes)} axes of a rank-{nd} input")
    out, sc = list(x.shape), [1.0] * nd
    for a, o, s in zip(axes, part_out, part_sc):
        out[a], sc[a] = o, s
    if mode != "nearest" and node.attr("antialias", 0) and any(s < 1 for s in sc):
        raise node.fail(f"antialias=1 when downscaling (scales {sc}) is not supported")
    steps = []
    for axis, (n, m, s) in enumerate(zip(x.shape, out, sc)):
        if n == m and s == 1.0:
            continue
        if mode != "nearest":
            idx, w = _taps(node, n, m, s, coord, _linear_coeffs if mode == "linear" else _cubic_coeffs,
                           float(node.attr("cubic_coeff_a", -0.75)), bool(node.attr("exclude_outside", 0)))
            steps.append((axis, 0, idx, w))
            continue
        src = _NEAREST[nearest](_COORD[coord](np.arange(m, dtype=np.float64), s, n, s * n))
        idx = np.clip(src, 0, n - 1).astype(np.int64)
        k = m // n if n and m % n == 0 else 0
        if k and np.array_equal(idx, np.repeat(np.arange(n), k)):
            steps.append((axis, k, None, None))
        else:
            steps.append((axis, 0, idx, None))
    np_dtype = np.dtype(x.dtype.name) if x.dtype.is_inexact else None

    def run(x, *_):
        for axis, k, idx, w in steps:
            if k:
                x = burn.repeat(x, k, axis=axis)
            elif w is None:
                x = burn.take(x, burn.from_numpy(idx, device=x.device), axis=axis)
            else:                    # gather the taps, weight them, sum them: [.., m * k, ..] -> [.., m, ..]
                m, taps = idx.shape
                g = burn.take(x, burn.from_numpy(idx.reshape(-1), device=x.device), axis=axis)
                g = burn.reshape(g, g.shape[:axis] + (m, taps) + g.shape[axis + 1:])
                wt = burn.from_numpy(w.astype(np_dtype).reshape((m, taps) + (1,) * (len(g.shape) - axis - 2)),
                                     device=x.device)
                x = burn.sum(g * wt, axis=axis + 1)
        return x
    return run


# -- more normalizations and activations torch.onnx.export emits ------------------------------

@rule("InstanceNormalization", note="also what torch exports for GroupNorm (with a Reshape around it)")
def _instance_norm(node, x, scale, bias):
    eps = float(node.attr("epsilon", 1e-5))
    nd = len(x.shape)
    if nd < 3:
        raise node.fail(f"input of shape {tuple(x.shape)} needs a batch, a channel and a spatial axis")
    axes = tuple(range(2, nd))
    per_channel = (x.shape[1],) + (1,) * (nd - 2)

    def run(x, s, b):
        mean = burn.mean(x, axis=axes, keepdims=True)
        d = x - mean
        var = burn.mean(d * d, axis=axes, keepdims=True)
        return d * burn.rsqrt(var + eps) * burn.reshape(s, per_channel) + burn.reshape(b, per_channel)
    return run


@rule("PRelu", note="slope broadcast to the input (per channel or one value)")
def _prelu(node, x, slope):
    return lambda x, slope: burn.where(x >= 0, x, x * slope)


@rule("DepthToSpace", note="DCR and CRD modes")
def _depth_to_space(node, x):
    bs, mode = int(node.attr("blocksize")), node.attr("mode", "DCR")
    if len(x.shape) != 4 or x.shape[1] % (bs * bs):
        raise node.fail(f"input of shape {tuple(x.shape)} must be [N, C, H, W] with C divisible by {bs * bs}")
    if mode not in ("DCR", "CRD"):
        raise node.fail(f"mode={mode!r} is not DCR or CRD")
    n, c, h, w = x.shape
    c2 = c // (bs * bs)
    split, perm = ((n, bs, bs, c2, h, w), (0, 3, 4, 1, 5, 2)) if mode == "DCR" else \
        ((n, c2, bs, bs, h, w), (0, 1, 4, 2, 5, 3))
    out = (n, c2, h * bs, w * bs)
    return lambda x: burn.reshape(burn.permute_dims(burn.reshape(x, split), perm), out)


@rule("SpaceToDepth")
def _space_to_depth(node, x):
    bs = int(node.attr("blocksize"))
    if len(x.shape) != 4 or x.shape[2] % bs or x.shape[3] % bs:
        raise node.fail(f"input of shape {tuple(x.shape)} must be [N, C, H, W] with H, W divisible by {bs}")
    n, c, h, w = x.shape
    split, out = (n, c, h // bs, bs, w // bs, bs), (n, c * bs * bs, h // bs, w // bs)
    return lambda x: burn.reshape(burn.permute_dims(burn.reshape(x, split), (0, 3, 5, 1, 2, 4)), out)


# -- recurrent layers (unrolled when the plan is made: the sequence length is part of the signature) --

def _rnn_checks(node, x, defaults, seq_lens):
    acts = node.attr("activations")
    n_dir = 2 if node.attr("direction", "forward") == "bidirectional" else 1
    if acts is not None and [a.lower() for a in acts] != [a.lower() for a in defaults * n_dir]:
        raise node.fail(f"activations {acts} are not supported (the defaults {defaults} are)")
    if node.attr("clip") is not None:
        raise node.fail("the clip attribute is not supported")
    if node.attr("direction", "forward") not in ("forward", "reverse", "bidirectional"):
        raise node.fail(f"direction={node.attr('direction')!r} is not an ONNX direction")
    layout = int(node.attr("layout", 0))
    seq = x.shape[1 if layout else 0]
    if seq_lens is not None and any(int(v) != seq for v in np.asarray(seq_lens).reshape(-1)):
        raise node.fail(f"sequence_lens {np.asarray(seq_lens).tolist()} shorter than the sequence ({seq}) are "
                        f"not supported (pad-free batches are)")
    return layout, seq


def _run_rnn(node, layout, seq, n_dir, cell, n_states):
    """The shared loop of LSTM/GRU: per direction, the input projection of every step in one
    matmul, then ``cell`` per step; outputs in ONNX's layout."""
    reverse = node.attr("direction", "forward") == "reverse"

    def run(x, w, r, b=None, seq_lens=None, *init):
        if layout:
            x = burn.permute_dims(x, (1, 0, 2))
        hidden = r.shape[-1]
        ys, finals = [], [[] for _ in range(n_states)]
        for d in range(n_dir):
            xw = burn.matmul(x, burn.matrix_transpose(w[d]))              # [seq, batch, gates * hidden]
            if b is not None:
                xw = xw + (b[d, :xw.shape[-1]] + b[d, xw.shape[-1]:] if cell.sum_biases else b[d, :xw.shape[-1]])
            rt = burn.matrix_transpose(r[d])
            states = []
            for k in range(n_states):
                s0 = init[k] if k < len(init) and init[k] is not None else None
                if layout and s0 is not None:
                    s0 = burn.permute_dims(s0, (1, 0, 2))
                states.append(burn.zeros((x.shape[1], hidden), dtype=x.dtype, device=x.device) if s0 is None
                              else s0[d])
            out = [None] * seq
            steps = range(seq - 1, -1, -1) if (reverse or d == 1) else range(seq)
            for t in steps:
                states = cell(xw[t], states, rt, None if b is None else b[d], hidden)
                out[t] = states[0]
            ys.append(burn.stack(out, axis=0))
            for k in range(n_states):
                finals[k].append(states[k])
        y = burn.stack(ys, axis=1)                                        # [seq, dirs, batch, hidden]
        finals = [burn.stack(f, axis=0) for f in finals]                  # [dirs, batch, hidden]
        if layout:
            y = burn.permute_dims(y, (2, 0, 1, 3))
            finals = [burn.permute_dims(f, (1, 0, 2)) for f in finals]
        return (y, *finals)
    return run


class _LSTMCell:
    sum_biases = True

    def __call__(self, xw_t, states, rt, b, hidden):
        h, c = states
        g = xw_t + burn.matmul(h, rt)
        i, o = burn.sigmoid(g[:, :hidden]), burn.sigmoid(g[:, hidden:2 * hidden])
        f, cand = burn.sigmoid(g[:, 2 * hidden:3 * hidden]), burn.tanh(g[:, 3 * hidden:])
        c = f * c + i * cand
        return [o * burn.tanh(c), c]


class _GRUCell:
    sum_biases = False            # the recurrent bias of the candidate gate is applied inside

    def __init__(self, linear_before_reset):
        self.lbr = linear_before_reset

    def __call__(self, xw_t, states, rt, b, hidden):
        (h,) = states
        rh = burn.matmul(h, rt[:, :2 * hidden])
        if b is not None:
            rh = rh + b[3 * hidden:5 * hidden]
        z = burn.sigmoid(xw_t[:, :hidden] + rh[:, :hidden])
        r = burn.sigmoid(xw_t[:, hidden:2 * hidden] + rh[:, hidden:])
        rb = None if b is None else b[5 * hidden:]
        if self.lbr:
            hh = burn.matmul(h, rt[:, 2 * hidden:])
            hh = hh if rb is None else hh + rb
            cand = burn.tanh(xw_t[:, 2 * hidden:] + r * hh)
        else:
            hh = burn.matmul(r * h, rt[:, 2 * hidden:])
            cand = burn.tanh(xw_t[:, 2 * hidden:] + (hh if rb is None else hh + rb))
        return [(1.0 - z) * cand + z * h]


@rule("LSTM", static=(4,), note="forward/reverse/bidirectional, layout 0/1; no peepholes, clip, "
                                "input_forget or shorter sequence_lens")
def _lstm(node, x, w, r, b=None, seq_lens=None, h0=None, c0=None, p=None):
    layout, seq = _rnn_checks(node, x, ["Sigmoid", "Tanh", "Tanh"], seq_lens)
    if p is not None or node.attr("input_forget", 0):
        raise node.fail("peepholes (P) and input_forget are not supported")
    return _run_rnn(node, layout, seq, w.shape[0], _LSTMCell(), 2)


@rule("GRU", static=(4,), note="forward/reverse/bidirectional, layout 0/1, linear_before_reset; no clip or "
                               "shorter sequence_lens")
def _gru(node, x, w, r, b=None, seq_lens=None, h0=None):
    layout, seq = _rnn_checks(node, x, ["Sigmoid", "Tanh"], seq_lens)
    return _run_rnn(node, layout, seq, w.shape[0], _GRUCell(bool(node.attr("linear_before_reset", 0))), 1)
