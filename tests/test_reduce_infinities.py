"""Float sums that meet an infinity give numpy's inf (or NaN for inf - inf), on every backend
and every reduction variant. The generated kernels sum with Kahan compensation, whose error
term (t - s) - y is inf - inf = NaN once the sum is infinite: without a guard, sum([inf, 1])
was NaN on wgpu (and in burn-cuda's generated reduce groups)."""
import numpy as np
import pytest

import burn
from devices import flex_and_wgpu

ROWS = {
    "inf then finite": [np.inf, 3.5, 1.0],
    "finite then inf": [3.5, 1.0, np.inf],
    "-inf": [2.0, -np.inf, 1.0],
    "inf and -inf": [np.inf, 1.0, -np.inf],
    "inf twice": [np.inf, np.inf],
    "nan and inf": [np.nan, np.inf, 1.0],
    "overflow to inf": [3e38, 3e38, 1.0],
}


def _devices():
    return [pytest.param(d, id=str(d)) for d in flex_and_wgpu()]


@pytest.mark.parametrize("variant", [None, "row", "group", "split"])
@pytest.mark.parametrize("dev", _devices())
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sum_and_mean_with_infinities_match_numpy(dev, dtype, variant, monkeypatch):
    if variant is not None:
        if dev.kind != "wgpu":
            pytest.skip("variants are wgpu's")
        from burn_wgpu.kernels.reduce import generated as rf
        monkeypatch.setattr(rf, "FORCE", variant)
    for name, row in ROWS.items():
        # long rows (the parallel variants' territory) with the special values spread out
        a = np.ones((3, 5000), dtype)
        a[:, [7, 2500, 4999][:len(row)]] = np.array(row, dtype)[:3]
        a[1] = a[1][::-1]
        x = burn.tensor(a, device=dev)
        with np.errstate(all="ignore"):
            want_rows, want_all, want_mean = a.sum(axis=1), a.sum(), a.mean(axis=1)
            want_cols = a.sum(axis=0)
        np.testing.assert_array_equal(burn.sum(x, axis=1).numpy(), want_rows, err_msg=name)
        np.testing.assert_array_equal(np.asarray(burn.sum(x).numpy()), want_all, err_msg=name)
        np.testing.assert_allclose(burn.mean(x, axis=1).numpy(), want_mean, rtol=1e-6, err_msg=name)
        np.testing.assert_array_equal(burn.sum(x, axis=0).numpy(), want_cols, err_msg=name)
        # with a fused prologue and epilogue (one generated kernel on wgpu)
        got = (burn.sum(x * 2.0, axis=1) + 1.0).numpy()
        with np.errstate(all="ignore"):
            np.testing.assert_array_equal(got, (a * dtype_scalar(dtype, 2.0)).sum(axis=1) + dtype_scalar(dtype, 1.0),
                                          err_msg=name)


def dtype_scalar(dtype, v):
    return np.dtype(dtype).type(v)


@pytest.mark.parametrize("variant", [None, "row", "group", "split"])
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_sums_with_infinities_match_numpy_per_part(dtype, variant, monkeypatch):
    # each part sums on its own: an infinite real part must not turn the imaginary part NaN
    from devices import wgpu_or_skip
    dev = wgpu_or_skip()
    if variant is not None:
        from burn_wgpu.kernels.reduce import complex as rc
        from burn_wgpu.kernels.reduce import generated as rf
        monkeypatch.setattr(rf, "FORCE", variant)
        assert hasattr(rc, "LAST_VARIANT")
    a = np.ones((3, 5000), dtype) * (1 + 2j)
    a[0, 7] = complex(np.inf, 1.0)
    a[1, 2500] = complex(1.0, -np.inf)
    a[2, 4999] = complex(np.inf, 0.0)
    a[2, 10] = complex(-np.inf, 0.0)
    x = burn.tensor(a, device=dev)
    with np.errstate(all="ignore"):
        want = a.sum(axis=1)
    got = burn.sum(x, axis=1).numpy()
    np.testing.assert_array_equal(got.real, want.real)
    np.testing.assert_array_equal(got.imag, want.imag)
