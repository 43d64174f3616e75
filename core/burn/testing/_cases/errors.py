"""Conformance cases: Misuse: each error names the op, at the call."""
from __future__ import annotations

import burn
from ...nn import functional as NF
from .._table import Arg, _add


# -- errors -----------------------------------------------------------------------------------

def _errors():
    F = burn
    A, B = Arg((2, 3)), Arg((4,))
    E = [  # name, error class, op name in the message, fn, args
        ("add[shapes]", "ShapeError", "add", F.add, (A, B)),
        ("__add__[shapes]", "ShapeError", "add", lambda a, b: a + b, (A, B)),
        ("multiply[shapes]", "ShapeError", "mul", F.multiply, (Arg((2, 3)), Arg((3, 2)))),
        ("where[shapes]", "ShapeError", "where", F.where, (Arg((2,), "bool"), A, A)),
        ("where[condition-dtype]", "DTypeError", "where", F.where, (A, A, A)),
        ("add[bool]", "DTypeError", "add", F.add, (Arg((2,), "bool"), Arg((2,), "bool"))),
        ("pow[int-negative-scalar]", "DTypeError", "pow", lambda x: x ** -1, (Arg((2,), "int32", 1, 4),)),
        ("neg[bool]", "DTypeError", "neg", F.neg, (Arg((2,), "bool"),)),
        ("bitwise_and[float]", "DTypeError", "bitwise_and", F.bitwise_and, (A, A)),
        ("clip[bool]", "DTypeError", "clip", lambda x: F.clip(x, 0, 1), (Arg((2,), "bool"),)),
        ("matmul[inner]", "ShapeError", "matmul", F.matmul, (Arg((2, 3)), Arg((2, 3)))),
        ("matmul[batch]", "ShapeError", "matmul", F.matmul, (Arg((2, 2, 3)), Arg((3, 3, 2)))),
        ("matmul[0d]", "ShapeError", "matmul", F.matmul, (Arg(()), Arg((3,)))),
        ("matmul[bool]", "DTypeError", "matmul", F.matmul, (Arg((2, 2), "bool"), Arg((2, 2), "bool"))),
        ("reshape[size]", "ShapeError", "reshape", lambda x: F.reshape(x, (4, 2)), (A,)),
        ("reshape[two -1]", "ShapeError", "reshape", lambda x: F.reshape(x, (-1, -1)), (A,)),
        ("permute_dims[not-a-permutation]", "ShapeError", "permute_dims", lambda x: F.permute_dims(x, (0, 0)),
         (A,)),
        ("broadcast_to[shape]", "ShapeError", "broadcast_to", lambda x: F.broadcast_to(x, (3, 3)), (A,)),
        ("squeeze[not-1]", "ShapeError", "squeeze", lambda x: F.squeeze(x, axis=0), (A,)),
        ("sum[axis-range]", "ShapeError", "sum", lambda x: F.sum(x, axis=2), (A,)),
        ("mean[repeated-axis]", "ShapeError", "mean", lambda x: F.mean(x, axis=(1, -1)), (A,)),
        ("argmax[axis-range]", "ShapeError", "argmax", lambda x: F.argmax(x, axis=-3), (A,)),
        ("max[empty]", "ShapeError", "max", lambda x: F.max(x, axis=0), (Arg((0, 3)),)),
        ("cumsum[axis-range]", "ShapeError", "cumsum", lambda x: F.cumsum(x, axis=5), (A,)),
        ("concat[shapes]", "ShapeError", "concat", lambda a, b: F.concat([a, b], axis=0), (A, Arg((2, 2)))),
        ("stack[shapes]", "ShapeError", "stack", lambda a, b: F.stack([a, b]), (A, Arg((3, 2)))),
        ("split[unequal]", "ShapeError", "split", lambda x: F.split(x, 2, axis=1), (A,)),
        ("getitem[out-of-bounds]", "ShapeError", "getitem", lambda x: x[2], (A,)),
        ("getitem[too-many]", "ShapeError", "getitem", lambda x: x[0, 0, 0], (A,)),
        ("getitem[float-index]", "DTypeError", "getitem", lambda x, i: x[i], (A, Arg((2,)))),
        ("take_along_axis[ndim]", "ShapeError", "take_along_axis", lambda x, i: F.take_along_axis(x, i, axis=1),
         (A, Arg((2,), "int64", 0, 2, "index"))),
        ("take_along_axis[float-index]", "DTypeError", "take_along_axis",
         lambda x, i: F.take_along_axis(x, i, axis=1), (A, A)),
        ("scatter_add[shapes]", "ShapeError", "scatter_add", lambda x, i, s: F.scatter_add(x, i, s, axis=1),
         (A, Arg((2, 2), "int64", 0, 2, "index"), Arg((2, 3)))),
        ("pad[negative]", "ShapeError", "pad", lambda x: F.pad(x, ((0, -1), (0, 0))), (A,)),
        ("item[size]", "ShapeError", "item", lambda x: x.item(), (A,)),
        ("cross_entropy[float-class-target]", "ShapeError", "cross_entropy", lambda x, t: NF.cross_entropy(x, t),
         (Arg((3, 5)), Arg((3,)))),
        ("nll_loss[target-dtype]", "DTypeError", "nll_loss", lambda x, t: NF.nll_loss(x, t),
         (Arg((3, 5)), Arg((3,)))),
        ("cross_entropy[probability-shape]", "ShapeError", "cross_entropy", lambda x, t: NF.cross_entropy(x, t),
         (Arg((3, 5)), Arg((3, 4)))),
        ("embedding[float-indices]", "DTypeError", "embedding", lambda i, w: NF.embedding(i, w), (A, A)),
        ("layer_norm[shape]", "ShapeError", "layer_norm", lambda x: NF.layer_norm(x, (4,)), (A,)),
        ("linear_relu[shapes]", "ShapeError", "linear_relu", NF.linear_relu, (A, Arg((2, 4)), Arg((4,)))),
        ("linear_relu[dtypes]", "DTypeError", "linear_relu", NF.linear_relu,
         (A, Arg((3, 4), "float64"), Arg((4,)))),
        ("conv2d[channels]", "ShapeError", ("conv2d", "channel"), NF.conv2d, (Arg((1, 3, 5, 5)), Arg((2, 2, 3, 3)))),
        ("conv2d[kernel-too-large]", "ShapeError", "conv2d", NF.conv2d, (Arg((1, 2, 2, 2)), Arg((2, 2, 3, 3)))),
        ("conv2d[int]", "DTypeError", "conv2d", NF.conv2d, (Arg((1, 2, 5, 5), "int32"), Arg((2, 2, 3, 3), "int32"))),
        ("add[autodiff-mix]", "DeviceMismatch", ("add", "autodiff"), F.add, (A, Arg((2, 3), autodiff=True))),
        ("matmul[autodiff-mix]", "DeviceMismatch", ("matmul", "autodiff"), F.matmul, (Arg((3, 2), autodiff=True), A)),
        ("where[autodiff-mix]", "DeviceMismatch", "where", F.where,
         (Arg((2, 3), "bool"), A, Arg((2, 3), autodiff=True))),
        ("concat[autodiff-mix]", "DeviceMismatch", "concat", lambda a, b: F.concat([a, b]),
         (A, Arg((2, 3), autodiff=True))),
        ("require_grad[int]", "DTypeError", "require_grad", lambda x: x.require_grad(),
         (Arg((2,), "int64", autodiff=True),)),
        ("require_grad[plain-device]", "AutodiffError", "require_grad", lambda x: x.require_grad(), (A,)),
        ("require_grad[non-leaf]", "AutodiffError", "not a leaf",
         lambda x: (x.require_grad() * 2).require_grad(), (Arg((2,), autodiff=True),)),
        ("backward[non-scalar]", "AutodiffError", "backward",
         lambda x: (x.require_grad() * 2).backward(), (Arg((2,), autodiff=True),)),
        ("backward[plain-device]", "AutodiffError", "backward", lambda x: x.sum().backward(), (A,)),
    ]
    for name, err, match, fn, args in E:
        _add(f"error:{name}", name.split("[")[0], "error", fn, args, error=err, match=match)
