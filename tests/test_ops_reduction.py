"""Reductions and scans: values and gradients against PyTorch where the edge cases differ."""
import numpy as np
import pytest

import burn

torch = pytest.importorskip("torch")


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning")   # flex computes log(0) = -inf
def test_logsumexp_is_stable_and_handles_infinite_rows():
    x = np.array([[1000.0, 1000.0, -1000.0], [-np.inf, -np.inf, -np.inf], [-np.inf, 0.0, 1.0],
                  [np.inf, 0.0, 1.0]])
    got = burn.logsumexp(burn.tensor(x, dtype=burn.float64), axis=1).numpy()
    np.testing.assert_allclose(got, torch.logsumexp(torch.tensor(x), dim=1).numpy())


def test_logsumexp_gradient_is_softmax(grads_vs_torch, rng):
    x = rng.normal(size=(3, 4)) * 10
    grads_vs_torch(lambda t: burn.logsumexp(t, axis=1), lambda t: torch.logsumexp(t, 1), x)
    grads_vs_torch(lambda t: burn.logsumexp(t, axis=(0, 1), keepdims=True),
                   lambda t: torch.logsumexp(t, (0, 1), keepdim=True), x)


@pytest.mark.parametrize("correction", [0, 1])
def test_var_and_std_with_correction_match_torch(grads_vs_torch, rng, correction):
    x = rng.normal(size=(3, 5))
    grads_vs_torch(lambda t: burn.var(t, axis=1, correction=correction),
                   lambda t: torch.var(t, dim=1, correction=correction), x)
    grads_vs_torch(lambda t: burn.std(t, axis=0, correction=correction, keepdims=True),
                   lambda t: torch.std(t, dim=0, correction=correction, keepdim=True), x)


def test_max_and_min_spread_the_gradient_evenly_over_ties_like_amax(grads_vs_torch):
    x = np.array([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, -1.0]])
    grads_vs_torch(lambda t: burn.max(t, axis=1), lambda t: torch.amax(t, 1), x)
    grads_vs_torch(lambda t: burn.min(t, axis=1), lambda t: torch.amin(t, 1), x)
    grads_vs_torch(lambda t: burn.max(t), lambda t: torch.amax(t), x)


@pytest.mark.parametrize("x", [[2.0, 0.0, 3.0, 4.0], [0.0, 0.0, 3.0, 4.0], [1.5, -2.0, 3.0, 0.5]])
def test_prod_gradient_with_zeros_matches_torch(grads_vs_torch, x):
    grads_vs_torch(lambda t: burn.prod(t), torch.prod, np.array(x))
    grads_vs_torch(lambda t: burn.prod(t.reshape((2, 2)), axis=1), lambda t: torch.prod(t.reshape(2, 2), 1),
                   np.array(x))


def test_cumsum_and_cumprod_gradients(grads_vs_torch, rng):
    x = rng.uniform(0.5, 2.0, size=(3, 4))
    grads_vs_torch(lambda t: burn.cumsum(t, axis=1), lambda t: torch.cumsum(t, 1), x)
    grads_vs_torch(lambda t: burn.cumprod(t, axis=0), lambda t: torch.cumprod(t, 0), x)


def test_cumprod_gradient_with_a_zero_matches_torch(grads_vs_torch):
    grads_vs_torch(lambda t: burn.cumprod(t, axis=0), lambda t: torch.cumprod(t, 0),
                   np.array([2.0, 0.0, 3.0, 0.5]))


def test_argmax_and_argmin_return_the_first_of_ties():
    x = np.array([[1, 3, 3, 0], [2, 2, 2, -1], [0, 0, 0, 0]])
    t = torch.tensor(x)
    assert burn.argmax(burn.tensor(x), axis=1).tolist() == torch.argmax(t, 1).tolist()
    assert burn.argmin(burn.tensor(x), axis=1).tolist() == torch.argmin(t, 1).tolist()
    assert burn.argmax(burn.tensor(x)).item() == torch.argmax(t).item()


def test_reductions_propagate_nan_like_torch():
    x = np.array([[1.0, np.nan, 3.0], [1.0, 2.0, 3.0]])
    t = torch.tensor(x)
    b = burn.tensor(x)
    np.testing.assert_array_equal(burn.max(b, axis=1).numpy(), torch.amax(t, 1).float().numpy())
    np.testing.assert_array_equal(burn.sum(b, axis=1).numpy(), torch.sum(t, 1).float().numpy())
    assert burn.argmax(b, axis=1).tolist() == torch.argmax(t, 1).tolist()


def test_integer_sums_accumulate_in_int64_like_torch():
    x = np.full((300,), 100, dtype=np.int8)
    for d in ("int8", "uint8", "int16", "int32", "bool"):
        b = burn.tensor(x if d != "bool" else x > 0, dtype=d)
        t = torch.tensor(x if d != "bool" else x > 0).to(getattr(torch, d))
        # unsigned sums accumulate in uint64 (numpy's and the Array API's rule; torch: int64)
        want = burn.uint64 if d == "uint8" else burn.int64
        assert b.sum().dtype is want and str(t.sum().dtype) == "torch.int64"
        assert b.sum().item() == t.sum().item()
        assert np.sum(x.astype(d)).dtype == np.dtype(want.name)
    assert burn.cumsum(burn.tensor(x, dtype="int8")).numpy()[-1] == 30000


def test_mean_of_an_empty_axis_is_nan_and_sum_is_zero():
    x = burn.zeros((0, 3))
    assert burn.sum(x, axis=0).tolist() == [0.0, 0.0, 0.0]
    assert np.isnan(burn.mean(x, axis=0).numpy()).all()


def test_reduction_gradient_through_keepdims_and_negative_axes(grads_vs_torch, rng):
    x = rng.normal(size=(2, 3, 4))
    grads_vs_torch(lambda t: burn.sum(t, axis=(-1, 0), keepdims=True) * t,
                   lambda t: torch.sum(t, (-1, 0), keepdim=True) * t, x)
    grads_vs_torch(lambda t: burn.mean(t, axis=-2) ** 2, lambda t: torch.mean(t, -2) ** 2, x)


def test_var_std_of_complex_are_real_and_zero_dof_is_inf_like_numpy():
    import warnings
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    z = rng.standard_normal((4, 6)) + 1j * rng.standard_normal((4, 6))
    for axis in (None, 1):
        got = burn.var(burn.tensor(z), axis=axis, correction=1)
        assert got.dtype is burn.float64
        np.testing.assert_allclose(got.numpy(), np.var(z, axis=axis, ddof=1), rtol=1e-12)
        np.testing.assert_allclose(burn.std(burn.tensor(z), axis=axis).numpy(), np.std(z, axis=axis), rtol=1e-12)
    # the gradient of a complex input, in torch's convention
    x = burn.tensor(z, device=burn.Device.flex().autodiff()).require_grad()
    g = burn.sum(burn.std(x, axis=1)).backward().get(x).numpy()
    tz = torch.tensor(z, requires_grad=True)
    (tg,) = torch.autograd.grad(torch.std(tz, dim=1, correction=0).sum(), tz)
    np.testing.assert_allclose(g, tg.numpy(), rtol=1e-10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for v in ([1.0, 2.0], [1.0, 1.0]):
            np.testing.assert_array_equal(burn.var(burn.tensor(v), correction=2).numpy(), np.var(v, ddof=2))
