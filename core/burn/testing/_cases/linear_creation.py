"""Conformance cases: Linear algebra and creation (including random) ops."""
from __future__ import annotations

import math

import numpy as np

import burn

from .._table import ALL_DTYPES, FLOATS, Arg, _add
from ._common import _family


# -- linear algebra -------------------------------------------------------------------------

def _linear():
    F = burn
    shapes = [("2d", (2, 3), (3, 4)), ("batched", (5, 2, 3), (3, 4)), ("broadcast", (2, 1, 2, 3), (4, 3, 2)),
              ("1d@2d", (3,), (3, 4)), ("2d@1d", (2, 3), (3,)), ("1d@1d", (3,), (3,)),
              ("3d@1d", (2, 2, 3), (3,)), ("1d@3d", (3,), (2, 3, 4))]
    for tag, sa, sb in shapes:
        dts = FLOATS + ("int32", "int64") if tag in ("2d", "batched") else ("float32",)
        _family("matmul", F.matmul, np.matmul, (Arg(sa), Arg(sb)), dts, variant=tag, tol=3.0, tol16=3.0)
    _add("__matmul__[float32]", "matmul", "forward", lambda a, b: a @ b, (Arg((2, 3)), Arg((3, 2))), np.matmul)
    _add("tensordot[axes=1,float32]", "tensordot", "forward", lambda a, b: F.tensordot(a, b, axes=1),
         (Arg((2, 3)), Arg((3, 4))), lambda a, b: np.tensordot(a, b, axes=1), tol=3.0)
    _family("tensordot", lambda a, b: F.tensordot(a, b, axes=([1, 0], [0, 2])),
            lambda a, b: np.tensordot(a, b, axes=([1, 0], [0, 2])), (Arg((2, 3, 4)), Arg((3, 5, 2))),
            ("float32",), variant="axes=pairs", tol=3.0)
    _family("vecdot", F.vecdot, lambda a, b: np.sum(a * b, axis=-1), (Arg((2, 3)), Arg((3,))), ("float32",),
            tol=3.0)
    _family("outer", F.outer, np.outer, (Arg((3,)), Arg((4,))), ("float32", "int64"))
    _family("inner", F.inner, np.inner, (Arg((2, 3)), Arg((4, 3))), ("float32",), tol=3.0)
    _family("dot", F.dot, np.dot, (Arg((3,)), Arg((3,))), ("float32",), tol=3.0)
    einsums = [("bij,bjk->bik", [(2, 2, 3), (2, 3, 4)]), ("bhqd,bhkd->bhqk", [(1, 2, 3, 4), (1, 2, 5, 4)]),
               ("bn,anm,bm->ba", [(2, 3), (4, 3, 2), (2, 2)]), ("ii->i", [(3, 3)]),
               ("...ij,j->...i", [(2, 1, 3, 4), (4,)]), ("ij->", [(2, 3)])]
    for spec, shapes in einsums:
        _family("einsum", lambda *ops, spec=spec: F.einsum(spec, *ops),
                lambda *ops, spec=spec: np.einsum(spec, *ops), tuple(Arg(s) for s in shapes),
                ("float32", "int64") if spec == "bij,bjk->bik" else ("float32",), variant=spec, tol=3.0)


# -- creation ------------------------------------------------------------------------------

