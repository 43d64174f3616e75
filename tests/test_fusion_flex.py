"""Fused execution on flex: fused results equal op-by-op results, plans are cached,
``burn.fusion.explain`` shows the groups, and the fast transcendental kernels stay
within float32 tolerance of a float64 reference over wide input ranges.

"Op by op" means every intermediate is read back before the next op is recorded,
so each op is its own flush and runs as one unfused kernel.
"""
import math

import numpy as np
import pytest

import burn
from burn_flex import fused
from burn_flex.kernels import elementwise as kernels


@pytest.fixture(autouse=True)
def _planner_only(monkeypatch):
    # these tests check the planner and its plan cache: small flushes would otherwise run op by
    # op without a plan (burn.graph.run_small_flush, tested against the planner in
    # tests/test_small_flush.py)
    monkeypatch.setattr(burn.graph, "SMALL_FLUSH_NODES", 0)

SMALL = 1000                                   # below the blocking threshold: whole-array path
LARGE = fused.MIN_FUSED_SIZE + 12_345          # blocked path, with a partial last block


def op_by_op(fn):
    """Wrap a burn function so its result is materialized immediately."""
    def run(*args):
        out = fn(*args)
        out.numpy()
        return out
    return run


def chain(x, y, eager=False):
    """abs, neg, exp, log1p, tanh, mul, add, sqrt, with a Python scalar and a broadcast operand."""
    f = op_by_op if eager else (lambda fn: fn)
    a = f(burn.abs)(x)
    a = f(burn.negative)(a)
    a = f(burn.exp)(a)
    a = f(burn.log1p)(a)
    t = f(burn.tanh)(x)
    t = f(lambda u: u * u)(t)
    s = f(lambda u, v: u * 0.5 + v)(a, t)
    s = f(lambda u, v: u + v)(s, y)        # y broadcasts (a scalar tensor or a row)
    return f(burn.sqrt)(s)


def _assert_close_ulps(got, ref, rtol=1e-6):
    # the same kernels on other block boundaries: equal up to the last ulp
    np.testing.assert_allclose(got, ref, rtol=rtol, atol=0, equal_nan=True)


@pytest.mark.parametrize("n", [SMALL, LARGE])
def test_fused_chain_with_scalars_and_broadcast_equals_op_by_op(rng, n):
    xn = (rng.standard_normal(n) * 4).astype(np.float32)
    x = burn.from_numpy(xn)
    y = burn.tensor(0.25)
    fused_out = chain(x, y)
    assert burn.fusion.explain(fused_out).groups[0][0] == "elementwise"
    got = fused_out.numpy()
    ref = chain(x, y, eager=True).numpy()
    _assert_close_ulps(got, ref)
    t = np.tanh(xn.astype(np.float64))
    exact = np.sqrt(np.log1p(np.exp(-np.abs(xn.astype(np.float64)))) * 0.5 + t * t + 0.25)
    np.testing.assert_allclose(got, exact, rtol=3e-6)


