"""numpy's view semantics: basic indexing, reshape and permutations share their base's
value (an in-place op on either is seen by the other), advanced indexing copies, autodiff
through views and in-place writes matches torch, and host arrays are read-only.

Each semantic case is one function of the array namespace ``xp`` (numpy or burn) run on
both, and compared (flex and wgpu)."""
import os
import subprocess
import sys

import numpy as np
import pytest

import burn
from devices import flex_and_wgpu

DEVS = flex_and_wgpu()
IDS = [d.kind for d in DEVS]


def _run_both(case, dev, shape=(3, 4)):
    """Run ``case(xp, a)`` on a numpy array and on a burn tensor with the same values;
    every array it returns must agree."""
    base = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    want = case(np, base.copy())
    got = case(burn, burn.tensor(base, device=dev))
    assert len(want) == len(got)
    for i, (w, g) in enumerate(zip(want, got)):
        assert g.shape == w.shape, f"result {i}: shape {g.shape} != {w.shape}"
        np.testing.assert_array_equal(g.numpy(), w, err_msg=f"result {i}")


def _slice_iadd(xp, a):
    t = a[1:3]
    t += 1
    return a, t


def _int_index_setitem(xp, a):
    t = a[1]
    t[2] = 50
    t[...] = t * 2
    return a, t


def _ellipsis_newaxis(xp, a):
    t = a[None, ..., 1:]
    t *= -1
    return a, t


def _negative_steps(xp, a):
    t = a[::-1, ::-2]
    t -= 100
    return a, t


def _reshape(xp, a):
    r = a.reshape((2, 6))
    r[1, :2] = 7
    r /= 2
    return a, r


def _transposes(xp, a):
    a.T[0] += 10                        # .T of a temporary view: writes reach a
    m = a.mT
    m[1] = -1
    p = xp.permute_dims(a, (1, 0))
    p[:, 0] = 3
    return a, m, p


def _expand_squeeze_swap(xp, a):
    e = xp.expand_dims(a, axis=1)
    e[0, 0, 0] = 99
    s = e.squeeze(1)
    s[2] = 5
    w = a.swapaxes(0, 1)
    w[3, 1] = -7
    mv = xp.moveaxis(a, 0, 1)
    mv[0] += 1000
    return a, e, s, w, mv


def _views_of_views(xp, a):
    v = a[1:]                           # (2, 4)
    vv = v.T[::2]                       # (2, 2): a view of a view of a
    vv += 1
    vvv = vv.reshape((4,))[1:3]
    vvv[...] = -5
    return a, v, vv, vvv


def _base_write_seen_by_earlier_views(xp, a):
    v = a[1:3]
    t = a.T
    r = a.reshape((12,))
    a += 10
    a[0, 0] = -1
    a[2] = 0
    return a, v, t, r


def _sibling_views(xp, a):
    row = a[0]
    col = a[:, 1]
    row[1] = 42                         # seen by col through the base
    col[2] = 43
    return a, row, col


def _iterate_rows(xp, a):
    for r in a:
        r *= 2
    return (a,)


def _setitem_through_slice_key(xp, a):
    a[1:3] += 1                         # Python: t = a[1:3]; t += 1; a[1:3] = t
    a[:, ::3] *= -1
    return (a,)


def _advanced_indexing_copies(xp, a):
    t = a[xp.asarray([0, 2]) if xp is np else burn.tensor([0, 2], device=a.device)]
    t += 1
    m = a[a > 5]
    m[:] = 0
    a[[0, 2]] += 100                    # setitem with an array key still writes into a
    return a, t, m


def _every_inplace_operator(xp, a):
    v = a[1:]
    v += 1
    v -= 0.5
    v *= 4
    v /= 2
    v //= 3
    v %= 5
    v **= 2
    sq = a[:, :3]
    sq @= xp.ones_like(sq) + sq.T
    return a, v, sq


