"""flex's compiled element-wise groups (burn_flex.jit_groups): random groups of every compiled
op over broadcast layouts (full, scalar, row, channel, column, 4-d), with NaN, +-inf, -0.0 and
subnormals, give the bits of flex's numpy path and of numpy itself; reduction prologues and
matmul epilogues; one and several threads; the fallbacks (an op outside the set, too many
axes, small groups) and what is compiled (``status``)."""
from __future__ import annotations

import numpy as np
import pytest

import burn
from burn_flex import jit, jit_groups, threads

# the random groups overflow and divide by zero on purpose (numpy's kernels warn, the compiled ones do not)
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

SPECIALS = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, -1e-40, 3.4e38, -1.0, 1.0], np.float32)


@pytest.fixture(autouse=True)
def _fresh_plans():
    if jit.kernels() is None:
        pytest.fail(f"flex's JIT is unavailable here: {jit.status()['reason']}")
    burn.fusion.clear_plan_cache()
    yield
    burn.fusion.clear_plan_cache()


@pytest.fixture
def restore_threads():
    n = threads.num_threads()
    yield
    threads.set_num_threads(n)


def _values(shape, rng):
    x = (rng.standard_normal(shape) * 3).astype(np.float32)
    flat = x.reshape(-1)
    k = min(flat.size, 40)
    flat[rng.choice(flat.size, k, replace=False)] = rng.choice(SPECIALS, k)
    return x


def _numpy_kernel(name):
    """flex's numpy erf / gelu (the JIT kernels' reference, bit for bit)."""
    from burn_flex.kernels import elementwise as kew
    return {"erf": kew._erf_numpy, "gelu": kew._gelu_numpy}[name]


# each op: (arity, burn function, numpy function, result kind)
_F, _B = "f", "b"
OPS = {
    "add": (2, lambda a, b: a + b, np.add, _F), "sub": (2, lambda a, b: a - b, np.subtract, _F),
    "mul": (2, lambda a, b: a * b, np.multiply, _F), "div": (2, lambda a, b: a / b, np.divide, _F),
    "maximum": (2, burn.maximum, np.maximum, _F), "minimum": (2, burn.minimum, np.minimum, _F),
    "neg": (1, lambda a: -a, np.negative, _F), "abs": (1, burn.abs, np.abs, _F),
    "sqrt": (1, burn.sqrt, np.sqrt, _F), "square": (1, burn.square, np.square, _F),
    "relu": (1, burn.relu, lambda a: np.maximum(a, np.float32(0)), _F),
    "erf": (1, burn.erf, lambda a: _numpy_kernel("erf")(a), _F),
    "gelu": (1, burn.nn.functional.gelu, lambda a: _numpy_kernel("gelu")(a), _F),
    "gt": (2, lambda a, b: a > b, np.greater, _B), "le": (2, lambda a, b: a <= b, np.less_equal, _B),
    "eq": (2, lambda a, b: a == b, np.equal, _B), "ne": (2, lambda a, b: a != b, np.not_equal, _B),
}


