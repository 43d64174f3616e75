"""Helpers shared by the case modules: dtype rules, families of cases, numpy references."""
from __future__ import annotations

import math

import numpy as np

import burn

from .._table import Arg, _add


def _with(args, dtype):
    return tuple(Arg(a.shape, dtype if a.dtype not in ("bool",) or dtype == "bool" else a.dtype, a.low, a.high,
                     a.kind, a.const, a.autodiff) if a.kind not in ("index", "bool") else a for a in args)


def _float_out(ds):
    r = burn.result_type(*[burn.as_dtype(d) for d in ds])
    return r.name if r.is_inexact else "float32"


def _sum_out(ds):
    d = burn.as_dtype(ds[0])
    # numpy's (and the standard's) accumulators: unsigned in uint64, signed and bool in int64
    return "uint64" if d.kind == "u" else "int64" if d.is_bool or d.is_integer else d.name


def _family(op, fn, ref, args, dtypes, *, grad=True, grad_args=None, variant="", out=None, tol=1.0,
            tol16=None):
    """Forward cases for each dtype, plus one float64 gradient case."""
    v = f"{variant}," if variant else ""
    for d in dtypes:
        t = tol16 if (tol16 is not None and d in ("float16", "bfloat16")) else tol
        _add(f"{op}[{v}{d}]", op, "forward", fn, _with(args, d), ref, out=out, tol=t, differentiable=grad)
    if grad:
        _add(f"{op}[{v}grad]", op, "grad", fn, grad_args or _with(args, "float64"), out=out)


def _vec(f):
    return np.vectorize(f, otypes=[np.float64])


_erf = _vec(math.erf)


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _log_softmax(x, axis=-1):
    m = x.max(axis=axis, keepdims=True)
    s = x - m
    return s - np.log(np.exp(s).sum(axis=axis, keepdims=True))


def _red(loss, reduction):
    return loss.mean() if reduction == "mean" else loss.sum() if reduction == "sum" else loss
