"""matmul, the nn.functional ops and creation ops, against PyTorch and numpy."""
import numpy as np
import pytest

import burn
import burn.nn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional


@pytest.mark.parametrize("sa,sb", [((3,), (3,)), ((3,), (3, 4)), ((2, 3), (3,)), ((5, 2, 3), (3, 4)),
                                   ((2, 1, 2, 3), (4, 3, 2)), ((3,), (2, 3, 4)), ((2, 2, 3), (3,))])
def test_matmul_shapes_values_and_gradients_match_torch(grads_vs_torch, rng, sa, sb):
    out = grads_vs_torch(burn.matmul, torch.matmul, rng.normal(size=sa), rng.normal(size=sb))
    assert out.shape == np.matmul(np.zeros(sa), np.zeros(sb)).shape


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.1, 0.3])
def test_cross_entropy_with_label_smoothing_matches_torch(grads_vs_torch, rng, reduction, label_smoothing):
    logits = rng.normal(size=(4, 5)) * 3
    target = np.array([0, 4, 2, 2])
    grads_vs_torch(lambda x, t: F.cross_entropy(x, t, reduction=reduction, label_smoothing=label_smoothing),
                   lambda x, t: TF.cross_entropy(x, t, reduction=reduction, label_smoothing=label_smoothing),
                   logits, target)


def test_cross_entropy_with_probability_targets_matches_torch(grads_vs_torch, rng):
    logits = rng.normal(size=(3, 4))
    p = rng.dirichlet(np.ones(4), size=3)
    grads_vs_torch(lambda x, q: F.cross_entropy(x, q), lambda x, q: TF.cross_entropy(x, q), logits, p)


def test_softmax_and_log_softmax_match_torch_with_large_logits(grads_vs_torch, rng):
    x = rng.normal(size=(3, 5)) * 300
    grads_vs_torch(lambda t: F.softmax(t, axis=0) * t, lambda t: torch.softmax(t, 0) * t, x, rtol=1e-7)
    grads_vs_torch(lambda t: F.log_softmax(t), lambda t: torch.log_softmax(t, -1), x)


def test_layer_norm_forward_and_backward_match_torch(grads_vs_torch, rng):
    x = rng.normal(size=(2, 3, 4)) * 2 + 1
    w = rng.normal(size=(3, 4))
    b = rng.normal(size=(3, 4))
    grads_vs_torch(lambda x, w, b: F.layer_norm(x, (3, 4), w, b, eps=1e-5) ** 2,
                   lambda x, w, b: TF.layer_norm(x, (3, 4), w, b, eps=1e-5) ** 2, x, w, b, rtol=1e-7)


def test_linear_and_linear_relu_use_burn_weight_layout(grads_vs_torch, rng):
    x, w, b = rng.normal(size=(5, 3)), rng.normal(size=(3, 4)), rng.normal(size=(4,))
    # burn's weight is [d_in, d_out]: torch's linear takes its transpose
    grads_vs_torch(F.linear, lambda x, w, b: TF.linear(x, w.T, b), x, w, b)
    grads_vs_torch(F.linear_relu, lambda x, w, b: torch.relu(TF.linear(x, w.T, b)), x, w, b)


def test_linear_relu_fused_kernel_equals_reference_definition(rng):
    x, w, b = (rng.normal(size=s).astype(np.float32) for s in [(6, 3), (3, 4), (4,)])
    fused = F.linear_relu(burn.tensor(x), burn.tensor(w), burn.tensor(b)).numpy()
    np.testing.assert_allclose(fused, np.maximum(x @ w + b, 0), rtol=1e-6, atol=1e-6)


def test_embedding_gradient_accumulates_repeated_rows(grads_vs_torch, rng):
    w = rng.normal(size=(5, 3))
    idx = np.array([[0, 4, 4], [1, 0, 4]])
    grads_vs_torch(lambda i, w: F.embedding(i, w) ** 2, lambda i, w: TF.embedding(i, w) ** 2, idx, w)


def test_mse_and_nll_losses_match_torch(grads_vs_torch, rng):
    a, b = rng.normal(size=(3, 4)), rng.normal(size=(3, 4))
    grads_vs_torch(F.mse_loss, TF.mse_loss, a, b)
    grads_vs_torch(lambda x, t: F.nll_loss(F.log_softmax(x), t), lambda x, t: TF.nll_loss(torch.log_softmax(x, -1), t),
                   a, np.array([3, 0, 1]))


