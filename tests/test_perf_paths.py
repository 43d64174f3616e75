"""The fast paths behind the MLP-step benchmark give the results of the general paths.

Each fast path (fused cross-entropy kernels, the branchless ``where`` kernel,
the inlined binary/where/matmul/sum recording, the cached scalar operands,
the 0-d backward seed, ``assign_``'s shortcut) is checked against an
independent reference: torch, numpy, or burn's own general path.
"""
import numpy as np
import pytest

import burn
import burn.nn.functional as F
from burn_flex.kernels import elementwise as E
from burn_flex.kernels import nn as K

torch = pytest.importorskip("torch")
TF = torch.nn.functional
AD = burn.Device.flex().autodiff()


# -- fused cross-entropy ------------------------------------------------------------

@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.2])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fused_cross_entropy_value_and_gradient_match_torch(rng, reduction, label_smoothing, dtype):
    logits = (rng.standard_normal((37, 11)) * 4).astype(dtype)
    logits[3] *= 100                                   # large logits: the max shift matters
    target = rng.integers(0, 11, 37)
    x = burn.tensor(logits, device=AD).require_grad()
    loss = F.cross_entropy(x, burn.tensor(target, device=AD), reduction=reduction, label_smoothing=label_smoothing)
    xt = torch.tensor(logits, requires_grad=True)
    lt = TF.cross_entropy(xt, torch.tensor(target), reduction=reduction, label_smoothing=label_smoothing)
    tol = dict(rtol=2e-5, atol=2e-6) if dtype == "float32" else dict(rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(loss.numpy(), lt.detach().numpy(), **tol)
    assert loss.dtype.name == dtype
    w = rng.standard_normal(loss.shape).astype(dtype)     # a non-uniform output gradient
    g = x.grad((loss * burn.tensor(w, device=AD)).sum().backward())
    (lt * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(g.numpy(), xt.grad.numpy(), **tol)


def test_fused_cross_entropy_kernels_equal_the_reference_definition(rng):
    logits = rng.standard_normal((16, 5)).astype(np.float32)
    target = rng.integers(0, 5, 16)
    for reduction in ("mean", "sum", "none"):
        ref = F._cross_entropy_classes(burn.tensor(logits), burn.tensor(target), reduction, 0.1).numpy()
        got = K.softmax_cross_entropy(logits, target, reduction, 0.1)
        np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-7)
        g = np.ones(ref.shape, np.float32) * 0.5
        ref_g = F.softmax_cross_entropy_grad.reference(burn.tensor(logits), burn.tensor(target), burn.tensor(g),
                                                       reduction, 0.1).numpy()
        np.testing.assert_allclose(K.softmax_cross_entropy_grad(logits, target, g, reduction, 0.1), ref_g,
                                   rtol=1e-6, atol=1e-7)


def test_fused_cross_entropy_with_minus_inf_logits_matches_torch():
    logits = np.array([[0.0, -np.inf, 1.0], [2.0, 0.5, -np.inf]], np.float32)
    target = np.array([2, 0])
    x = burn.tensor(logits, device=AD).require_grad()
    loss = F.cross_entropy(x, burn.tensor(target, device=AD))
    xt = torch.tensor(logits, requires_grad=True)
    lt = TF.cross_entropy(xt, torch.tensor(target))
    lt.backward()
    np.testing.assert_allclose(loss.item(), lt.item(), rtol=1e-6)
    np.testing.assert_allclose(x.grad(loss.backward()).numpy(), xt.grad.numpy(), rtol=1e-6, atol=1e-7)


def test_fused_cross_entropy_half_precision_computes_in_float32(rng):
    logits = rng.standard_normal((8, 4)).astype(np.float16)
    target = rng.integers(0, 4, 8)
    loss = F.cross_entropy(burn.tensor(logits), burn.tensor(target))
    ref = TF.cross_entropy(torch.tensor(logits.astype(np.float32)), torch.tensor(target)).item()
    assert loss.dtype is burn.float16 and abs(loss.item() - ref) < 2e-3


def test_fused_cross_entropy_rejects_out_of_range_classes_naming_the_op():
    loss = F.cross_entropy(burn.zeros((2, 3)), burn.tensor([0, 3]))
    with pytest.raises(IndexError, match=r"cross_entropy: target class indices must lie in \[0, 3\)"):
        loss.item()
    with pytest.raises(burn.ShapeError, match="no classes"):
        F.cross_entropy(burn.zeros((2, 0)), burn.tensor([0, 0]))


def test_a_value_pending_beside_a_data_dependent_failure_is_still_computed():
    y = burn.ones((4,)) * 2.0
    bad = F.cross_entropy(burn.zeros((2, 3)), burn.tensor([0, 7]))
    with pytest.raises(IndexError):
        bad.item()                              # the flush that computes y fails only `bad`
    assert (y + 1.0).tolist() == [3.0] * 4      # issue 17: no longer lost with it


def test_second_derivative_through_the_cross_entropy_gradient_matches_torch(rng):
    logits = rng.standard_normal((5, 4))
    target = rng.integers(0, 4, 5)
    c = rng.standard_normal((5, 4))
    x = burn.tensor(logits, device=AD).require_grad()
    gl = F.softmax_cross_entropy_grad(x, burn.tensor(target, device=AD), burn.tensor(1.0, dtype=burn.float64,
                                                                                     device=AD))
    g2 = x.grad((gl * burn.tensor(c, device=AD)).sum().backward())
    xt = torch.tensor(logits, requires_grad=True)
    (gt,) = torch.autograd.grad(TF.cross_entropy(xt, torch.tensor(target)), xt, create_graph=True)
    (gt * torch.tensor(c)).sum().backward()
    np.testing.assert_allclose(g2.numpy(), xt.grad.numpy(), rtol=1e-9, atol=1e-12)


# -- the branchless where kernel ----------------------------------------------------

def _special(dtype, n, rng):
    v = rng.standard_normal(n).astype(dtype)
    if np.dtype(dtype).kind == "f":
        v[:6] = [np.nan, -0.0, 0.0, np.inf, -np.inf, np.finfo(dtype).tiny]
    return v


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int32, np.int64, np.uint8, np.int8])
def test_where_kernel_is_bit_exact_against_numpy(rng, dtype):
    a, b = _special(dtype, 3000, rng), _special(dtype, 3000, rng)[::-1].copy()
    c = rng.random(3000) < 0.5
    cases = [(c, a, b), (c, a, np.zeros((), dtype)), (c, np.zeros((), dtype), b),
             (c.reshape(60, 50), a.reshape(60, 50), b[:50]),           # broadcast b over rows
             (c[:50], a.reshape(60, 50), b.reshape(60, 50)),           # broadcast the condition
             (c.reshape(60, 50)[:, :1], a.reshape(60, 50), b.reshape(60, 50).T.copy().T)]   # strided b
    for cc, aa, bb in cases:
        got, ref = E.where(cc, aa, bb), np.where(cc, aa, bb)
        assert got.dtype == ref.dtype and got.shape == ref.shape
        assert got.tobytes() == ref.tobytes()


