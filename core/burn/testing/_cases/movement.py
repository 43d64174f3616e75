"""Conformance cases: Movement and indexing ops."""
from __future__ import annotations

import numpy as np

import burn

from .._table import ALL_DTYPES, FLOATS, Arg, _add
from ._common import _family


# -- movement ------------------------------------------------------------------------------

def _movement():
    F = burn
    S = (2, 3, 4)
    cases = [  # name, fn, ref, shapes, all dtypes?
        ("reshape", lambda x: F.reshape(x, (4, -1)), lambda x: x.reshape(4, -1), (S,), True),
        ("reshape[method]", lambda x: x.reshape(6, 4), lambda x: x.reshape(6, 4), (S,), False),
        ("permute_dims", lambda x: F.permute_dims(x, (2, 0, 1)), lambda x: x.transpose(2, 0, 1), (S,), True),
        ("transpose", lambda x: F.transpose(x), lambda x: x.T, (S,), False),
        ("T", lambda x: x.T, lambda x: x.T, ((2, 3),), False),
        ("mT", lambda x: x.mT, lambda x: np.swapaxes(x, -1, -2), (S,), False),
        ("matrix_transpose", F.matrix_transpose, lambda x: np.swapaxes(x, -1, -2), (S,), False),
        ("concatenate", lambda a, b: F.concatenate([a, b], axis=-1), lambda a, b: np.concatenate([a, b], -1),
         ((2, 3), (2, 1)), False),
        ("swapaxes", lambda x: F.swapaxes(x, 0, 2), lambda x: np.swapaxes(x, 0, 2), (S,), False),
        ("moveaxis", lambda x: F.moveaxis(x, 0, -1), lambda x: np.moveaxis(x, 0, -1), (S,), False),
        ("broadcast_to", lambda x: F.broadcast_to(x, (2, 3, 4)), lambda x: np.broadcast_to(x, (2, 3, 4)),
         ((3, 1),), True),
        ("squeeze", lambda x: F.squeeze(x), lambda x: np.squeeze(x), ((1, 3, 1),), False),
        ("squeeze[axis]", lambda x: F.squeeze(x, axis=0), lambda x: np.squeeze(x, axis=0), ((1, 3, 1),), False),
        ("expand_dims", lambda x: F.expand_dims(x, axis=-1), lambda x: np.expand_dims(x, -1), ((2, 3),), False),
        ("expand_dims[tuple]", lambda x: F.expand_dims(x, axis=(0, 2)), lambda x: np.expand_dims(x, (0, 2)),
         ((2, 3),), False),
        ("flatten", lambda x: F.flatten(x), lambda x: x.reshape(-1), (S,), False),
        ("flatten[1:]", lambda x: F.flatten(x, 1), lambda x: x.reshape(2, -1), (S,), False),
        ("concat", lambda a, b: F.concat([a, b], axis=1), lambda a, b: np.concatenate([a, b], 1),
         ((2, 3), (2, 2)), True),
        ("concat[axis=None]", lambda a, b: F.concat([a, b], axis=None),
         lambda a, b: np.concatenate([a, b], axis=None), ((2, 3), (4,)), False),
        ("stack", lambda a, b: F.stack([a, b], axis=-1), lambda a, b: np.stack([a, b], -1), ((2, 3), (2, 3)),
         True),
        ("stack[axis=0]", lambda a, b: F.stack([a, b]), lambda a, b: np.stack([a, b]), ((2, 3), (2, 3)), False),
        ("flip", lambda x: F.flip(x, axis=1), lambda x: np.flip(x, 1), (S,), True),
        ("flip[all]", lambda x: F.flip(x), lambda x: np.flip(x), (S,), False),
        ("flip[tuple]", lambda x: F.flip(x, axis=(0, 2)), lambda x: np.flip(x, (0, 2)), (S,), False),
        ("pad", lambda x: F.pad(x, ((1, 0), (2, 1))), lambda x: np.pad(x, ((1, 0), (2, 1))), ((2, 3),), True),
        ("pad[value]", lambda x: F.pad(x, ((0, 1), (1, 1)), value=3), lambda x: np.pad(x, ((0, 1), (1, 1)),
                                                                                    constant_values=3),
         ((2, 3),), False),
        ("roll", lambda x: F.roll(x, 2, axis=1), lambda x: np.roll(x, 2, 1), ((2, 5),), False),
        ("roll[flat]", lambda x: F.roll(x, -3), lambda x: np.roll(x, -3), ((2, 5),), False),
        ("tile", lambda x: F.tile(x, (2, 1, 3)), lambda x: np.tile(x, (2, 1, 3)), ((2, 3),), False),
        ("repeat", lambda x: F.repeat(x, 2, axis=1), lambda x: np.repeat(x, 2, 1), ((2, 3),), False),
        ("repeat[flat]", lambda x: F.repeat(x, 3), lambda x: np.repeat(x, 3), ((2, 3),), False),
        ("tril", lambda x: F.tril(x), lambda x: np.tril(x), ((3, 4),), False),
        ("triu[k=1]", lambda x: F.triu(x, k=1), lambda x: np.triu(x, 1), ((2, 3, 4),), False),
        ("split[sections]", lambda x: F.split(x, 2, axis=1), lambda x: np.split(x, 2, 1), ((2, 4),), True),
        ("split[indices]", lambda x: F.split(x, [1, 3]), lambda x: np.split(x, [1, 3]), ((5, 2),), False),
        ("unstack", lambda x: F.unstack(x, axis=1), lambda x: tuple(np.moveaxis(x, 1, 0)), ((2, 3),), False),
        ("broadcast_arrays", lambda a, b: F.broadcast_arrays(a, b), lambda a, b: np.broadcast_arrays(a, b),
         ((3,), (2, 1)), False),
    ]
    for name, fn, ref, shapes, all_dtypes in cases:
        op = name.split("[")[0]
        variant = name[len(op) + 1:-1] if "[" in name else ""
        args = tuple(Arg(s, low=-3, high=3) for s in shapes)
        dts = ALL_DTYPES if all_dtypes else ("float32", "int64")
        multi = op in ("split", "unstack", "broadcast_arrays")
        _family(op, fn, ref, args, dts, grad=not multi, variant=variant)
        if multi:
            # gradients through every piece: weight each one differently, then join them
            def joined(*xs, fn=fn):
                parts = fn(*xs)
                return F.concat([F.reshape(p, (-1,)) * float(i + 1) for i, p in enumerate(parts)])
            _add(f"{op}[{variant + ',' if variant else ''}grad]", op, "grad", joined,
                 tuple(Arg(s, "float64") for s in shapes))
    # basic slicing (views in numpy) including negative steps and empty results
    sl = [("x[1]", lambda x: x[1]), ("x[-1, ::2]", lambda x: x[-1, ::2]), ("x[::-1]", lambda x: x[::-1]),
          ("x[:, 1:3]", lambda x: x[:, 1:3]), ("x[..., 0]", lambda x: x[..., 0]),
          ("x[None, :, None]", lambda x: x[None, :, None]), ("x[1:, None, 2]", lambda x: x[1:, None, 2]),
          ("x[::-2, ::-3]", lambda x: x[::-2, ::-3]), ("x[2:2]", lambda x: x[2:2]), ("x[-3:-1]", lambda x: x[-3:-1]),
          ("x[0, 0, 0]", lambda x: x[0, 0, 0]), ("x[5:, 1]", lambda x: x[5:, 1])]
    for tag, fn in sl:
        _family("getitem", fn, fn, (Arg((3, 4, 5)),), ALL_DTYPES if tag == "x[-1, ::2]" else ("float32",),
                grad=tag not in ("x[2:2]", "x[5:, 1]"), variant=tag)


