"""Parallel reductions on wgpu: the one-work-item-per-row, work-group-per-row and split
(partials + combine) variants of the generated reduce kernels give numpy's results for every
reduction op and dtype, odd sizes, strided and broadcast inputs, NaNs, ties and empty rows;
the launcher picks the variant the shape calls for."""
import numpy as np
import pytest

import burn
from devices import wgpu_or_skip as _wgpu_or_skip  # noqa: E402  (tests/ is on sys.path)

VARIANTS = ["row", "group", "split"]
OPS = ["sum", "prod", "max", "min", "argmax", "argmin", "any", "all"]


@pytest.fixture
def force(monkeypatch):
    from burn_wgpu.kernels.reduce import generated as rf

    def set_(v):
        monkeypatch.setattr(rf, "FORCE", v)
    return set_


def _ctx(dev):
    from burn_wgpu import runtime
    return runtime.context(dev.index)


def _launches(dev):
    return dev.backend.stats(dev.index)["launches"]


def _check(got, want, dtype):
    assert got.shape == np.shape(want), (got.shape, np.shape(want))
    if np.issubdtype(np.asarray(want).dtype, np.floating) and dtype in ("float32", "float64"):
        tol = 1e-4 if dtype == "float32" else 1e-10
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, want)


def _data(rng, shape, dtype, op):
    if dtype == "bool":
        return rng.random(shape) < (0.97 if op == "all" else 0.02)
    if dtype.startswith("float"):
        a = rng.standard_normal(shape)
        if op == "prod":
            a = 1 + 0.01 * a           # a product of hundreds of values stays finite
        return a.astype(dtype)
    if op == "prod":
        # mostly ones: the product of a long row stays far from int64's range
        v = np.where(rng.random(shape) < 0.03, 2, 1)
        return (v if dtype == "uint8" else v * np.where(rng.random(shape) < 0.5, -1, 1)).astype(dtype)
    hi = 3 if dtype == "uint8" else 50
    return rng.integers(0 if dtype == "uint8" else -hi, hi, shape).astype(dtype)


# -- selection -------------------------------------------------------------------------------

def test_choose_keeps_one_item_per_row_for_many_or_short_rows():
    from burn_wgpu.kernels.reduce.generated import choose
    assert choose(16384, 512, 2, True, force=None) == ("row", 1)      # [32, 512, 512] over the last axis
    assert choose(4, 10, 2, True, force=None) == ("row", 1)           # rows too short for a tree
    assert choose(100_000, 4096, 132, False, force=None) == ("row", 1)


def test_choose_gives_few_long_rows_a_work_group_and_splits_very_long_ones():
    from burn_wgpu.kernels.reduce.generated import choose
    assert choose(8, 1 << 20, 2, True, force=None) == ("group", 1)
    assert choose(64, 4096, 132, False, force=None) == ("group", 1)
    v, s = choose(1, 1 << 24, 2, True, force=None)
    assert v == "split" and 1 < s <= 8
    v, s = choose(1, 1 << 26, 132, False, force=None)
    assert v == "split" and s >= 132                       # enough groups for every unit
    # groups with a loop-level pass after their last reduction cannot split
    assert choose(1, 1 << 24, 2, True, can_split=False, force=None) == ("group", 1)
    assert choose(2, 100, 2, True, force="split") == ("split", 2)


def test_automatic_choice_runs_split_for_a_full_sum_and_group_for_few_rows():
    dev = _wgpu_or_skip()
    from burn_wgpu.kernels.reduce import generated as rf
    from burn_wgpu.kernels.reduce import _PLAIN
    rng = np.random.default_rng(0)
    a = rng.standard_normal(1 << 19).astype(np.float32)
    x = burn.tensor(a, device=dev)
    dev.sync()
    before = _launches(dev)
    s = x.sum()
    dev.sync()
    units = _ctx(dev).device.max_compute_units
    n = _launches(dev) - before
    np.testing.assert_allclose(s.item(), a.astype(np.float64).sum(), rtol=1e-5, atol=1e-3)
    v = _PLAIN[("sum", (0,), False)].last_variant
    assert v[0] in ("split", "group") and n == (2 if v[0] == "split" else 1), (v, n, units)
    b = rng.standard_normal((3, 1 << 16)).astype(np.float32)
    y = burn.tensor(b, device=dev).max(axis=1)
    np.testing.assert_array_equal(y.numpy(), b.max(axis=1))
    assert _PLAIN[("max", (1,), False)].last_variant == ("group", 1)
    assert rf.FORCE is None