def test_relu_gradient_is_the_indicator_of_positive_inputs_like_torch(rng):
    xn = rng.standard_normal((64, 40)).astype(np.float32)
    xn[0, :4] = [0.0, -0.0, np.inf, -np.inf]
    gn = rng.standard_normal((64, 40)).astype(np.float32)
    x = burn.tensor(xn, device=AD).require_grad()
    g = x.grad((burn.relu(x) * burn.tensor(gn, device=AD)).sum().backward())
    xt = torch.tensor(xn, requires_grad=True)
    (torch.relu(xt) * torch.tensor(gn)).sum().backward()
    assert np.array_equal(g.numpy(), xt.grad.numpy())


# -- the inlined recording paths give the general paths' results ---------------------

@pytest.mark.parametrize("dtype", ["float32", "float16", "int32", "int64", "bool", "complex64"])
@pytest.mark.parametrize("scalar", [2, 2.5, True])
def test_scalar_operands_take_the_dtypes_numpy_like_rules_give(dtype, scalar):
    x = burn.tensor(np.array([1, 0, 3]).astype(dtype))
    for op, ref in (("add", np.add), ("mul", np.multiply), ("sub", np.subtract)):
        if dtype == "bool" and not isinstance(scalar, float):
            continue                     # bool arithmetic is an error (tested elsewhere)
        f = getattr(burn, op)
        for left in (False, True):
            try:
                y = f(scalar, x) if left else f(x, scalar)
            except burn.DTypeError:
                assert dtype == "bool" or (isinstance(scalar, bool) and op == "sub")
                continue
            d = burn.ops.elementwise._operands(op, x, scalar)[0].dtype        # the general rule
            assert y.dtype is d, (op, dtype, scalar, left)
            xv = x.numpy().astype(y.dtype.name if y.dtype.name != "bfloat16" else "float32")
            want = ref(np.asarray(scalar).astype(xv.dtype), xv) if left else ref(xv, np.asarray(scalar).astype(xv.dtype))
            np.testing.assert_allclose(y.numpy(), want, rtol=1e-3)


