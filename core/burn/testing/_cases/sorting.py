"""Conformance cases: sort, argsort, searchsorted, nonzero and the unique_* functions."""
from __future__ import annotations

import numpy as np

import burn

from .._table import Arg, _add

_REAL = ("float32", "float64", "int32", "int64", "uint8", "int8")


def _np_argsort(x, axis=-1, descending=False):
    # the Array API's stable descending order: argsort of the flipped axis, flipped back
    if not descending:
        return np.argsort(x, axis=axis, kind="stable")
    r = np.flip(np.argsort(np.flip(x, axis=axis), axis=axis, kind="stable"), axis=axis)
    return x.shape[axis] - 1 - r


def _sorting():
    F = burn
    for d in _REAL:
        # small integer ranges give ties (stability); "special" floats give NaN, inf and -0.0
        arg = Arg((3, 9), d, -2, 2, "special" if d.startswith("float") else "real")
        for ax in (0, -1):
            for desc in (False, True):
                v = f"axis={ax},{'desc,' if desc else ''}{d}"
                _add(f"argsort[{v}]", "argsort", "forward", lambda x, a=ax, s=desc: F.argsort(x, axis=a, descending=s),
                     (arg,), lambda x, a=ax, s=desc: _np_argsort(x, a, s), out="int64")
                _add(f"sort[{v}]", "sort", "forward", lambda x, a=ax, s=desc: F.sort(x, axis=a, descending=s),
                     (arg,), lambda x, a=ax, s=desc: np.take_along_axis(x, _np_argsort(x, a, s), a))
        _add(f"nonzero[{d}]", "nonzero", "forward", lambda x: F.stack(F.nonzero(x)),
             (Arg((3, 4), d, -1, 1),), lambda x: np.stack(np.nonzero(x)), out="int64")
        for name, k in (("unique_values", None), ("unique_counts", 1), ("unique_inverse", 1), ("unique_all", 1),
                        ("unique_all", 2), ("unique_all", 3)):
            fn = getattr(F, name)
            _add(f"{name}[{'' if k is None else f'out{k},'}{d}]", name, "forward", (lambda x, f=fn, k=k: f(x) if k is None else f(x)[k]),
                 (Arg((4, 5), d, -2, 2),), _np_unique(name, k), out=None if name == "unique_values" else "int64")
    for d in ("float16", "bfloat16"):
        _add(f"argsort[desc,{d}]", "argsort", "forward", lambda x: F.argsort(x, descending=True),
             (Arg((3, 9), d, kind="special"),), lambda x: _np_argsort(x, -1, True), out="int64")
        _add(f"sort[{d}]", "sort", "forward", F.sort, (Arg((3, 9), d, kind="special"),), np.sort)
    _add("argsort[empty axis]", "argsort", "forward", lambda x: F.argsort(x, axis=1),
         (Arg((3, 0)),), lambda x: np.argsort(x, axis=1), out="int64")
    _add("sort[0-d]", "sort", "forward", F.sort, (Arg(()),), lambda x: x)
    _add("sort[grad]", "sort", "grad", lambda x: F.sort(x, axis=0, descending=True), (Arg((5, 3), "float64"),))
    sorted_arg = Arg((7,), "float64", -3, 3, "distinct")
    for side in ("left", "right"):
        for d in ("float32", "int64"):
            _add(f"searchsorted[{side},{d}]", "searchsorted", "forward",
                 lambda a, v, s=side: F.searchsorted(F.sort(a), v, side=s),
                 (Arg((7,), d, -3, 3), Arg((2, 5), d, -4, 4)),
                 lambda a, v, s=side: np.searchsorted(np.sort(a), v, side=s), out="int64")
    _add("searchsorted[sorter]", "searchsorted", "forward",
         lambda a, v: F.searchsorted(a, v, sorter=F.argsort(a)), (sorted_arg, Arg((4,), "float64")),
         lambda a, v: np.searchsorted(a, v, sorter=np.argsort(a)), out="int64")


def _np_unique(name, k):
    def ref(x):
        v, i, inv, c = np.unique(x, return_index=True, return_inverse=True, return_counts=True, equal_nan=False)
        full = {"unique_values": (v,), "unique_counts": (v, c), "unique_inverse": (v, inv.reshape(x.shape)),
                "unique_all": (v, i, inv.reshape(x.shape), c)}[name]
        return full[0] if k is None else full[k].astype(np.int64)
    return ref
