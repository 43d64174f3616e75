"""Complex max / min / argmax / argmin / any / all on wgpu in every reduction variant (one
work-item per row, a work-group per row, a row split over work-groups then a combine launch;
burn_wgpu.kernels.reduce.complex), pinned through ``burn_wgpu.kernels.reduce.generated.FORCE`` and checked
against numpy: its lexicographic (real, imag) order, the first index on ties, the first NaN
(in either part) winning wherever it sits, -0.0 equal to 0.0. Ties and NaNs are planted in
different items' shares and different split chunks, where a tree or a combine that preferred
the wrong side would show."""
import numpy as np
import pytest

import burn
from devices import wgpu_or_skip as _wgpu_or_skip  # noqa: E402  (tests/ is on sys.path)

rf = pytest.importorskip("burn_wgpu.kernels.reduce.generated")
rc = pytest.importorskip("burn_wgpu.kernels.reduce.complex")

VARIANTS = ["row", "group", "split"]
OPS = ["max", "min", "argmax", "argmin", "any", "all"]
NAN = np.nan


@pytest.fixture
def force(monkeypatch):
    def pin(v):
        monkeypatch.setattr(rf, "FORCE", v)
        rc.LAST_VARIANT[0] = None
    return pin


@pytest.fixture(params=["complex64", "complex128"])
def ct(request):
    dev = _wgpu_or_skip()
    from burn_wgpu import runtime
    if request.param == "complex128" and not runtime.context(dev.index).fp64:
        pytest.skip("the OpenCL device has no fp64")
    return dev, np.dtype(request.param)


def _rand(rng, shape, dt, levels=None):
    # few distinct values: real parts tie often, so the imaginary part and the index decide
    if levels:
        re, im = rng.integers(-levels, levels, shape), rng.integers(-levels, levels, shape)
    else:
        re, im = rng.standard_normal(shape), rng.standard_normal(shape)
    return (re + 1j * im).astype(dt)


def _check(op, z, axis, got):
    want = getattr(np, op)(z, axis=axis)
    if op.startswith("arg"):
        np.testing.assert_array_equal(got, want, err_msg=f"{op} axis {axis}")
    else:
        # NaN positions match (either part), every other value exactly
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=f"{op} axis {axis}")
        fin = ~np.isnan(np.asarray(want))
        np.testing.assert_array_equal(np.asarray(got)[fin], np.asarray(want)[fin], err_msg=f"{op} axis {axis}")


def _run(op, z, axis, dev):
    t = burn.tensor(z, device=dev)
    if op.startswith("arg"):
        return getattr(t, op)(axis=axis).numpy()
    return getattr(burn, op)(t, axis=axis).numpy()


def _pinned(variant):
    got = rc.LAST_VARIANT[0]
    assert got is not None and got[0] == variant, (variant, got)
    if variant == "split":
        assert got[1] > 1


CASES = [((1,), None), ((3, 1031), 1), ((4099,), 0), ((5, 7, 3), (0, 2)), ((2, 20_000), 1), ((300, 6), 0)]


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("shape,axis", CASES)
def test_random_values_match_numpy(variant, shape, axis, ct, force):
    dev, dt = ct
    rng = np.random.default_rng(hash(shape) % 2**32)
    z = _rand(rng, shape, dt, levels=3)
    for op in OPS:
        if op.startswith("arg") and isinstance(axis, tuple):
            continue                                # numpy's argmax takes one axis
        force(variant)
        got = _run(op, z, axis, dev)
        _pinned(variant)
        _check(op, z, axis, got)


def _planted(dt, n=20_000):
    """Rows of ``n`` planting ties and NaNs across shares (64 items: shares of ~313) and chunks."""
    rng = np.random.default_rng(7)
    z = _rand(rng, (10, n), dt)
    top, low = complex(9, 9), complex(-9, -9)
    z[0, [17_000, 5, 9_000]] = top                   # a tie: the first index (5) wins
    z[0, [3, 18_000]] = low
    z[1, 12_000] = complex(9, 1)                     # equal real parts: the imaginary part decides
    z[1, 400] = complex(9, 2)
    z[1, 19_999] = complex(9, 3)
    z[2, 15_000] = complex(NAN, 0)                   # NaN in a late chunk, another NaN later
    z[2, 19_000] = complex(0, NAN)
    z[2, 20] = complex(1e30, 1e30)
    z[3, 0] = complex(0, NAN)                        # a NaN (imaginary part) first
    z[4, 10_000] = complex(NAN, NAN)
    z[4, 9_999] = complex(1e30, 0)
    z[5, :] = 0                                      # any: False, all: False
    z[5, 19_999] = complex(0, -0.0)                  # still zero (a negative-zero part)
    z[6, :] = 1                                      # all equal: index 0 for every arg op
    z[6, 12_345] = complex(1, -0.0)                  # -0.0 == 0.0: no new max or min
    z[7, :] = 0
    z[7, 19_998] = complex(0, 1e-30)                 # any: only the last share has a hit
    z[8] = 1 + 1j
    z[8, 7_777] = 0                                  # all: one zero mid-row
    z[9, 1] = complex(-np.inf, 0)
    z[9, 2] = complex(np.inf, -np.inf)
    return z


@pytest.mark.parametrize("variant", VARIANTS)
def test_ties_nans_and_zeros_across_shares_match_numpy(variant, ct, force):
    dev, dt = ct
    z = _planted(dt)
    for op in OPS:
        for axis in (1, None):
            force(variant)
            got = _run(op, z, axis, dev)
            _pinned(variant)
            _check(op, z, axis, got)


def test_few_long_rows_leave_the_one_item_kernel(ct, force):
    dev, dt = ct
    force(None)
    z = _rand(np.random.default_rng(3), (1, 1 << 18), dt)
    for op in OPS:
        rc.LAST_VARIANT[0] = None
        _check(op, z, None, _run(op, z, None, dev))
        assert rc.LAST_VARIANT[0][0] == "split", (op, rc.LAST_VARIANT[0])
    z = _rand(np.random.default_rng(4), (4096, 8), dt)
    rc.LAST_VARIANT[0] = None
    _check("argmax", z, 1, _run("argmax", z, 1, dev))
    assert rc.LAST_VARIANT[0] == ("row", 1)         # many short rows: one item per row