def _random_group(rng, inputs_burn, inputs_np, n_ops):
    """A random expression over the inputs; returns (burn results, numpy results) of its last
    three values (so several values leave the group)."""
    fvals = list(zip(inputs_burn, inputs_np))
    (b0, n0), (b1, n1), (b2, n2) = fvals[:3]
    with np.errstate(all="ignore"):
        fvals.append((b0 * b1 - b2, n0 * n1 - n2))     # one value of the full shape to build on
    bvals = []
    out = []
    for _ in range(n_ops):
        choice = rng.choice(list(OPS) + ["where", "logical"])
        if choice == "where" and bvals:
            cb, cn = bvals[rng.integers(len(bvals))]
            (ab, an), (bb, bn) = (fvals[rng.integers(len(fvals))] for _ in range(2))
            v = (burn.where(cb, ab, bb), np.where(cn, an, bn))
            fvals.append(v)
        elif choice == "logical" and len(bvals) >= 2:
            (ab, an), (bb, bn) = (bvals[rng.integers(len(bvals))] for _ in range(2))
            which = rng.integers(4)
            fns = [(burn.logical_and, np.logical_and), (burn.logical_or, np.logical_or),
                   (burn.logical_xor, np.logical_xor)]
            v = ((burn.logical_not(ab), np.logical_not(an)) if which == 3 else
                 (fns[which][0](ab, bb), fns[which][1](an, bn)))
            bvals.append(v)
        else:
            name = choice if choice in OPS else "add"
            arity, bf, nf, kind = OPS[name]
            args = [fvals[rng.integers(len(fvals))] for _ in range(arity)]
            with np.errstate(all="ignore"):
                v = (bf(*[a[0] for a in args]), nf(*[a[1] for a in args]))
            (fvals if kind == _F else bvals).append(v)
        out.append(v)
    out = [fvals[len(inputs_burn)]] + out[-3:]          # the full-shape value leaves too (not dead code)
    return [b for b, _ in out], [n for _, n in out]


# above run_small_flush's 65,536 elements, so the flushes go through the planner and its groups
LAYOUTS = {
    "full": [(160, 512), (160, 512), (160, 512)],
    "row_bias": [(160, 512), (512,), (160, 512)],
    "scalar": [(160, 512), (), (1, 1)],
    "channel": [(32, 6, 24, 24), (1, 6, 1, 1), (32, 6, 24, 24)],
    "column": [(160, 513), (160, 1), (1, 513)],
    "4d_mixed": [(3, 5, 7, 1024), (5, 1, 1024), (3, 1, 7, 1)],
}


def _run(rng_seed, layout, n_ops):
    rng = np.random.default_rng(rng_seed)
    shapes = LAYOUTS[layout]
    xs = [_values(s, rng) for s in shapes]
    # the inputs leave the graph as arrays (a flush), so the group below starts from them
    bx = [burn.tensor(x) for x in xs]
    for t in bx:
        t.numpy()
    outs_b, outs_n = _random_group(rng, bx, xs, n_ops)
    return [o.numpy() for o in outs_b], outs_n


def _same(a, b):
    """Equal values bit for bit, -0.0 and subnormals included; NaN where the other has NaN (its
    sign and payload follow operand order, which neither numpy's SIMD loops nor LLVM fix)."""
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, b.dtype, a.shape, b.shape)
    if a.dtype == np.float32:
        nan = np.isnan(a)
        np.testing.assert_array_equal(nan, np.isnan(b))
        np.testing.assert_array_equal(a[~nan].view(np.int32), b[~nan].view(np.int32))
    else:
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("seed", range(6))
def test_compiled_groups_give_the_numpy_paths_bits(monkeypatch, layout, seed):
    before = jit_groups.status()["calls"]
    fast, ref = _run(seed, layout, 9 + seed)
    compiled = jit_groups.status()["calls"] - before
    monkeypatch.setattr(jit_groups, "ENABLED", False)
    burn.fusion.clear_plan_cache()
    slow, _ = _run(seed, layout, 9 + seed)
    for a, b, n in zip(fast, slow, ref):
        _same(a, b)                      # compiled == flex's numpy runners, bit for bit
        _same(a, np.asarray(n))         # == numpy op by op
    if layout != "4d_mixed":             # the 4-d layout merges to 4 axes: the numpy path runs it
        assert compiled > 0, "no group ran compiled"


def test_relu_gradient_and_bias_sum_group_runs_compiled_and_equal(monkeypatch, restore_threads):
    rng = np.random.default_rng(3)
    z, g = _values((64, 6, 24, 24), rng), _values((64, 6, 24, 24), rng)
    z[np.isnan(z)] = 0.5
    g[np.isnan(g)] = 0.25

    def step():
        zb, gb = burn.tensor(z), burn.tensor(g)
        zb.numpy(), gb.numpy()
        d = burn.where(zb > 0.0, gb, 0.0)
        return d.numpy(), d.sum(axis=(0, 2, 3)).numpy()
    runs = []
    for n in (1, 2):
        threads.set_num_threads(n)
        before = jit_groups.status()["calls"]
        runs.append(step())
        assert jit_groups.status()["calls"] > before
    for a, b in zip(*runs):
        _same(a, b)
    monkeypatch.setattr(jit_groups, "ENABLED", False)
    burn.fusion.clear_plan_cache()
    for a, b in zip(runs[0], step()):
        _same(a, b)
    _same(runs[0][0], np.where(z > 0, g, np.float32(0)))