def test_cached_scalars_keep_the_sign_of_zero_nan_and_the_device():
    x = burn.tensor([1.0, -2.0])
    assert np.signbit((x * -0.0).numpy()).tolist() == [True, False]
    assert np.signbit((x * 0.0).numpy()).tolist() == [False, True]
    assert np.isnan((x + float("nan")).numpy()).all()
    xa = burn.tensor([1.0, -2.0], device=AD)
    assert (xa * 3.0).device == AD and (x * 3.0).device == burn.Device.flex()
    assert (2.0 - x).tolist() == [1.0, 4.0] and (x - 2.0).tolist() == [-1.0, -4.0]
    assert (1 / burn.tensor([2, 4])).tolist() == [0.5, 0.25] and (burn.tensor([2, 4]) / 2).dtype is burn.float32


@pytest.mark.parametrize("xs,bs", [((6, 5), (5,)), ((3, 6, 5), (5,)), ((6, 5), (1, 5)), ((3, 6, 5), (6, 1)),
                                   ((5,), (6, 5)), ((), (4,))])
def test_broadcast_gradients_sum_to_each_operand_shape_like_torch(grads_vs_torch, rng, xs, bs):
    grads_vs_torch(lambda a, b: (a + b) * (a - b), lambda a, b: (a + b) * (a - b),
                   rng.standard_normal(xs), rng.standard_normal(bs))


def test_broadcast_shape_errors_still_name_the_op_and_operands():
    with pytest.raises(burn.ShapeError, match=r"mul: shapes cannot be broadcast"):
        burn.ones((2, 3)) * burn.ones((2,))
    with pytest.raises(burn.ShapeError, match="where"):
        burn.where(burn.ones((2, 3)) > 0, burn.ones((2, 3)), burn.ones((4,)))
    with pytest.raises(burn.DTypeError, match="where: condition must be bool"):
        burn.where(burn.ones((2,)), burn.ones((2,)), 0)


def test_matmul_backward_with_2d_and_batched_operands_matches_torch(grads_vs_torch, rng):
    grads_vs_torch(lambda a, b: a @ b, lambda a, b: a @ b, rng.standard_normal((4, 3)), rng.standard_normal((3, 5)))
    grads_vs_torch(lambda a, b: a @ b, lambda a, b: a @ b, rng.standard_normal((2, 4, 3)),
                   rng.standard_normal((3, 5)))


def test_backward_seed_of_a_0d_loss_is_one_and_of_a_leaf_is_itself():
    w = burn.tensor(3.0, device=AD).require_grad()
    assert w.grad(w.backward()).item() == 1.0
    assert w.grad((w * w).backward()).item() == 6.0
    v = burn.tensor([[3.0]], device=AD).require_grad()        # size 1 but not 0-d
    assert v.grad((v * v).backward()).tolist() == [[6.0]]


def test_assign_keeps_pending_readers_on_the_old_value():
    w = burn.nn.Parameter(burn.tensor([1.0, 2.0], device=AD))
    y = (w * 2.0).sum()
    w.assign_(w.detach() + 10.0)
    assert y.item() == 6.0 and w.tolist() == [11.0, 12.0] and w.requires_grad
    z = burn.ones((2,)) * 1.0
    z += 1.0                           # a computed tensor takes the new value's record
    assert z.tolist() == [2.0, 2.0]


