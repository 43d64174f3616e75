"""Fast paths of burn.nn / burn.optim on flex, each against torch CPU and against its own
reference definition (burn ops): fused softmax, layer_norm and linear_relu with analytic
backwards, fused optimizer updates, the tiled max-pool gradient, the im2col reuse."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import burn
from burn.nn import functional as F
from burn.optim.optimizer import adam_update, sgd_update

AD = burn.Device.flex().autodiff()


def _rng(seed=0):
    return np.random.default_rng(seed)


def _grads(fn, arrays, seed_grad):
    """Values and gradients of sum(fn(*xs) * seed_grad) in burn."""
    xs = [burn.tensor(a, device=AD).require_grad() for a in arrays]
    y = fn(*xs)
    gr = (y * burn.tensor(seed_grad, device=AD)).sum().backward()
    return y.numpy(), [x.grad(gr).numpy() for x in xs]


def _torch_grads(fn, arrays, seed_grad):
    xs = [torch.tensor(a, requires_grad=True) for a in arrays]
    y = fn(*xs)
    (y * torch.tensor(seed_grad)).sum().backward()
    return y.detach().numpy(), [x.grad.numpy() for x in xs]


# -- softmax ---------------------------------------------------------------------------

@pytest.mark.parametrize("dtype,tol", [(np.float32, 1e-6), (np.float64, 1e-13)])
@pytest.mark.parametrize("shape,axis", [((4, 3, 64), -1), ((4, 3, 64), 1), ((5, 7), 0), ((9,), 0)])
def test_softmax_fused_matches_torch(dtype, tol, shape, axis):
    r = _rng(1)
    x = (r.standard_normal(shape) * 4).astype(dtype)
    g = r.standard_normal(shape).astype(dtype)
    yb, (gb,) = _grads(lambda t: F.softmax(t, axis=axis), [x], g)
    yt, (gt,) = _torch_grads(lambda t: torch.softmax(t, axis), [x], g)
    np.testing.assert_allclose(yb, yt, rtol=0, atol=tol * 10)
    np.testing.assert_allclose(gb, gt, rtol=0, atol=tol * 40)


def test_softmax_fused_is_one_node_and_matches_reference_edges():
    # masked entries (-inf), huge logits, a fully masked row (NaN, as torch), and NaN input
    x = np.array([[0.0, -np.inf, 1.0, 2.0], [1e30, 1e30, -1e30, 0.0], [-np.inf] * 4, [0.0, np.nan, 1.0, 2.0]],
                 np.float32)
    fused = F.softmax(burn.tensor(x)).numpy()
    ref = F.softmax_fused.reference(burn.tensor(x), 1).numpy()
    want = torch.softmax(torch.tensor(x), -1).numpy()
    np.testing.assert_allclose(fused, want, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(ref, want, rtol=1e-6, atol=1e-7)
    assert np.isnan(fused[2]).all() and np.isnan(fused[3]).all()


def test_softmax_grad_kernel_equals_reference_and_is_differentiable():
    r = _rng(2)
    y = burn.tensor(F.softmax(burn.tensor(r.standard_normal((6, 5)).astype(np.float32))).numpy())
    g = burn.tensor(r.standard_normal((6, 5)).astype(np.float32))
    np.testing.assert_allclose(F.softmax_grad(y, g, 1).numpy(), F.softmax_grad.reference(y, g, 1).numpy(),
                               rtol=1e-6, atol=1e-7)
    # its own gradient goes through the reference: check d/dg sum(softmax_grad) against finite differences
    ya = y.numpy().astype(np.float64)
    yb = burn.tensor(ya, device=AD)
    gb = burn.tensor(g.numpy().astype(np.float64), device=AD).require_grad()
    dg = gb.grad(F.softmax_grad(yb, gb, 1).sum().backward()).numpy()
    np.testing.assert_allclose(dg, ya * (1 - ya.sum(axis=1, keepdims=True)), atol=1e-12)


def test_softmax_bad_axis_is_a_clear_error():
    with pytest.raises(burn.ShapeError, match="softmax: axis 3"):
        F.softmax(burn.ones((2, 3)), axis=3)


# -- layer norm --------------------------------------------------------------------------

@pytest.mark.parametrize("dtype,tol", [(np.float32, 2e-5), (np.float64, 1e-12)])
@pytest.mark.parametrize("shape", [(2, 5, 32), (7, 128), (16,)])
def test_layer_norm_fused_matches_torch(dtype, tol, shape):
    r = _rng(3)
    d = shape[-1]
    arrays = [(r.standard_normal(shape) * 3 + 1).astype(dtype), r.standard_normal(d).astype(dtype),
              r.standard_normal(d).astype(dtype)]
    g = r.standard_normal(shape).astype(dtype)
    yb, gb = _grads(lambda x, w, b: F.layer_norm(x, (d,), w, b, 1e-5), arrays, g)
    yt, gt = _torch_grads(lambda x, w, b: torch.nn.functional.layer_norm(x, (d,), w, b, 1e-5), arrays, g)
    np.testing.assert_allclose(yb, yt, rtol=tol, atol=tol)
    for a, b in zip(gb, gt):
        np.testing.assert_allclose(a, b, rtol=tol * 5, atol=tol * 5)


def test_layer_norm_grad_kernel_equals_reference():
    r = _rng(4)
    x, g = (burn.tensor(r.standard_normal((12, 24)).astype(np.float32)) for _ in range(2))
    w = burn.tensor(r.standard_normal(24).astype(np.float32))
    for a, b in zip(F.layer_norm_grad(x, w, g, 1e-5), F.layer_norm_grad.reference(x, w, g, 1e-5)):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=1e-5)
    y = F.layer_norm_fused(x, w, w, 1e-5).numpy()
    np.testing.assert_allclose(y, F.layer_norm_fused.reference(x, w, w, 1e-5).numpy(), rtol=1e-5, atol=1e-5)


def test_layer_norm_fused_errors_and_fallbacks():
    with pytest.raises(burn.ShapeError, match="layer_norm"):
        F.layer_norm_fused(burn.ones((2, 4)), burn.ones((3,)), burn.ones((3,)), 1e-5)
    # float16 and missing affine parameters keep the op-by-op path (same values as torch)
    x = _rng(5).standard_normal((3, 8)).astype(np.float16)
    got = F.layer_norm(burn.tensor(x), (8,)).numpy()
    want = torch.nn.functional.layer_norm(torch.tensor(x, dtype=torch.float32), (8,)).numpy()
    np.testing.assert_allclose(got.astype(np.float32), want, atol=4e-3)


# -- linear_relu backward and the encoder's feed-forward ----------------------------------

@pytest.mark.parametrize("xshape", [(6, 5), (2, 3, 5)])
def test_linear_relu_analytic_backward_matches_torch(xshape):
    r = _rng(6)
    arrays = [r.standard_normal(xshape).astype(np.float64), r.standard_normal((5, 4)).astype(np.float64),
              r.standard_normal(4).astype(np.float64)]
    g = r.standard_normal(xshape[:-1] + (4,))
    yb, gb = _grads(F.linear_relu, arrays, g)
    yt, gt = _torch_grads(lambda x, w, b: torch.relu(x @ w + b), arrays, g)
    np.testing.assert_allclose(yb, yt, atol=1e-12)
    for a, b in zip(gb, gt):
        np.testing.assert_allclose(a, b, atol=1e-12)


def test_encoder_layer_fast_paths_match_torch():
    torch.manual_seed(0)
    d, heads, ff = 32, 4, 64
    tl = torch.nn.TransformerEncoderLayer(d, heads, dim_feedforward=ff, dropout=0.0, batch_first=True).double()
    bl = burn.nn.TransformerEncoderLayer(d, heads, dim_feedforward=ff, dropout=0.0, device=AD,
                                         dtype=burn.float64)
    sd = {k: v.detach().numpy() for k, v in tl.state_dict().items()}
    w_in, b_in = sd["self_attn.in_proj_weight"], sd["self_attn.in_proj_bias"]
    sa = bl.self_attn
    for i, proj in enumerate((sa.q_proj, sa.k_proj, sa.v_proj)):
        proj.weight.assign_(burn.tensor(w_in[i * d:(i + 1) * d].T.copy(), device=AD))
        proj.bias.assign_(burn.tensor(b_in[i * d:(i + 1) * d].copy(), device=AD))
    for name, mod in (("self_attn.out_proj", sa.out_proj), ("linear1", bl.linear1), ("linear2", bl.linear2)):
        mod.weight.assign_(burn.tensor(sd[name + ".weight"].T.copy(), device=AD))
        mod.bias.assign_(burn.tensor(sd[name + ".bias"].copy(), device=AD))
    for name, mod in (("norm1", bl.norm1), ("norm2", bl.norm2)):
        mod.weight.assign_(burn.tensor(sd[name + ".weight"].copy(), device=AD))
        mod.bias.assign_(burn.tensor(sd[name + ".bias"].copy(), device=AD))
    r = _rng(7)
    x = r.standard_normal((3, 10, d))
    g = r.standard_normal((3, 10, d))
    xb = burn.tensor(x, device=AD).require_grad()
    gr = (bl(xb) * burn.tensor(g, device=AD)).sum().backward()
    xt = torch.tensor(x, requires_grad=True)
    (tl(xt) * torch.tensor(g)).sum().backward()
    np.testing.assert_allclose(xb.grad(gr).numpy(), xt.grad.numpy(), atol=1e-10)
    np.testing.assert_allclose(bl.linear1.weight.grad(gr).numpy(), tl.linear1.weight.grad.numpy().T, atol=1e-10)
    np.testing.assert_allclose(bl.norm1.weight.grad(gr).numpy(), tl.norm1.weight.grad.numpy(), atol=1e-10)


# -- fused optimizer updates -------------------------------------------------------------

def _hyper_adam(lr, b1, b2, t, eps, wd):
    return [lr, b1, 1 - b1, b2, 1 - b2, 1 / (1 - b1 ** t), 1 / (1 - b2 ** t), eps, wd, 1 - lr * wd]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("mode", ["none", "l2", "decoupled"])
@pytest.mark.parametrize("shape", [(7, 3), ()])
def test_adam_update_kernel_is_bit_identical_to_reference(dtype, mode, shape):
    r = _rng(8)
    p, g, m = (burn.tensor(r.standard_normal(shape).astype(dtype)) for _ in range(3))
    v = burn.tensor(np.abs(r.standard_normal(shape)).astype(dtype))
    h = burn.tensor(np.array(_hyper_adam(0.01, 0.8, 0.99, 3, 1e-8, 0.1)), dtype=burn.float64)
    got = adam_update(p, g, m, v, h, mode)
    if dtype is np.float16:
        # flex computes a half kernel in float32 and rounds each result once (burn_flex.native.HalfKernel):
        # the reference's float32 values, rounded
        want = [t.astype(burn.float16) for t in adam_update.reference(
            *(t.astype(burn.float32) for t in (p, g, m, v)), h, mode)]
    else:
        want = adam_update.reference(p, g, m, v, h, mode)
    for a, b in zip(got, want):
        assert a.dtype is b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a.numpy(), b.numpy())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("mode", [("first", False, False), ("next", True, False), ("next", False, True),
                                  ("first", True, True)])
def test_sgd_update_kernel_is_bit_identical_to_reference(dtype, mode):
    r = _rng(9)
    p, g, buf = (burn.tensor(r.standard_normal((5, 4)).astype(dtype)) for _ in range(3))
    h = burn.tensor(np.array([0.05, 0.01, 0.9, 0.75]), dtype=burn.float64)
    for a, b in zip(sgd_update(p, g, buf, h, mode), sgd_update.reference(p, g, buf, h, mode)):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_update_errors_name_the_op():
    h = burn.tensor(np.zeros(10), dtype=burn.float64)
    with pytest.raises(burn.ShapeError, match="adam_update"):
        adam_update(burn.ones((2,)), burn.ones((3,)), burn.ones((2,)), burn.ones((2,)), h)
    with pytest.raises(ValueError, match="adam_update: mode"):
        adam_update(burn.ones((2,)), burn.ones((2,)), burn.ones((2,)), burn.ones((2,)), h, "bogus")


@pytest.mark.parametrize("name,kw", [("Adam", dict(lr=0.01, weight_decay=0.1)), ("AdamW", dict(lr=0.01)),
                                     ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01))])
def test_optimizers_equal_op_by_op_math_bit_for_bit(name, kw):
    """The fused step gives exactly what the op-by-op formulas give (numpy, float32)."""
    r = _rng(10)
    w0 = r.standard_normal((6, 4)).astype(np.float32)
    w = burn.nn.Parameter(burn.tensor(w0, device=AD))
    opt = getattr(burn.optim, name)([w], **kw)
    x = burn.tensor(r.standard_normal((5, 6)).astype(np.float32), device=AD)
    f32 = np.float32
    W, m, v, buf = w0.copy(), np.zeros_like(w0), np.zeros_like(w0), None
    for t in range(1, 5):
        grads = ((x @ w) ** 2).sum().backward()
        g = w.grad(grads).numpy()
        opt.step(grads)
        if name == "SGD":
            g = g + W * f32(kw["weight_decay"])
            buf = g.copy() if buf is None else buf * f32(0.9) + g * f32(1.0)
            W = W - (g + buf * f32(0.9)) * f32(kw["lr"])
        else:
            lr, wd, (b1, b2) = kw["lr"], kw.get("weight_decay", 0.01), (0.9, 0.999)
            if name == "Adam":
                g = g + W * f32(wd)
            m = m * f32(b1) + g * f32(1 - b1)
            v = v * f32(b2) + g * g * f32(1 - b2)
            step = (m * f32(1 / (1 - b1 ** t))) / (np.sqrt(v * f32(1 / (1 - b2 ** t))) + f32(1e-8))
            if name == "AdamW":
                W = W * f32(1 - lr * wd)
            W = W - step * f32(lr)
        np.testing.assert_array_equal(w.numpy(), W)


def test_optimizer_records_one_node_per_parameter():
    from burn.graph import graph_for
    w = burn.nn.Parameter(burn.tensor(np.ones((3, 3), np.float32), device=AD))
    opt = burn.optim.Adam([w], lr=0.1)
    opt.step((w * w).sum().backward())           # the first step also creates the zero state
    grads = (w * w).sum().backward()
    pending = graph_for(AD).pending
    before = len(pending)
    opt.step(grads)
    names = [n.prim.name for n in pending[before:]]
    assert names == ["burn::adam_update"], names


# -- max-pool gradient and im2col reuse --------------------------------------------------

@pytest.mark.parametrize("shape,k", [((2, 3, 8, 8), 2), ((2, 2, 9, 7), 2), ((1, 2, 9, 9), 3)])
def test_max_pool_grad_tiled_matches_torch_with_ties(shape, k):
    r = _rng(11)
    x = np.maximum(r.standard_normal(shape), 0).astype(np.float32)   # relu output: many tied zeros
    x[0, 0, :4, :4] = 1.5                                             # whole windows of equal values
    g = r.standard_normal((shape[0], shape[1], shape[2] // k, shape[3] // k)).astype(np.float32)
    _, (gb,) = _grads(lambda t: F.max_pool2d(t, k), [x], g)
    _, (gt,) = _torch_grads(lambda t: torch.nn.functional.max_pool2d(t, k), [x], g)
    np.testing.assert_array_equal(gb, gt)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("cfg", [(2, 2, 0), (3, 2, 1), (2, 1, 0)])
def test_max_pool_grad_with_nan_and_inf_matches_torch(dtype, cfg):
    # PyTorch's rule on every path (the float32 2x2 JIT kernel, the numpy paths): a NaN window sends
    # its gradient to its last NaN, others to their first maximum; inputs no window chose get 0, also
    # where g is inf or NaN (0 * inf would be NaN); padding is never chosen, even at a -inf maximum
    k, s, p = cfg
    x = np.arange(36, dtype=dtype).reshape(1, 1, 6, 6) % 5
    x[0, 0, 1, 1] = x[0, 0, 0, 1] = np.nan
    x[0, 0, 4:, 4:] = -np.inf
    oh = (6 + 2 * p - k) // s + 1
    g = np.ones((1, 1, oh, oh), dtype)
    g[0, 0, -1, 0] = np.inf
    g[0, 0, 0, -1] = np.nan
    _, (gb,) = _grads(lambda t: F.max_pool2d(t, k, stride=s, padding=p), [x], g)
    _, (gt,) = _torch_grads(lambda t: torch.nn.functional.max_pool2d(t, k, stride=s, padding=p), [x], g)
    np.testing.assert_array_equal(gb, gt)


@pytest.mark.parametrize("direct", [False, True], ids=["im2col-forward", "direct-forward"])
def test_conv_weight_grad_reuses_columns_correctly(direct, monkeypatch):
    # the im2col forward keeps its columns for the weight gradient; the direct one has none to keep
    from burn_flex.kernels import conv_direct
    monkeypatch.setattr(conv_direct, "ENABLED", direct)
    r = _rng(12)
    x = r.standard_normal((3, 2, 9, 9)).astype(np.float32)
    w1, w2 = (r.standard_normal((4, 2, 3, 3)).astype(np.float32) for _ in range(2))
    g = r.standard_normal((3, 4, 7, 7)).astype(np.float32)

    def f(xt, a, b):                 # two convolutions of one input: both weight gradients right
        return F.conv2d(xt, a) + F.conv2d(xt, b) * 2.0
    _, gb = _grads(f, [x, w1, w2], g)
    _, gt = _torch_grads(lambda xt, a, b: torch.nn.functional.conv2d(xt, a) + torch.nn.functional.conv2d(xt, b) * 2,
                         [x, w1, w2], g)
    for a, b in zip(gb, gt):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)
    from burn_flex.kernels import conv as C
    assert len(C._COLS_CACHE) <= C._COLS_CACHE_MAX_ENTRIES


def test_tune_malloc_is_applied_on_glibc():
    import sys
    from burn_flex.memory import tune_malloc
    assert tune_malloc() is (sys.platform.startswith("linux") and _glibc())


def _glibc():
    import platform
    return platform.libc_ver()[0] == "glibc"


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int32, np.int64])
def test_where_with_zero_is_bit_exact(dtype):
    """flex's ``where(c, a, +0.0)`` shortcut (a relu gradient) against np.where, bit for bit,
    including -0.0 (which must take the general path) and shapes where b adds dimensions."""
    from burn_flex.kernels.elementwise import where
    r = _rng(13)
    a = (r.standard_normal((40, 30)) * 5).astype(dtype)
    c = r.random((40, 30)) > 0.5
    for b in (np.zeros((), dtype), np.asarray(-0.0).astype(dtype), np.zeros((1, 1, 1), dtype), np.ones((), dtype)):
        got, want = where(c, a, b), np.where(c, a, b)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))
