"""burn-cuda's native indexing, scatter-add and creation ops against numpy, on the stand-in
for CuPy of tests/fakecupy.py with burn-flex impossible to import.

Checks the index plan (basic dims, advanced block placement, negative and out-of-range
indices), duplicate accumulation of ``index_add``/``scatter_add`` through the generated
atomicAdd kernels (every dtype, with its widening), last-write-wins ``index_put``,
arange/linspace/eye matching numpy value for value, and seeded random numbers equal to
flex's. The CUDA C of the scatter kernels is compile-checked by test_cuda_nvcc.py.
"""
from __future__ import annotations

import numpy as np
import pytest

import burn

pytest.importorskip("burn_cuda")

from fakecupy import run_probe  # noqa: E402  (tests/ is on sys.path under pytest)
import index_keys  # noqa: E402

PROBE = r'''
import json, numpy as np, ml_dtypes, burn, cupy
dev = burn.Device.cuda(0)
ad = dev.autodiff()
bad, seen = [], {}
T = lambda x, d=dev, dtype=None: burn.tensor(x, device=d, dtype=dtype)

def check(name, got, want, exact=True, tol=0.0):
    try:
        got = np.asarray(got)
        assert got.shape == want.shape, (got.shape, want.shape)
        assert got.dtype == want.dtype, (got.dtype, want.dtype)
        if exact:
            np.testing.assert_array_equal(got, want)
        else:
            np.testing.assert_allclose(got.astype(np.complex128), want.astype(np.complex128), rtol=tol, atol=tol)
        seen[name] = True
    except Exception as e:
        bad.append(f"{name}: {type(e).__name__}: {str(e)[:500]}")

exec(INDEX_KEYS)                                      # I1, I2, KEYS: tests/index_keys.py
key = lambda d, k: tuple(T(a, d) if isinstance(a, np.ndarray) else a for a in k)
rng = np.random.default_rng(0)
for n, k in enumerate(KEYS):
    x = rng.standard_normal((4, 5, 6)).astype(np.float32)
    want = x[k]
    tx = T(x, ad).require_grad()
    y = tx[key(ad, k)]
    check(f"index{n}", y.numpy(), want)
    g = rng.standard_normal(want.shape).astype(np.float32)
    grads = (y * T(g, ad)).sum().backward()
    z = np.zeros_like(x)
    np.add.at(z, k, g)
    check(f"index_add{n}", tx.grad(grads).numpy(), z, exact=False, tol=1e-6)
    v = rng.standard_normal(want.shape[-1:]).astype(np.float32)
    w = x.copy()
    w[k] = v
    check(f"index_put{n}", burn.index_put(T(x), key(dev, k), T(v)).numpy(), w)

# every dtype: gather, accumulate (duplicates), put (last write wins); int8/uint8 wrap as numpy
DT = {"bool": np.bool_, "uint8": np.uint8, "int8": np.int8, "int32": np.int32, "int64": np.int64,
      "float16": np.float16, "bfloat16": ml_dtypes.bfloat16, "float32": np.float32, "float64": np.float64,
      "complex64": np.complex64, "complex128": np.complex128}
idx = np.array([2, 0, 2, -1, 2])
for name, nd in DT.items():
    if name == "bool":
        x = rng.integers(0, 2, (5, 3)).astype(nd)
    elif name in ("uint8", "int8"):
        x = rng.integers(0, 120, (5, 3)).astype(nd)
    elif name == "int64":
        x = (rng.integers(-2 ** 40, 2 ** 40, (5, 3)) * 1000).astype(nd)
    elif name.startswith("complex"):
        x = (rng.standard_normal((5, 3)) + 1j * rng.standard_normal((5, 3))).astype(nd)
    else:
        x = rng.integers(-8, 8, (5, 3)).astype(nd)      # small integers: exact in every float type
    bt = getattr(burn, name)
    check(f"gather {name}", T(x, dtype=bt)[T(idx)].numpy(), x[idx])
    z = np.zeros_like(x)
    np.add.at(z, (idx,), x)
    from burn.ops.movement import index_add_p
    from burn.tensor import apply
    r = apply(index_add_p, (T(x, dtype=bt), T(idx)), {"spec": (("t", 0),), "shape": (5, 3)})
    check(f"index_add {name}", r.numpy(), z)
    v = x[::-1].copy()
    w = x.copy()
    w[idx] = v
    check(f"index_put {name}", burn.index_put(T(x, dtype=bt), T(idx), T(v, dtype=bt)).numpy(), w)
    # scatter_add along axis 1 (take_along_axis's gradient), duplicates and negative indices
    si = np.array([[0, 2, 0, -1], [1, 1, 1, 1], [2, 0, -3, 2], [0, 0, 0, 0], [2, 2, 1, 0]])
    src = np.resize(x.reshape(-1), si.shape).astype(nd)
    o = x.copy()
    np.add.at(o, (np.arange(5)[:, None], si), src)
    check(f"scatter_add {name}", burn.scatter_add(T(x, dtype=bt), T(si), T(src, dtype=bt), axis=1).numpy(), o)

errors = {}
x6 = T(np.arange(24, dtype=np.int64).reshape(6, 4))
for label, fn in (("index", lambda: x6[T(np.array([5, 6, 2]))].numpy()),
                  ("index_neg", lambda: x6[:, T(np.array([-5]))].numpy()),
                  ("index_put", lambda: burn.index_put(x6, T(np.array([0, 9])), 1).numpy()),
                  ("take_along_axis", lambda: burn.take_along_axis(x6, T(np.array([[4]])), axis=1).numpy()),
                  ("scatter_add", lambda: burn.scatter_add(x6, T(np.array([[0], [6]])), T(np.ones((2, 1), np.int64)),
                                                           axis=0).numpy())):
    try:
        fn()
        errors[label] = "no error"
    except Exception as e:
        errors[label] = [type(e).__name__, isinstance(e, burn.BurnError), str(e)]

# creation: numpy's values exactly
for a in [(0, 10, 3), (5, -7, -2), (0.0, 1.0, 0.1), (1, 2.5, 0.3), (-1.5, 2, 0.7), (0, 1e-3, 1e-4), (3, 3, 1),
          (0.1, 0.35, 0.05), (0.0, 5e-324, 1e300), (0.0, -5e-324, 1e300)]:
    for dt in (burn.float32, burn.float64, burn.int64):
        check(f"arange{a} {dt}", burn.arange(*a, device=dev, dtype=dt).numpy(),
              np.arange(*a).astype(dt.name))
for a, kw in [((0, 1, 7), {}), ((0, 1, 7), {"endpoint": False}), ((2.5, -3, 1), {}), ((1, 1, 5), {}),
              ((0, 10, 0), {}), ((-1, 1e-300, 4), {}), ((0, 100, 33), {})]:
    for dt in (burn.float32, burn.float64, burn.int32):
        check(f"linspace{a}{kw} {dt}", burn.linspace(*a, device=dev, dtype=dt, **kw).numpy(),
              np.linspace(*a, **kw).astype(dt.name))
for a in [(3,), (3, 5), (4, 2, 1), (3, 4, -2), (2, 3, 7)]:
    for dt in (burn.float32, burn.bool, burn.bfloat16):
        got = burn.eye(*a[:2], k=a[2] if len(a) > 2 else 0, device=dev, dtype=dt)
        check(f"eye{a} {dt}", got.numpy(), np.eye(*a, dtype=DT[dt.name]))

dev.seed(1234)
rand = [burn.rand((3, 4), device=dev).numpy().tolist(), burn.randn((5,), device=dev, dtype=burn.float64).numpy().tolist(),
        burn.randint(0, 10, (6,), device=dev).numpy().tolist()]
from burn.dispatch import registry
fallbacks = sorted(op for (op, b), es in registry.kernels.items() if b == "cuda" and "::" not in op
                   for k in es if k.host_fallback)
kernels = {op: registry.kernel(op, "cuda").__name__ for op in ("index", "index_add", "index_put", "scatter_add",
                                                               "arange", "linspace", "eye", "rand_uniform")}
print(json.dumps({"bad": bad, "n": len(seen), "errors": errors, "rand": rand, "fallbacks": fallbacks,
                  "kernels": kernels, "launches": sorted(set(l for l in cupy.LAUNCHES if l.startswith("burn_")))}))
'''