def _creation():
    F = burn
    for d in ALL_DTYPES:
        _add(f"zeros[{d}]", "zeros", "forward", lambda device, d=d: F.zeros((2, 3), dtype=d, device=device),
             (), lambda: np.zeros((2, 3)), out=d, needs_device=True)
        _add(f"ones[{d}]", "ones", "forward", lambda device, d=d: F.ones((3,), dtype=d, device=device),
             (), lambda: np.ones((3,)), out=d, needs_device=True)
        _add(f"full[{d}]", "full", "forward", lambda device, d=d: F.full((2, 2), 1, dtype=d, device=device),
             (), lambda: np.full((2, 2), 1), out=d, needs_device=True)
        _add(f"eye[{d}]", "eye", "forward", lambda device, d=d: F.eye(3, 4, k=1, dtype=d, device=device),
             (), lambda: np.eye(3, 4, 1), out=d, needs_device=True)
        _add(f"tensor[{d}]", "tensor", "forward", lambda device, d=d: F.tensor([[0, 1, 3], [2, 1, 0]], dtype=d,
                                                                              device=device),
             (), lambda: np.array([[0, 1, 3], [2, 1, 0]]), out=d, needs_device=True)
    inferred = [("tensor[float-inferred]", lambda device: F.tensor([1.5, -2.0], device=device), lambda: np.array([1.5, -2.0]),
                 "float32"),
                ("tensor[int-inferred]", lambda device: F.tensor([[1, 2]], device=device), lambda: np.array([[1, 2]]), "int64"),
                ("tensor[bool-inferred]", lambda device: F.tensor([True, False], device=device), lambda: np.array([1, 0]),
                 "bool"),
                ("tensor[numpy-float64]", lambda device: F.tensor(np.array([0.25]), device=device),
                 lambda: np.array([0.25]), "float64"),   # an array keeps its dtype
                ("tensor[numpy-int32]", lambda device: F.tensor(np.array([3], np.int32), device=device),
                 lambda: np.array([3]), "int32"),
                ("tensor[scalar]", lambda device: F.tensor(2.5, device=device), lambda: np.array(2.5), "float32"),
                ("full[float-inferred]", lambda device: F.full((2,), 0.5, device=device), lambda: np.full(2, 0.5),
                 "float32"),
                ("full[int-inferred]", lambda device: F.full((2,), 3, device=device), lambda: np.full(2, 3), "int64"),
                ("full[bool-inferred]", lambda device: F.full((2,), True, device=device), lambda: np.full(2, True),
                 "bool"),
                ("zeros[default]", lambda device: F.zeros((2, 1), device=device), lambda: np.zeros((2, 1)), "float32"),
                ("empty[shape]", lambda device: F.empty((2, 3), device=device) * 0, lambda: np.zeros((2, 3)),
                 "float32"),
                ("arange[stop]", lambda device: F.arange(5, device=device), lambda: np.arange(5), "int64"),
                ("arange[start,stop,step]", lambda device: F.arange(1, 8, 3, device=device),
                 lambda: np.arange(1, 8, 3), "int64"),
                ("arange[negative-step]", lambda device: F.arange(5, 0, -2, device=device),
                 lambda: np.arange(5, 0, -2), "int64"),
                ("arange[float]", lambda device: F.arange(0.0, 1.0, 0.25, device=device),
                 lambda: np.arange(0.0, 1.0, 0.25), "float32"),
                ("arange[dtype]", lambda device: F.arange(4, dtype=F.float64, device=device),
                 lambda: np.arange(4.0), "float64"),
                ("arange[empty]", lambda device: F.arange(3, 3, device=device), lambda: np.arange(3, 3), "int64"),
                ("linspace", lambda device: F.linspace(0, 1, 5, device=device), lambda: np.linspace(0, 1, 5),
                 "float32"),
                ("linspace[endpoint=False]", lambda device: F.linspace(-1, 1, 4, endpoint=False, device=device),
                 lambda: np.linspace(-1, 1, 4, endpoint=False), "float32"),
                ("linspace[float64]", lambda device: F.linspace(0, 2, 3, dtype=F.float64, device=device),
                 lambda: np.linspace(0, 2, 3), "float64"),
                ("eye[square]", lambda device: F.eye(3, device=device), lambda: np.eye(3), "float32"),
                ("eye[k=-1]", lambda device: F.eye(3, k=-1, device=device), lambda: np.eye(3, k=-1), "float32")]
    for name, fn, ref, out in inferred:
        _add(name, name.split("[")[0], "forward", fn, (), ref, out=out, needs_device=True)
    for name, fn, ref in [("zeros_like", F.zeros_like, np.zeros_like), ("ones_like", F.ones_like, np.ones_like),
                          ("full_like", lambda x: F.full_like(x, 2), lambda x: np.full_like(x, 2))]:
        _family(name, fn, ref, (Arg((2, 3)),), ("float32", "int32", "bool", "bfloat16"), grad=False)
    _add("empty_like[shape]", "empty_like", "forward", lambda x: F.empty_like(x) * 0, (Arg((2, 3), "int32"),),
         lambda x: np.zeros((2, 3)))
    _add("rand_like", "rand_like", "forward", lambda x: F.rand_like(F.zeros((2000,), dtype=x.dtype, device=x.device)),
         (Arg((1,), "float64"),), prop=_uniform_prop, out="float64")
    _add("randn_like", "randn_like", "forward", lambda x: F.randn_like(F.zeros((2000,), device=x.device)) * 2 + 1,
         (Arg((1,)),), prop=_normal_prop, out="float32")
    _add("asarray[tensor-unchanged]", "asarray", "forward", lambda x: F.asarray(x) * (F.asarray(x) is x),
         (Arg(),), lambda x: x)
    _add("asarray[list,dtype]", "asarray", "forward", lambda device: F.asarray([[1, 2]], dtype=F.int8, device=device),
         (), lambda: np.array([[1, 2]]), out="int8", needs_device=True)
    for d in ("float16", "int32", "uint8", "bool", "float64"):
        _add(f"from_numpy[{d}]", "from_numpy", "forward",
             lambda device, d=d: F.from_numpy(np.arange(6).reshape(2, 3).astype(d), device=device), (),
             lambda d=d: np.arange(6).reshape(2, 3).astype(d), out=d, needs_device=True)
        _add(f"from_dlpack[{d}]", "from_dlpack", "forward",
             lambda device, d=d: F.from_dlpack(np.arange(6).reshape(2, 3).astype(d), device=device), (),
             lambda d=d: np.arange(6).reshape(2, 3).astype(d), out=d, needs_device=True)
    _add("from_dlpack[tensor-round-trip,float32]", "from_dlpack", "forward",
         lambda x: F.from_dlpack(x * 2, device=x.device), (Arg(),), lambda x: x * 2)
    _add("zeros_like[dtype]", "zeros_like", "forward", lambda x: F.zeros_like(x, dtype=F.int8), (Arg((2,)),),
         lambda x: np.zeros(2), out="int8")

    # random: properties, and reproducibility from device.seed()
    uniform_prop, normal_prop = _uniform_prop, _normal_prop

    def randint_prop(v):
        assert set(np.unique(v).tolist()) == {-2, -1, 0, 1, 2}, np.unique(v)

    def same_prop(a, b, c):
        assert np.array_equal(a, b), "the same seed gave different values"
        assert not np.array_equal(a, c), "consecutive draws were equal"

    def seeded(device):
        device.seed(1234)
        a = F.rand((16,), device=device)
        c = F.rand((16,), device=device)
        a_val = a.numpy()
        device.seed(1234)
        b = F.rand((16,), device=device)
        return F.tensor(a_val, device=device), b, c
    rnd = [("rand", lambda device: F.rand((2000,), device=device), uniform_prop, "float32"),
           ("rand[float64]", lambda device: F.rand((2000,), dtype=F.float64, device=device), uniform_prop, "float64"),
           ("randn", lambda device: F.randn((2000,), mean=1.0, std=2.0, device=device), normal_prop, "float32"),
           ("randint", lambda device: F.randint(-2, 3, (500,), device=device), randint_prop, "int64"),
           ("rand[seeded]", seeded, same_prop, "float32")]
    for name, fn, prop, out in rnd:
        _add(name, name.split("[")[0], "forward", fn, (), prop=prop, out=out, needs_device=True)


def _uniform_prop(v):
    assert v.shape == (2000,), v.shape
    assert 0.0 <= v.min() and v.max() < 1.0, (v.min(), v.max())
    assert abs(v.mean() - 0.5) < 0.05 and abs(v.std() - math.sqrt(1 / 12)) < 0.03, (v.mean(), v.std())


def _normal_prop(v):
    assert v.shape == (2000,), v.shape
    assert abs(v.mean() - 1.0) < 0.15 and abs(v.std() - 2.0) < 0.15, (v.mean(), v.std())
