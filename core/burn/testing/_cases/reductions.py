"""Conformance cases: Reductions and scans."""
from __future__ import annotations

import math

import numpy as np

import burn

from .._table import FLOATS, NUMERIC, Arg, _add
from ._common import _family, _sum_out


# -- reductions ----------------------------------------------------------------------------

def _reductions():
    F = burn
    shape = (2, 3, 4)
    axes_variants = [("axis=None", None, False), ("axis=1", 1, False), ("axis=-1", -1, False),
                     ("axis=(0, 2)", (0, 2), False), ("axis=(0, 2),keepdims", (0, 2), True),
                     ("axis=None,keepdims", None, True), ("axis=()", (), False)]
    np_red = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min, "mean": np.mean,
              "any": np.any, "all": np.all}
    specs = [  # name, dtypes, kind, differentiable, out
        ("sum", NUMERIC + ("bool",), "real", True, _sum_out),
        ("prod", FLOATS + ("int32", "int64"), "nonzero", True, _sum_out),
        ("max", NUMERIC, "distinct", True, None),
        ("min", NUMERIC, "distinct", True, None),
        ("mean", FLOATS, "real", True, None),
        ("any", ("bool", "float32", "int32"), "index", False, "bool"),
        ("all", ("bool", "float32", "int32"), "index", False, "bool"),
    ]
    for name, dtypes, kind, diff, out in specs:
        fn0 = getattr(F, name)
        for tag, axis, keep in axes_variants:
            fn = (lambda x, fn0=fn0, axis=axis, keep=keep: fn0(x, axis=axis, keepdims=keep))
            ref = (lambda x, n=name, axis=axis, keep=keep: np_red[n](
                x, axis=axis, keepdims=keep, **({"dtype": np.uint64 if x.dtype.kind == "u" else np.int64}
                                                if n in ("sum", "prod") and x.dtype.kind in "biu" else {})))
            lo, hi = (0, 2) if kind == "index" else (-1.5, 1.5) if name == "prod" else (-2, 2)
            args = (Arg(shape, low=lo, high=hi, kind=kind),)
            per_dtype = dtypes if tag in ("axis=1", "axis=(0, 2),keepdims") else ("float32",)
            _family(name, fn, ref, args, per_dtype, grad=diff and tag != "axis=()" and tag != "axis=None,keepdims",
                    variant=tag, out=out, tol=3.0, tol16=6.0)
    for name, fnx, refx, cor in [("var", F.var, np.var, 0), ("std", F.std, np.std, 0), ("var", F.var, np.var, 1)]:
        for tag, axis, keep in axes_variants[:5]:
            fn = (lambda x, fnx=fnx, axis=axis, keep=keep, cor=cor: fnx(x, axis=axis, keepdims=keep, correction=cor))
            ref = (lambda x, refx=refx, axis=axis, keep=keep, cor=cor: refx(x, axis=axis, keepdims=keep, ddof=cor))
            dts = FLOATS if tag == "axis=1" else ("float32",)
            _family(name, fn, ref, (Arg(shape),), dts, variant=f"{tag},correction={cor}", tol=3.0, tol16=8.0)
    for tag, axis, keep in axes_variants[:5]:
        fn = (lambda x, axis=axis, keep=keep: F.logsumexp(x, axis=axis, keepdims=keep))

        def ref(x, axis=axis, keep=keep):
            ax = axis if axis is not None else tuple(range(x.ndim))
            m = np.max(x, axis=ax, keepdims=True)
            r = np.log(np.sum(np.exp(x - m), axis=ax, keepdims=True)) + m
            return r if keep else np.squeeze(r, axis=ax)
        _family("logsumexp", fn, ref, (Arg(shape, low=-3, high=3),), FLOATS if tag == "axis=1" else ("float32",),
                variant=tag, tol=3.0, tol16=6.0)
    _add("logsumexp[large,float32]", "logsumexp", "forward", lambda x: F.logsumexp(x * 1000.0, axis=-1),
         (Arg((2, 3)),), lambda x: _lse_ref(x * 1000.0), tol=10.0)
    # a row of -inf has logsumexp -inf (not nan from inf - inf)
    _add("logsumexp[-inf-row,float32]", "logsumexp", "forward",
         lambda x: F.logsumexp(F.concat([x, F.full((1, 3), -math.inf, device=x.device)]), axis=-1),
         (Arg((2, 3)),), lambda x: np.concatenate([_lse_ref(x), [-np.inf]]), tol=2.0)
    # sums meeting infinities: inf, -inf, inf - inf = nan, as numpy (a compensated sum must not
    # turn inf into nan), with a fused prologue and over either axis
    special = [[math.inf, 1.0, 2.0], [1.0, -math.inf, 2.0], [math.inf, -math.inf, 0.0]]
    for tag, axis in [("axis=-1", -1), ("axis=0", 0)]:
        _add(f"sum[inf-rows,{tag},float32]", "sum", "forward",
             lambda x, axis=axis: F.sum(F.concat([x, F.tensor(special, device=x.device)]) * 2.0, axis=axis),
             (Arg((2, 3)),), lambda x, axis=axis: np.sum(np.concatenate([x, special]) * 2.0, axis=axis))
        _add(f"mean[inf-rows,{tag},float32]", "mean", "forward",
             lambda x, axis=axis: F.mean(F.concat([x, F.tensor(special, device=x.device)]), axis=axis),
             (Arg((2, 3)),), lambda x, axis=axis: np.mean(np.concatenate([x, special]), axis=axis))
    _add("count_nonzero[int32]", "count_nonzero", "forward", lambda x: F.count_nonzero(x, axis=1),
         (Arg((3, 4), "int32", -1, 1),), lambda x: np.count_nonzero(x, axis=1), out="int64")
    for name, fn0, ref0 in [("argmax", F.argmax, np.argmax), ("argmin", F.argmin, np.argmin)]:
        for tag, axis, keep in [("axis=None", None, False), ("axis=1", 1, False), ("axis=-1,keepdims", -1, True),
                                ("axis=None,keepdims", None, True)]:
            fn = (lambda x, fn0=fn0, axis=axis, keep=keep: fn0(x, axis=axis, keepdims=keep))
            ref = (lambda x, ref0=ref0, axis=axis, keep=keep: ref0(x, axis=axis, keepdims=keep))
            dts = NUMERIC if tag == "axis=1" else ("float32",)
            _family(name, fn, ref, (Arg(shape, kind="distinct"),), dts, grad=False, variant=tag, out="int64")
        # ties: the first occurrence, as numpy
        _add(f"{name}[ties,int32]", name, "forward", lambda x, fn0=fn0: fn0(x, axis=1),
             (Arg((3, 5), "int32", 0, 2),), lambda x, ref0=ref0: ref0(x, axis=1), out="int64")
    # zeros: the gradient of a product is not out / x there
    _family("prod", lambda x: F.prod(x, axis=1), lambda x: np.prod(x, axis=1), (Arg((4, 3), kind="sparse"),),
            ("float32",), variant="zeros")
    _family("cumprod", lambda x: F.cumprod(x, axis=1), lambda x: np.cumprod(x, axis=1),
            (Arg((4, 4), kind="sparse"),), ("float32",), variant="zeros")
    for name, fn0, ref0 in [("cumsum", F.cumsum, np.cumsum), ("cumprod", F.cumprod, np.cumprod)]:
        for tag, axis in [("axis=None", None), ("axis=0", 0), ("axis=-1", -1)]:
            fn = (lambda x, fn0=fn0, axis=axis: fn0(x, axis=axis))
            ref = (lambda x, ref0=ref0, axis=axis: ref0(x, axis=axis, **(
                {"dtype": np.uint64 if x.dtype.kind == "u" else np.int64} if x.dtype.kind in "biu" else {})))
            dts = FLOATS + ("int32", "int64", "bool") if tag == "axis=-1" else ("float32",)
            _family(name, fn, ref, (Arg((3, 4), low=0.5, high=1.5, kind="nonzero"),), dts, variant=tag,
                    out=_sum_out, tol=3.0, tol16=8.0)


def _lse_ref(x):
    m = np.max(x, axis=-1, keepdims=True)
    return (np.log(np.sum(np.exp(x - m), axis=-1, keepdims=True)) + m)[..., 0]
