"""Layer modules and losses of burn.nn against torch.nn with the same weights copied in:
forward values, input and parameter gradients, running statistics, errors, repr, num_params."""
from __future__ import annotations

import math

import numpy as np
import pytest

import burn
import burn.nn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional

AD = burn.Device.flex().autodiff()
F64 = dict(rtol=1e-9, atol=1e-10)


def _b(a, dtype=burn.float64, grad=False):
    t = burn.tensor(np.asarray(a), device=AD, dtype=dtype)
    return t.require_grad() if grad else t


def _torch_layout(module):
    """Burn parameters and buffers by torch name, in torch's layout (Linear weights transposed)."""
    linear = {p for p, m in module.named_modules() if isinstance(m, burn.nn.Linear)}
    out = {}
    for name, t in module.state_dict().items():
        a = t.numpy()
        owner = name.rpartition(".")[0]
        if name.endswith("weight") and owner in linear or (owner == "" and "" in linear and name == "weight"):
            a = a.T
        out[name] = a
    return out


def _copy_into_torch(bmod, tmod):
    state = {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in _torch_layout(bmod).items()}
    tmod.load_state_dict(state, strict=True)
    return tmod


def _compare(bmod, tmod, x, *, rtol=1e-9, atol=1e-10, seed=0, x_grad=True):
    """Forward output, input gradient and every parameter gradient of bmod and tmod agree."""
    _copy_into_torch(bmod, tmod)
    bx = _b(x, grad=x_grad)
    out = bmod(bx)
    cot = np.random.default_rng(seed).standard_normal(out.shape)
    grads = (out * _b(cot)).sum().backward()
    tx = torch.tensor(x, requires_grad=x_grad)
    tout = tmod(tx)
    (tout * torch.from_numpy(cot)).sum().backward()
    np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), rtol=rtol, atol=atol, err_msg="forward")
    if x_grad:
        np.testing.assert_allclose(bx.grad(grads).numpy(), tx.grad.numpy(), rtol=rtol, atol=atol, err_msg="dx")
    tparams = dict(tmod.named_parameters())
    linear = {p for p, m in bmod.named_modules() if isinstance(m, burn.nn.Linear)}
    for name, p in bmod.named_parameters():
        g = p.grad(grads).numpy()
        if name.endswith("weight") and name.rpartition(".")[0] in linear:
            g = g.T
        np.testing.assert_allclose(g, tparams[name].grad.numpy(), rtol=rtol, atol=atol, err_msg=f"grad {name}")
    assert bmod.num_params() == sum(p.numel() for p in tmod.parameters())
    return out


def _rand(shape, seed=1):
    return np.random.default_rng(seed).standard_normal(shape)


# -- convolution and pooling ----------------------------------------------------------------

@pytest.mark.parametrize("args, kw, xshape", [
    ((3, 6, 3), dict(), (2, 3, 9, 8)),
    ((4, 6, (3, 2)), dict(stride=2, padding=1, groups=2), (2, 4, 9, 7)),
    ((2, 4, 3), dict(padding="same", dilation=2, bias=False), (1, 2, 8, 8)),
])
def test_conv2d_matches_torch(args, kw, xshape):
    burn.Device.flex().seed(0)
    b = burn.nn.Conv2d(*args, **kw, device=AD, dtype=burn.float64)
    assert b.weight.shape == (args[1], args[0] // kw.get("groups", 1)) + (
        args[2] if isinstance(args[2], tuple) else (args[2],) * 2)
    _compare(b, torch.nn.Conv2d(*args, **kw).double(), _rand(xshape))


def test_conv1d_matches_torch_and_takes_unbatched_input():
    b = burn.nn.Conv1d(3, 5, 4, stride=2, padding=1, device=AD, dtype=burn.float64)
    t = torch.nn.Conv1d(3, 5, 4, stride=2, padding=1).double()
    _compare(b, t, _rand((2, 3, 11)))
    np.testing.assert_allclose(b(_b(_rand((3, 11)))).numpy(), t(torch.tensor(_rand((3, 11)))).detach().numpy(),
                               **F64)