def _indexing():
    F = burn
    I3 = Arg((2,), "int64", 0, 3, "index")
    adv = [  # tag, fn, ref, args
        ("x[1:, None, idx]", lambda x, i: x[1:, None, i], lambda x, i: x[1:, None, i], (Arg((3, 4)), I3)),
        ("x[idx]", lambda x, i: x[i], lambda x, i: x[i], (Arg((3, 4)), Arg((5,), "int64", 0, 3, "index"))),
        ("x[idx2d]", lambda x, i: x[i], lambda x, i: x[i], (Arg((3, 4)), Arg((2, 2), "int64", 0, 3, "index"))),
        ("x[:, idx, :]", lambda x, i: x[:, i, :], lambda x, i: x[:, i, :], (Arg((2, 3, 4)), I3)),
        ("x[idx, idx]", lambda x, i: x[i, i], lambda x, i: x[i, i], (Arg((3, 3)), Arg((4,), "int64", 0, 3, "index"))),
        ("x[-idx]", lambda x, i: x[-i - 1], lambda x, i: x[-i - 1], (Arg((3, 4)), I3)),
        ("x[list]", lambda x: x[[2, 0, 2]], lambda x: x[[2, 0, 2]], (Arg((3, 4)),)),
        ("x[mask]", lambda x, m: x[m], lambda x, m: x[m], (Arg((3, 4)), Arg((3, 4), "bool"))),
        ("x[row-mask]", lambda x, m: x[m], lambda x, m: x[m], (Arg((3, 4)), Arg((3,), "bool"))),
        ("x[idx, 1:]", lambda x, i: x[i, 1:], lambda x, i: x[i, 1:], (Arg((3, 4)), I3)),
    ]
    for tag, fn, ref, args in adv:
        _family("getitem", fn, ref, args, ALL_DTYPES if tag == "x[1:, None, idx]" else ("float32", "int64"),
                variant=tag, out=lambda ds: ds[0])
    # repeated indices accumulate in the gradient
    _add("getitem[x[repeated idx],grad]", "getitem", "grad", lambda x, i: x[i],
         (Arg((3, 2), "float64"), Arg((6,), "int64", 0, 2, "index")))
    for tag, axis in [("axis=0", 0), ("axis=1", 1), ("axis=None", None)]:
        _family("take", lambda x, i, axis=axis: F.take(x, i, axis=axis),
                lambda x, i, axis=axis: np.take(x, i, axis=axis),
                (Arg((3, 4)), Arg((5,), "int64", 0, 3, "index")), ALL_DTYPES if tag == "axis=1" else ("float32",),
                variant=tag, out=lambda ds: ds[0])
    for tag, ishape, axis in [("axis=1", (3, 2), 1), ("axis=0", (2, 4), 0), ("broadcast", (3, 1), 1)]:
        _family("take_along_axis", lambda x, i, axis=axis: F.take_along_axis(x, i, axis=axis),
                lambda x, i, axis=axis: np.take_along_axis(x, i, axis=axis),
                (Arg((3, 4)), Arg(ishape, "int64", 0, 3, "index")),
                ALL_DTYPES if tag == "axis=1" else ("float32",), variant=tag, out=lambda ds: ds[0])
    _family("gather", lambda x, i: F.gather(x, i, axis=0), lambda x, i: np.take_along_axis(x, i, axis=0),
            (Arg((4,)), Arg((6,), "int64", 0, 4, "index")), ("float32",), out=lambda ds: ds[0])

    def scatter_ref(x, i, s, axis):
        out = x.copy()
        grid = list(np.indices(i.shape, sparse=True))
        grid[axis] = i
        np.add.at(out, tuple(grid), s)
        return out
    for tag, xs, ishape, axis in [("axis=1", (3, 4), (3, 5), 1), ("axis=0", (3, 4), (4, 4), 0)]:
        _family("scatter_add", lambda x, i, s, axis=axis: F.scatter_add(x, i, s, axis=axis),
                lambda x, i, s, axis=axis: scatter_ref(x, i, s, axis),
                (Arg(xs), Arg(ishape, "int64", 0, 3, "index"), Arg(ishape)),
                FLOATS + ("int32", "int64") if tag == "axis=1" else ("float32",), variant=tag, tol16=3.0,
                out=lambda ds: ds[0])

    # setitem is functional: the tensor is rebound, earlier readers keep the old value
    def setitem(x, v):
        y = x * 1
        y[0, 1:] = v
        y[:, 0] = 7
        return y

    def setitem_ref(x, v):
        y = x.copy()
        y[0, 1:] = v
        y[:, 0] = 7
        return y
    _family("setitem", setitem, setitem_ref, (Arg((3, 4)), Arg((3,))), ("float32", "int64", "float16"))

    def setitem_adv(x, i):
        y = x * 1
        y[i] = -1
        return y

    def setitem_adv_ref(x, i):
        y = x.copy()
        y[i] = -1
        return y
    _family("setitem", setitem_adv, setitem_adv_ref, (Arg((3, 4)), I3), ("float32", "int32"), variant="idx",
            out=lambda ds: ds[0])
    _add("setitem[mask,float32]", "setitem", "forward", lambda x: _setmask(x), (Arg((3, 4)),),
         lambda x: np.where(x > 0, 0.0, x))


def _setmask(x):
    y = x * 1
    y[y > 0] = 0.0
    return y