# -- every op, dtype and variant against numpy ------------------------------------------------

@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int8", "uint8", "bool", "int64"])
def test_every_op_and_dtype_matches_numpy(variant, dtype, force):
    dev = _wgpu_or_skip()
    if dtype == "float64" and not _ctx(dev).fp64:
        pytest.skip("no float64 on this device")
    force(variant)
    rng = np.random.default_rng(1)
    # 1, a prime, not multiples of the work-group size, a row longer than a work-group
    for shape, axis in [((1,), None), ((97,), 0), ((3, 1031), 1), ((5, 7, 3), (0, 2)), ((2, 3, 4), None)]:
        for op in OPS:
            a = _data(rng, shape, dtype, op)
            x = burn.tensor(a, device=dev)
            ax = axis if not (op.startswith("arg") and isinstance(axis, tuple)) else None
            got = getattr(x, op)(axis=ax).numpy()
            _check(got, getattr(np, op)(a, axis=ax), dtype)


@pytest.mark.parametrize("variant", VARIANTS)
def test_keepdims_and_every_axis(variant, force):
    dev = _wgpu_or_skip()
    force(variant)
    a = np.random.default_rng(2).standard_normal((3, 67, 5)).astype(np.float32)
    x = burn.tensor(a, device=dev)
    for axis in [0, 1, 2, -1, (0, 1), (1, 2), (0, 2), None]:
        for op in ("sum", "max", "argmin"):
            if op == "argmin" and isinstance(axis, tuple):
                continue
            got = getattr(x, op)(axis=axis, keepdims=True).numpy()
            _check(got, getattr(np, op)(a, axis=axis, keepdims=True), "float32")


@pytest.mark.parametrize("variant", VARIANTS)
def test_strided_and_broadcast_inputs(variant, force):
    dev = _wgpu_or_skip()
    force(variant)
    rng = np.random.default_rng(3)
    a = rng.standard_normal((130, 70)).astype(np.float32)
    x = burn.tensor(a, device=dev)
    xt = x.T                                     # a transposed view
    xs = x[::3, 1::2]                            # a strided slice
    b = rng.standard_normal((1, 70)).astype(np.float32)
    xb = burn.broadcast_to(burn.tensor(b, device=dev), (130, 70))     # stride 0 along the rows
    for op in ("sum", "max", "argmax", "min"):
        for t, ref in ((xt, a.T), (xs, a[::3, 1::2]), (xb, np.broadcast_to(b, (130, 70)))):
            for axis in (0, 1, None):
                _check(getattr(t, op)(axis=axis).numpy(), getattr(np, op)(ref, axis=axis), "float32")


@pytest.mark.parametrize("variant", VARIANTS)
def test_prologue_and_written_prologue_value(variant, force):
    dev = _wgpu_or_skip()
    force(variant)
    rng = np.random.default_rng(4)
    a = rng.standard_normal((6, 5003)).astype(np.float32)
    c = rng.standard_normal((6, 1)).astype(np.float32)
    x, bias = burn.tensor(a, device=dev), burn.tensor(c, device=dev)
    for _ in range(2):                          # op by op on the first call, fused on the second
        h = ((x - bias) * 0.5).exp()
        s = h.sum(axis=1)
        i = h.argmax(axis=1)
        want = np.exp((a - c) * np.float32(0.5))
        np.testing.assert_allclose(h.numpy(), want, rtol=1e-6)          # h is kept: written by the kernel
        np.testing.assert_allclose(s.numpy(), want.sum(axis=1), rtol=1e-5)
        np.testing.assert_array_equal(i.numpy(), want.argmax(axis=1))


# -- NaN, ties, empty rows ----------------------------------------------------------------------

