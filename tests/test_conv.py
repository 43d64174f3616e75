"""Convolution and pooling on flex: forward and backward against torch.nn.functional,
finite differences (burn.testing.gradcheck) and the errors raised at the call."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import burn
import burn_flex.kernels.conv as flex_conv
import burn_flex.kernels.conv_direct as conv_direct
from burn.nn import functional as F
from burn_flex import jit
from devices import flex_and_wgpu  # noqa: E402  (tests/ is on sys.path under pytest)
from thread_runs import on_one_and_two_threads

DEV = burn.Device.flex().autodiff()
TOL = {np.float32: dict(rtol=2e-4, atol=2e-4), np.float64: dict(rtol=1e-10, atol=1e-10)}


def _run_both(burn_fn, torch_fn, arrays, seed=0):
    """Forward value and gradient of every input under a random cotangent, in burn and torch."""
    # burn.tensor makes float64 arrays float32 unless told otherwise
    dt = burn.float64 if arrays[0].dtype == np.float64 else burn.float32
    leaves = [burn.tensor(a, device=DEV, dtype=dt).require_grad() for a in arrays]
    out = burn_fn(*leaves)
    cot = np.random.default_rng(seed).standard_normal(out.shape).astype(arrays[0].dtype)
    grads = (out * burn.tensor(cot, device=DEV, dtype=dt)).sum().backward()
    b_out, b_grads = out.numpy(), [t.grad(grads).numpy() for t in leaves]

    tl = [torch.tensor(a, requires_grad=True) for a in arrays]
    t_out = torch_fn(*tl)
    (t_out * torch.tensor(cot)).sum().backward()
    return (b_out, b_grads), (t_out.detach().numpy(), [t.grad.numpy() for t in tl])


def _assert_match(burn_fn, torch_fn, arrays, dtype):
    (bo, bg), (to, tg) = _run_both(burn_fn, torch_fn, arrays)
    assert bo.shape == to.shape and bo.dtype == to.dtype
    np.testing.assert_allclose(bo, to, **TOL[dtype])
    for i, (b, t) in enumerate(zip(bg, tg)):
        assert b.shape == t.shape, f"gradient {i}"
        np.testing.assert_allclose(b, t, err_msg=f"gradient of input {i}", **TOL[dtype])


CONV2D = [
    # (N, C_in, H, W), (C_out, kH, kW), stride, padding, dilation, groups
    ((1, 3, 8, 8), (4, 3, 3), 1, 0, 1, 1),
    ((3, 3, 9, 7), (5, 3, 3), 2, 1, 1, 1),
    ((2, 4, 10, 9), (6, 2, 3), (2, 1), (2, 0), 1, 2),      # non-square kernel, grouped
    ((3, 4, 11, 11), (4, 3, 3), 1, 2, 2, 4),                # depthwise, dilated
    ((2, 4, 12, 10), (8, 3, 2), (1, 2), 1, (2, 1), 4),      # depthwise multiplier 2
    ((1, 2, 6, 6), (2, 1, 1), 2, 0, 1, 1),                  # 1x1, stride skips the last row
    ((2, 6, 8, 8), (4, 5, 5), 3, 2, 1, 2),                  # stride leaves input rows unread
    ((2, 3, 7, 9), (4, 4, 3), 1, "same", 1, 1),             # even kernel: asymmetric padding
    ((2, 2, 5, 24), (4, 3, 3), 1, (1, 2), (1, 2), 2),
    ((1, 2, 9, 9), (3, 3, 3), 1, "same", 2, 1),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("xs, ws, stride, padding, dilation, groups", CONV2D)
@pytest.mark.parametrize("path", ["rows", "wide", "jit", "direct"])
@pytest.mark.filterwarnings("ignore:Using padding='same'")
def test_conv2d_forward_and_backward_match_torch(xs, ws, stride, padding, dilation, groups, dtype, path,
                                                 monkeypatch):
    # flex has two numpy im2col layouts for stride 1 and the JIT im2col / col2im (float32);
    # force each one in turn
    if path in ("jit", "direct") and dtype == np.float64:
        pytest.skip("the JIT im2col / col2im and the direct kernel are float32 (float64 runs the numpy paths)")
    _force_path(monkeypatch, path)
    rng = np.random.default_rng(1)
    x = rng.standard_normal(xs).astype(dtype)
    w = rng.standard_normal((ws[0], xs[1] // groups) + ws[1:]).astype(dtype)
    b = rng.standard_normal(ws[0]).astype(dtype)
    kw = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
    _assert_match(lambda x, w, b: F.conv2d(x, w, b, **kw), lambda x, w, b: TF.conv2d(x, w, b, **kw),
                  [x, w, b], dtype)


def _force_path(monkeypatch, path):
    """"rows" / "wide": the numpy im2col layouts; "jit": the JIT im2col / col2im; "direct": the
    JIT's direct forward kernel (float32 only; the test fails where the JIT is unavailable rather
    than testing numpy twice)."""
    if path in ("jit", "direct"):
        assert jit.kernels() is not None, f"flex's JIT is unavailable: {jit.status()['reason']}"
    monkeypatch.setattr(flex_conv, "_JIT_COLUMNS", path in ("jit", "direct"))
    monkeypatch.setattr(conv_direct, "ENABLED", path == "direct")
    monkeypatch.setattr(flex_conv, "_WIDE_MAX", 1e9 if path == "wide" else 0.0)


@pytest.mark.parametrize("path", ["rows", "wide", "jit", "direct"])
@pytest.mark.parametrize("cfg", [CONV2D[1], CONV2D[3], CONV2D[9]], ids=["stride2", "depthwise", "dilated"])
def test_conv2d_in_image_blocks_matches_torch(cfg, path, monkeypatch):
    # a column budget below one image makes flex run every image as its own block
    monkeypatch.setattr(flex_conv, "_COLS_BYTES", 1)
    _force_path(monkeypatch, path)
    xs, ws, stride, padding, dilation, groups = cfg
    rng = np.random.default_rng(12)
    dtype = np.float32 if path in ("jit", "direct") else np.float64
    x, w = rng.standard_normal(xs).astype(dtype), rng.standard_normal((ws[0], xs[1] // groups) + ws[1:]).astype(dtype)
    kw = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
    _assert_match(lambda x, w: F.conv2d(x, w, **kw), lambda x, w: TF.conv2d(x, w, **kw), [x, w], dtype)


CONV1D = [((2, 3, 11), (4, 3), 1, 0, 1, 1), ((3, 4, 16), (6, 5), 2, 2, 2, 2), ((1, 4, 9), (4, 2), 1, "same", 1, 4)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("xs, ws, stride, padding, dilation, groups", CONV1D)
def test_conv1d_forward_and_backward_match_torch(xs, ws, stride, padding, dilation, groups, dtype):
    rng = np.random.default_rng(2)
    x = rng.standard_normal(xs).astype(dtype)
    w = rng.standard_normal((ws[0], xs[1] // groups, ws[1])).astype(dtype)
    b = rng.standard_normal(ws[0]).astype(dtype)
    kw = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
    _assert_match(lambda x, w, b: F.conv1d(x, w, b, **kw), lambda x, w, b: TF.conv1d(x, w, b, **kw),
                  [x, w, b], dtype)


POOL = [
    # (N, C, H, W), kernel, stride, padding, dilation
    ((2, 3, 8, 8), 2, None, 0, 1),
    ((3, 2, 9, 7), 3, 2, 1, 1),
    ((1, 4, 10, 11), (3, 2), (1, 2), (1, 0), 1),
    ((2, 2, 11, 11), 3, 2, 1, 2),
    ((1, 1, 7, 7), 3, 1, 1, 1),                             # overlapping windows
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("xs, k, stride, padding, dilation", POOL)
def test_max_pool2d_forward_and_backward_match_torch(xs, k, stride, padding, dilation, dtype):
    # distinct values, so the arg max (and the gradient's route) is unambiguous
    x = np.random.default_rng(3).permutation(np.prod(xs)).reshape(xs).astype(dtype) / 7
    kw = dict(stride=stride, padding=padding, dilation=dilation)
    _assert_match(lambda x: F.max_pool2d(x, k, **kw), lambda x: TF.max_pool2d(x, k, **kw), [x], dtype)


def test_max_pool2d_gradient_goes_to_first_maximum_on_ties_like_torch():
    x = np.zeros((1, 1, 4, 4), np.float32)
    x[0, 0, 1:3, 1:3] = 1.0                                  # every window holds a tie
    _assert_match(lambda x: F.max_pool2d(x, 2, 1), lambda x: TF.max_pool2d(x, 2, 1), [x], np.float32)
    _assert_match(lambda x: F.max_pool2d(x * 0.0, 3, 1, 1), lambda x: TF.max_pool2d(x * 0.0, 3, 1, 1),
                  [x], np.float32)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("count_include_pad", [True, False])
@pytest.mark.parametrize("xs, k, stride, padding, _", POOL[:3] + [((2, 3, 9, 9), 3, 1, 1, 1)])
def test_avg_pool2d_forward_and_backward_match_torch(xs, k, stride, padding, _, count_include_pad, dtype):
    x = np.random.default_rng(4).standard_normal(xs).astype(dtype)
    kw = dict(stride=stride, padding=padding, count_include_pad=count_include_pad)
    _assert_match(lambda x: F.avg_pool2d(x, k, **kw), lambda x: TF.avg_pool2d(x, k, **kw), [x], dtype)


def test_pool1d_matches_torch():
    x = np.random.default_rng(5).standard_normal((2, 3, 13)).astype(np.float64)
    _assert_match(lambda x: F.max_pool1d(x, 3, 2, 1), lambda x: TF.max_pool1d(x, 3, 2, 1), [x], np.float64)
    _assert_match(lambda x: F.avg_pool1d(x, 4, 3, 2), lambda x: TF.avg_pool1d(x, 4, 3, 2), [x], np.float64)


def test_unbatched_inputs_match_torch():
    rng = np.random.default_rng(6)
    x, w = rng.standard_normal((3, 6, 6)), rng.standard_normal((2, 3, 3, 3))
    _assert_match(lambda x, w: F.max_pool2d(F.conv2d(x, w, padding=1), 2),
                  lambda x, w: TF.max_pool2d(TF.conv2d(x, w, padding=1), 2), [x, w], np.float64)


# -- finite differences (independent of torch) ---------------------------------------------

@pytest.mark.parametrize("stride, padding, dilation, groups", [(1, 0, 1, 1), (2, 1, 1, 2), (1, (1, 2), 2, 2)])
def test_conv2d_gradcheck(stride, padding, dilation, groups):
    rng = np.random.default_rng(7)
    x, w, b = rng.standard_normal((2, 4, 5, 6)), rng.standard_normal((4, 4 // groups, 2, 3)), rng.standard_normal(4)
    assert burn.testing.gradcheck(
        lambda x, w, b: F.conv2d(x, w, b, stride=stride, padding=padding, dilation=dilation, groups=groups), x, w, b)


def test_pool_gradcheck():
    x = np.random.default_rng(8).permutation(2 * 2 * 5 * 5).reshape(2, 2, 5, 5) / 10.0
    assert burn.testing.gradcheck(lambda x: F.max_pool2d(x, 3, 2, 1), x)
    assert burn.testing.gradcheck(lambda x: F.avg_pool2d(x, 2, 1, 1, count_include_pad=False), x)
    # x as both the signal and the weight checks the product rule through conv1d
    assert burn.testing.gradcheck(lambda x: F.conv1d(x.reshape((2, 10, 5)), x[1].reshape((5, 10, 1)),
                                                     stride=2, padding=1), x)


def test_gradients_flow_through_functional_wrapper_with_bias_on_autodiff_device():
    rng = np.random.default_rng(9)
    xa, wa = rng.standard_normal((2, 3, 6, 6)).astype(np.float32), rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    x = burn.tensor(xa, device=DEV).require_grad()
    w = burn.tensor(wa, device=DEV).require_grad()
    b = burn.tensor(np.ones(4, np.float32), device=DEV).require_grad()
    grads = F.conv2d(x, w, b, stride=2).sum().backward()
    assert x.grad(grads).shape == x.shape and w.grad(grads).shape == w.shape
    assert b.grad(grads).tolist() == [8.0] * 4                    # 2 images x 2x2 outputs
    tx = torch.tensor(xa, requires_grad=True)
    TF.conv2d(tx, torch.tensor(wa), stride=2).sum().backward()
    np.testing.assert_allclose(x.grad(grads).numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-5)


def test_input_without_grad_gets_no_gradient_and_plain_device_works():
    x = burn.ones((1, 1, 4, 4), device=DEV)
    w = burn.ones((1, 1, 2, 2), device=DEV).require_grad()
    grads = F.conv2d(x, w).sum().backward()
    assert x.grad(grads) is None and w.grad(grads).tolist() == [[[[9.0, 9.0], [9.0, 9.0]]]]
    y = F.conv2d(burn.ones((1, 1, 4, 4)), burn.ones((1, 1, 2, 2)))
    assert y.device == burn.Device.flex() and y.numpy().tolist() == [[[[4.0] * 3] * 3]]


def test_non_contiguous_input_from_a_permute_matches_torch():
    rng = np.random.default_rng(10)
    x, w = rng.standard_normal((2, 7, 6, 3)), rng.standard_normal((4, 3, 3, 2))
    _assert_match(lambda x, w: F.max_pool2d(F.conv2d(burn.permute_dims(x, (0, 3, 1, 2)), w, padding=1), 2, 1),
                  lambda x, w: TF.max_pool2d(TF.conv2d(x.permute(0, 3, 1, 2), w, padding=1), 2, 1),
                  [x, w], np.float64)


def test_bfloat16_conv_is_close_to_float32():
    rng = np.random.default_rng(11)
    x, w = rng.standard_normal((2, 3, 8, 8)).astype(np.float32), rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    ref = F.conv2d(burn.tensor(x), burn.tensor(w)).numpy()
    y = F.conv2d(burn.tensor(x, dtype=burn.bfloat16), burn.tensor(w, dtype=burn.bfloat16))
    assert y.dtype is burn.bfloat16
    np.testing.assert_allclose(y.numpy().astype(np.float32), ref, rtol=5e-2, atol=1e-1)


def test_lenet_shapes_and_half_precision_run_through_float32():
    x = burn.ones((2, 1, 28, 28), dtype=burn.float16)
    y = F.max_pool2d(F.conv2d(x, burn.ones((6, 1, 5, 5), dtype=burn.float16)), 2)
    assert y.shape == (2, 6, 12, 12) and y.dtype is burn.float16 and float(y[0, 0, 0, 0].item()) == 25.0


# -- errors at the call ------------------------------------------------------------------------

def _t(*shape, dtype=burn.float32):
    return burn.zeros(shape, dtype=dtype)


@pytest.mark.parametrize("call, err, words", [
    (lambda: F.conv2d(_t(1, 3, 8, 8), _t(4, 2, 3, 3)), burn.ShapeError, ["conv2d", "channel", "(1, 3, 8, 8)", "(4, 2, 3, 3)"]),
    (lambda: F.conv2d(_t(1, 4, 8, 8), _t(6, 2, 3, 3), groups=3), burn.ShapeError, ["conv2d", "groups=3", "divide"]),
    (lambda: F.conv2d(_t(1, 4, 8, 8), _t(3, 2, 3, 3), groups=2), burn.ShapeError, ["conv2d", "groups=2", "divide"]),
    (lambda: F.conv2d(_t(1, 3, 8, 8), _t(0, 3, 3, 3)), burn.ShapeError, ["conv2d", "no output channels", "(0, 3, 3, 3)"]),
    (lambda: F.conv2d(_t(1, 1, 4, 4), _t(1, 1, 5, 5)), burn.ShapeError, ["conv2d", "larger", "padded input"]),
    (lambda: F.conv2d(_t(1, 1, 4, 4), _t(1, 1, 3, 3), dilation=2), burn.ShapeError, ["conv2d", "extent 5x5"]),
    (lambda: F.conv2d(_t(1, 1, 4), _t(1, 1, 3)), burn.ShapeError, ["conv2d", "C_out"]),
    (lambda: F.conv2d(_t(1, 1, 4, 4), _t(1, 1, 3, 3, dtype=burn.float64)), burn.DTypeError, ["conv2d", "float64"]),
    (lambda: F.conv2d(_t(1, 1, 4, 4, dtype=burn.int32), _t(1, 1, 3, 3, dtype=burn.int32)), burn.DTypeError, ["int32"]),
    (lambda: F.conv2d(_t(1, 2, 4, 4), _t(3, 2, 3, 3), _t(2)), burn.ShapeError, ["bias", "(3,)"]),
    (lambda: F.conv1d(_t(1, 2, 4, 4), _t(3, 2, 3)), burn.ShapeError, ["conv1d", "[N, C_in, L]"]),
    (lambda: F.max_pool2d(_t(1, 1, 4, 4), 5), burn.ShapeError, ["max_pool2d", "larger"]),
    (lambda: F.max_pool2d(_t(1, 1, 4, 4), 2, padding=2), burn.ShapeError, ["max_pool2d", "half"]),
    (lambda: F.avg_pool2d(_t(1, 1, 4, 4, dtype=burn.int64), 2), burn.DTypeError, ["avg_pool2d", "int64"]),
    (lambda: F.max_pool2d(_t(4, 4), 2), burn.ShapeError, ["max_pool2d", "[N, C, H, W]"]),
    (lambda: F.conv2d(_t(1, 1, 4, 4), _t(1, 1, 3, 3), stride=0), ValueError, ["stride", ">= 1"]),
    (lambda: F.conv2d(_t(1, 1, 4, 4), _t(1, 1, 3, 3), stride=2, padding="same"), ValueError, ["same", "stride 1"]),
])
def test_errors_are_raised_at_the_call_and_name_op_and_operands(call, err, words):
    with pytest.raises(err) as info:
        call()
    for word in words:
        assert word in str(info.value), (word, str(info.value))


def test_mixed_autodiff_and_plain_devices_is_a_device_mismatch():
    with pytest.raises(burn.DeviceMismatch, match="conv2d"):
        F.conv2d(burn.ones((1, 1, 4, 4), device=DEV), burn.ones((1, 1, 2, 2)))


# -- flex's stride-1 input gradient (full correlation over batch-innermost rows) ---------

ROWS_GRAD_INPUT = [
    # (N, C_in, H, W), (C_out, kH, kW), padding
    ((64, 6, 12, 12), (16, 5, 5), 0),                      # LeNet's second convolution
    ((3, 1, 9, 7), (4, 3, 2), 0),                          # one input channel, non-square kernel
    ((2, 3, 7, 9), (5, 4, 3), "same"),                     # even kernel: asymmetric padding
    ((2, 4, 6, 5), (3, 3, 3), (2, 1)),
    ((1, 2, 5, 5), (3, 1, 1), 0),                          # 1x1
    ((2, 3, 4, 6), (2, 4, 6), 0),                          # kernel as large as the input
]


@pytest.mark.parametrize("blocks", [False, True], ids=["one-block", "per-image"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("xs, ws, padding", ROWS_GRAD_INPUT)
@pytest.mark.filterwarnings("ignore:Using padding='same'")
def test_rows_input_gradient_matches_torch_and_general_path(xs, ws, padding, dtype, blocks, monkeypatch):
    monkeypatch.setattr(flex_conv, "_JIT_COLUMNS", False)      # the numpy kernels (float32 has the JIT's)
    if blocks:
        monkeypatch.setattr(flex_conv, "_COLS_BYTES", 1)
    rng = np.random.default_rng(5)
    x = rng.standard_normal(xs).astype(dtype)
    w = rng.standard_normal((ws[0], xs[1]) + ws[1:]).astype(dtype)
    kw = dict(padding=padding)
    _assert_match(lambda x, w: F.conv2d(x, w, **kw), lambda x, w: TF.conv2d(x, w, **kw), [x, w], dtype)
    # the kernel itself against the general GEMM + col2im path, on the same operands
    pad = burn.ops.conv._conv_padding("conv2d", padding, ws[1:], (1, 1), (1, 1))
    g = rng.standard_normal((xs[0], ws[0]) + flex_conv._out_hw(xs, ws[1:], (1, 1), pad, (1, 1))).astype(dtype)
    attrs = dict(stride=(1, 1), padding=pad, dilation=(1, 1), groups=1, input_hw=xs[2:])
    fast = flex_conv.conv2d_grad_input(g, w, **attrs)
    monkeypatch.setattr(flex_conv, "_ROWS_GRAD_INPUT", False)
    general = flex_conv.conv2d_grad_input(g, w, **attrs)
    assert fast.shape == general.shape == xs and fast.dtype == general.dtype == dtype
    assert fast.flags.c_contiguous
    np.testing.assert_allclose(fast, general, **TOL[dtype])


def test_rows_input_gradient_in_half_precision_is_close_to_float32():
    rng = np.random.default_rng(6)
    g = rng.standard_normal((4, 3, 6, 6)).astype(np.float16)
    w = rng.standard_normal((3, 2, 3, 3)).astype(np.float16)
    attrs = dict(stride=(1, 1), padding=(0, 0, 0, 0), dilation=(1, 1), groups=1, input_hw=(8, 8))
    half = flex_conv.conv2d_grad_input(g, w, **attrs)
    ref = torch.nn.grad.conv2d_input((4, 2, 8, 8), torch.tensor(w, dtype=torch.float32),
                                     torch.tensor(g, dtype=torch.float32)).numpy()
    assert half.dtype == np.float16
    np.testing.assert_allclose(half.astype(np.float32), ref, rtol=2e-2, atol=2e-2)


# -- ceil_mode pooling (PyTorch's output sizes and divisors), on flex and wgpu ----------------

CEIL_CASES = [(7, 7, 3, 2, 0), (6, 5, 2, 2, 1), (5, 8, 3, 3, 1), (9, 9, 2, 2, 0), (4, 4, 3, 2, 1), (8, 8, 2, 2, 0)]


@pytest.mark.parametrize("dev", flex_and_wgpu(), ids=lambda d: d.kind)
@pytest.mark.parametrize("h,w,k,s,p", CEIL_CASES)
def test_ceil_mode_pooling_matches_torch(dev, h, w, k, s, p):
    rng = np.random.default_rng(h * 100 + w * 10 + k)
    x = rng.standard_normal((2, 3, h, w))
    cases = [(lambda t: F.max_pool2d(t, k, s, p, ceil_mode=True),
              lambda t: TF.max_pool2d(t, k, s, p, ceil_mode=True))]
    for cip in (True, False):
        cases.append((lambda t, c=cip: F.avg_pool2d(t, k, s, p, ceil_mode=True, count_include_pad=c),
                      lambda t, c=cip: TF.avg_pool2d(t, k, s, p, ceil_mode=True, count_include_pad=c)))
    for burn_fn, torch_fn in cases:
        bx = burn.tensor(x, dtype=burn.float64, device=dev.autodiff()).require_grad()
        tx = torch.tensor(x, requires_grad=True)
        by, ty = burn_fn(bx), torch_fn(tx)
        assert by.shape == tuple(ty.shape)
        np.testing.assert_allclose(by.numpy(), ty.detach().numpy(), rtol=1e-12, atol=1e-12)
        wts = rng.standard_normal(tuple(ty.shape))
        g = (by * burn.tensor(wts, device=bx.device)).sum().backward().get(bx).numpy()
        (tg,) = torch.autograd.grad((ty * torch.tensor(wts)).sum(), tx)
        np.testing.assert_allclose(g, tg.numpy(), rtol=1e-12, atol=1e-12)


def test_ceil_mode_pool1d_and_modules_match_torch():
    x = np.random.default_rng(3).standard_normal((2, 3, 10))
    got = F.max_pool1d(burn.tensor(x), 3, 2, ceil_mode=True).numpy()
    np.testing.assert_allclose(got, TF.max_pool1d(torch.tensor(x), 3, 2, ceil_mode=True).numpy())
    got = F.avg_pool1d(burn.tensor(x), 4, 3, 1, ceil_mode=True).numpy()
    np.testing.assert_allclose(got, TF.avg_pool1d(torch.tensor(x), 4, 3, 1, ceil_mode=True).numpy())
    x2 = np.random.default_rng(4).standard_normal((1, 2, 7, 7))
    got = burn.nn.MaxPool2d(2, ceil_mode=True)(burn.tensor(x2)).numpy()
    np.testing.assert_allclose(got, torch.nn.MaxPool2d(2, ceil_mode=True)(torch.tensor(x2)).numpy())
    got = burn.nn.AvgPool2d(3, 2, 1, ceil_mode=True)(burn.tensor(x2)).numpy()
    np.testing.assert_allclose(got, torch.nn.AvgPool2d(3, 2, 1, ceil_mode=True)(torch.tensor(x2)).numpy())


# the JIT im2col / col2im on their own: odd sizes, strides, asymmetric padding wider than the
# kernel reach, dilation, groups, a kernel larger than the padded input's rows
JIT_GEOMETRIES = [
    # (N, C, H, W), (kH, kW), stride, padding (top, bottom, left, right), dilation
    ((2, 3, 9, 11), (3, 2), (1, 1), (0, 0, 0, 0), (1, 1)),
    ((3, 2, 10, 7), (3, 3), (2, 3), (1, 2, 3, 0), (1, 2)),
    ((1, 4, 5, 5), (7, 7), (1, 1), (3, 3, 3, 3), (1, 1)),
    ((2, 1, 8, 13), (2, 5), (3, 2), (4, 0, 0, 5), (2, 1)),
    ((1, 2, 4, 4), (1, 1), (2, 2), (0, 0, 0, 0), (1, 1)),
]


@pytest.fixture
def jit_kernels():
    k = jit.kernels()
    assert k is not None, f"flex's JIT is unavailable: {jit.status()['reason']}"
    return k


@pytest.mark.parametrize("xs, kernel, stride, padding, dilation", JIT_GEOMETRIES)
def test_jit_im2col_is_the_numpy_im2col_and_col2im_its_adjoint(jit_kernels, xs, kernel, stride, padding,
                                                                dilation):
    rng = np.random.default_rng(21)
    x = rng.standard_normal(xs).astype(np.float32)
    out_hw = flex_conv._out_hw(xs, kernel, stride, padding, dilation)
    want = flex_conv._im2col(x, kernel, stride, padding, dilation, 1, out_hw)
    got = flex_conv._im2col_jit(jit_kernels, x, kernel, stride, padding, dilation, 1, out_hw)
    np.testing.assert_array_equal(got, want)                 # a copy: exactly the same columns
    # col2im is the transpose of im2col: <im2col(x), c> == <x, col2im(c)> for every x, c; check it
    # on the basis (each input element's total weight) against a float64 scatter of the columns
    cols = rng.standard_normal(want.shape).astype(np.float32)
    gx = np.zeros(xs, np.float32)
    geo = flex_conv._geometry(xs[2:], kernel, stride, padding, dilation, out_hw)
    flex_conv._run_columns(jit_kernels.col2im, (cols, gx), xs[0] * xs[1], geo)
    pt, pb, pl, pr = padding
    ref = np.zeros(xs[:2] + (xs[2] + pt + pb, xs[3] + pl + pr))
    c6 = cols.astype(np.float64).reshape(xs[:2] + tuple(kernel) + tuple(out_hw))
    for i, j, rs, cs in flex_conv._offsets(kernel, stride, dilation, out_hw):
        ref[:, :, rs, cs] += c6[:, :, i, j]
    np.testing.assert_allclose(gx, ref[:, :, pt:pt + xs[2], pl:pl + xs[3]], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("xs, kernel, stride, padding, dilation", JIT_GEOMETRIES + [
    ((3, 4, 4, 4), (3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),      # the digits CNN's 4 x 4 planes
    ((2, 2, 15, 15), (3, 3), (2, 2), (1, 1, 1, 1), (1, 1)),    # strided, 8 x 8 outputs
    ((2, 3, 12, 12), (5, 5), (1, 1), (0, 0, 0, 0), (1, 1)),    # rows of 8 (the row copies' vector path)
])
@pytest.mark.parametrize("gather", [False, True], ids=["rows", "gather"])
@pytest.mark.parametrize("folded", [False, True], ids=["per-image", "folded"])
def test_both_jit_im2cols_write_exactly_the_numpy_columns_in_both_layouts(jit_kernels, monkeypatch, xs, kernel,
                                                                           stride, padding, dilation, gather,
                                                                           folded):
    """conv.ll's row-copying and gathering im2col, each forced, in the per-image and the batch-folded
    layout: the numpy columns exactly, and nothing written outside them (NaN guards on both sides)."""
    monkeypatch.setattr(flex_conv, "_use_gather", lambda *a: gather)
    rng = np.random.default_rng(23)
    x = rng.standard_normal(xs).astype(np.float32)
    n, c = xs[:2]
    out_hw = flex_conv._out_hw(xs, kernel, stride, padding, dilation)
    want = flex_conv._im2col(x, kernel, stride, padding, dilation, 1, out_hw)      # [N, 1, C*kk, P]
    if folded:
        want = want[:, 0].transpose(1, 0, 2).reshape(want.shape[2], -1)
    canvas = np.full(want.size + 24, np.nan, np.float32)
    out = canvas[8:8 + want.size].reshape(want.shape)
    flex_conv._columns(jit_kernels, x, out, kernel, stride, padding, dilation, out_hw,
                       folded_images=n if folded else 0)
    np.testing.assert_array_equal(out, want)
    assert np.isnan(canvas[:8]).all() and np.isnan(canvas[8 + want.size:]).all()


def test_jit_columns_reject_wrong_arrays(jit_kernels):
    geo = flex_conv._geometry((4, 4), (3, 3), (1, 1), (0, 0, 0, 0), (1, 1), (2, 2))
    x = np.zeros((1, 1, 4, 4), np.float64)
    with pytest.raises(TypeError, match="im2col_f32: expected C-contiguous float32"):
        flex_conv._run_columns(jit_kernels.im2col, (x, np.zeros((1, 9, 4), np.float32)), 1, geo)
    with pytest.raises(TypeError, match="col2im_f32: expected C-contiguous float32"):
        flex_conv._run_columns(jit_kernels.col2im, (np.zeros((1, 4, 9), np.float32).transpose(0, 2, 1),
                                                    np.zeros((1, 1, 4, 4), np.float32)), 1, geo)


@pytest.mark.parametrize("cfg", [((9, 6, 12, 12), (16, 6, 5, 5), (1, 1), (0, 0, 0, 0), (1, 1), 1),
                                 ((7, 4, 11, 10), (6, 2, 3, 3), (2, 1), (1, 2, 0, 1), (1, 2), 2)])
def test_jit_conv_kernels_on_one_and_two_threads_are_bit_identical(jit_kernels, cfg, monkeypatch):
    xs, ws, stride, padding, dilation, groups = cfg
    rng = np.random.default_rng(22)
    x = rng.standard_normal(xs).astype(np.float32)
    w = rng.standard_normal(ws).astype(np.float32)
    attrs = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
    monkeypatch.setattr(flex_conv, "_TASK_MACS", 1)          # chunks of one image on two threads
    monkeypatch.setattr(flex_conv, "_BLAS_ONE_THREAD", 1 << 62)

    def run():
        y = flex_conv.conv2d(x, w, **attrs)
        g = np.cos(y)
        return y, flex_conv.conv2d_grad_input(g, w, input_hw=xs[2:], **attrs)
    one, two = on_one_and_two_threads(run)
    for a, b in zip(one, two):                                # per-image GEMMs, per-plane col2im
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("shape, pad", [((3, 2, 4, 4), (1, 1, 1, 1)), ((2, 3, 5, 7), (0, 2, 3, 0)),
                                        ((1, 1, 1, 9), (2, 0, 0, 1)), ((2, 2, 3, 3), (0, 0, 0, 0))])
def test_jit_pad_planes_is_numpys_zero_padding(jit_kernels, shape, pad):
    """conv.ll's pad_planes_f32 (the direct convolution's padded input): np.pad with zeros, every
    element of the output written (it starts as NaN)."""
    x = np.random.default_rng(5).standard_normal(shape).astype(np.float32)
    pt, pb, pl, pr = pad
    out = np.full(shape[:2] + (shape[2] + pt + pb, shape[3] + pl + pr), np.nan, np.float32)
    jit_kernels.pad_planes(x, out, np.array([shape[0] * shape[1], shape[2], shape[3], pt, pb, pl, pr], np.int64))
    np.testing.assert_array_equal(out, np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr))))