def test_conv_init_follows_torch_bounds():
    burn.Device.flex().seed(3)
    conv = burn.nn.Conv2d(4, 64, 3, groups=2)
    bound = 1 / math.sqrt(2 * 9)
    w = conv.weight.numpy()
    assert w.dtype == np.float32 and np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
    assert np.abs(conv.bias.numpy()).max() <= bound and abs(w.mean()) < 0.1 * bound


@pytest.mark.parametrize("cls, kw", [
    ("MaxPool2d", dict(kernel_size=3, stride=2, padding=1)),
    ("AvgPool2d", dict(kernel_size=2)),
    ("AvgPool2d", dict(kernel_size=3, stride=1, padding=1, count_include_pad=False)),
    ("AdaptiveAvgPool2d", dict(output_size=(3, 2))),      # windows of uneven size that overlap
    ("AdaptiveAvgPool2d", dict(output_size=1)),
    ("AdaptiveAvgPool2d", dict(output_size=(None, 4))),
    ("Flatten", dict()),
])
def test_pool_layers_match_torch(cls, kw):
    _compare(getattr(burn.nn, cls)(**kw), getattr(torch.nn, cls)(**kw), _rand((2, 3, 7, 8)))


def test_pool1d_layers_match_torch():
    x = _rand((2, 3, 9))
    _compare(burn.nn.MaxPool1d(3, 2), torch.nn.MaxPool1d(3, 2), x)
    _compare(burn.nn.AvgPool1d(2), torch.nn.AvgPool1d(2), x)


def test_adaptive_avg_pool_unbatched_and_errors():
    x = _rand((3, 5, 7))
    np.testing.assert_allclose(burn.nn.AdaptiveAvgPool2d(2)(_b(x)).numpy(),
                               TF.adaptive_avg_pool2d(torch.tensor(x), 2).numpy(), **F64)
    with pytest.raises(ValueError, match="output_size"):
        burn.nn.AdaptiveAvgPool2d(0)(_b(x))
    with pytest.raises(burn.ShapeError, match=r"AdaptiveAvgPool2d\(output_size=2\).*\[N, C, H, W\]"):
        burn.nn.AdaptiveAvgPool2d(2)(_b(_rand((5, 7))))


# -- normalization --------------------------------------------------------------------------

@pytest.mark.parametrize("cls, xshape, kw", [
    ("BatchNorm1d", (8, 4), dict()),
    ("BatchNorm1d", (5, 4, 6), dict(momentum=0.3)),
    ("BatchNorm2d", (4, 4, 3, 5), dict()),
    ("BatchNorm2d", (4, 4, 3, 5), dict(momentum=None)),     # cumulative average
    ("BatchNorm2d", (3, 4, 2, 2), dict(affine=False, eps=1e-3)),
])
def test_batchnorm_running_stats_and_eval_match_torch(cls, xshape, kw):
    b = getattr(burn.nn, cls)(4, **kw, device=AD, dtype=burn.float64)
    t = getattr(torch.nn, cls)(4, **kw).double()
    rng = np.random.default_rng(0)
    if b.weight is not None:     # not the default ones/zeros, so a mixed-up scale or shift shows
        b.weight.assign_(_b(rng.uniform(0.5, 2, 4)))
        b.bias.assign_(_b(rng.standard_normal(4)))
    _copy_into_torch(b, t)
    for step in range(4):
        x = rng.standard_normal(xshape) * (step + 1) + step
        seed = step
        _compare_after_copy = _forward_backward(b, t, x, seed)
        del _compare_after_copy
    np.testing.assert_allclose(b.running_mean.numpy(), t.running_mean.numpy(), **F64)
    np.testing.assert_allclose(b.running_var.numpy(), t.running_var.numpy(), **F64)
    assert b.num_batches_tracked.item() == t.num_batches_tracked.item() == 4
    b.eval(), t.eval()
    x = rng.standard_normal(xshape)
    _forward_backward(b, t, x, 9)
    # eval mode does not touch the statistics
    np.testing.assert_allclose(b.running_mean.numpy(), t.running_mean.numpy(), **F64)
    assert b.num_batches_tracked.item() == 4


