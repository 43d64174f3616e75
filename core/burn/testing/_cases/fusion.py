"""Conformance cases: Fused groups and laziness: chains large enough for a backend's compiled paths."""
from __future__ import annotations

import math

import numpy as np

import burn

from .._table import Arg, _add
from ._common import _family, _erf


# -- fused groups and laziness -------------------------------------------------------------------
# Backends compile groups of the lazy graph: chains large enough to take a
# backend's blocked/compiled path, with broadcast operands, several live outputs,
# casts, and reductions/matmuls with fused element-wise work around them.

def _fusion_and_laziness():
    F = burn
    big, row, col = (520, 512), (512,), (520, 1)    # > 4 blocks of 64K elements, not a multiple of one

    def chain(x, b, c):
        return F.tanh(F.exp(x * 2 + b) * c) - b

    def chain_ref(x, b, c):
        return np.tanh(np.exp(x * 2 + b) * c) - b
    _family("fused", chain, chain_ref, (Arg(big, low=-1, high=1), Arg(row, low=-1, high=1), Arg(col)),
            ("float32",), variant="chain,broadcast,large", grad=False, tol=3.0)
    _add("fused[chain,grad]", "fused", "grad", chain, (Arg((3, 4), "float64", -1, 1), Arg((4,), "float64", -1, 1),
                                                        Arg((3, 1), "float64")))
    _add("fused[two-live-outputs,large,float32]", "fused", "forward",
         lambda x, b: (lambda y: (y, F.sqrt(y + 1) * b))(x * b),
         (Arg(big, low=0, high=2), Arg(row, low=0, high=2)), lambda x, b: (x * b, np.sqrt(x * b + 1) * b), tol=3.0)
    _add("fused[where-compare,large,float32]", "fused", "forward",
         lambda x, b: F.where(x > b, x - b, F.sin(x * b)), (Arg(big), Arg(row)),
         lambda x, b: np.where(x > b, x - b, np.sin(x * b)), tol=3.0)
    _add("fused[cast-chain,large,float32]", "fused", "forward",
         lambda i, x: F.relu(i.astype(F.float32) * 0.5 + x), (Arg(big, "int32", -3, 3), Arg(big)),
         lambda i, x: np.maximum(i * 0.5 + x, 0), out="float32", tol=3.0)
    for tag, fn, ref in [("mean(axis=-1)", lambda x, b: F.mean((x - b) ** 2, axis=-1),
                          lambda x, b: ((x - b) ** 2).mean(axis=-1)),
                         ("sum(axis=0)", lambda x, b: F.sum(F.exp(x) * b, axis=0),
                          lambda x, b: (np.exp(x) * b).sum(axis=0)),
                         ("max(all)", lambda x, b: F.max(F.abs(x - b)), lambda x, b: np.abs(x - b).max())]:
        _add(f"fused[reduce-prologue,{tag},large,float32]", "fused", "forward", fn, (Arg(big), Arg(row)), ref,
             tol=50.0)
    _family("fused", lambda a, w, bias: F.gelu(a @ w + bias) * 2,
            lambda a, w, bias: 0.5 * (a @ w + bias) * (1 + _erf((a @ w + bias) / math.sqrt(2))) * 2,
            (Arg((6, 5)), Arg((5, 7)), Arg((7,))), ("float32", "float64"), variant="matmul-epilogue", tol=5.0)

    # laziness never changes meaning: a pending value is the value when it was asked for
    def read_after_iadd(x):
        y = x * 10
        x += 1
        return y

    def read_after_assign(x):
        y = F.exp(x)
        x.assign_(x * 0)
        return y + x

    def inputs_untouched(x):
        y = F.exp(x * 2 + 1)
        y.numpy()                 # run the group; x must still hold its values
        return x
    for name, fn, ref in [("read-after-iadd", read_after_iadd, lambda x: x * 10),
                          ("read-after-assign", read_after_assign, np.exp),
                          ("inputs-untouched", inputs_untouched, lambda x: x)]:
        _family("laziness", fn, ref, (Arg(big),), ("float32",), variant=name, grad=False, tol=2.0)