def test_matmul_epilogue_runs_compiled_and_equal(monkeypatch):
    rng = np.random.default_rng(4)
    a, w = rng.standard_normal((512, 64)).astype(np.float32), rng.standard_normal((64, 192)).astype(np.float32)
    bias = rng.standard_normal(192).astype(np.float32)

    def step():
        y = burn.tensor(a) @ burn.tensor(w)
        return y.numpy(), burn.relu(y + burn.tensor(bias)).numpy()
    before = jit_groups.status()["calls"]
    fast = step()
    assert jit_groups.status()["calls"] > before
    monkeypatch.setattr(jit_groups, "ENABLED", False)
    burn.fusion.clear_plan_cache()
    for x, y in zip(fast, step()):
        _same(x, y)
    _same(fast[1], np.maximum(fast[0] + bias, np.float32(0)))


def test_an_op_outside_the_set_keeps_an_elementwise_group_numpy_and_small_groups_stay_numpy():
    rng = np.random.default_rng(5)
    x, y = rng.standard_normal((256, 512)).astype(np.float32), rng.standard_normal((256, 512)).astype(np.float32)
    bx, by = burn.tensor(x), burn.tensor(y)
    bx.numpy(), by.numpy()
    before = jit_groups.status()["calls"]
    got = ((bx * by + 1.0).exp() - by).numpy()          # exp is not compiled: the blocked numpy path
    assert jit_groups.status()["calls"] == before
    np.testing.assert_array_equal(got, np.exp(x * y + np.float32(1)) - y)
    got = ((bx * by + 1.0).exp() - by).sum(axis=1).numpy()   # a reduction's prologue: mul, add compiled
    assert jit_groups.status()["calls"] == before + 1
    np.testing.assert_allclose(got, (np.exp(x * y + np.float32(1)) - y).sum(axis=1), rtol=1e-5)
    small = burn.tensor(x[:8, :8])
    small.numpy()
    before = jit_groups.status()["calls"]
    np.testing.assert_array_equal((small * 2.0 + 1.0).numpy(), x[:8, :8] * np.float32(2) + np.float32(1))
    assert jit_groups.status()["calls"] == before       # below MIN_SIZE: the numpy path


def test_layouts_merge_axes_and_refuse_more_than_three():
    out, dims, strides, inner = jit_groups._layout([(8, 6, 12, 12), (1, 6, 1, 1)])
    assert out == (8, 6, 12, 12) and dims == [8, 6, 144] and strides == [[864, 144, 1], [0, 1, 0]]
    assert inner == (1, 0)
    assert jit_groups._layout([(64, 96), (96,)])[1:] == ([64, 96], [[96, 1], [0, 1]], (1, 1))
    assert jit_groups._layout([(3, 5, 7, 64), (5, 1, 64), (3, 1, 7, 1)]) is None
    assert jit_groups._layout([(), ()])[1] == [1]


def test_strided_and_empty_inputs_run_correctly():
    rng = np.random.default_rng(6)
    a = rng.standard_normal((512, 300)).astype(np.float32)
    b = rng.standard_normal((300, 512)).astype(np.float32)
    ta, tb = burn.tensor(a), burn.tensor(b)
    ta.numpy(), tb.numpy()
    got = burn.maximum(ta * 2.0, tb.T - 1.0).numpy()           # a transposed (strided) input
    np.testing.assert_array_equal(got, np.maximum(a * np.float32(2), b.T - np.float32(1)))
    e = burn.tensor(np.zeros((0, 300), np.float32))
    e.numpy()
    assert burn.relu(e * 2.0 + 1.0).numpy().shape == (0, 300)
    ones = burn.tensor(np.ones((1, 1), np.float32))
    got = (ta * ones + ones).numpy()                            # size-1 inputs of every rank
    np.testing.assert_array_equal(got, a * np.float32(1) + np.float32(1))