def _bitwise_inplace_operators(xp, a):
    b = a.astype(xp.int64)
    v = b[::2]
    v &= 6
    v |= 1
    v ^= 3
    m = b > 4
    w = m[1:]
    w &= b[1:] < 9
    return b, v, m, w


def _diagonal_add_like_sklearn(xp, a):
    """scikit-learn's ``_fill_or_add_to_diagonal`` (GaussianMixture's ``reg_covar``)."""
    cov = xp.reshape(a[:, :3], (3, 3))
    flat = xp.reshape(cov, (-1,))               # a view in numpy too: cov is contiguous
    flat[::4] += 0.5
    return a, cov, flat


def _flatten_copies(xp, a):
    f = a.flatten()
    f += 1
    return a, f


CASES = [_slice_iadd, _int_index_setitem, _ellipsis_newaxis, _negative_steps, _reshape, _transposes,
         _expand_squeeze_swap, _views_of_views, _base_write_seen_by_earlier_views, _sibling_views,
         _iterate_rows, _setitem_through_slice_key, _advanced_indexing_copies, _every_inplace_operator,
         _bitwise_inplace_operators, _diagonal_add_like_sklearn, _flatten_copies]


@pytest.mark.parametrize("dev", DEVS, ids=IDS)
@pytest.mark.parametrize("case", CASES, ids=[c.__name__.strip("_") for c in CASES])
def test_numpy_view_semantics(case, dev):
    _run_both(case, dev)


@pytest.mark.parametrize("dev", DEVS, ids=IDS)
def test_assign_on_view_writes_base(dev):
    a = burn.zeros((2, 3), device=dev)
    v = a[:, 1:]
    v.assign_(burn.ones((2, 2), device=dev))
    v.assign_(v + 1)
    assert a.tolist() == [[0.0, 2.0, 2.0], [0.0, 2.0, 2.0]]
    a.assign_(5.0)
    assert v.tolist() == [[5.0, 5.0], [5.0, 5.0]]


def test_reshape_copy_true_copies(dev):
    a = burn.zeros((2, 2), device=dev)
    for c in (a.reshape((4,), copy=True), burn.reshape(a, (2, 2), copy=True)):
        c += 1
    assert a.tolist() == [[0.0, 0.0], [0.0, 0.0]]


def test_reshape_copy_false_refuses_to_copy(dev):
    x = burn.zeros((3, 4), device=dev)
    assert burn.views.base_of(burn.reshape(x.T, (4, 1, 3), copy=False)) is x
    with pytest.raises(ValueError, match="copy=False"):
        burn.reshape(x.T, (12,), copy=False)


def test_laziness_keeps_recorded_values(dev):
    """A value recorded before an in-place write keeps its old value, and nothing runs."""
    a = burn.tensor([1.0, 2.0, 3.0, 4.0], device=dev)
    v = a[1:3]
    y = a * 2                           # recorded before the write
    w = v + 0                           # a value computed from the view, before the write
    graph = a._h.graph
    flushes = graph.flushes
    v += 10
    a[0] = -1
    assert graph.flushes == flushes, "writing through a view must stay lazy"
    assert y.tolist() == [2.0, 4.0, 6.0, 8.0]
    assert w.tolist() == [2.0, 3.0]
    assert a.tolist() == [-1.0, 12.0, 13.0, 4.0] and v.tolist() == [12.0, 13.0]


def test_a_base_write_records_nothing_per_live_view(dev):
    a = burn.zeros((100,), device=dev)
    views = [a[i:i + 1] for i in range(100)]
    graph = a._h.graph
    before, flushes = len(graph.pending), graph.flushes
    for i in range(100):
        a[i] = float(i)                         # index_put only: the views are derived when read
    assert graph.flushes == flushes and len(graph.pending) - before <= 100
    assert [v.item() for v in views[::33]] == [0.0, 33.0, 66.0, 99.0]


