"""Element-wise ops where semantics are subtle, checked against PyTorch (CPU)."""
import itertools

import numpy as np
import pytest

import burn

torch = pytest.importorskip("torch")

TORCH_DTYPES = {"bool": torch.bool, "uint8": torch.uint8, "int8": torch.int8, "int16": torch.int16,
                "int32": torch.int32, "int64": torch.int64, "float16": torch.float16, "bfloat16": torch.bfloat16,
                "float32": torch.float32, "float64": torch.float64}


def test_gelu_is_the_exact_erf_form_forward_and_backward(grads_vs_torch, rng):
    x = np.concatenate([rng.uniform(-5, 5, 20), [0.0, -1e-3, 8.0, -8.0]])
    grads_vs_torch(burn.gelu, torch.nn.functional.gelu, x)


def test_gelu_float32_matches_torch_float32():
    x = np.linspace(-6, 6, 101, dtype=np.float32)
    got = burn.gelu(burn.tensor(x)).numpy()
    np.testing.assert_allclose(got, torch.nn.functional.gelu(torch.tensor(x)).numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "int64", "int32"])
def test_remainder_and_floor_divide_with_negatives_take_the_divisor_sign(dtype):
    a = np.array([-7, -6, -1, 0, 1, 5, 7, -7, 7], dtype=dtype)
    b = np.array([3, 3, 3, 3, -3, -3, -3, -3, 2], dtype=dtype)
    ta, tb = torch.tensor(a), torch.tensor(b)
    x, y = burn.tensor(a, dtype=dtype), burn.tensor(b, dtype=dtype)
    np.testing.assert_array_equal((x % y).numpy(), torch.remainder(ta, tb).numpy())
    np.testing.assert_array_equal((x // y).numpy(), torch.floor_divide(ta, tb).numpy())
    np.testing.assert_array_equal((x % 4).numpy(), torch.remainder(ta, 4).numpy())
    np.testing.assert_array_equal((x // -4).numpy(), torch.floor_divide(ta, -4).numpy())


def test_remainder_gradient_matches_torch(grads_vs_torch, rng):
    a = rng.uniform(-5, 5, 12)
    b = rng.choice([-1, 1], 12) * rng.uniform(0.5, 2, 12)
    grads_vs_torch(burn.remainder, torch.remainder, a, b)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_round_is_half_to_even(dtype):
    x = np.array([-3.5, -2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, 0.49, -0.51])
    got = burn.round(burn.tensor(x, dtype=dtype)).numpy().astype(np.float64)
    want = torch.round(torch.tensor(x, dtype=TORCH_DTYPES[dtype])).double().numpy()
    np.testing.assert_array_equal(got, want)


def test_maximum_and_minimum_split_the_gradient_on_ties(grads_vs_torch):
    a = np.array([1.0, 2.0, 3.0, -1.0])
    b = np.array([1.0, 5.0, 3.0, -2.0])
    grads_vs_torch(burn.maximum, torch.maximum, a, b)
    grads_vs_torch(burn.minimum, torch.minimum, a, b)


def test_clip_relu_abs_gradients_at_their_kinks(grads_vs_torch):
    x = np.array([-1.0, -0.5, 0.0, 0.5, 1.0, 2.0])
    grads_vs_torch(lambda t: burn.clip(t, -0.5, 1.0), lambda t: torch.clamp(t, -0.5, 1.0), x)
    grads_vs_torch(burn.relu, torch.relu, x)
    grads_vs_torch(burn.abs, torch.abs, x)


def test_saturating_functions_stay_finite_at_extremes(grads_vs_torch):
    x = np.array([-800.0, -50.0, -1.0, 0.0, 1.0, 50.0, 800.0])
    grads_vs_torch(burn.sigmoid, torch.sigmoid, x)
    grads_vs_torch(burn.tanh, torch.tanh, x)
    grads_vs_torch(burn.silu, torch.nn.functional.silu, x)
    grads_vs_torch(burn.softplus, torch.nn.functional.softplus, x)


def test_logaddexp_handles_infinities_like_torch():
    a = np.array([-np.inf, -np.inf, 0.0, 1000.0, np.inf])
    b = np.array([-np.inf, 0.0, 0.0, 1000.0, 1.0])
    got = burn.logaddexp(burn.tensor(a, dtype=burn.float64), burn.tensor(b, dtype=burn.float64)).numpy()
    np.testing.assert_allclose(got, torch.logaddexp(torch.tensor(a), torch.tensor(b)).numpy())


def test_pow_gradients_including_zero_base(grads_vs_torch):
    a = np.array([0.0, 0.5, 2.0, 3.0])
    grads_vs_torch(lambda t: t ** 2, lambda t: t ** 2, a)
    grads_vs_torch(lambda t, e: burn.pow(t, e), torch.pow, np.array([0.5, 2.0, 3.0]), np.array([1.5, -1.0, 0.5]))


_PROMOTE = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]


@pytest.mark.parametrize("a,b", list(itertools.combinations_with_replacement(_PROMOTE, 2)))
def test_result_type_agrees_with_torch_promotion(a, b):
    want = str(torch.promote_types(TORCH_DTYPES[a], TORCH_DTYPES[b])).replace("torch.", "")
    got = burn.result_type(burn.as_dtype(a), burn.as_dtype(b))
    assert got.name == want
    x = burn.ones((2,), dtype=a) if a != "bool" else burn.tensor([True, False])
    y = burn.ones((2,), dtype=b) if b != "bool" else burn.tensor([True, True])
    if not (a == b == "bool"):
        assert (x + y).dtype is got and (x + y).numpy().dtype.name == want


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int8", "int32", "int64", "float16", "bfloat16", "float32"])
@pytest.mark.parametrize("scalar", [1, 2.5, True])
def test_python_scalar_operands_follow_torch_weak_typing(dtype, scalar):
    t = torch.ones(3, dtype=TORCH_DTYPES[dtype])
    x = burn.ones((3,), dtype=dtype)
    if dtype == "bool" and scalar is True:
        pytest.skip("bool + bool is logical in burn (DTypeError for add), as numpy")
    want = str((t * scalar).dtype).replace("torch.", "")
    assert (x * scalar).dtype.name == want


def test_integer_true_division_gives_float32():
    x = burn.tensor([1, 2, 3])
    y = x / 2
    assert y.dtype is burn.float32 and y.tolist() == [0.5, 1.0, 1.5]
    assert (burn.tensor([7], dtype=burn.int8) // 2).dtype is burn.int8


def test_where_gradient_flows_only_to_the_chosen_branch(grads_vs_torch):
    c = np.array([True, False, True, False])
    grads_vs_torch(lambda cond, a, b: burn.where(cond, a, b), torch.where, c,
                   np.array([1.0, 2.0, 3.0, 4.0]), np.array([-1.0, -2.0, -3.0, -4.0]))


def test_nan_propagates_through_maximum_and_comparisons_are_false():
    x = burn.tensor([np.nan, 1.0])
    assert np.isnan(burn.maximum(x, 0.0).numpy()[0])
    assert (x > 0).tolist() == [False, True] and (x != x).tolist() == [True, False]


def test_complex_log1p_keeps_numpys_special_values_on_flex():
    # flex computes real log1p in Kahan's form where numpy's loop is scalar; complex values
    # must still take numpy's complex loop (branch cuts, infinities and NaNs)
    v = np.array([complex(np.inf, np.nan), complex(1, np.inf), complex(np.inf, np.inf), complex(-1, 0),
                  complex(-np.inf, 2.0), complex(np.nan, np.inf), complex(0.25, -0.5)], dtype=np.complex128)
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = np.log1p(v)
        for dt in (np.complex128, np.complex64):
            got = burn.log1p(burn.tensor(v.astype(dt), device=burn.Device.flex())).numpy()
            np.testing.assert_allclose(got, expected.astype(dt), rtol=1e-6)
