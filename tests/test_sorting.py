"""sort, argsort, searchsorted, nonzero and unique_* against numpy on flex and wgpu (cuda runs the
same conformance cases on the CuPy stand-in, tests/test_cuda_fakecupy.py): ties keep their
order, NaNs sort last (first when descending), empty and 0-d inputs, every axis, integer and
float dtypes, the merge sort's odd lengths, the gradient of sort, and the errors."""
import numpy as np
import pytest

import burn
from burn.testing.gradcheck import gradcheck
from devices import flex_and_wgpu

DEVS = flex_and_wgpu()
IDS = [str(d) for d in DEVS]


def _np_argsort(x, axis, descending):
    if not descending:
        return np.argsort(x, axis=axis, kind="stable")
    r = np.flip(np.argsort(np.flip(x, axis=axis), axis=axis, kind="stable"), axis=axis)
    return x.shape[axis] - 1 - r


def _values(rng, shape, dtype):
    a = rng.integers(-3, 4, size=shape)          # a narrow range: many ties
    if dtype.startswith("float"):
        a = a.astype(dtype)
        flat = a.reshape(-1)
        flat[::5] = np.nan
        flat[1::7] = np.inf
        flat[2::11] = -0.0
        return a
    return a.astype(dtype) if dtype != "bool" else a > 0


@pytest.mark.parametrize("dev", DEVS, ids=IDS)
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "int8", "uint8", "bool"])
def test_argsort_and_sort_match_numpy_with_ties_and_nans(dev, dtype, rng):
    if dtype == "uint8":
        dtype_vals = lambda s: rng.integers(0, 4, size=s).astype("uint8")   # noqa: E731
    else:
        dtype_vals = lambda s: _values(rng, s, dtype)                       # noqa: E731
    # lengths around the merge sort's local-memory block (256) and its cut-over (above 64)
    for shape in [(1,), (2,), (3,), (17,), (64,), (65,), (256,), (257,), (1000,), (4, 33), (3, 300), (3, 5, 7)]:
        a = dtype_vals(shape)
        x = burn.tensor(a, device=dev)
        for axis in range(-len(shape), len(shape)):
            for desc in (False, True):
                want = _np_argsort(a, axis, desc)
                got = burn.argsort(x, axis=axis, descending=desc)
                assert got.dtype == burn.int64
                np.testing.assert_array_equal(got.numpy(), want, err_msg=f"{shape} axis={axis} desc={desc}")
                np.testing.assert_array_equal(burn.sort(x, axis=axis, descending=desc).numpy(),
                                              np.take_along_axis(a, want, axis))


@pytest.mark.parametrize("dev", DEVS, ids=IDS)
def test_sort_of_a_long_row_with_odd_length(dev, rng):
    a = rng.normal(size=4099).astype(np.float32)
    np.testing.assert_array_equal(burn.sort(burn.tensor(a, device=dev)).numpy(), np.sort(a))


@pytest.mark.parametrize("dev", DEVS, ids=IDS)
def test_sort_empty_and_zero_d(dev):
    e = burn.zeros((3, 0), device=dev)
    assert burn.argsort(e).shape == (3, 0) and burn.sort(e, axis=0).shape == (3, 0)
    s = burn.tensor(2.5, device=dev)
    assert burn.sort(s).item() == 2.5 and burn.argsort(s).item() == 0 and burn.argsort(s).ndim == 0
    with pytest.raises(burn.ShapeError, match="0-d"):
        burn.sort(s, axis=1)
    with pytest.raises(burn.ShapeError, match="argsort"):
        burn.argsort(burn.zeros((2, 3), device=dev), axis=2)


def test_sort_refuses_complex():
    with pytest.raises(burn.DTypeError, match="argsort: complex"):
        burn.sort(burn.tensor([1 + 2j, 3j]))


def test_sort_gradient_goes_back_through_the_permutation():
    ad = burn.Device.flex().autodiff()
    a = np.array([[3.0, 1.0, 2.0], [0.5, 0.5, -1.0]])
    w = np.array([[10.0, 20.0, 30.0], [1.0, 2.0, 3.0]])
    x = burn.tensor(a, device=ad).require_grad()
    g = x.grad((burn.sort(x, axis=1) * burn.tensor(w, device=ad)).sum().backward()).numpy()
    perm = np.argsort(a, axis=1, kind="stable")
    want = np.zeros_like(a)
    np.put_along_axis(want, perm, w, axis=1)
    np.testing.assert_array_equal(g, want)
    assert gradcheck(lambda t: burn.sort(t, axis=0, descending=True), np.random.default_rng(1).normal(size=(4, 3)))
    # argsort's integer result carries no gradient (and asks for none)
    assert not burn.argsort(x).requires_grad