def _forward_backward(b, t, x, seed):
    """One train/eval step of both modules (same weights); outputs and gradients agree."""
    bx = _b(x, grad=True)
    out = b(bx)
    cot = np.random.default_rng(seed).standard_normal(out.shape)
    grads = (out * _b(cot)).sum().backward()
    tx = torch.tensor(x, requires_grad=True)
    t.zero_grad()
    tout = t(tx)
    (tout * torch.from_numpy(cot)).sum().backward()
    np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), rtol=1e-8, atol=1e-9)
    np.testing.assert_allclose(bx.grad(grads).numpy(), tx.grad.numpy(), rtol=1e-8, atol=1e-9)
    if b.weight is not None:
        np.testing.assert_allclose(b.weight.grad(grads).numpy(), t.weight.grad.numpy(), rtol=1e-8, atol=1e-9)
        np.testing.assert_allclose(b.bias.grad(grads).numpy(), t.bias.grad.numpy(), rtol=1e-8, atol=1e-9)


def test_batchnorm_buffers_are_state_not_parameters():
    bn = burn.nn.BatchNorm2d(3)
    assert [n for n, _ in bn.named_parameters()] == ["weight", "bias"]
    assert sorted(n for n, _ in bn.named_buffers()) == ["num_batches_tracked", "running_mean", "running_var"]
    assert bn.num_params() == torch.nn.BatchNorm2d(3).weight.numel() * 2
    assert set(bn.state_dict()) == set(torch.nn.BatchNorm2d(3).state_dict())
    nostats = burn.nn.BatchNorm1d(3, track_running_stats=False, device=AD, dtype=burn.float64).eval()
    x = _rand((6, 3))
    ref = torch.nn.BatchNorm1d(3, track_running_stats=False).double().eval()(torch.tensor(x))
    np.testing.assert_allclose(nostats(_b(x)).numpy(), ref.detach().numpy(), **F64)


def test_batchnorm_moves_buffers_with_to_device():
    bn = burn.nn.BatchNorm1d(2, device=burn.Device.flex()).to_device(AD)
    assert bn.running_mean.device == AD and bn.weight.requires_grad


@pytest.mark.parametrize("shape, kw", [(6, dict()), ((3, 6), dict(eps=1e-3)), (6, dict(bias=False)),
                                        (6, dict(elementwise_affine=False))])
def test_layer_norm_matches_torch(shape, kw):
    b = burn.nn.LayerNorm(shape, **kw, device=AD, dtype=burn.float64)
    if b.weight is not None:
        b.weight.assign_(_b(np.random.default_rng(0).uniform(0.5, 2, b.weight.shape)))
    _compare(b, torch.nn.LayerNorm(shape, **kw).double(), _rand((2, 4, 3, 6)))


@pytest.mark.parametrize("shape, eps", [(6, None), ((3, 6), 1e-4)])
def test_rms_norm_matches_torch(shape, eps):
    b = burn.nn.RMSNorm(shape, eps=eps, device=AD, dtype=burn.float64)
    b.weight.assign_(_b(np.random.default_rng(0).uniform(0.5, 2, b.weight.shape)))
    _compare(b, torch.nn.RMSNorm(shape, eps=eps).double(), _rand((2, 4, 3, 6)))
    # default eps is the dtype's machine epsilon, as torch: visible on an all-zero row's neighbours
    x = np.zeros((1, 6), np.float32)
    x[0, 0] = 1e-4
    got = burn.nn.RMSNorm(6)(burn.tensor(x)).numpy()
    np.testing.assert_allclose(got, torch.nn.RMSNorm(6)(torch.tensor(x)).detach().numpy(), rtol=1e-5)


# -- embedding, dropout, activations, linear --------------------------------------------------