def test_dead_views_are_dropped(dev):
    a = burn.zeros((64,), device=dev)
    for i in range(200):
        a[i % 64] += 1.0               # each a[i] view dies at once
    assert len(a._views) < 64
    assert a[63].item() == 3.0 and a[7].item() == 4.0


# -- autodiff ---------------------------------------------------------------------

torch = pytest.importorskip("torch")


def _grads(fn, *arrays, dev=None):
    """Compare the value and gradients of ``fn`` under burn (float64 on flex autodiff, or
    float32 on ``dev``'s autodiff twin) and torch."""
    ad = (dev or burn.Device.flex()).autodiff()
    f64 = dev is None or dev.kind == "flex"
    bdt, tdt, rtol = (burn.float64, torch.float64, 1e-12) if f64 else (burn.float32, torch.float32, 2e-5)
    bs = [burn.tensor(a, dtype=bdt, device=ad).require_grad() for a in arrays]
    ts = [torch.tensor(a, dtype=tdt, requires_grad=True) for a in arrays]
    lb, lt = fn(burn, bs), fn(torch, ts)
    gb = lb.backward()
    lt.backward()
    np.testing.assert_allclose(lb.numpy(), lt.detach().numpy(), rtol=rtol)
    for b, t in zip(bs, ts):
        np.testing.assert_allclose(b.grad(gb).numpy(), t.grad.numpy(), rtol=rtol, atol=rtol)


def test_grad_through_inplace_write_on_view(rng):
    def f(xp, ws):
        (w,) = ws
        w2 = w * 1
        v = w2[1:3]
        v *= 2
        return w2.sum()
    _grads(f, rng.standard_normal(5))


@pytest.mark.parametrize("dev", DEVS, ids=IDS)
def test_grad_through_views_of_views_and_setitem(rng, dev):
    def f(xp, ws):
        w, u = ws
        w2 = w * 1                              # (3, 4)
        t = w2.T                                # (4, 3) view
        t[1:3] = t[1:3] + u[:, None]            # a value needing grad, written into a view
        r = w2.reshape(12)
        r[::5] += u.sum()
        return (w2 * w2).sum() + (t.exp() * 0.1).sum()
    _grads(f, rng.standard_normal((3, 4)), rng.standard_normal(2), dev=dev)


def test_grad_base_write_seen_by_view(rng):
    def f(xp, ws):
        w, u = ws
        w2 = w + 0
        v = w2[:, 0]                            # a view made before the base's write
        w2 *= u
        return (v * v).sum() + w2.sum()
    _grads(f, rng.standard_normal((3, 2)), rng.standard_normal(2))


def test_grad_reaches_a_view_made_before_its_constant_base_took_a_value_needing_grad(rng):
    def f(xp, ws):
        (w,) = ws
        buf = (w * 0).detach()                  # a constant on the autodiff device
        v = buf[0:2]                            # made before buf depends on w
        buf[1:3] = w[:2] * 2
        with xp.no_grad():
            v.sum()                             # the first read, inside no_grad, derives v again
        return (v * v).sum() + buf.sum()
    _grads(f, rng.standard_normal(4))


def test_leaf_changed_through_view_raises_in_backward():
    ad = burn.Device.flex().autodiff()
    w = burn.tensor([1.0, 2.0, 3.0], device=ad).require_grad()
    loss = (w * w).sum()
    with burn.no_grad():
        w[0:2] += 1                             # the leaf changes through a view
    assert w.tolist() == [2.0, 3.0, 3.0]
    with pytest.raises(burn.AutodiffError, match="modified in place"):
        loss.backward()


def test_constant_view_changed_through_base_raises_in_backward():
    ad = burn.Device.flex().autodiff()
    x = burn.ones((3,), device=ad)
    v = x[0:2]                                  # a constant view, kept by reference
    w = burn.tensor([1.0, 2.0], device=ad).require_grad()
    loss = (v * w).sum()
    ok = (v + w).sum()                          # add's backward needs no value
    x[0] = 5.0                                  # changes v through its base
    assert v.tolist() == [5.0, 1.0]
    assert w.grad(ok.backward()).tolist() == [1.0, 1.0]
    with pytest.raises(burn.AutodiffError, match="modified in place"):
        loss.backward()


