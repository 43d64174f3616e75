"""burn.nextafter is exact bit for bit on every backend (numpy's np.nextafter is the reference,
compared as integer bit patterns, so one ulp off fails), with the standard's special cases
(signed zeros, NaN, infinities, subnormals) and its errors at the call."""
from __future__ import annotations

import numpy as np
import pytest

import burn
from devices import flex_and_wgpu

_BITS = {np.dtype(np.float16): np.uint16, np.dtype(np.float32): np.uint32, np.dtype(np.float64): np.uint64}


def _cases(d):
    f = np.finfo(d)
    tiny = f.smallest_subnormal
    a = np.array([1.0, 1.0, 0.0, 0.0, -0.0, 0.0, -1.5, f.max, f.max, -f.max, tiny, -tiny, np.inf, np.inf,
                  np.nan, 2.0, f.smallest_normal, 3.0, -0.0], dtype=d)
    b = np.array([2.0, 0.0, -1.0, 1.0, 1.0, -0.0, -3.0, np.inf, 0.0, -np.inf, 0.0, 1.0, 0.0, np.inf,
                  1.0, np.nan, 0.0, 3.0, 0.0], dtype=d)
    return a, b


def _same_bits(got, want):
    ut = _BITS[want.dtype]
    g, w = got.view(ut), want.view(ut)
    # NaN payloads may differ between a kernel and numpy: any NaN matches a NaN
    ok = (g == w) | (np.isnan(got) & np.isnan(want))
    assert ok.all(), f"got {got[~ok]} (bits {g[~ok]}), want {want[~ok]} (bits {w[~ok]})"


@pytest.mark.parametrize("device", flex_and_wgpu(), ids=str)
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_nextafter_matches_numpy_bit_for_bit(device, dtype):
    be = device.backend
    if not be.supports_dtype(burn.as_dtype(dtype), device.index):
        pytest.skip(f"{device} holds no {dtype}")
    a, b = _cases(np.dtype(dtype))
    with np.errstate(over="ignore"):        # nextafter(max, inf) is inf, as it should be
        got = burn.nextafter(burn.tensor(a, device=device), burn.tensor(b, device=device)).numpy()
        want = np.nextafter(a, b)
    assert got.dtype == a.dtype
    _same_bits(got, want)


@pytest.mark.parametrize("device", flex_and_wgpu(), ids=str)
def test_nextafter_steps_random_values_and_broadcasts(device):
    rng = np.random.default_rng(0)
    a = (rng.standard_normal((3, 5)) * 10.0 ** rng.integers(-30, 30, (3, 5))).astype(np.float32)
    b = rng.standard_normal((5,)).astype(np.float32)
    got = burn.nextafter(burn.tensor(a, device=device), burn.tensor(b, device=device)).numpy()
    _same_bits(got, np.nextafter(a, b))
    # a Python scalar takes the tensor's dtype; integers are promoted to the default float
    _same_bits(burn.nextafter(burn.tensor(a, device=device), 0.0).numpy(), np.nextafter(a, np.float32(0)))
    i = burn.nextafter(burn.tensor([1, 2], device=device), burn.tensor([2, 0], device=device))
    assert i.dtype is burn.float32
    _same_bits(i.numpy(), np.nextafter(np.float32([1, 2]), np.float32([2, 0])))


def test_nextafter_bfloat16_on_flex():
    import ml_dtypes
    bf = np.dtype(ml_dtypes.bfloat16)
    a = np.array([1.0, 0.0, -2.0, 0.0], dtype=bf)
    b = np.array([2.0, -1.0, -3.0, -0.0], dtype=bf)
    got = burn.nextafter(burn.tensor(a), burn.tensor(b)).numpy()
    want = np.array([1.0 + 2.0 ** -7, -(2.0 ** -133), -2.0 - 2.0 ** -6, -0.0], dtype=bf)
    assert (got.view(np.uint16) == want.view(np.uint16)).all(), (got, want)


def test_nextafter_errors_at_the_call():
    z = burn.tensor([1 + 1j])
    with pytest.raises(burn.DTypeError, match="nextafter"):
        burn.nextafter(z, z)
    with pytest.raises(burn.ShapeError, match="nextafter"):
        burn.nextafter(burn.zeros((2,)), burn.zeros((3,)))
    dev = burn.Device.flex().autodiff()
    x = burn.tensor([1.0], device=dev).require_grad()
    y = burn.nextafter(x, 2.0).sum()
    with pytest.raises(burn.AutodiffError):
        x.grad(y.backward())