@pytest.fixture(scope="module")
def res(tmp_path_factory):
    keys_src = open(index_keys.__file__).read()
    return run_probe(tmp_path_factory.mktemp("idx"), f"INDEX_KEYS = {keys_src!r}\n" + PROBE, without_flex=True)


def test_indexing_scatter_and_creation_match_numpy(res):
    assert not res["bad"], "\n".join(res["bad"])
    assert res["n"] >= 11 * 3 + 11 * 4 + 10 * 3 + 7 * 3 + 5 * 3


def test_every_accumulation_type_has_run_its_atomic_kernel(res):
    assert res["launches"] == ["burn_scatter_add_f32", "burn_scatter_add_f64", "burn_scatter_add_i32",
                               "burn_scatter_add_i64"]


def test_out_of_range_indices_raise_numpys_message(res):
    e = res["errors"]
    # IndexOutOfRange (a ShapeError and an IndexError) with numpy's message, then the user's line
    for label, msg in (("index", "index: index 6 is out of bounds for axis 0 with size 6"),
                       ("index_neg", "index: index -5 is out of bounds for axis 1 with size 4"),
                       ("index_put", "index_put: index 9 is out of bounds for axis 0 with size 6"),
                       ("take_along_axis", "take_along_axis: index 4 is out of bounds for axis 1 with size 4"),
                       ("scatter_add", "scatter_add: index 6 is out of bounds for axis 0 with size 6")):
        assert e[label][:2] == ["IndexOutOfRange", True] and e[label][2].startswith(msg + " (in "), e
    x = np.arange(24).reshape(6, 4)
    with pytest.raises(IndexError, match="index 6 is out of bounds for axis 0 with size 6"):
        x[np.array([5, 6, 2])]           # the message is numpy's


def test_no_core_primitive_is_a_host_fallback_and_kernels_are_native(res):
    assert res["fallbacks"] == []
    for op, name in res["kernels"].items():
        assert name.startswith("cuda_") and "host" not in name, (op, name)


def test_seeded_random_numbers_equal_flex(res):
    dev = burn.Device.flex()
    dev.seed(1234)
    want = [burn.rand((3, 4), device=dev).numpy().tolist(),
            burn.randn((5,), device=dev, dtype=burn.float64).numpy().tolist(),
            burn.randint(0, 10, (6,), device=dev).numpy().tolist()]
    assert res["rand"] == want