# -- host views -------------------------------------------------------------------

@pytest.mark.parametrize("dev", DEVS, ids=IDS)
def test_host_arrays_are_read_only(dev):
    x = burn.tensor([1.0, 1.0, 1.0], device=dev)
    y = x * 2
    for a in (x.numpy(), np.asarray(x), x.__array__()):
        assert not a.flags.writeable
        with pytest.raises(ValueError, match="read-only"):
            a[0] = 100
    assert y.tolist() == [2.0, 2.0, 2.0] and x.tolist() == [1.0, 1.0, 1.0]
    c = np.array(x)                             # a copy of one's own
    c[0] = 100
    assert c.flags.writeable and x.tolist() == [1.0, 1.0, 1.0]
    assert np.asarray(x, dtype=np.float64).dtype == np.float64
    with pytest.raises(ValueError, match="copy=False"):
        x.__array__(np.float64, copy=False)


def test_host_array_write_cannot_change_gradient():
    ad = burn.Device.flex().autodiff()
    a = burn.tensor([1.0, 1.0, 1.0], device=ad).require_grad()
    w = burn.tensor([2.0, 2.0, 2.0], device=ad).require_grad()
    loss = (a * w).sum()
    with pytest.raises(ValueError):
        w.numpy()[:] = 10
    assert a.grad(loss.backward()).tolist() == [2.0, 2.0, 2.0]


