"""burn.nn.functional.log_softmax on wgpu is one row kernel forward and one backward
(burn::log_softmax / burn::log_softmax_grad), matching torch.log_softmax values and
gradients; flex runs its own kernel for the same extension with the same results."""
import numpy as np
import pytest

import burn
from devices import wgpu_or_skip as _wgpu_or_skip  # noqa: E402  (tests/ is on sys.path)
import burn.nn.functional as F

torch = pytest.importorskip("torch")


def _launches(dev):
    return dev.backend.stats(dev.index)["launches"]


def _torch_ref(a, gy, axis):
    t = torch.tensor(a, requires_grad=True)
    ty = torch.log_softmax(t, dim=axis)
    (ty * torch.tensor(gy)).sum().backward()
    return ty.detach().numpy(), t.grad.numpy()


def _burn(a, gy, axis, dev):
    ad = dev.autodiff()
    x = burn.tensor(a, device=ad).require_grad()
    y = F.log_softmax(x, axis=axis)
    grads = (y * burn.tensor(gy, device=ad)).sum().backward()
    return y.numpy(), x.grad(grads).numpy()


@pytest.mark.parametrize("dtype,rtol", [(np.float32, 1e-5), (np.float64, 1e-12)])
@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_log_softmax_forward_and_backward_match_torch_on_wgpu(dtype, rtol, axis):
    dev = _wgpu_or_skip()
    rng = np.random.default_rng(3)
    a = (rng.standard_normal((4, 33, 7)) * 5).astype(dtype)
    gy = rng.standard_normal(a.shape).astype(dtype)
    y, gx = _burn(a, gy, axis, dev)
    ty, tg = _torch_ref(a, gy, axis)
    assert y.dtype == dtype and gx.dtype == dtype
    np.testing.assert_allclose(y, ty, rtol=rtol, atol=rtol)
    np.testing.assert_allclose(gx, tg, rtol=rtol * 10, atol=rtol * 10)


@pytest.mark.parametrize("axis", [0, -1])
def test_log_softmax_forward_and_backward_are_one_launch_each_on_wgpu(axis):
    dev = _wgpu_or_skip()
    rng = np.random.default_rng(4)
    a = rng.standard_normal((16, 40)).astype(np.float32)
    x = burn.tensor(a, device=dev)
    dev.sync()
    before = _launches(dev)
    F.log_softmax(x, axis=axis).numpy()
    assert _launches(dev) - before == 1
    y = F.log_softmax(x, axis=axis)
    g = burn.tensor(rng.standard_normal(a.shape).astype(np.float32), device=dev)
    y.numpy()
    dev.sync()
    before = _launches(dev)
    F.log_softmax_grad(y, g, axis % 2).numpy()
    assert _launches(dev) - before == 1


def test_log_softmax_large_rows_with_large_offsets_match_torch_on_wgpu():
    dev = _wgpu_or_skip()
    rng = np.random.default_rng(5)
    a = (rng.standard_normal((3, 100_000)) * 30 + np.array([[0.0], [1e4], [-1e4]])).astype(np.float32)
    gy = rng.standard_normal(a.shape).astype(np.float32)
    y, gx = _burn(a, gy, 1, dev)
    ty, tg = _torch_ref(a.astype(np.float64), gy.astype(np.float64), 1)    # exact enough to judge float32
    np.testing.assert_allclose(y, ty, rtol=2e-5, atol=2e-4)
    np.testing.assert_allclose(gx, tg, rtol=1e-4, atol=1e-5)


def test_log_softmax_with_minus_inf_inputs_matches_torch_on_wgpu_and_flex():
    dev = _wgpu_or_skip()
    inf = np.inf
    a = np.array([[0.0, -inf, 1.0, -inf], [-inf, -inf, -inf, -inf], [3.0, 3.0, -inf, 2.0]], np.float32)
    gy = np.array([[1.0, 2.0, -1.0, 0.5]] * 3, np.float32)
    ty, tg = _torch_ref(a, gy, 1)
    for d in (dev, burn.Device.flex()):
        y, gx = _burn(a, gy, 1, d)
        np.testing.assert_allclose(y, ty, rtol=1e-6, err_msg=str(d))       # -inf where torch has -inf, NaN rows too
        np.testing.assert_allclose(gx[[0, 2]], tg[[0, 2]], rtol=1e-6, atol=1e-7, err_msg=str(d))
        assert np.isnan(gx[1]).all() == np.isnan(tg[1]).all(), d


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_log_softmax_flex_kernel_matches_torch_and_its_reference(dtype):
    rng = np.random.default_rng(6)
    a = (rng.standard_normal((5, 6, 9)) * 4).astype(dtype)
    gy = rng.standard_normal(a.shape).astype(dtype)
    for axis in (0, 1, 2):
        y, gx = _burn(a, gy, axis, burn.Device.flex())
        ty, tg = _torch_ref(a, gy, axis)
        tol = 1e-5 if dtype == np.float32 else 1e-12
        np.testing.assert_allclose(y, ty, rtol=tol, atol=tol)
        np.testing.assert_allclose(gx, tg, rtol=tol * 10, atol=tol * 10)
    # the extension's reference definition (what other backends run) agrees with the flex kernel
    x = burn.tensor(a, device=burn.Device.flex())
    np.testing.assert_allclose(F.log_softmax_fused(x, 1).numpy(), F.log_softmax_fused.reference(x, 1).numpy(),
                               rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-6)


def test_log_softmax_rejects_integer_tensors_and_bad_axes_at_the_call():
    with pytest.raises(burn.ShapeError, match="log_softmax"):
        F.log_softmax(burn.tensor([[1.0, 2.0]]), axis=2)
    with pytest.raises(burn.DTypeError, match="log_softmax"):
        F.log_softmax_fused(burn.tensor([[1, 2]]), 1)


@pytest.mark.parametrize("device", ["flex", "wgpu"])
def test_log_softmax_gradcheck_through_the_extension_backward(device):
    from burn.testing import gradcheck
    dev = burn.Device.flex() if device == "flex" else _wgpu_or_skip()
    a = np.random.default_rng(7).standard_normal((3, 4))
    assert gradcheck(lambda t: F.log_softmax(t, axis=1), a, device=dev)
    assert gradcheck(lambda t: F.log_softmax(t, axis=0), a, device=dev)