def test_embedding_matches_torch_and_padding_row_gets_no_gradient():
    burn.Device.flex().seed(0)
    b = burn.nn.Embedding(7, 3, padding_idx=2, device=AD, dtype=burn.float64)
    assert b.weight.numpy()[2].tolist() == [0.0, 0.0, 0.0]
    b.weight.assign_(_b(_rand((7, 3))))      # a non-zero padding row must still come back as stored
    t = _copy_into_torch(b, torch.nn.Embedding(7, 3, padding_idx=2).double())
    idx = np.array([[2, 0, 6], [2, 2, 5]])
    out = b(burn.tensor(idx, device=AD))
    cot = _rand(out.shape, 4)
    grads = (out * _b(cot)).sum().backward()
    tout = t(torch.from_numpy(idx))
    (tout * torch.from_numpy(cot)).sum().backward()
    np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), **F64)
    np.testing.assert_allclose(b.weight.grad(grads).numpy(), t.weight.grad.numpy(), **F64)
    with pytest.raises(burn.DTypeError, match=r"Embedding\(7, 3, padding_idx=2\).*integers"):
        b(_b([1.0]))


def test_embedding_init_is_standard_normal():
    burn.Device.flex().seed(1)
    w = burn.nn.Embedding(500, 40).weight.numpy()
    assert abs(w.mean()) < 0.02 and abs(w.std() - 1) < 0.02


def test_dropout_respects_train_and_eval():
    burn.Device.flex().seed(0)
    m = burn.nn.Sequential(burn.nn.Linear(4, 4), burn.nn.Dropout(0.25))
    x = burn.ones((500, 4))
    y = m(x).numpy()
    kept = y != 0
    assert 0.2 < 1 - kept.mean() < 0.3
    ref = (x.numpy() @ m.layers[0].weight.numpy() + m.layers[0].bias.numpy()) / 0.75
    np.testing.assert_allclose(y[kept], ref[kept], rtol=1e-5)
    m.eval()
    assert not m.layers[1].training
    np.testing.assert_allclose(m(x).numpy(), ref * 0.75, rtol=1e-5)
    with pytest.raises(ValueError, match="Dropout"):
        burn.nn.Dropout(1.5)


@pytest.mark.parametrize("name", ["ReLU", "GELU", "SiLU", "Identity"])
def test_activation_modules_match_torch(name):
    _compare(getattr(burn.nn, name)(), getattr(torch.nn, name)(), _rand((3, 5)) * 3)


def test_linear_matches_torch_with_transposed_weight():
    b = burn.nn.Linear(5, 3, device=AD, dtype=burn.float64)
    _compare(b, torch.nn.Linear(5, 3).double(), _rand((4, 2, 5)))


# -- losses -----------------------------------------------------------------------------------

REDUCTIONS = ["mean", "sum", "none"]


def _loss_pair(bfn, tfn, logits, target, int_target=False):
    bl = _b(logits, grad=True)
    bt = burn.tensor(target, device=AD) if int_target else _b(target)
    out = bfn(bl, bt)
    cot = _rand(out.shape, 7) if out.ndim else np.array(1.3)
    grads = (out * _b(cot)).sum().backward()
    tl = torch.tensor(logits, requires_grad=True)
    tout = tfn(tl, torch.from_numpy(target))
    (tout * torch.from_numpy(cot)).sum().backward()
    np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), **F64)
    np.testing.assert_allclose(bl.grad(grads).numpy(), tl.grad.numpy(), **F64)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