def test_arange_and_linspace_lengths_follow_numpy_for_fractional_steps():
    for args in [(0, 1, 0.1), (1, 2, 0.3), (-1, 1, 0.25), (5, 0, -1.5)]:
        got = burn.arange(*args, dtype=burn.float64).numpy()
        np.testing.assert_allclose(got, np.arange(*args), atol=1e-12)
    np.testing.assert_allclose(burn.linspace(-2, 3, 7).numpy(), np.linspace(-2, 3, 7, dtype=np.float32))
    assert burn.linspace(0, 1, 0).shape == (0,)


def test_creation_dtypes_follow_torch_defaults():
    assert burn.arange(3).dtype is burn.int64 and torch.arange(3).dtype == torch.int64
    assert burn.arange(3.0).dtype is burn.float32 and torch.arange(3.0).dtype == torch.float32
    assert burn.full((2,), 1.5).dtype is burn.float32 and torch.full((2,), 1.5).dtype == torch.float32
    assert burn.full((2,), 7).dtype is burn.int64 and torch.full((2,), 7).dtype == torch.int64
    assert burn.full((2,), True).dtype is burn.bool and torch.full((2,), True).dtype == torch.bool
    assert burn.zeros((1,)).dtype is burn.float32 and burn.eye(2).dtype is burn.float32


def test_random_streams_depend_only_on_the_seed_and_call_order(dev):
    dev.seed(7)
    a = burn.rand((5,), device=dev)
    b = burn.randn((5,), device=dev)
    dev.seed(7)
    a2 = burn.rand((5,), device=dev)
    dev.sync()                        # a flush in between does not shift the stream
    b2 = burn.randn((5,), device=dev)
    assert a.tolist() == a2.tolist() and b.tolist() == b2.tolist()
    assert a.tolist() != b.tolist()


def test_dropout_keeps_expected_fraction_and_scales_by_inverse_keep_probability(dev):
    dev.seed(0)
    y = F.dropout(burn.ones((10000,), device=dev), 0.25).numpy()
    kept = y != 0
    assert abs(kept.mean() - 0.75) < 0.02
    np.testing.assert_allclose(y[kept], 1 / 0.75, rtol=1e-6)


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int32", "int64", "float32", "complex64"])
def test_vecdot_keeps_the_promoted_input_dtype_like_numpy(dev, rng, dtype):
    if dtype.startswith("complex"):
        a = (rng.standard_normal((2, 3, 4)) + 1j * rng.standard_normal((2, 3, 4))).astype(dtype)
        b = (rng.standard_normal(4) + 1j * rng.standard_normal(4)).astype(dtype)
    else:
        a, b = rng.integers(0, 120, (2, 3, 4)).astype(dtype), rng.integers(0, 120, 4).astype(dtype)
    b2 = rng.integers(0, 120, (3, 4)).astype(dtype) if not dtype.startswith("complex") else a[0]
    for x, y, axis in ((a, b, -1), (a, b2, -2)):
        want = np.vecdot(x, y, axis=axis)
        got = burn.vecdot(burn.tensor(x, device=dev), burn.tensor(y, device=dev), axis=axis)
        assert got.dtype is burn.as_dtype(want.dtype) and got.shape == want.shape
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-5)   # uint8/int8 wrap as numpy's do
    mixed = burn.vecdot(burn.tensor(a, device=dev), burn.tensor(b.astype(np.int32), device=dev))
    assert mixed.dtype is burn.result_type(burn.as_dtype(a.dtype), burn.int32)   # burn's promotion rule


def test_vecdot_integer_dtypes_on_wgpu(wg, rng):
    dev, _ = wg
    for dtype in ("uint8", "int32"):
        a, b = rng.integers(0, 120, (3, 5)).astype(dtype), rng.integers(0, 120, 5).astype(dtype)
        got = burn.vecdot(burn.tensor(a, device=dev), burn.tensor(b, device=dev))
        assert got.dtype is burn.as_dtype(dtype) and got.device == dev
        np.testing.assert_array_equal(got.numpy(), np.vecdot(a, b))