@pytest.mark.parametrize("dev", DEVS, ids=IDS)
def test_searchsorted_matches_numpy(dev, rng):
    a = np.sort(rng.integers(0, 8, size=40)).astype(np.float32)
    a[-4:] = np.nan
    v = rng.integers(-2, 10, size=(3, 6)).astype(np.float32)
    v[0, :2] = np.nan
    for side in ("left", "right"):
        got = burn.searchsorted(burn.tensor(a, device=dev), burn.tensor(v, device=dev), side=side)
        assert got.dtype == burn.int64 and got.shape == v.shape
        np.testing.assert_array_equal(got.numpy(), np.searchsorted(a, v, side=side))
    u = rng.permutation(20).astype(np.int64)
    q = np.array([-1, 0, 5, 19, 20])
    got = burn.searchsorted(burn.tensor(u, device=dev), burn.tensor(q, device=dev),
                            sorter=burn.argsort(burn.tensor(u, device=dev)))
    np.testing.assert_array_equal(got.numpy(), np.searchsorted(u, q, sorter=np.argsort(u)))
    # different dtypes are promoted; an empty x1 puts everything at 0
    got = burn.searchsorted(burn.tensor([1, 3], device=dev), burn.tensor([2.5, 3.0], device=dev), side="right")
    assert got.tolist() == [1, 2]
    assert burn.searchsorted(burn.zeros((0,), device=dev), burn.ones((2,), device=dev)).tolist() == [0, 0]


def test_searchsorted_errors():
    with pytest.raises(burn.ShapeError, match="one-dimensional"):
        burn.searchsorted(burn.zeros((2, 2)), burn.zeros((2,)))
    with pytest.raises(ValueError, match="side"):
        burn.searchsorted(burn.zeros((2,)), burn.zeros((2,)), side="middle")
    with pytest.raises(burn.ShapeError, match="sorter"):
        burn.searchsorted(burn.zeros((2,)), burn.zeros((2,)), sorter=burn.zeros((3,), dtype=burn.int64))


@pytest.mark.parametrize("dev", DEVS, ids=IDS)
def test_nonzero_matches_numpy(dev, rng):
    for a in [rng.integers(-1, 2, size=(3, 4, 5)), rng.random((7,)) < 0.3, np.zeros((2, 3)),
              np.array([0.0, np.nan, -0.0, 2.0]), np.zeros((0, 3))]:
        got = burn.nonzero(burn.tensor(a, device=dev))
        want = np.nonzero(a)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.dtype == burn.int64
            np.testing.assert_array_equal(g.numpy(), w)
    with pytest.raises(burn.ShapeError, match="nonzero: a 0-d"):
        burn.nonzero(burn.tensor(1.0, device=dev))


@pytest.mark.parametrize("dev", DEVS, ids=IDS)
@pytest.mark.parametrize("dtype", ["float64", "float32", "int32", "int8", "uint8"])
def test_unique_functions_match_numpy(dev, dtype, rng):
    cases = [_values(rng, (4, 6), dtype) if dtype != "uint8" else rng.integers(0, 4, (4, 6)).astype("uint8"),
             np.zeros((0, 2), dtype), np.array(3, dtype)]
    for a in cases:
        x = burn.tensor(a, device=dev)
        v, i, inv, c = np.unique(a, return_index=True, return_inverse=True, return_counts=True, equal_nan=False)
        r = burn.unique_all(x)
        np.testing.assert_array_equal(r.values.numpy(), v)
        np.testing.assert_array_equal(r.indices.numpy(), i)
        np.testing.assert_array_equal(r.inverse_indices.numpy(), inv.reshape(a.shape))
        np.testing.assert_array_equal(r.counts.numpy(), c)
        assert r.values.dtype.name == dtype and r.counts.dtype == burn.int64
        np.testing.assert_array_equal(burn.unique_values(x).numpy(), v)
        uc, ui = burn.unique_counts(x), burn.unique_inverse(x)
        np.testing.assert_array_equal(uc.counts.numpy(), c)
        np.testing.assert_array_equal(ui.inverse_indices.numpy(), inv.reshape(a.shape))


def test_unique_keeps_each_nan_and_merges_signed_zeros():
    v, c = burn.unique_counts(burn.tensor([np.nan, 0.0, -0.0, np.nan, 1.0]))
    assert c.tolist() == [2, 1, 1, 1] and np.isnan(v.numpy()[2:]).all()


def test_unique_refuses_a_gradient_path():
    ad = burn.Device.flex().autodiff()
    x = burn.tensor([1.0, 1.0, 2.0], device=ad).require_grad()
    for fn in (burn.unique_values, burn.unique_counts, burn.unique_inverse, burn.unique_all):
        with pytest.raises(burn.AutodiffError, match="not differentiable.*detach"):
            fn(x * 2)
        fn(x.detach())
    # nonzero and searchsorted return integers: nothing to refuse
    assert burn.nonzero(x)[0].tolist() == [0, 1, 2]


def test_zero_d_sort_is_a_new_tensor_and_scalars_search_in_their_own_dtype():
    s = burn.tensor(1.5)
    assert burn.sort(s) is not s and burn.sort(s).shape == () and burn.argsort(s).dtype == burn.int64
    assert burn.searchsorted(burn.tensor([1, 2, 3]), 2.5).item() == 2
