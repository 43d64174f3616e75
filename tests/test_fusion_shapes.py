"""Plans reused across sizes (issue 13 item 5): a flush missing its exact key finds the plan of
the same graph at other sizes by its relative key (burn.shapekey) and binds the new sizes.

Every program runs on many shapes against numpy (size-1 and broadcast dims, equal dims, empty
arrays, views, mixed dtypes, sizes on both sides of flex's blocking and splitting thresholds,
matmul epilogues), on flex and on wgpu (PoCL); the plan-cache counters show the plan really is
reused (``rebinds``) and not planned again (``planned``), and wgpu compiles no new kernel for
new sizes."""
import numpy as np
import pytest

import burn
from burn.fusion import _structure_key
from burn.graph import graph_for
from burn.shapekey import relative_key
from devices import flex_and_wgpu


@pytest.fixture(autouse=True)
def _planner_only(monkeypatch):
    # these tests check the planner and its plan cache: small flushes would otherwise run op by
    # op without a plan (burn.graph.run_small_flush, tested against the planner in
    # tests/test_small_flush.py)
    monkeypatch.setattr(burn.graph, "SMALL_FLUSH_NODES", 0)

F32 = np.float32


def _probe(a):
    return [(a * 2.0 + 1.0).exp().sum()]


def _probe_np(a):
    return [np.exp(a * F32(2) + F32(1)).sum()]


def _broadcast(a, b, c):
    r = burn.relu((a + b) * c - 0.5)
    return [r, r.sum(axis=0), (a * c).max(axis=1, keepdims=True)]


def _broadcast_np(a, b, c):
    r = np.maximum((a + b) * c - F32(0.5), 0)
    return [r, r.sum(axis=0), (a * c).max(axis=1, keepdims=True)]


def _mixed(a, h, i):
    w = (a + h.astype(burn.float32)) * i.astype(burn.float32) if h.dtype == burn.float16 else (a + h) * i
    return [w.abs().max(axis=1), (h * 2.0 + 1.0), (a.astype(burn.float64) * 3.0).mean(axis=0)]


def _mixed_np(a, h, i):
    w = (a + h.astype(F32)) * i.astype(F32) if h.dtype == np.float16 else (a + h) * i
    with np.errstate(all="ignore"):      # the mean of an empty axis is nan, as burn's
        return [np.abs(w).max(axis=1), (h * h.dtype.type(2) + h.dtype.type(1)), (a.astype(np.float64) * 3).mean(axis=0)]


def _views(a, b):
    t = a.T                       # a view: a boundary, then a group reading it
    return [(t * 3.0 + b).exp(), (a[1:] - 1.0).square().sum(axis=1)]


def _views_np(a, b):
    return [np.exp(a.T * F32(3) + b), np.square(a[1:] - F32(1)).sum(axis=1)]


def _matmul(x, w, b):
    return [burn.relu(x @ w + b) * 2.0]


def _matmul_np(x, w, b):
    return [np.maximum(x @ w + b, 0) * F32(2)]


def _rng():
    return np.random.default_rng(7)


def _half(dev):
    """float16 where the device holds it (flex), else float64 (PoCL has no cl_khr_fp16 here)."""
    return np.float16 if dev.backend.dtype_unavailable_reason(burn.float16, dev.index) is None else np.float64


def _inputs(name, m, n, dev=None):
    r = _rng()
    f = lambda *s: r.standard_normal(s).astype(F32)       # noqa: E731
    if name == "probe":
        return [f(m, n) * F32(0.1)]
    if name == "broadcast":
        return [f(m, n), f(n), f(m, 1)]
    if name == "mixed":
        return [f(m, n), r.standard_normal(n).astype(_half(dev or burn.Device.flex())),
                r.integers(-3, 4, (m, n)).astype(np.int32)]
    if name == "views":
        return [f(m, n), f(m)]
    return [f(m, n), f(n, 9), f(9)]


PROGRAMS = {"probe": (_probe, _probe_np), "broadcast": (_broadcast, _broadcast_np), "mixed": (_mixed, _mixed_np),
            "views": (_views, _views_np), "matmul": (_matmul, _matmul_np)}
# one relative pattern (m != n, both > 1, distinct from the programs' constants), then others
SAME_PATTERN = [(3, 5), (7, 4), (11, 6), (5, 13), (17, 10)]    # m - 1 is neither 1 nor n (views)
OTHER_PATTERNS = [(1, 5), (6, 1), (6, 6), (0, 4), (1, 1)]


