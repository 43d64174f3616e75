"""Conformance cases: Convolution, pooling and burn.nn.functional (references: direct loops over output positions)."""
from __future__ import annotations

import numpy as np

import burn
from ...nn import functional as NF
from .._table import FLOATS, Arg, _add
from ._common import _family, _log_softmax, _red


# -- convolution and pooling (references: a direct loop over output positions) ---------------

def _windows(x, k, s, p, d, fill):
    """x [N, C, H, W] -> patches [N, C, Ho, Wo, kh, kw] of the padded input."""
    xp = np.pad(x, ((0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])), constant_values=fill)
    ho = (xp.shape[2] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    wo = (xp.shape[3] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    out = np.empty(x.shape[:2] + (ho, wo) + tuple(k), dtype=xp.dtype)
    for i in range(ho):
        for j in range(wo):
            out[:, :, i, j] = xp[:, :, i * s[0]:i * s[0] + d[0] * (k[0] - 1) + 1:d[0],
                                 j * s[1]:j * s[1] + d[1] * (k[1] - 1) + 1:d[1]]
    return out


def _conv2d_ref(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    two = (lambda v: (v, v) if isinstance(v, int) else tuple(v))
    o, cg = w.shape[:2]
    pw = _windows(x, w.shape[2:], two(stride), two(padding), two(dilation), 0.0)
    outs = []
    for g in range(groups):
        og = o // groups
        xs = pw[:, g * cg:(g + 1) * cg]
        outs.append(np.einsum("nchwij,ocij->nohw", xs, w[g * og:(g + 1) * og]))
    y = np.concatenate(outs, axis=1)
    return y if b is None else y + b[None, :, None, None]


def _conv_transpose2d_ref(x, w, b=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """Each input pixel scatters ``x[n, c, h, w] * w[c, o]`` over its window, then the padding is cropped."""
    two = (lambda v: (v, v) if isinstance(v, int) else tuple(v))
    s, p, op, d = two(stride), two(padding), two(output_padding), two(dilation)
    n, c, hh, ww = x.shape
    cg, og, kh, kw = c // groups, w.shape[1], w.shape[2], w.shape[3]
    full = ((hh - 1) * s[0] + d[0] * (kh - 1) + 1, (ww - 1) * s[1] + d[1] * (kw - 1) + 1)
    y = np.zeros((n, groups * og, full[0] + op[0], full[1] + op[1]), dtype=x.dtype)
    for g in range(groups):
        for i in range(kh):
            for j in range(kw):
                y[:, g * og:(g + 1) * og, i * d[0]:i * d[0] + s[0] * (hh - 1) + 1:s[0],
                  j * d[1]:j * d[1] + s[1] * (ww - 1) + 1:s[1]] += np.einsum(
                    "nchw,co->nohw", x[:, g * cg:(g + 1) * cg], w[g * cg:(g + 1) * cg, :, i, j])
    out = (full[0] - 2 * p[0] + op[0], full[1] - 2 * p[1] + op[1])
    y = y[:, :, p[0]:p[0] + out[0], p[1]:p[1] + out[1]]
    return y if b is None else y + b[None, :, None, None]


def _pool_ref(x, k, s, p, kind):
    two = (lambda v: (v, v) if isinstance(v, int) else tuple(v))
    k, p = two(k), two(p)
    s = k if s is None else two(s)
    pw = _windows(x, k, s, p, (1, 1), -np.inf if kind == "max" else 0.0)
    return pw.max(axis=(4, 5)) if kind == "max" else pw.mean(axis=(4, 5))


def _conv():
    convs = [  # variant, x shape, w shape, kwargs, bias
        ("basic", (2, 2, 5, 5), (3, 2, 3, 3), {}, True),
        ("stride=2,padding=1", (1, 2, 6, 5), (2, 2, 3, 3), {"stride": 2, "padding": 1}, True),
        ("dilation=2", (1, 1, 6, 6), (2, 1, 2, 3), {"dilation": 2}, False),
        ("groups=2", (1, 4, 4, 4), (4, 2, 3, 3), {"groups": 2}, True),
        ("rect", (1, 2, 4, 6), (2, 2, 1, 3), {"stride": (1, 2), "padding": (0, 1)}, False),
    ]
    for variant, xs, ws, kw, bias in convs:
        args = (Arg(xs), Arg(ws), Arg((ws[0],))) if bias else (Arg(xs), Arg(ws))
        _family("conv2d", lambda x, w, *b, kw=kw: NF.conv2d(x, w, *b, **kw),
                lambda x, w, *b, kw=kw: _conv2d_ref(x, w, *b, **kw), args,
                ("float32", "float64") if variant == "basic" else ("float32",), variant=variant, tol=5.0)
    _family("conv2d", lambda x, w, b: NF.conv2d(x, w, b, padding=1), lambda x, w, b: _conv2d_ref(x, w, b, padding=1),
            (Arg((1, 2, 4, 4)), Arg((2, 2, 3, 3)), Arg((2,))), ("float16", "bfloat16"), grad=False,
            variant="half", tol=4.0)

    def conv1d_ref(x, w, b, stride=1, padding=0):
        return _conv2d_ref(x[:, :, None], w[:, :, None], b, (1, stride), (0, padding))[:, :, 0]
    _family("conv1d", lambda x, w, b: NF.conv1d(x, w, b, stride=2, padding=1),
            lambda x, w, b: conv1d_ref(x, w, b, 2, 1), (Arg((2, 2, 7)), Arg((3, 2, 3)), Arg((3,))),
            ("float32",), variant="stride=2,padding=1", tol=5.0)
    transposed = [  # variant, x shape, w shape, kwargs
        ("basic", (2, 2, 3, 3), (2, 3, 3, 3), {}),
        ("stride=2,padding=1,output_padding=1", (1, 2, 3, 4), (2, 2, 3, 3),
         {"stride": 2, "padding": 1, "output_padding": 1}),
        ("groups=2,dilation=2", (1, 4, 3, 3), (4, 1, 2, 2), {"groups": 2, "dilation": 2, "output_padding": 1}),
    ]
    for variant, xs, ws, kw in transposed:
        _family("conv_transpose2d", lambda x, w, b, kw=kw: NF.conv_transpose2d(x, w, b, **kw),
                lambda x, w, b, kw=kw: _conv_transpose2d_ref(x, w, b, **kw),
                (Arg(xs), Arg(ws), Arg((ws[1] * kw.get("groups", 1),))), ("float32",), variant=variant, tol=5.0)
    _family("conv_transpose1d", lambda x, w, b: NF.conv_transpose1d(x, w, b, 2, 0, 1),
            lambda x, w, b: _conv_transpose2d_ref(x[:, :, None], w[:, :, None], b, (1, 2), 0, (0, 1))[:, :, 0],
            (Arg((2, 2, 5)), Arg((2, 3, 3)), Arg((3,))), ("float32",), variant="stride=2,output_padding=1",
            tol=5.0)
    pools = [("k=2", 2, None, 0), ("k=3,s=2,p=1", 3, 2, 1), ("k=(2,3),s=1", (2, 3), 1, 0)]
    for variant, k, st, p in pools:
        for kind, fn in [("max", NF.max_pool2d), ("avg", NF.avg_pool2d)]:
            _family(f"{kind}_pool2d", lambda x, fn=fn, k=k, st=st, p=p: fn(x, k, st, p),
                    lambda x, kind=kind, k=k, st=st, p=p: _pool_ref(x, k, st, p, kind),
                    (Arg((2, 2, 5, 5), kind="distinct"),), ("float32", "float64", "float16"), variant=variant,
                    tol=3.0)
    for kind, fn in [("max", NF.max_pool1d), ("avg", NF.avg_pool1d)]:
        _family(f"{kind}_pool1d", lambda x, fn=fn: fn(x, 3, 2, 1),
                lambda x, kind=kind: _pool_ref(x[:, :, None], (1, 3), (1, 2), (0, 1), kind)[:, :, 0],
                (Arg((2, 3, 7), kind="distinct"),), ("float32",), tol=3.0)


# -- nn.functional ----------------------------------------------------------------------------

def _functional():
    X = (Arg((3, 5), low=-3, high=3),)
    for tag, axis in [("axis=-1", -1), ("axis=0", 0)]:
        _family("softmax", lambda x, axis=axis: NF.softmax(x, axis=axis),
                lambda x, axis=axis: np.exp(_log_softmax(x, axis)), X, FLOATS, variant=tag, tol16=2.0)
        _family("log_softmax", lambda x, axis=axis: NF.log_softmax(x, axis=axis),
                lambda x, axis=axis: _log_softmax(x, axis), X, FLOATS, variant=tag, tol16=2.0)
    _add("softmax[large,float32]", "softmax", "forward", lambda x: NF.softmax(x * 1000.0), X,
         lambda x: np.exp(_log_softmax(x * 1000.0)))
    T = Arg((3,), "int64", 0, 5, "index")

    def ce_ref(x, t, reduction="mean", ls=0.0):
        lp = _log_softmax(x)
        nll = -lp[np.arange(len(t)), t]
        return _red((1 - ls) * nll + ls * -lp.mean(-1), reduction)
    for tag, red, ls in [("mean", "mean", 0.0), ("sum", "sum", 0.0), ("none", "none", 0.0),
                         ("label_smoothing=0.1", "mean", 0.1)]:
        _family("cross_entropy", lambda x, t, red=red, ls=ls: NF.cross_entropy(x, t, reduction=red,
                                                                                label_smoothing=ls),
                lambda x, t, red=red, ls=ls: ce_ref(x, t, red, ls), (X[0], T),
                ("float32", "float64", "float16") if tag == "mean" else ("float32",), variant=tag,
                out=lambda ds: ds[0], tol16=3.0)
    _family("cross_entropy", lambda x, p: NF.cross_entropy(x, NF.softmax(p)),
            lambda x, p: -(np.exp(_log_softmax(p)) * _log_softmax(x)).sum(-1).mean(),
            (X[0], Arg((3, 5), low=-3, high=3, const=True)), ("float32",), variant="probabilities")
    _family("nll_loss", lambda x, t: NF.nll_loss(NF.log_softmax(x), t),
            lambda x, t: -_log_softmax(x)[np.arange(3), t].mean(), (X[0], T), ("float32",),
            out=lambda ds: ds[0])
    _family("mse_loss", NF.mse_loss, lambda a, b: ((a - b) ** 2).mean(), (Arg((2, 3)), Arg((2, 3))),
            ("float32", "float64"))
    _family("mse_loss", lambda a, b: NF.mse_loss(a, b, reduction="sum"), lambda a, b: ((a - b) ** 2).sum(),
            (Arg((2, 3)), Arg((2, 3))), ("float32",), variant="sum")
    lin_args = (Arg((4, 3)), Arg((3, 2)), Arg((2,)))
    _family("linear", NF.linear, lambda x, w, b: x @ w + b, lin_args, FLOATS, tol=3.0, tol16=2.0)
    _family("linear", lambda x, w: NF.linear(x, w), lambda x, w: x @ w, lin_args[:2], ("float32",),
            variant="no-bias")
    _family("linear", NF.linear, lambda x, w, b: x @ w + b, (Arg((2, 4, 3)), Arg((3, 2)), Arg((2,))),
            ("float32",), variant="batched", tol=3.0)
    _family("linear_relu", NF.linear_relu, lambda x, w, b: np.maximum(x @ w + b, 0), lin_args,
            FLOATS, tol=3.0, tol16=2.0)
    _family("linear_relu", NF.linear_relu, lambda x, w, b: np.maximum(x @ w + b, 0),
            (Arg((2, 4, 3)), Arg((3, 2)), Arg((2,))), ("float32",), variant="batched", tol=3.0)
    E_idx = Arg((2, 3), "int64", 0, 4, "index")
    _family("embedding", NF.embedding, lambda i, w: w[i], (E_idx, Arg((4, 3))), ("float32", "bfloat16"),
            out=lambda ds: ds[1])

    def ln_ref(x, w, b, k=1, eps=1e-5):
        ax = tuple(range(x.ndim - k, x.ndim))
        mu = x.mean(axis=ax, keepdims=True)
        var = ((x - mu) ** 2).mean(axis=ax, keepdims=True)
        return (x - mu) / np.sqrt(var + eps) * w + b
    _family("layer_norm", lambda x, w, b: NF.layer_norm(x, (4,), w, b), ln_ref,
            (Arg((3, 4)), Arg((4,)), Arg((4,))), FLOATS, tol=5.0, tol16=2.0)
    _family("layer_norm", lambda x, w, b: NF.layer_norm(x, (3, 4), w, b), lambda x, w, b: ln_ref(x, w, b, 2),
            (Arg((2, 3, 4)), Arg((3, 4)), Arg((3, 4))), ("float32",), variant="2d", tol=5.0)
    _family("layer_norm", lambda x: NF.layer_norm(x, 4), lambda x: ln_ref(x, 1.0, 0.0),
            (Arg((3, 4)),), ("float32",), variant="no-affine", tol=5.0)
    for name in ("relu", "gelu", "sigmoid", "tanh", "silu", "softplus"):
        f = getattr(NF, name)
        _add(f"nn.functional.{name}[is-burn.{name}]", name, "forward", lambda x, f=f, name=name:
             f(x) - getattr(burn, name)(x), X, lambda x: np.zeros_like(x))
    _add("dropout[eval,float32]", "dropout", "forward", lambda x: NF.dropout(x, 0.5, training=False), X,
         lambda x: x)

    def dropout_prop(v):
        kept = v != 0
        assert 0.3 < kept.mean() < 0.7, kept.mean()
        np.testing.assert_allclose(v[kept], 2.0)
    _add("dropout[train,float32]", "dropout", "forward",
         lambda device: NF.dropout(burn.ones((2000,), device=device), 0.5), (), prop=dropout_prop, out="float32",
         needs_device=True)