def test_mlp_training_with_linear_and_adam_matches_torch(rng):
    sizes = (6, 16, 3)
    ws = [(rng.standard_normal((a, b)) * 0.5).astype(np.float32) for a, b in zip(sizes[:-1], sizes[1:])]
    bs = [rng.standard_normal(b).astype(np.float32) * 0.1 for b in sizes[1:]]
    x = rng.standard_normal((10, 6)).astype(np.float32)
    y = rng.integers(0, 3, 10)
    layers = [burn.nn.Linear(a, b, device=AD) for a, b in zip(sizes[:-1], sizes[1:])]
    for lin, w, b in zip(layers, ws, bs):
        lin.weight.assign_(burn.tensor(w, device=AD))
        lin.bias.assign_(burn.tensor(b, device=AD))
    opt = burn.optim.Adam([t for lin in layers for t in (lin.weight, lin.bias)], lr=0.05)
    tl = [torch.nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:])]
    with torch.no_grad():
        for lin, w, b in zip(tl, ws, bs):
            lin.weight.copy_(torch.tensor(w.T))
            lin.bias.copy_(torch.tensor(b))
    topt = torch.optim.Adam([p for lin in tl for p in lin.parameters()], lr=0.05)
    xb, yb, xt, yt = burn.tensor(x, device=AD), burn.tensor(y, device=AD), torch.tensor(x), torch.tensor(y)
    for _ in range(6):
        loss = F.cross_entropy(layers[1](burn.relu(layers[0](xb))), yb)
        opt.step(loss.backward())
        topt.zero_grad()
        lt = TF.cross_entropy(tl[1](torch.relu(tl[0](xt))), yt)
        lt.backward()
        topt.step()
        np.testing.assert_allclose(loss.item(), lt.item(), rtol=1e-5)
    np.testing.assert_allclose(layers[0].weight.numpy(), tl[0].weight.detach().numpy().T, rtol=1e-4, atol=1e-5)


# -- the inlined recording paths of apply (one and several outputs) -------------------

def test_a_two_output_op_records_a_gradient_on_each_output_like_torch(rng):
    @burn.backend_extension("test_perf::prod_diff")
    def prod_diff(x, w):
        return x * w, x - w

    @prod_diff.meta
    def _(x, w):
        m = burn.TensorMeta(x.shape, x.dtype)
        return m, m

    @prod_diff.kernel("flex")
    def _(x, w):
        return x * w, x - w

    @prod_diff.backward
    def _(ctx, gp, gd):
        x, w = ctx.inputs
        return gp * w + gd, gp * x - gd

    xn, wn, cn = (rng.standard_normal(5) for _ in range(3))
    x = burn.tensor(xn, device=AD).require_grad()
    h = x * 2.0                                   # a computed input: recorded by value
    w = burn.tensor(wn, device=AD).require_grad()
    p, d = prod_diff(h, w)
    assert p.requires_grad and d.requires_grad and p._grad[0] is d._grad[0] and (p._grad[1], d._grad[1]) == (0, 1)
    h += 100.0                                    # rebinds h after the op recorded it
    loss = (p * burn.tensor(cn, device=AD)).sum() + (d * d).sum()
    grads = loss.backward()
    xt = torch.tensor(xn, requires_grad=True)
    wt = torch.tensor(wn, requires_grad=True)
    ht = xt * 2.0
    lt = (ht * wt * torch.tensor(cn)).sum() + ((ht - wt) ** 2).sum()
    lt.backward()
    np.testing.assert_allclose(x.grad(grads).numpy(), xt.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(w.grad(grads).numpy(), wt.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(h.numpy(), xn * 2 + 100)


def test_an_integer_output_of_a_recorded_op_takes_no_gradient_record():
    x = burn.tensor([1.0, -2.0, 3.0], device=AD).require_grad()
    y = x * 2.0
    assert y._grad is not None
    mask = x > 0.0                                # bool result: not differentiable
    assert mask._grad is None and not mask.requires_grad
    assert mask.tolist() == [True, False, True]