def _check(name, dev, m, n):
    fn, ref = PROGRAMS[name]
    arrs = _inputs(name, m, n, dev)
    got = fn(*[burn.tensor(x, device=dev) for x in arrs])
    want = ref(*arrs)
    for g, w in zip(got, want):
        gv = g.numpy()
        w = np.asarray(w)
        assert gv.dtype == w.dtype and gv.shape == w.shape, (name, dev, (m, n), gv.dtype, w.dtype, gv.shape, w.shape)
        tol = 2e-3 if w.dtype == np.float16 else 2e-5
        np.testing.assert_allclose(gv, w, rtol=tol, atol=tol, err_msg=f"{name} on {dev} at {(m, n)}")


def _stats():
    return burn.fusion.plan_cache_info()


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_a_plan_is_reused_for_new_sizes_and_gives_numpy_results(name):
    # mixed dtypes on flex only: on PoCL its float64 kernels would take most of this file's time
    for dev in flex_and_wgpu()[:1 if name == "mixed" else None]:
        graph_for(dev).flush()
        burn.fusion.clear_plan_cache()
        for m, n in SAME_PATTERN[:2]:
            _check(name, dev, m, n)            # planned (and compiled), then rebound
        before = _stats()
        for m, n in SAME_PATTERN[2:]:
            _check(name, dev, m, n)
        after = _stats()
        assert after["planned"] == before["planned"], (name, dev, before, after)
        assert after["rebinds"] >= before["rebinds"] + len(SAME_PATTERN) - 2, (name, dev, before, after)
        for m, n in OTHER_PATTERNS + SAME_PATTERN:     # other patterns, then the first one again
            _check(name, dev, m, n)


def test_sizes_across_flex_blocking_and_splitting_thresholds():
    # one plan for every size: whole-array below 131072 elements, blocked above; a reduction
    # prologue splits over 2 threads from 131072 elements, by a program learned at another size
    x_sizes = [1000, 140_000, 3000, 200_003, 77]
    old = burn.get_num_threads()
    burn.set_num_threads(2)
    try:
        burn.fusion.clear_plan_cache()
        r = _rng()
        for n in x_sizes:
            a, b = r.standard_normal(n).astype(F32), r.standard_normal((3, 1)).astype(F32)
            y = ((burn.tensor(a) * 0.5).exp() + 1.0).sqrt() * burn.tensor(b)        # [3, n]
            np.testing.assert_allclose(y.numpy(), np.sqrt(np.exp(a * F32(0.5)) + F32(1)) * b, rtol=1e-6)
        info = _stats()
        assert info["rebinds"] >= len(x_sizes) - 2, info
        for m, n in [(600, 500), (31, 7), (700, 450), (5, 3), (650, 401)]:
            a = r.standard_normal((m, n)).astype(F32) * F32(0.1)
            s = (burn.tensor(a) * 2.0 + 1.0).exp().sum(axis=1)
            np.testing.assert_allclose(s.numpy(), np.exp(a * F32(2) + F32(1)).sum(axis=1), rtol=1e-5)
        for m, n in [(500, 300), (20, 30), (640, 260)]:     # a transposed view read block by block
            a, c = r.standard_normal((m, n)).astype(F32), r.standard_normal(m).astype(F32)
            y = (burn.tensor(a).T * 2.0 + burn.tensor(c)).exp()
            np.testing.assert_allclose(y.numpy(), np.exp(a.T * F32(2) + c), rtol=1e-6)
        for m in [20_000, 30, 17_000, 3]:            # matmul epilogue: BLAS + blocked, or whole-array
            x, w, b = _inputs("matmul", m, 8)
            y = burn.relu(burn.tensor(x) @ burn.tensor(w) + burn.tensor(b)) * 2.0
            np.testing.assert_allclose(y.numpy(), np.maximum(x @ w + b, 0) * F32(2), rtol=1e-5, atol=1e-5)
    finally:
        burn.set_num_threads(old)


def test_wgpu_compiles_no_kernel_for_new_sizes():
    from devices import wgpu_or_skip
    dev = wgpu_or_skip()
    burn.fusion.clear_plan_cache()
    stats = dev.backend.context(dev.index).stats

    def run(m, n):
        a, b = _inputs("broadcast", m, n)[:2]
        y = ((burn.tensor(a, device=dev) + burn.tensor(b, device=dev)) * 0.5).exp().tanh()
        np.testing.assert_allclose(y.numpy(), np.tanh(np.exp((a + b) * F32(0.5))), rtol=1e-5, atol=1e-6)
    for m, n in SAME_PATTERN[:3]:
        run(m, n)                 # planned, op by op once, then fused: its kernel compiled here
    before = (stats["compiles"] + stats["disk_loads"], _stats()["planned"])
    for m, n in [(40, 30), (9, 301), (123, 77)]:
        run(m, n)
    assert (stats["compiles"] + stats["disk_loads"], _stats()["planned"]) == before