def test_cross_entropy_loss_matches_torch(reduction, smoothing):
    logits, target = _rand((6, 5)) * 3, np.array([0, 4, 2, 2, 1, 3])
    _loss_pair(burn.nn.CrossEntropyLoss(reduction, label_smoothing=smoothing),
               torch.nn.CrossEntropyLoss(reduction=reduction, label_smoothing=smoothing), logits, target, True)
    probs = np.random.default_rng(2).dirichlet(np.ones(5), size=6)
    _loss_pair(burn.nn.CrossEntropyLoss(reduction, label_smoothing=smoothing),
               torch.nn.CrossEntropyLoss(reduction=reduction, label_smoothing=smoothing), logits, probs)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_nll_and_mse_losses_match_torch(reduction):
    lp = TF.log_softmax(torch.tensor(_rand((5, 4))), -1).numpy()
    _loss_pair(burn.nn.NLLLoss(reduction), torch.nn.NLLLoss(reduction=reduction), lp, np.array([3, 0, 1, 1, 2]),
               True)
    _loss_pair(burn.nn.MSELoss(reduction), torch.nn.MSELoss(reduction=reduction), _rand((3, 4)), _rand((3, 4), 5))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
def test_bce_with_logits_matches_torch(reduction, weighted):
    logits = _rand((6, 3)) * 4
    logits[0] = [60.0, -60.0, 0.0]          # extremes where a naive log(sigmoid) overflows or loses digits
    target = np.random.default_rng(3).uniform(0, 1, (6, 3))
    target[0] = [0.0, 1.0, 1.0]
    pw = np.array([0.5, 2.0, 3.0]) if weighted else None
    w = _rand((6, 3), 8) ** 2 if weighted else None
    _loss_pair(lambda x, y: F.bce_with_logits(x, y, weight=None if w is None else _b(w),
                                              pos_weight=None if pw is None else _b(pw), reduction=reduction),
               lambda x, y: TF.binary_cross_entropy_with_logits(
                   x, y, weight=None if w is None else torch.from_numpy(w),
                   pos_weight=None if pw is None else torch.from_numpy(pw), reduction=reduction),
               logits, target)
    mod = burn.nn.BCEWithLogitsLoss(reduction=reduction, pos_weight=None if pw is None else _b(pw))
    ref = torch.nn.BCEWithLogitsLoss(reduction=reduction, pos_weight=None if pw is None else torch.from_numpy(pw))
    _loss_pair(mod, ref, logits, target)


def test_bce_with_logits_is_finite_at_extremes_in_float32():
    x = burn.tensor([100.0, -100.0], device=AD).require_grad()
    loss = F.bce_with_logits(x, burn.tensor([0.0, 1.0]).to_device(AD), reduction="sum")
    g = x.grad(loss.backward()).numpy()
    assert abs(loss.item() - 200.0) < 1e-3 and np.allclose(g, [1.0, -1.0])


def test_loss_errors_name_the_op_and_shapes():
    with pytest.raises(burn.ShapeError, match=r"bce_with_logits.*\(3,\).*\(4,\)"):
        F.bce_with_logits(burn.zeros((3,)), burn.zeros((4,)))
    with pytest.raises(burn.DTypeError, match="bce_with_logits.*astype"):
        F.bce_with_logits(burn.zeros((3,)), burn.tensor([0, 1, 1]))
    with pytest.raises(ValueError, match="reduction"):
        burn.nn.MSELoss("avg")
    with pytest.raises(burn.ShapeError, match="cross_entropy"):
        burn.nn.CrossEntropyLoss()(burn.zeros((3, 4)), burn.tensor([1, 2]))


# -- errors, repr, counts ------------------------------------------------------------------------