def test_without_the_jit_groups_run_the_numpy_path(monkeypatch):
    x = np.random.default_rng(7).standard_normal((256, 512)).astype(np.float32)
    want = np.maximum(x * np.float32(2) - np.float32(1), np.float32(0))
    monkeypatch.setenv("BURN_FLEX_JIT", "0")                 # switched off: nothing is planned
    from burn.fusion import FusedGroup
    m = burn.TensorMeta((256, 512), burn.float32)
    assert jit_groups.plan(FusedGroup("elementwise", [("add", {}, [("in", 0), ("in", 1)]),
                                                      ("relu", {}, [("op", 0)])], [m, m], [1], [m])) is None
    monkeypatch.delenv("BURN_FLEX_JIT")
    monkeypatch.setitem(jit._state, "kernels", None)          # unavailable (llvmlite missing): planned,
    monkeypatch.setitem(jit._state, "tried", True)            # then the numpy path when it would run
    burn.fusion.clear_plan_cache()
    bx = burn.tensor(x)
    bx.numpy()
    before = jit_groups.status()["calls"]
    np.testing.assert_array_equal(burn.relu(bx * 2.0 - 1.0).numpy(), want)
    assert jit_groups.status()["calls"] == before


def test_a_replayed_compiled_group_keeps_its_launch_and_equals_eager(monkeypatch):
    """A capture replay runs a compiled group through jit_groups._ReplayRunner (the launch for its
    sources' shapes found once): the same bits as the eager flush, replay after replay."""
    # shared DLPack memory another test left alive would make flex decline its flat replays
    monkeypatch.setattr(burn.dlpack, "GUARDS", {})
    rng = np.random.default_rng(5)
    w, bias = rng.standard_normal((64, 192)).astype(np.float32), rng.standard_normal(192).astype(np.float32)
    tw, tb = burn.tensor(w), burn.tensor(bias)

    def net(x):
        return burn.relu(x @ tw + tb) * 2.0
    xs = [rng.standard_normal((512, 64)).astype(np.float32) for _ in range(3)]
    g = burn.capture.trace(net, burn.tensor(xs[0]))
    got = [g(burn.tensor(x)).numpy() for x in xs]
    runners = [st[0] for st in g._prepared["flex"].runners[0].steps if isinstance(st[0], jit_groups._ReplayRunner)]
    assert runners and all(r.launch is not None for r in runners)
    for x, y in zip(xs, got):
        _same(y, net(burn.tensor(x)).numpy())


def test_a_launch_keeps_its_code_alive_after_the_kernel_cache_is_cleared():
    """_compiled drops every kernel when it is full; a cached runner's launch (and a native replay
    program's row) still calls that code: the launch must keep its LLVM engine. Run in a child
    process: before the fix the call after the clear was a segmentation fault."""
    import subprocess
    import sys
    import textwrap
    if not jit.enabled() or jit.kernels() is None:
        pytest.skip("flex's JIT is unavailable")
    code = textwrap.dedent("""
        import gc, numpy as np, burn
        from burn_flex import jit_groups
        x = np.linspace(-2, 2, 131072, dtype=np.float32).reshape(256, 512)
        b = np.arange(512, dtype=np.float32)
        f = lambda: burn.relu(burn.tensor(x) * 2.0 + burn.tensor(b)).numpy()
        want = f()
        assert jit_groups.status()["calls"] >= 1
        jit_groups._compiled.clear()
        gc.collect()
        for _ in range(3):
            assert np.array_equal(f(), want)
        print("ok")
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), (r.returncode, r.stderr[-2000:])