def _rkey(build):
    g = graph_for(burn.Device.flex())
    g.flush()
    kept = build()
    k = relative_key(_structure_key(g.pending)[0], g.pending)
    # the one-pass key the plan cache uses is the same key, and its sizes give back every shape
    one_pass, sizes, _ = burn.shapekey.relative_structure_key(g.pending)
    assert one_pass == k
    runs = k[-1]                      # (output index, symbolic shape) where the shape changes
    metas = [m.shape for n in g.pending for m in n.metas]
    starts = list(runs[0::2]) + [len(metas)]
    concrete = [tuple(sizes[-1 - d] if d < 0 else d for d in sym)
                for sym, a, b in zip(runs[1::2], starts, starts[1:]) for _ in range(a, b)]
    assert starts[0] == 0 and concrete == metas
    g.flush()
    del kept
    return k


def test_relative_keys_keep_what_the_plan_depends_on():
    t = {s: burn.ones(s) for s in [(3, 4), (5, 9), (4, 4), (3, 1), (3, 4, 1), (8,), (12,), (5,)]}
    t64 = burn.ones((3, 4), dtype=burn.float64)
    for v in list(t.values()) + [t64]:
        v.numpy()
    base = _rkey(lambda: (t[(3, 4)] * 2.0).exp().sum(axis=1))
    assert _rkey(lambda: (t[(5, 9)] * 2.0).exp().sum(axis=1)) == base
    others = [lambda: (t[(4, 4)] * 2.0).exp().sum(axis=1),          # equal dims
              lambda: (t[(3, 1)] * 2.0).exp().sum(axis=1),          # a size-1 dim
              lambda: (t[(3, 4, 1)] * 2.0).exp().sum(axis=1),       # a rank
              lambda: (t64 * 2.0).exp().sum(axis=1),                # a dtype
              lambda: (t[(3, 4)] * 2.0).exp().sum(axis=0)]          # an attribute
    keys = [_rkey(b) for b in others]
    assert base not in keys and len(set(keys)) == len(keys)
    # a boundary's attributes are left out (it runs with its node's own), its output shape stays:
    # [8] -> [2, 4] and [12] -> [3, 4] plan alike; a slice's size equal to another input's or not
    # decides whether the two chains are one group, so those keys differ
    k1 = _rkey(lambda: (t[(8,)].reshape(2, 4).exp(), t[(5,)].exp()))
    k2 = _rkey(lambda: (t[(12,)].reshape(3, 4).exp(), t[(5,)].exp()))
    assert k1 == k2
    k3 = _rkey(lambda: (t[(8,)][:4].exp(), t[(5,)].exp()))
    k4 = _rkey(lambda: (t[(8,)][:5].exp(), t[(5,)].exp()))
    assert k3 != k4


def test_groups_that_depend_on_derived_sizes_are_not_shared():
    # two independent chains group only where their shapes are equal: x[:k] has k elements, so
    # with k == len(y) they are one group, otherwise two; both plans give numpy's results
    burn.fusion.clear_plan_cache()
    r = _rng()
    for n, k in [(9, 5), (9, 6), (9, 5), (11, 6), (11, 7)]:
        x, y = r.standard_normal(n).astype(F32), r.standard_normal(6).astype(F32)
        a = (burn.tensor(x)[:k] * 2.0).exp()
        b = (burn.tensor(y) * 3.0).exp()
        np.testing.assert_allclose(a.numpy(), np.exp(x[:k] * F32(2)), rtol=1e-6)
        np.testing.assert_allclose(b.numpy(), np.exp(y * F32(3)), rtol=1e-6)


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_a_reused_plan_computes_exactly_what_a_fresh_plan_does(name):
    fn, _ = PROGRAMS[name]
    dev = burn.Device.flex()

    def run(m, n):
        return [g.numpy() for g in fn(*[burn.tensor(x, device=dev) for x in _inputs(name, m, n, dev)])]
    for m, n in SAME_PATTERN[1:] + OTHER_PATTERNS:
        burn.fusion.clear_plan_cache()
        fresh = run(m, n)                    # planned for these sizes
        run(*SAME_PATTERN[0])                # another size ...
        burn.fusion.clear_plan_cache()
        run(*SAME_PATTERN[0])                # ... planned first: the plan is its
        reused = run(m, n)
        for f, r in zip(fresh, reused):
            np.testing.assert_array_equal(f, r, err_msg=f"{name} at {(m, n)}")
