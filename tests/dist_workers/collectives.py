"""Run on N ranks by tests/test_dist.py: every collective, every dtype, odd sizes, strided inputs,
mismatches as errors; prints OK at the end (each rank checks against numpy on what every rank sent)."""
import sys

import numpy as np

import burn
import burn_dist
from burn_dist.comm import CollectiveMismatch

DEVICES = sys.argv[1].split(",") if len(sys.argv) > 1 else ["flex"]
comm = burn_dist.init()
R, W = comm.rank, comm.world_size
assert W >= 2, W


def value(r, shape, dtype, salt=0):
    """What rank r contributes: small integers, exact in every dtype (float16 and bfloat16 too)."""
    rng = np.random.default_rng([r, salt, int(np.prod(shape))])
    v = rng.integers(-4, 5, size=shape)
    if dtype == "bool":
        return v > 0
    if dtype.startswith("uint"):
        v = np.abs(v)
    if dtype.startswith("complex"):
        return (v + 1j * rng.integers(-3, 4, size=shape)).astype(dtype)
    return v.astype(burn.dist.collectives._np_dtype(burn.as_dtype(dtype)))


REDUCE = {"sum": lambda a: a.sum(0), "prod": lambda a: a.prod(0), "max": lambda a: a.max(0),
          "min": lambda a: a.min(0), "mean": lambda a: a.mean(0)}
DTYPES = ["float16", "bfloat16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16",
          "uint32", "uint64", "bool", "complex64", "complex128"]


def reference(op, dtype, shape, salt):
    every = np.stack([value(r, shape, dtype, salt).astype(np.float64 if dtype in ("float16", "bfloat16") else
                                                         value(r, shape, dtype, salt).dtype) for r in range(W)])
    if dtype == "bool":
        return every.any(0) if op in ("sum", "max") else every.all(0)
    return REDUCE[op](every)


def ops_for(dtype):
    if dtype == "bool":
        return ["sum", "prod", "max", "min"]
    if dtype.startswith("complex"):
        return ["sum", "prod", "mean"]
    return ["sum", "prod", "max", "min"] + (["mean"] if dtype.startswith(("float", "bfloat")) else [])


# -- host buffers through the communicator (in place, out=, odd sizes) -----------------------------
HOST = DEVICES != ["cuda"]       # the cuda run (the CuPy stand-in) checks only the tensors' cuda path
for dtype in DTYPES if HOST else []:
    for shape in [(1,), (7, 3), (1001,)]:
        for op in ops_for(dtype):
            buf = value(R, shape, dtype, 1)
            comm.all_reduce(buf, op)
            want = reference(op, dtype, shape, 1)
            assert np.allclose(buf.astype(want.dtype), want, rtol=1e-3), (dtype, shape, op, buf, want)
    g = comm.all_gather(value(R, (5,), dtype, 2))
    assert all((g[r] == value(r, (5,), dtype, 2)).all() for r in range(W)), dtype
    b = value(R, (3, 3), dtype, 3)
    comm.broadcast(b, root=W - 1)
    assert (b == value(W - 1, (3, 3), dtype, 3)).all(), dtype
    if dtype != "bool":
        rs = comm.reduce_scatter(value(R, (W, 4), dtype, 4), "sum")
        want = reference("sum", dtype, (W, 4), 4)[R]
        assert np.allclose(rs.astype(want.dtype), want), (dtype, rs, want)

# out= with a strided (non-contiguous) input; an in-place strided buffer is refused at the call
src = value(R, (6, 8), "float32", 5)[:, ::2]
out = np.empty(src.shape, np.float32)
comm.all_reduce(src, "sum", out=out)
assert np.allclose(out, reference("sum", "float32", (6, 8), 5)[:, ::2])
try:
    comm.all_reduce(value(R, (6, 8), "float32", 5)[:, ::2], "sum")
    raise AssertionError("a strided in-place buffer was accepted")
except burn.BurnError as e:
    assert "C-contiguous" in str(e), e

# -- burn tensors: the lazy-graph ops, on each device ----------------------------------------------
checked = 0
for name in DEVICES:
    dev = burn.Device(name)
    for dtype in DTYPES:
        try:
            burn.zeros((1,), dtype=burn.as_dtype(dtype), device=dev)
        except burn.DTypeError:       # e.g. float16 on an OpenCL device without cl_khr_fp16
            continue
        checked += 1
        for op in ops_for(dtype)[:2] + (["mean"] if "mean" in ops_for(dtype) else []):
            t = burn.tensor(value(R, (3, 5), dtype, 6), device=dev)
            burn_dist.all_reduce(t, op)
            want = reference(op, dtype, (3, 5), 6)
            assert np.allclose(t.numpy().astype(want.dtype), want, rtol=1e-3), (name, dtype, op)
        g = burn_dist.all_gather(burn.tensor(value(R, (2, 3), dtype, 7), device=dev))
        assert g.shape == (W, 2, 3) and all((g.numpy()[r] == value(r, (2, 3), dtype, 7)).all() for r in range(W))
        b = burn.tensor(value(R, (4,), dtype, 8), device=dev)
        burn_dist.broadcast(b, root=0)
        assert (b.numpy() == value(0, (4,), dtype, 8)).all(), (name, dtype)
    # strided tensors (a transposed view, a slice) and odd sizes
    x = burn.tensor(value(R, (5, 7), "float32", 9), device=dev)
    s = burn_dist.all_gather(x.T[1:, ::2])
    want = np.stack([value(r, (5, 7), "float32", 9).T[1:, ::2] for r in range(W)])
    assert np.array_equal(s.numpy(), want), name
    y = x.T[::3] + 0
    burn_dist.all_reduce(y, "max")
    assert np.array_equal(y.numpy(), reference("max", "float32", (5, 7), 9).T[::3])
    rs = burn_dist.reduce_scatter(burn.tensor(value(R, (W, 3), "float32", 10), device=dev), "mean")
    assert np.allclose(rs.numpy(), reference("mean", "float32", (W, 3), 10)[R])
    many = burn_dist.all_reduce_many([burn.tensor(value(R, s_, "float32", 11), device=dev) for s_ in [(3,), (2, 2), (1,)]],
                                     "sum")
    for m, s_ in zip(many, [(3,), (2, 2), (1,)]):
        assert np.array_equal(m.numpy(), reference("sum", "float32", s_, 11)), name