@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("where", [[0], [4098], [8199], [5, 3000, 7000]])
def test_nan_propagates_and_argmax_finds_the_first_nan(variant, where, force):
    dev = _wgpu_or_skip()
    force(variant)
    a = np.random.default_rng(5).standard_normal(8200).astype(np.float32)
    a[where] = np.nan
    x = burn.tensor(a, device=dev)
    for op in ("max", "min", "argmax", "argmin", "sum", "prod"):
        _check(getattr(x, op)().numpy(), getattr(np, op)(a), "float32")
    r = burn.tensor(a.reshape(2, 4100), device=dev)
    for op in ("max", "argmax", "argmin"):
        _check(getattr(r, op)(axis=1).numpy(), getattr(np, op)(a.reshape(2, 4100), axis=1), "float32")


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_ties_give_the_first_index(variant, dtype, force):
    dev = _wgpu_or_skip()
    force(variant)
    a = np.zeros(10007, dtype)
    a[[17, 2500, 6000, 10006]] = 9            # the maximum in several work-items' shares
    a[[33, 5001, 9999]] = -9
    x = burn.tensor(a, device=dev)
    assert x.argmax().item() == 17 and x.argmin().item() == 33
    b = np.ones((3, 4099), dtype)              # every value ties
    y = burn.tensor(b, device=dev)
    np.testing.assert_array_equal(y.argmax(axis=1).numpy(), [0, 0, 0])
    np.testing.assert_array_equal(y.argmin(axis=0).numpy(), np.zeros(4099, np.int64))


@pytest.mark.parametrize("variant", VARIANTS)
def test_empty_reductions(variant, force):
    dev = _wgpu_or_skip()
    force(variant)
    a = np.zeros((0, 5), np.float32)
    x = burn.tensor(a, device=dev)
    np.testing.assert_array_equal(x.sum(axis=0).numpy(), a.sum(axis=0))        # rows of length 0
    np.testing.assert_array_equal(x.sum(axis=1).numpy(), a.sum(axis=1))        # no rows
    np.testing.assert_array_equal(x.prod(axis=0).numpy(), a.prod(axis=0))
    np.testing.assert_array_equal(x.any(axis=0).numpy(), a.any(axis=0))
    np.testing.assert_array_equal(x.all(axis=0).numpy(), a.all(axis=0))
    assert x.sum().item() == 0.0


# -- accumulation ---------------------------------------------------------------------------------

@pytest.mark.parametrize("variant", VARIANTS)
def test_integer_sums_accumulate_in_int64(variant, force):
    dev = _wgpu_or_skip()
    force(variant)
    a = np.full(5000, 2_000_000_000, np.int32)
    x = burn.tensor(a, device=dev)
    s = x.sum()
    assert s.dtype == burn.int64 and s.item() == 10_000_000_000_000
    b = np.ones(70_000, np.bool_)
    assert burn.tensor(b, device=dev).sum().item() == 70_000


@pytest.mark.parametrize("variant", VARIANTS)
def test_float32_sum_and_moments_of_a_long_row_stay_accurate(variant, force):
    dev = _wgpu_or_skip()
    force(variant)
    a = (1e4 + np.random.default_rng(6).standard_normal((2, 300_001))).astype(np.float32)
    x = burn.tensor(a, device=dev)
    a64 = a.astype(np.float64)
    np.testing.assert_allclose(x.sum(axis=1).numpy(), a64.sum(axis=1), rtol=1e-6)
    np.testing.assert_allclose(x.sum().item(), a64.sum(), rtol=1e-6)
    for _ in range(2):
        np.testing.assert_allclose(x.mean(axis=1).numpy(), a64.mean(axis=1), rtol=1e-6)
        np.testing.assert_allclose(burn.var(x, axis=1, correction=1).numpy(), a64.var(axis=1, ddof=1), rtol=1e-3)
        np.testing.assert_allclose(x.mean().item(), a64.mean(), rtol=1e-6)