@pytest.mark.parametrize("rows", [8, LARGE // 257 + 3])
def test_fused_row_broadcast_blocks_along_the_leading_axis(rng, rows):
    # a bias row [257] and a column [rows, 1] broadcast into [rows, 257]: blocks are row ranges
    xn = rng.standard_normal((rows, 257)).astype(np.float32)
    bn = rng.standard_normal(257).astype(np.float32)
    cn = rng.standard_normal((rows, 1)).astype(np.float32)
    x, b, c = burn.from_numpy(xn), burn.from_numpy(bn), burn.from_numpy(cn)

    def f(x, b, c, eager=False):
        g = op_by_op if eager else (lambda fn: fn)
        u = g(lambda p, q: p + q)(x, b)
        u = g(lambda p, q: p * q)(u, c)
        u = g(burn.tanh)(u)
        return g(lambda p: p * 2.0 - 1.0)(u)

    got = f(x, b, c).numpy()
    _assert_close_ulps(got, f(x, b, c, eager=True).numpy())
    np.testing.assert_allclose(got, np.tanh((xn + bn) * cn) * 2 - 1, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("n", [SMALL, LARGE])
def test_fused_mixed_dtypes_and_comparisons_equal_op_by_op(rng, n):
    # an int32 operand is cast to float32 inside the group; comparisons make bool outputs
    xn = rng.standard_normal(n).astype(np.float32)
    kn = rng.integers(-3, 4, n).astype(np.int32)
    x, k = burn.from_numpy(xn), burn.from_numpy(kn)

    def f(x, k, eager=False):
        g = op_by_op if eager else (lambda fn: fn)
        s = g(lambda p, q: p * q)(x, k)              # int32 -> float32 cast node
        m = g(lambda p: p > 0.5)(s)                  # bool
        w = g(lambda c, p: burn.where(c, p, -p))(m, s)
        return m, g(burn.exp)(w)

    m, e = f(x, k)
    m_ref, e_ref = f(x, k, eager=True)
    assert m.dtype is burn.bool and e.dtype is burn.float32
    np.testing.assert_array_equal(m.numpy(), m_ref.numpy())
    _assert_close_ulps(e.numpy(), e_ref.numpy())
    s = xn * kn.astype(np.float32)
    np.testing.assert_array_equal(m.numpy(), s > 0.5)
    np.testing.assert_allclose(e.numpy(), np.exp(np.where(s > 0.5, s, -s)), rtol=2e-6)


@pytest.mark.parametrize("n", [SMALL, LARGE])
def test_intermediates_held_by_the_user_are_outputs_of_the_group(rng, n):
    xn = rng.uniform(0.1, 3.0, n).astype(np.float32)
    x = burn.from_numpy(xn)
    a = x.exp()             # held: must come out of the fused group too
    b = a * 2.0
    c = b.sqrt() + a        # reads the held intermediate again
    d = c.log()
    ex = burn.fusion.explain(d)
    assert [g[0] for g in ex.groups] == ["elementwise"] and ex.groups[0][1] == ["exp", "mul", "sqrt", "add", "log"]
    got = [t.numpy() for t in (a, b, c, d)]
    ea = np.exp(xn)
    for g, r in zip(got, [ea, ea * 2, np.sqrt(ea * 2) + ea, np.log(np.sqrt(ea * 2) + ea)]):
        np.testing.assert_allclose(g, r, rtol=2e-6)
    _assert_close_ulps(got[3], op_by_op(burn.log)(op_by_op(lambda p, q: p.sqrt() + q)(
        op_by_op(lambda p: p * 2.0)(op_by_op(burn.exp)(x)), op_by_op(burn.exp)(x))).numpy())


def test_full_inside_a_blocked_group_broadcasts(rng):
    xn = rng.standard_normal(LARGE).astype(np.float32)
    x = burn.from_numpy(xn)
    y = x * burn.full((LARGE,), 3.0) + 1.0
    assert burn.fusion.explain(y).groups[0][1] == ["full", "mul", "add"]
    np.testing.assert_array_equal(y.numpy(), xn * np.float32(3.0) + np.float32(1.0))


def test_pending_value_does_not_see_a_later_in_place_update(rng):
    # laziness never changes meaning, also when the reader is a blocked fused group
    xn = rng.standard_normal(LARGE).astype(np.float32)
    x = burn.from_numpy(xn.copy())
    y = (x * 2.0).exp()
    x += 1.0
    x.assign_(x * 3.0)
    np.testing.assert_allclose(y.numpy(), np.exp(xn * 2), rtol=2e-6)
    np.testing.assert_allclose(x.numpy(), (xn + 1) * 3, rtol=2e-6)


def test_shape_errors_are_raised_at_the_call_inside_a_pending_chain():
    x = burn.ones((LARGE,))
    y = x.exp() * 2.0
    with pytest.raises(burn.ShapeError, match="add"):
        y + burn.ones((3,))
    assert y.numpy()[0] == pytest.approx(2 * math.e)


def _train_step(params, x, target, lr=0.1):
    w1, b1, w2 = params
    h = burn.relu(x @ w1 + b1)
    loss = burn.nn.functional.cross_entropy(h @ w2, target)
    grads = loss.backward()
    with burn.no_grad():
        for p in params:
            p.assign_(p - lr * p.grad(grads))
    return loss.item()


def test_a_repeated_training_step_is_planned_once(rng):
    ad = burn.Device.flex().autodiff()
    params = [burn.tensor(rng.standard_normal((8, 16)) * 0.3, dtype=burn.float32, device=ad).require_grad(),
              burn.zeros((16,), device=ad).require_grad(),
              burn.tensor(rng.standard_normal((16, 4)) * 0.3, dtype=burn.float32, device=ad).require_grad()]
    x = burn.tensor(rng.standard_normal((32, 8)), dtype=burn.float32, device=ad)
    target = burn.tensor(rng.integers(0, 4, 32), device=ad)
    losses = [_train_step(params, x, target) for _ in range(3)]     # warm: plans built
    before = burn.fusion.plan_cache_info()
    losses += [_train_step(params, x, target) for _ in range(5)]
    after = burn.fusion.plan_cache_info()
    assert after["misses"] == before["misses"], (before, after)
    assert after["hits"] >= before["hits"] + 5
    assert losses[-1] < losses[0]           # the cached plans really train


def test_explain_shows_elementwise_reduce_and_matmul_groups():
    x = burn.ones((4, 8))
    x.numpy()                              # materialized: the groups below start at x
    chain_ = ((x * 2.0 + 1.0).exp()).sqrt()
    ex = burn.fusion.explain(chain_)
    assert ex.groups == [("elementwise", ["mul", "add", "exp", "sqrt"], "end of the flushed graph")]
    chain_.numpy()

    r = (x.exp() * 3.0).sum(axis=-1)
    (kind, ops, why), = burn.fusion.explain(r).groups
    assert (kind, ops) == ("reduce", ["exp", "mul", "sum"]) and "prologue" in why
    assert "reduce: exp -> mul -> sum" in str(burn.fusion.explain(r))
    np.testing.assert_allclose(r.numpy(), np.full(4, 8 * 3 * math.e, np.float32), rtol=1e-6)

    a, b, bias = burn.ones((4, 8)), burn.ones((8, 3)), burn.tensor([1.0, -20.0, 0.5])
    b.numpy()
    y = (a @ b + bias).relu()
    groups = burn.fusion.explain(y).groups
    assert groups[-1][:2] == ("matmul", ["matmul", "add", "relu"])
    np.testing.assert_array_equal(y.numpy(), np.maximum(np.ones((4, 8)) @ np.ones((8, 3)) + [1, -20, 0.5], 0))


# -- transcendental kernels: float32 accuracy over wide ranges --------------------------

def _wide_inputs(lo=-1e30):
    specials = [0.0, -0.0, 1e-45, -1e-45, 1e-38, 1e-30, -1e-30, 1e-8, -1e-8, 1e-4, -0.5, -0.999999, -1.0,
                -1.5, 1.0, 10.0, 88.0, 89.0, 1e10, 1e30, 3.4e38, -3.4e38, np.inf, -np.inf, np.nan]
    grid = np.concatenate([np.geomspace(1e-30, 1e30, 2000), -np.geomspace(1e-30, abs(lo), 2000),
                           np.linspace(-20, 20, 4001)])
    return np.concatenate([specials, grid]).astype(np.float32)


def _check_against_f64(got, x, ref_fn, rtol):
    with np.errstate(all="ignore"):
        ref = ref_fn(x.astype(np.float64)).astype(np.float32)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(ref))
    fin = np.isfinite(ref)
    # relative error in float32 ulps, with an absolute floor at float32's smallest normal
    np.testing.assert_allclose(got[fin], ref[fin], rtol=rtol, atol=1.2e-38)


@pytest.mark.parametrize("impl", ["registered", "kahan"])
def test_log1p_float32_is_accurate_over_wide_ranges(impl):
    x = _wide_inputs(lo=1.0)
    x = np.concatenate([x, -np.geomspace(1e-30, 0.9999, 2000).astype(np.float32)])
    x = x[~(x < -1)] if impl == "kahan" else x
    fn = kernels._log1p_kahan if impl == "kahan" else kernels._log1p
    with np.errstate(all="ignore"):
        got = fn(x)
    _check_against_f64(got, x, np.log1p, rtol=4e-7)


@pytest.mark.parametrize("name,ref", [("exp", np.exp), ("tanh", np.tanh), ("sqrt", np.sqrt),
                                      ("log1p", np.log1p), ("log", np.log), ("expm1", np.expm1)])
@pytest.mark.parametrize("n", [SMALL, LARGE])
def test_unary_kernels_through_burn_match_a_float64_reference(name, ref, n):
    base = _wide_inputs()
    x = np.resize(base, n) if n > base.size else base[:n]
    x = np.concatenate([base[:25], x])          # keep the special values in every size
    t = burn.from_numpy(x)
    with np.errstate(all="ignore"):
        got = (getattr(burn, name)(t) * 1.0).numpy()     # "* 1.0" makes it a fused chain
    _check_against_f64(got, x, ref, rtol=4e-7 if name != "tanh" else 2e-6)


def test_gelu_float32_matches_torch_over_wide_ranges():
    torch = pytest.importorskip("torch")
    x = np.concatenate([np.linspace(-12, 12, 20001), [0.0, -0.0, 1e-30, -1e-30, 1e4, -1e4, np.inf, -np.inf]])
    x = x.astype(np.float32)
    got = burn.gelu(burn.from_numpy(x)).numpy()
    ref = torch.nn.functional.gelu(torch.from_numpy(x.copy())).numpy()
    fin = np.isfinite(ref)
    np.testing.assert_array_equal(np.isfinite(got), fin)
    np.testing.assert_allclose(got[fin], ref[fin], rtol=1e-5, atol=1e-6)


def test_a_kernel_returning_a_view_of_a_scratch_buffer_is_not_overwritten(rng):
    # astype to the same dtype may hand back its input: that buffer must not be reused
    # by a later op of the block while the view is still to be read
    xn = rng.uniform(-1, 1, LARGE).astype(np.float32)

    def f(x):                         # temporaries die here, so they live in scratch buffers
        y = x.exp()
        z = y.astype(burn.float32)
        w = y.exp()                   # y's last reader: a candidate to write over y's buffer
        return (z + w).astype(burn.float64) * 2.0

    out = f(burn.from_numpy(xn))
    assert burn.fusion.explain(out).groups[0][1] == ["exp", "cast", "exp", "add", "cast", "mul"]
    ey = np.exp(xn)
    np.testing.assert_allclose(out.numpy(), (ey + np.exp(ey)).astype(np.float64) * 2, rtol=2e-6)


@pytest.mark.parametrize("n", [SMALL, LARGE])
def test_erf_float32_is_within_two_ulp_of_the_exact_erf(n):
    sps = pytest.importorskip("scipy.special")
    base = np.concatenate([_wide_inputs(), np.linspace(-6, 6, 40001, dtype=np.float32),
                           np.geomspace(1e-45, 1e-30, 50, dtype=np.float32)])
    x = np.concatenate([base[:25], np.resize(base, n)])
    got = burn.erf(burn.from_numpy(x)).numpy()
    ref = sps.erf(x.astype(np.float64))
    assert got.dtype == np.float32
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    fin = ~np.isnan(ref)
    ulp = np.spacing(np.abs(ref[fin]).astype(np.float32)).astype(np.float64)
    assert np.max(np.abs(got[fin] - ref[fin]) / ulp) <= 2.0


@pytest.mark.parametrize("n", [SMALL, LARGE])
def test_repeated_runs_of_a_cached_group_stay_correct(rng, n):
    # the first run of a compiled group learns where it may write in place; later runs use that
    xs = [rng.uniform(-2, 2, n).astype(np.float32) for _ in range(3)]

    def view_hazard(x):
        y = x.exp()
        z = y.astype(burn.float32)            # may be a view of y: y must not be overwritten
        w = (y * 3.0 + 1.0).log()             # y's last reader
        return z + w

    def output_hazard(x):
        y = x.exp()
        w = (y * 3.0 + 1.0).log()             # y's last reader inside the group...
        return w, y                           # ...but y leaves the group

    for xn in xs:
        ey = np.exp(xn)
        out = view_hazard(burn.from_numpy(xn))
        np.testing.assert_allclose(out.numpy(), ey + np.log(ey * 3 + 1), rtol=2e-6)
        w, y = output_hazard(burn.from_numpy(xn))
        np.testing.assert_allclose(w.numpy(), np.log(ey * 3 + 1), rtol=2e-6)
        np.testing.assert_allclose(y.numpy(), ey, rtol=1e-6)


def test_matmul_epilogue_in_place_keeps_inputs_untouched(rng):
    an, bn, cn = (rng.standard_normal(s).astype(np.float32) for s in ((16, 8), (8, 4), (4,)))
    a, b, c = burn.from_numpy(an), burn.from_numpy(bn), burn.from_numpy(cn)
    for _ in range(3):
        y = ((a @ b) + c).relu() * 2.0
        assert burn.fusion.explain(y).groups[-1][:2] == ("matmul", ["matmul", "add", "relu", "mul"])
        np.testing.assert_allclose(y.numpy(), np.maximum(an @ bn + cn, 0) * 2, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(c.numpy(), cn)
    np.testing.assert_array_equal(a.numpy(), an)


# -- the plan cache: graphs that differ must not share a plan -------------------------

def _fresh(dev=None):
    """An empty pending graph and an empty plan cache, so every test counts its own misses."""
    from burn.graph import graph_for
    graph_for(dev or burn.Device.flex()).flush()
    burn.fusion.clear_plan_cache()


def _misses():
    return burn.fusion.plan_cache_info()["misses"]


def _pending_key():
    from burn.graph import graph_for
    return burn.fusion._structure_key(graph_for(burn.Device.flex()).pending)[0]


def _assert_distinct_plans(run_a, run_b):
    """run_a twice (planned, then cached), then run_b: it must be planned anew, and
    both must give their own right values. Each run checks its values itself."""
    _fresh()
    m0 = _misses()
    run_a()
    run_a()
    assert _misses() == m0 + 1, "a repeated graph must reuse its plan"
    run_b()
    assert _misses() == m0 + 2, "a different graph must not reuse the plan of the first"


def test_graphs_differing_only_in_an_attribute_get_different_plans(rng):
    xn = rng.standard_normal((4, 4)).astype(np.float32)

    def reduce_over(axis):
        def run():
            y = (burn.tensor(xn) * 2.0).sum(axis=axis)          # same output shape for both axes
            np.testing.assert_allclose(y.numpy(), (xn * 2).sum(axis=axis), rtol=1e-6)
        return run
    _assert_distinct_plans(reduce_over(0), reduce_over(1))


@pytest.mark.parametrize("first, second", [("float32", "float64"), ("float64", "float32")])
def test_graphs_differing_only_in_an_input_dtype_get_different_plans(rng, first, second):
    xn = rng.standard_normal(16)

    def run_with(dtype):
        def run():
            x = burn.tensor(xn.astype(dtype))
            y = (x * 2.0).exp()
            assert y.dtype.name == dtype
            np.testing.assert_allclose(y.numpy(), np.exp(xn.astype(dtype) * 2), rtol=1e-6)
        return run
    _assert_distinct_plans(run_with(first), run_with(second))


def test_graphs_differing_only_in_an_input_shape_get_different_plans(rng):
    def run_with(n):
        xn = rng.standard_normal(n).astype(np.float32)

        def run():
            y = (burn.tensor(xn) + 1.0).sum()
            np.testing.assert_allclose(y.item(), (xn + 1).sum(), rtol=1e-5)
        return run
    _assert_distinct_plans(run_with(4), run_with(5))


def test_an_intermediate_held_only_the_second_time_is_still_materialized(rng):
    xn = rng.standard_normal(8).astype(np.float32)

    def dropped():
        b = (burn.tensor(xn) * 2.0).exp()                       # the product is a dead temporary
        np.testing.assert_allclose(b.numpy(), np.exp(xn * 2), rtol=1e-6)

    def held():
        a = burn.tensor(xn) * 2.0
        b = a.exp()
        np.testing.assert_allclose(b.numpy(), np.exp(xn * 2), rtol=1e-6)
        np.testing.assert_array_equal(a.numpy(), xn * 2)        # computed by the same flush
    _assert_distinct_plans(dropped, held)
    _assert_distinct_plans(held, dropped)


def test_one_handle_read_twice_and_two_equal_handles_get_different_plans(rng):
    un, vn = rng.standard_normal(8).astype(np.float32), rng.standard_normal(8).astype(np.float32)

    def same():
        u = burn.tensor(un)
        np.testing.assert_allclose((u * u + u).numpy(), un * un + un, rtol=1e-6)

    def distinct():
        u, v = burn.tensor(un), burn.tensor(vn)
        np.testing.assert_allclose((u * v + u).numpy(), un * vn + un, rtol=1e-6)
    _assert_distinct_plans(same, distinct)       # a plan with one slot must not read u for v
    _assert_distinct_plans(distinct, same)


def test_structure_keys_differ_exactly_where_the_graphs_do(rng):
    _fresh()
    x32, y32 = burn.ones((3, 3)), burn.ones((3, 3))
    x64, x4 = burn.ones((3, 3), dtype=burn.float64), burn.ones((4, 3))
    for t in (x32, y32, x64, x4):
        t.numpy()

    def key_of(build):
        kept = build()                                          # keep what the variant holds
        k = _pending_key()
        _fresh()
        del kept
        return k

    base = key_of(lambda: (x32 * y32).sum(axis=0))
    assert key_of(lambda: (y32 * x32).sum(axis=0)) == base     # other handles, same pattern
    variants = {
        "attr": lambda: (x32 * y32).sum(axis=1),
        "dtype": lambda: (x64 * x64.astype(burn.float64)).sum(axis=0),
        "shape": lambda: (x4 * x4[:, :]).sum(axis=0),
        "one handle twice": lambda: (x32 * x32).sum(axis=0),
        "held intermediate": lambda: ((p := x32 * y32), p.sum(axis=0)),
        "op": lambda: (x32 + y32).sum(axis=0),
    }
    keys = {name: key_of(build) for name, build in variants.items()}
    for name, k in keys.items():
        assert k != base, name
    assert len(set(keys.values())) == len(keys)


def test_multi_output_multi_input_extension_steps_run_from_a_cached_plan(rng):
    @burn.backend_extension("test_fusion::affine_pair")
    def affine_pair(x, w, b, scale=2.0):
        return x * w * scale + b, x - b

    @affine_pair.meta
    def _(x, w, b, scale=2.0):
        m = burn.TensorMeta(x.shape, x.dtype)
        return m, m

    @affine_pair.kernel("flex")
    def _(x, w, b, scale=2.0):
        return x * w * np.float32(scale) + b, x - b

    xn, wn, bn = (rng.standard_normal(6).astype(np.float32) for _ in range(3))
    _fresh()
    m0 = _misses()
    # planned, cached, cached again: an opaque op's attributes are read from its node when it
    # runs, so another scale reuses the plan (and must compute with the new scale)
    for scale in (2.0, 2.0, 3.0):
        x, w, b = burn.tensor(xn), burn.tensor(wn), burn.tensor(bn)
        z = burn.zeros((6,))                       # a step with no inputs
        p, q = affine_pair(x + z, w, b, scale=scale)
        np.testing.assert_allclose(p.numpy(), xn * wn * np.float32(scale) + bn, rtol=1e-6)
        np.testing.assert_allclose(q.numpy(), xn - bn, rtol=1e-6)
    assert _misses() == m0 + 1
    p, _ = affine_pair(burn.tensor(xn), burn.tensor(wn), burn.tensor(bn), scale=3.0)     # q dropped
    np.testing.assert_allclose(p.numpy(), xn * wn * 3 + bn, rtol=1e-6)
    assert _misses() == m0 + 2


def test_plans_differ_for_attributes_that_compare_equal_but_compute_differently():
    # the plan cache compared attributes with ==: clip(x, -0.0, ...) after clip(x, 0.0, ...)
    # reused the compiled group with 0.0 baked in (the sign of zero lost), on flex and wgpu
    from devices import flex_and_wgpu
    for dev in flex_and_wgpu():
        x = burn.tensor(np.ones(4, np.float32), device=dev)
        got = [float((1.0 / burn.clip(x * 0.0 - 1.0, c, 5.0)).numpy()[0]) for c in (-0.0, 0.0, -0.0, 0.0)]
        assert got == [-np.inf, np.inf, -np.inf, np.inf], (dev, got)