# -- all_reduce reduces a buffer in place only when nothing else can read it ---------------------------
flex = burn.Device.flex()
want = reference("sum", "float32", (64,), 12)


def fresh():
    t = burn.tensor(value(R, (64,), "float32", 12)) + 0      # a computed value, this tensor's alone
    flex.sync()
    return t


def address(t):
    return t._h.data.ctypes.data


t = fresh()
before = address(t)
burn_dist.all_reduce(t, "sum")
flex.sync()
assert address(t) == before and np.array_equal(t.numpy(), want)    # donated: reduced where it lies
cases = {"a tensor sharing the value": lambda t: t.detach(),
         "a pending op reading it": lambda t: t * 1,
         "a view of it": lambda t: t[2:5],
         "its numpy array": lambda t: t.numpy(),
         "its numpy view": lambda t: np.asarray(t.numpy())[1:]}
for what, keep in cases.items():
    t = fresh()
    other = keep(t)
    old = value(R, (64,), "float32", 12)
    before = address(t)
    burn_dist.all_reduce(t, "sum")
    flex.sync()
    assert np.array_equal(t.numpy(), want), what
    assert address(t) != before, f"{what}: the buffer was reduced in place"
    seen = other.numpy() if isinstance(other, burn.Tensor) else other
    if what == "a view of it":                     # a view follows its base (numpy's meaning)
        assert np.array_equal(seen, want[2:5]), what
    elif what == "its numpy view":
        assert np.array_equal(seen, old[1:]), what
    else:
        assert np.array_equal(seen, old), what
# a result packed by all_reduce_many is a view of one buffer: never donated, its siblings intact
a, b = burn_dist.all_reduce_many([fresh(), fresh()], "sum")
flex.sync()
burn_dist.all_reduce(a, "sum")
assert np.array_equal(b.numpy(), want) and np.allclose(a.numpy(), want * W)

# -- a collective on different shapes on different ranks: an error on every rank, not a hang -----------
for what, call in [
        ("host", lambda: comm.all_reduce(np.zeros(10 + R, np.float32))),
        ("dtype", lambda: comm.all_reduce(np.zeros(4, np.float32 if R == 0 else np.float64))),
        ("op", lambda: comm.all_reduce(np.zeros(4, np.float32), "sum" if R == 0 else "max")),
        ("root", lambda: comm.broadcast(np.zeros(4, np.float32), root=R)),
        ("tensor", lambda: burn_dist.all_reduce(burn.zeros((3, 2 + R)), "sum").numpy())]:
    try:
        call()
        raise AssertionError(f"{what}: mismatched collective did not raise")
    except CollectiveMismatch as e:
        msg = str(e)
        assert "rank 0" in msg and "rank 1" in msg, msg
        if what == "tensor":
            assert "(3, 2)" in msg and "(3, 3)" in msg, msg

# -- DataParallel: models of different shapes are an error at creation, naming the tensor ------------
try:
    burn_dist.DataParallel(burn.nn.Sequential(burn.nn.Linear(3, 4), burn.nn.Linear(4, 2 + R)))
    raise AssertionError("mismatched models were accepted")
except burn.BurnError as e:
    assert "layers.1.weight" in str(e) and "(4, 2)" in str(e) and "(4, 3)" in str(e), e
# a parameter used on one rank only: an error, not a hang
dev = burn.Device.flex().autodiff()
m = burn_dist.DataParallel(burn.nn.Sequential(burn.nn.Linear(3, 3, device=dev), burn.nn.Linear(3, 1, device=dev)))
x = burn.ones((2, 3), device=dev)
loss = m(x).sum() if R == 0 else m.layers[0](x).sum()
try:
    g = m.backward(loss)
    [g.get(p).numpy() for p in m.parameters() if g.get(p) is not None]
    raise AssertionError("a gradient present on one rank only was accepted")
except burn.BurnError as e:
    assert "'layers.1.weight' (on 1 of 2 ranks)" in str(e) and "'layers.1.bias'" in str(e), e
assert checked >= len(DTYPES) * (len(DEVICES) - 1) + 10, checked
comm.barrier()
print(f"rank {R}: OK ({checked} dtype x device tensor cases)", flush=True)