def test_reshape_is_a_view_exactly_when_numpy_s_is(rng):
    """Random chains of slices, permutations and reshapes: burn's reshape shares its
    input's value exactly when numpy's does (otherwise both copy)."""
    checked = 0
    for _ in range(300):
        shape = tuple(int(v) for v in rng.integers(1, 5, size=rng.integers(1, 4)))
        a, t = np.zeros(shape, np.float32), burn.zeros(shape)
        for _ in range(int(rng.integers(1, 4))):
            k = rng.integers(3)
            if k == 0:
                key = tuple(slice(int(rng.integers(0, 2)), None, int(rng.choice([1, 2, -1]))) for _ in a.shape)
                a, t = a[key], t[key]
            elif k == 1:
                axes = tuple(int(v) for v in rng.permutation(a.ndim))
                a, t = a.transpose(axes), t.permute(axes)
            elif a.size:
                d = int(rng.choice([d for d in range(1, a.size + 1) if a.size % d == 0]))
                new = (d, a.size // d) if rng.integers(2) else (1, a.size)
                a2, t2 = a.reshape(new), t.reshape(new)
                shares = t2 is t or burn.views.base_of(t2) is not None     # same shape: x itself
                assert shares == np.shares_memory(a2, a), (a.shape, a.strides, new)
                a, t = a2, t2
                checked += 1
    assert checked > 100


_OACONVOLVE = """
import numpy as np, burn, scipy.signal as ss
rng = np.random.default_rng(0)
a, b = rng.standard_normal(4000), rng.standard_normal(64)
got = ss.oaconvolve(burn.tensor(a, dtype=burn.float64), burn.tensor(b, dtype=burn.float64))
assert isinstance(got, burn.Tensor)
np.testing.assert_allclose(got.numpy(), ss.oaconvolve(a, b), rtol=1e-10, atol=1e-10)
"""


def test_scipy_oaconvolve_writes_its_overlap_adds_into_slices():
    """SciPy's overlap-add writes into slices of its output (off by 24.9 when slices copied)."""
    pytest.importorskip("scipy")
    # SCIPY_ARRAY_API is read when scipy is imported: a fresh interpreter
    r = subprocess.run([sys.executable, "-c", _OACONVOLVE], env={**os.environ, "SCIPY_ARRAY_API": "1"},
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]


def _random_view(rng, a, t, steps=(1, 2, -1)):
    """One random view step applied to array ``a`` (numpy or torch: no negative ``steps``)
    and tensor ``t`` alike."""
    k = int(rng.integers(4))
    if k == 0 and a.ndim:
        key = tuple(slice(int(rng.integers(0, 2)), None, int(rng.choice(steps))) for _ in a.shape)
        return a[key], t[key]
    if k == 1 and a.ndim:
        i = int(rng.integers(a.shape[0])) if a.shape[0] else None
        if i is not None:
            return a[i, None], t[i, None]
    if k == 2:
        axes = tuple(int(v) for v in rng.permutation(a.ndim))
        return (a.transpose(axes) if isinstance(a, np.ndarray) else a.permute(axes)), t.permute(axes)
    n = int(np.prod(a.shape))
    if n:
        d = int(rng.choice([d for d in range(1, n + 1) if n % d == 0]))
        return a.reshape((d, -1)), t.reshape((d, -1))
    return a, t


@pytest.mark.parametrize("dev", DEVS, ids=IDS)
def test_random_views_and_writes_match_numpy(dev, rng):
    """Random chains of views held at once, random in-place writes through any of them
    or the base: every array agrees with numpy after each write."""
    for _ in range(40):
        shape = tuple(int(v) for v in rng.integers(1, 5, size=rng.integers(1, 4)))
        base = rng.standard_normal(shape).astype(np.float32)
        pairs = [(base.copy(), None)]
        pairs[0] = (pairs[0][0], burn.tensor(pairs[0][0], device=dev))
        for _ in range(4):
            a, t = pairs[int(rng.integers(len(pairs)))]
            pairs.append(_random_view(rng, a, t))
        for _ in range(3):
            a, t = pairs[int(rng.integers(len(pairs)))]
            if rng.integers(2):
                a += 1.5
                t += 1.5
            elif a.size:
                a[...] = a * 0.5 - 1
                t[...] = t * 0.5 - 1
            for i, (a2, t2) in enumerate(pairs):
                np.testing.assert_allclose(t2.numpy(), a2, rtol=1e-6, atol=1e-6, err_msg=f"array {i}")


def test_random_views_and_writes_differentiate_as_torch(rng):
    """Random views of a computed tensor, written in place with values that need grad:
    the loss over every view and the base has torch's gradients."""
    ad = burn.Device.flex().autodiff()
    for _ in range(25):
        shape = tuple(int(v) for v in rng.integers(1, 5, size=rng.integers(1, 4)))
        w0, u0 = rng.standard_normal(shape), rng.standard_normal(())
        wb = burn.tensor(w0, dtype=burn.float64, device=ad).require_grad()
        ub = burn.tensor(u0, dtype=burn.float64, device=ad).require_grad()
        wt = torch.tensor(w0, requires_grad=True)
        ut = torch.tensor(u0, requires_grad=True)
        pairs = [(wt * 1, wb * 1)]
        for _ in range(3):
            a, t = pairs[int(rng.integers(len(pairs)))]
            pairs.append(_random_view(rng, a, t, steps=(1, 2)))
        for _ in range(3):
            i = int(rng.integers(len(pairs)))
            a, t = pairs[i]
            if rng.integers(2):
                a += ut
                t += ub
            else:
                a[...] = a + ut * 2
                t[...] = t + ub * 2
        coef = [float(c) for c in rng.standard_normal(len(pairs))]
        lt = sum(c * a.sum() for c, (a, _) in zip(coef, pairs))
        lb = sum(c * t.sum() for c, (_, t) in zip(coef, pairs))
        lt.backward()
        g = lb.backward()
        np.testing.assert_allclose(lb.item(), lt.item(), rtol=1e-10)
        np.testing.assert_allclose(wb.grad(g).numpy(), wt.grad.numpy(), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(ub.grad(g).numpy(), ut.grad.numpy(), rtol=1e-10, atol=1e-12)
