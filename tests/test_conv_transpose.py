"""Transposed convolutions (functional and modules) against torch, forward and the gradients of
input, weight and bias, on flex and wgpu; torch's argument checks and ``output_size=``."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import burn
from burn.nn import functional as F
from devices import flex_and_wgpu

DEVICES = flex_and_wgpu()

CT2D = [
    # (N, C_in, H, W), (C_out/groups, kH, kW), stride, padding, output_padding, groups, dilation
    ((2, 3, 5, 4), (4, 3, 3), 1, 0, 0, 1, 1),
    ((2, 4, 4, 5), (3, 3, 3), 2, 1, 1, 1, 1),              # the usual 2x upsampling
    ((1, 4, 3, 3), (2, 4, 4), 2, 1, 0, 2, 1),              # grouped, even kernel
    ((2, 2, 4, 3), (3, 2, 3), (2, 3), (0, 1), (1, 2), 1, 1),   # output padding beyond the padding
    ((1, 3, 4, 4), (2, 3, 2), 1, 1, 1, 1, 2),              # output padding < dilation, stride 1
    ((2, 6, 3, 4), (1, 3, 3), 3, 2, 2, 6, (1, 2)),         # depthwise, dilated, strided
]


def _compare(dev, burn_fn, torch_fn, arrays, tol=2e-4):
    ad = dev.autodiff()
    leaves = [burn.tensor(a, device=ad).require_grad() for a in arrays]
    out = burn_fn(*leaves)
    cot = np.random.default_rng(5).standard_normal(out.shape).astype(np.float32)
    grads = (out * burn.tensor(cot, device=ad)).sum().backward()
    tl = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in arrays]
    t_out = torch_fn(*tl)
    (t_out * torch.tensor(cot, dtype=torch.float64)).sum().backward()
    assert out.shape == tuple(t_out.shape)
    np.testing.assert_allclose(out.numpy(), t_out.detach().numpy(), rtol=tol, atol=tol)
    for k, (leaf, t) in enumerate(zip(leaves, tl)):
        np.testing.assert_allclose(leaf.grad(grads).numpy(), t.grad.numpy(), rtol=tol, atol=tol,
                                   err_msg=f"gradient of input {k}")


@pytest.mark.parametrize("dev", DEVICES, ids=str)
@pytest.mark.parametrize("xs, ws, stride, padding, out_pad, groups, dilation", CT2D)
def test_conv_transpose2d_matches_torch(dev, xs, ws, stride, padding, out_pad, groups, dilation):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(xs).astype(np.float32)
    w = rng.standard_normal((xs[1],) + ws).astype(np.float32)
    b = rng.standard_normal(ws[0] * groups).astype(np.float32)
    args = (stride, padding, out_pad, groups, dilation)
    _compare(dev, lambda x, w, b: F.conv_transpose2d(x, w, b, *args),
             lambda x, w, b: TF.conv_transpose2d(x, w, b, *args), [x, w, b])


@pytest.mark.parametrize("dev", DEVICES, ids=str)
@pytest.mark.parametrize("cfg", [((2, 3, 7), (4, 3), 1, 0, 0, 1, 1), ((2, 4, 6), (3, 4), 2, 1, 1, 2, 1),
                                 ((1, 2, 5), (2, 3), 3, 0, 2, 1, 2)])
def test_conv_transpose1d_matches_torch(dev, cfg):
    xs, ws, stride, padding, out_pad, groups, dilation = cfg
    rng = np.random.default_rng(1)
    x = rng.standard_normal(xs).astype(np.float32)
    w = rng.standard_normal((xs[1],) + ws).astype(np.float32)
    b = rng.standard_normal(ws[0] * groups).astype(np.float32)
    args = (stride, padding, out_pad, groups, dilation)
    _compare(dev, lambda x, w, b: F.conv_transpose1d(x, w, b, *args),
             lambda x, w, b: TF.conv_transpose1d(x, w, b, *args), [x, w, b])


def test_conv_transpose_second_order_gradient_matches_torch():
    # the gradient of the input gradient runs through conv2d_grad_input's own backward rule
    rng = np.random.default_rng(2)
    x = rng.standard_normal((1, 2, 3, 3))
    w = rng.standard_normal((2, 3, 3, 3))
    ad = burn.Device.flex().autodiff()
    bx, bw = (burn.tensor(a, device=ad, dtype=burn.float64).require_grad() for a in (x, w))
    y = F.conv_transpose2d(bx, bw, stride=2, padding=1, output_padding=1)
    (gx,) = burn.autodiff.grad((y * y).sum(), [bx], create_graph=True)
    gw = bw.grad((gx * gx).sum().backward())
    tx, tw = (torch.tensor(a, requires_grad=True) for a in (x, w))
    ty = TF.conv_transpose2d(tx, tw, stride=2, padding=1, output_padding=1)
    (tgx,) = torch.autograd.grad((ty * ty).sum(), [tx], create_graph=True)
    (tgx * tgx).sum().backward()
    np.testing.assert_allclose(gw.numpy(), tw.grad.numpy(), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("cls, tcls, xs", [(burn.nn.ConvTranspose1d, torch.nn.ConvTranspose1d, (2, 4, 6)),
                                           (burn.nn.ConvTranspose2d, torch.nn.ConvTranspose2d, (2, 4, 5, 3))])
def test_conv_transpose_modules_match_torch_with_copied_weights(cls, tcls, xs):
    kw = dict(stride=2, padding=1, output_padding=1, groups=2, dilation=1)
    tm = tcls(4, 6, 3, **kw).double()
    m = cls(4, 6, 3, **kw, dtype=burn.float64, device=burn.Device.flex().autodiff())
    assert m.weight.shape == tuple(tm.weight.shape) and m.bias.shape == tuple(tm.bias.shape)
    m.load_state_dict({k: burn.tensor(v.detach().numpy(), dtype=burn.float64) for k, v in tm.state_dict().items()})
    x = np.random.default_rng(3).standard_normal(xs)
    out_size = [2 * s for s in xs[2:]]
    y = m(burn.tensor(x, dtype=burn.float64, device=m.weight.device), output_size=out_size)
    ty = tm(torch.tensor(x), output_size=out_size)
    np.testing.assert_allclose(y.numpy(), ty.detach().numpy(), rtol=1e-10, atol=1e-10)
    grads = (y * y).sum().backward()
    (ty * ty).sum().backward()
    np.testing.assert_allclose(m.weight.grad(grads).numpy(), tm.weight.grad.numpy(), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(m.bias.grad(grads).numpy(), tm.bias.grad.numpy(), rtol=1e-9, atol=1e-9)


def test_conv_transpose_default_init_has_torchs_bounds():
    m = burn.nn.ConvTranspose2d(16, 8, 3, groups=2)
    bound = 1.0 / np.sqrt(8 // 2 * 9)           # torch's fan-in of a [C_in, C_out/groups, k, k] weight
    w, b = m.weight.numpy(), m.bias.numpy()
    assert w.shape == (16, 4, 3, 3) and np.abs(w).max() <= bound and np.abs(w).max() > 0.8 * bound
    assert np.abs(b).max() <= bound
    assert burn.nn.ConvTranspose1d(2, 3, 4, bias=False).bias is None


def test_conv_transpose_errors_name_the_op_and_what_to_do():
    x, w = burn.ones((1, 2, 4, 4)), burn.ones((2, 3, 3, 3))
    with pytest.raises(ValueError, match=r"conv_transpose2d: output_padding \(2, 2\) must be smaller than "
                                         r"either stride \(2, 2\) or dilation \(1, 1\)"):
        F.conv_transpose2d(x, w, stride=2, output_padding=2)
    with pytest.raises(ValueError, match="ConvTranspose1d: output_padding"):
        burn.nn.ConvTranspose1d(2, 3, 3, output_padding=1)
    with pytest.raises(burn.ShapeError, match=r"conv_transpose2d: channel mismatch: input .*2 channels"):
        F.conv_transpose2d(x, burn.ones((3, 3, 3, 3)))
    with pytest.raises(burn.ShapeError, match="groups=3 must divide the input channels"):
        F.conv_transpose2d(burn.ones((1, 4, 4, 4)), burn.ones((4, 1, 3, 3)), groups=3)
    with pytest.raises(burn.DTypeError, match="conv_transpose2d: operands need one floating dtype"):
        F.conv_transpose2d(x, burn.ones((2, 3, 3, 3), dtype=burn.float64))
    with pytest.raises(burn.ShapeError, match="conv_transpose1d: expected input"):
        F.conv_transpose1d(x, w)
    with pytest.raises(burn.ShapeError, match="the output would have size"):
        F.conv_transpose2d(burn.ones((1, 2, 1, 1)), burn.ones((2, 3, 1, 1)), padding=1)
    m = burn.nn.ConvTranspose2d(2, 3, 3, stride=2)
    with pytest.raises(burn.ShapeError, match=r"valid sizes along axis 0 range from 9 to 10"):
        m(x, output_size=(12, 9))
    with pytest.raises(burn.ShapeError, match=r"ConvTranspose2d\(2, 3.*expected input"):
        m(burn.ones((1, 5, 4, 4)))


def test_conv_transpose_unbatched_input_and_repr():
    m = burn.nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1, output_padding=1)
    assert m(burn.ones((2, 4, 4))).shape == (3, 8, 8)
    assert "output_padding=(1, 1)" in repr(m)