def test_layer_shape_errors_name_the_layer_and_shapes():
    cases = [
        (burn.nn.Conv2d(3, 8, 3), burn.zeros((2, 4, 9, 9)), r"Conv2d\(3, 8, kernel_size=\(3, 3\).*"
                                                             r"\[N, 3, H, W\].*\(2, 4, 9, 9\)"),
        (burn.nn.Conv1d(2, 4, 3), burn.zeros((2, 2, 3, 3)), r"Conv1d\(2, 4.*\[N, 2, L\].*\(2, 2, 3, 3\)"),
        (burn.nn.BatchNorm2d(3), burn.zeros((2, 3, 4)), r"BatchNorm2d\(3.*\[N, 3, H, W\].*\(2, 3, 4\)"),
        (burn.nn.BatchNorm1d(5), burn.zeros((4, 3)), r"BatchNorm1d\(5.*\[N, 5\].*\(4, 3\)"),
        (burn.nn.LayerNorm(8), burn.zeros((2, 7)), r"LayerNorm\(\(8,\).*\[\.\.\., 8\].*\(2, 7\)"),
        (burn.nn.RMSNorm(8), burn.zeros((2, 7)), r"RMSNorm.*\[\.\.\., 8\].*\(2, 7\)"),
        (burn.nn.MaxPool2d(2), burn.zeros((4,)), r"MaxPool2d\(kernel_size=2.*\(4,\)"),
        (burn.nn.Flatten(2), burn.zeros((4, 3)), r"Flatten\(start_dim=2.*\(4, 3\)"),
    ]
    for layer, x, pattern in cases:
        with pytest.raises(burn.ShapeError, match=pattern):
            layer(x)
    with pytest.raises(ValueError, match="divisible by groups"):
        burn.nn.Conv2d(3, 8, 3, groups=2)


def test_batchnorm_training_needs_more_than_one_value_per_channel():
    with pytest.raises(burn.ShapeError, match="batch_norm"):
        burn.nn.BatchNorm1d(3)(burn.zeros((1, 3)))
    assert burn.nn.BatchNorm1d(3).eval()(burn.zeros((1, 3))).shape == (1, 3)


def test_repr_is_readable():
    m = burn.nn.Sequential(burn.nn.Conv2d(1, 8, 3, padding=1), burn.nn.BatchNorm2d(8), burn.nn.ReLU(),
                           burn.nn.MaxPool2d(2), burn.nn.Flatten(), burn.nn.Dropout(0.1), burn.nn.Linear(8 * 4, 10))
    text = repr(m)
    for part in ["(layers.0): Conv2d(1, 8, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))",
                 "(layers.1): BatchNorm2d(8, eps=1e-05, momentum=0.1", "(layers.2): ReLU()",
                 "(layers.3): MaxPool2d(kernel_size=2", "(layers.5): Dropout(p=0.1)",
                 "(layers.6): Linear(d_in=32, d_out=10, bias=True)"]:
        assert part in text, text
    assert repr(burn.nn.Embedding(5, 2)) == "Embedding(5, 2)"
    assert repr(burn.nn.CrossEntropyLoss(label_smoothing=0.1)) == \
        "CrossEntropyLoss(reduction='mean', label_smoothing=0.1)"


def test_num_params_equals_torch_for_a_cnn():
    b = burn.nn.Sequential(burn.nn.Conv2d(1, 8, 3), burn.nn.BatchNorm2d(8), burn.nn.Conv1d(8, 4, 5, bias=False),
                           burn.nn.LayerNorm(4), burn.nn.RMSNorm(4), burn.nn.Embedding(9, 4),
                           burn.nn.Linear(4, 2))
    t = torch.nn.Sequential(torch.nn.Conv2d(1, 8, 3), torch.nn.BatchNorm2d(8), torch.nn.Conv1d(8, 4, 5, bias=False),
                            torch.nn.LayerNorm(4), torch.nn.RMSNorm(4), torch.nn.Embedding(9, 4),
                            torch.nn.Linear(4, 2))
    assert b.num_params() == sum(p.numel() for p in t.parameters())


def test_layers_honour_device_and_dtype():
    for layer in [burn.nn.Conv2d(2, 3, 3, device=AD, dtype=burn.float64), burn.nn.BatchNorm1d(3, device=AD,
                  dtype=burn.float64), burn.nn.LayerNorm(3, device=AD, dtype=burn.float64),
                  burn.nn.Embedding(3, 2, device=AD, dtype=burn.float64), burn.nn.RMSNorm(3, device=AD,
                  dtype=burn.float64)]:
        for name, t in layer.state_dict().items():
            assert t.device == AD, name
            assert t.dtype is burn.float64 or name == "num_batches_tracked", name