@pytest.mark.parametrize("variant", VARIANTS)
def test_mean_and_var_groups_match_numpy(variant, force):
    dev = _wgpu_or_skip()
    force(variant)
    rng = np.random.default_rng(7)
    for shape, axis in [((4, 4099), 1), ((131, 3), 0), ((3, 5, 67), (0, 2)), ((1,), None), ((2, 1000), None)]:
        a = rng.standard_normal(shape).astype(np.float32)
        x = burn.tensor(a, device=dev)
        for _ in range(2):
            np.testing.assert_allclose(x.mean(axis=axis).numpy(), a.mean(axis=axis), rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(burn.var(x, axis=axis).numpy(), a.var(axis=axis), rtol=1e-4, atol=1e-6)
            np.testing.assert_allclose(burn.std(x, axis=axis, keepdims=True).numpy(),
                                       a.std(axis=axis, keepdims=True), rtol=1e-4, atol=1e-6)


def test_variants_run_the_same_semantics_as_the_library_kernels(monkeypatch):
    """The library's one-work-item kernels (the previous path) and the generated variants agree."""
    dev = _wgpu_or_skip()
    import burn_wgpu.kernels.reduce as wk
    from burn_wgpu.kernels.reduce import generated as rf
    a = np.random.default_rng(8).standard_normal((5, 3001)).astype(np.float32)
    a[2, 100] = np.nan
    x = burn.tensor(a, device=dev)
    res = {}
    for lib, v in ((True, None), (False, "row"), (False, "group"), (False, "split")):
        monkeypatch.setattr(wk, "REDUCE_LIBRARY", lib)
        monkeypatch.setattr(rf, "FORCE", v)
        res[(lib, v)] = [getattr(x, op)(axis=1).numpy() for op in ("argmax", "argmin", "max", "any")]
    base = res[(True, None)]
    for k, r in res.items():
        for got, want in zip(r, base):
            np.testing.assert_array_equal(got, want, err_msg=str(k))


def test_var_splits_into_two_launches_per_pass(force):
    """A two-pass group (var: the mean, then the squared deviations) splits pass by pass: each
    pass's partials and combine, the second pass re-reading the mean its combine stored."""
    dev = _wgpu_or_skip()
    force("split")
    a = (100 + np.random.default_rng(9).standard_normal((3, 5001))).astype(np.float32)
    x = burn.tensor(a, device=dev)
    for _ in range(2):              # small: op by op first, then the fused group
        dev.sync()
        before = _launches(dev)
        v = burn.var(x, axis=1, correction=1)
        dev.sync()
        n = _launches(dev) - before
        np.testing.assert_allclose(v.numpy(), a.astype(np.float64).var(axis=1, ddof=1), rtol=1e-4)
    assert n == 4


@pytest.mark.parametrize("variant", VARIANTS)
def test_complex_sums_and_products_in_every_variant(variant, force):
    dev = _wgpu_or_skip()
    force(variant)
    rng = np.random.default_rng(10)
    for shape, axis in [((1,), None), ((3, 1031), 1), ((4099,), 0), ((5, 7, 3), (0, 2))]:
        a = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)
        x = burn.tensor(a, device=dev)
        np.testing.assert_allclose(x.sum(axis=axis).numpy(), a.astype(np.complex128).sum(axis=axis),
                                   rtol=1e-4, atol=1e-4)
        b = (1 + 0.01 * a).astype(np.complex64)      # products of thousands of values stay finite
        y = burn.tensor(b, device=dev)
        np.testing.assert_allclose(y.prod(axis=axis).numpy(), b.astype(np.complex128).prod(axis=axis),
                                   rtol=1e-3, atol=1e-4)


def test_complex_sum_of_few_long_rows_leaves_the_one_item_kernel(monkeypatch):
    dev = _wgpu_or_skip()
    from burn_wgpu.kernels.reduce import complex as reduce_complex
    calls = []
    orig = reduce_complex._parallel
    monkeypatch.setattr(reduce_complex, "_parallel", lambda *a: calls.append(a[0]) or orig(*a))
    a = (np.ones((2, 1 << 18)) * (1 + 2j)).astype(np.complex64)
    got = burn.tensor(a, device=dev).sum(axis=1).numpy()
    np.testing.assert_allclose(got, a.sum(axis=1), rtol=1e-6)
    assert calls == ["sum"]
