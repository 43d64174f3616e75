"""Autodiff semantics (leaves, no_grad, detach, accumulation, in-place) and laziness
semantics, with gradients checked against PyTorch."""
import numpy as np
import pytest

import burn

torch = pytest.importorskip("torch")


def test_require_grad_on_a_computed_tensor_is_an_error_naming_the_op(ad):
    w = burn.ones((2,), device=ad).require_grad()
    y = w * 2
    with pytest.raises(burn.AutodiffError, match=r"result of op 'mul', not a leaf.*detach\(\)\.require_grad\(\)"):
        y.require_grad()
    assert y.detach().require_grad().is_leaf


def test_mixing_autodiff_and_plain_tensors_raises_device_mismatch_saying_so(ad):
    a = burn.ones((2,), device=ad)
    b = burn.ones((2,), device=ad.inner())
    with pytest.raises(burn.DeviceMismatch, match=r"add: .*autodiff device and one is not"):
        a + b
    with pytest.raises(burn.DeviceMismatch, match="autodiff"):
        burn.matmul(b.reshape((1, 2)), a.reshape((2, 1)))
    assert (a + b.to_device(ad)).tolist() == [2.0, 2.0]


def test_backward_of_a_non_scalar_needs_a_seed(ad):
    x = burn.tensor([1.0, 2.0, 3.0], device=ad).require_grad()
    y = x * x
    with pytest.raises(burn.AutodiffError, match=r"backward: .*not a scalar.*backward\(grad\)"):
        y.backward()
    g = y.backward(burn.tensor([1.0, 0.0, -1.0], device=ad))
    tx = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    (tx * tx).backward(torch.tensor([1.0, 0.0, -1.0]))
    np.testing.assert_allclose(x.grad(g).numpy(), tx.grad.numpy())
    with pytest.raises(burn.AutodiffError, match="seed gradient has shape"):
        y.backward(burn.ones((2,), device=ad))


def test_no_grad_records_nothing_and_enable_grad_restores_recording(ad):
    w = burn.ones((2,), device=ad).require_grad()
    with burn.no_grad():
        y = w * 3
        assert not burn.is_grad_enabled()
        with burn.enable_grad():
            z = w * 3
    assert burn.is_grad_enabled()
    assert not y.requires_grad and z.requires_grad
    with pytest.raises(burn.AutodiffError, match="does not require grad"):
        y.sum().backward()


def test_detach_blocks_the_gradient_of_one_path_only(ad):
    x = burn.tensor([1.5, -2.0], device=ad).require_grad()
    y = (x * x.detach() + x).sum()
    g = y.backward()
    tx = torch.tensor([1.5, -2.0], requires_grad=True)
    (tx * tx.detach() + tx).sum().backward()
    np.testing.assert_allclose(x.grad(g).numpy(), tx.grad.numpy())


def test_gradients_accumulate_through_reused_tensors(grads_vs_torch, rng):
    def f(x, w):
        h = x @ w
        a = h.tanh()
        return (a * h + a * a - h).sum(axis=1) * a.mean() + (h * 0 + a).max()
    grads_vs_torch(f, lambda x, w: (lambda h, a: (a * h + a * a - h).sum(1) * a.mean() + (h * 0 + a).max())(
        x @ w, torch.tanh(x @ w)), rng.normal(size=(3, 4)), rng.normal(size=(4, 2)))


def test_gradient_of_an_unused_parameter_is_none(ad):
    a = burn.ones((2,), device=ad).require_grad()
    unused = burn.ones((3,), device=ad).require_grad()
    not_tracked = burn.ones((2,), device=ad)
    g = (a * not_tracked * 2).sum().backward()
    assert a.grad(g).tolist() == [2.0, 2.0]
    assert unused.grad(g) is None and not_tracked.grad(g) is None and unused not in g


def test_non_differentiable_outputs_do_not_require_grad(ad):
    x = burn.tensor([[1.0, 3.0], [2.0, 0.0]], device=ad).require_grad()
    assert not burn.argmax(x, axis=1).requires_grad
    assert not (x > 1).requires_grad
    y = x[burn.argmax(x, axis=1) == 1]       # picked rows still carry gradient
    g = y.sum().backward()
    assert x.grad(g).tolist() == [[1.0, 1.0], [0.0, 0.0]]


def test_in_place_updates_of_computed_tensors_keep_their_gradient(grads_vs_torch, rng):
    def f(x, v, lib):
        y = x * 2
        y += v
        y *= x
        y[0] = v * 3 if lib is burn else v * 3
        return y
    grads_vs_torch(lambda x, v: f(x, v, burn), lambda x, v: f(x, v, torch), rng.normal(size=(3, 4)),
                   rng.normal(size=(4,)))


def test_backward_twice_gives_the_same_gradients(ad):
    x = burn.tensor([0.5, 2.0], device=ad).require_grad()
    loss = (x.exp() * x).sum()
    g1, g2 = loss.backward(), loss.backward()
    assert x.grad(g1).tolist() == x.grad(g2).tolist()


def test_gradcheck_fails_for_a_wrong_backward_rule():
    @burn.backend_extension("tests_autodiff::bad_square")
    def bad_square(x):
        """Reference: x * x."""
        return x * x

    @bad_square.meta
    def _(x):
        return burn.TensorMeta(x.shape, x.dtype)

    @bad_square.kernel("flex")     # with a kernel the op is recorded and its own .backward used
    def _(x):
        return x * x

    @bad_square.backward
    def _(ctx, g):
        return (g * ctx.inputs[0],)          # wrong: misses the factor 2
    with pytest.raises(AssertionError, match="gradcheck failed"):
        burn.testing.gradcheck(bad_square, [0.3, -1.2])
    assert burn.testing.gradcheck(lambda x: x * x, [0.3, -1.2])


# -- laziness never changes meaning -------------------------------------------------

def test_a_value_read_after_an_in_place_update_is_the_value_when_computed(dev):
    x = burn.tensor([1.0, 2.0], device=dev)
    y = x * 10               # pending
    x += 1                   # rebinding x must not leak into y
    z = x * 10
    x.assign_(burn.zeros((2,), device=dev))
    assert y.tolist() == [10.0, 20.0]
    assert z.tolist() == [20.0, 30.0]
    assert x.tolist() == [0.0, 0.0]


def test_a_loss_built_before_an_optimizer_step_shows_the_pre_step_value(ad):
    w = burn.tensor([1.0, -2.0], device=ad).require_grad()
    loss = (w * w).sum()                      # not yet computed
    grads = loss.backward()
    with burn.no_grad():
        w.assign_(w - w.grad(grads) * 0.25)   # the step, before the loss is read
    assert loss.item() == 5.0
    assert w.tolist() == [0.5, -1.0] and w.is_leaf and w.requires_grad
    assert (w * w).sum().item() == 1.25


def test_pending_work_survives_dropping_intermediate_handles(dev):
    x = burn.arange(6, dtype=burn.float32, device=dev)
    total = None
    for k in range(5):
        t = (x * k).exp().log()     # intermediate tensors dropped every iteration
        total = t if total is None else total + t
    np.testing.assert_allclose(total.numpy(), np.arange(6) * 10, rtol=1e-5)


# -- in-place changes of saved tensors (the version check) ----------------------------

def test_backward_after_a_leaf_changed_in_place_raises_naming_the_op_and_input(ad):
    w = burn.tensor([1.0, 2.0], device=ad).require_grad()
    x = burn.tensor([3.0, 4.0], device=ad).require_grad()
    loss = (w * x).sum()
    w.assign_(burn.tensor([10.0, 20.0], device=ad))       # x's gradient would read the new w
    with pytest.raises(burn.AutodiffError, match=r"backward of 'mul': its input 0 \(shape=\(2,\).*a leaf\) "
                                                 r"was modified in place"):
        loss.backward()


def test_setitem_on_a_saved_constant_is_detected(ad):
    w = burn.tensor([[1.0, 2.0], [3.0, 4.0]], device=ad).require_grad()
    x = burn.tensor([[1.0], [-1.0]], device=ad)
    loss = (w @ x).sum()
    x[0] = 5.0
    with pytest.raises(burn.AutodiffError, match=r"'matmul': its input 1 .*a constant\) was modified in place"):
        loss.backward()


def test_an_optimizer_step_before_a_second_backward_of_the_old_graph_is_detected(ad):
    lin = burn.nn.Linear(3, 2, device=ad)
    x = burn.ones((4, 3), device=ad).require_grad()
    loss = (lin(x) ** 2).sum()
    opt = burn.optim.SGD(lin.parameters(), lr=0.1)
    opt.step(loss.backward())                    # the usual order: backward, then update
    with pytest.raises(burn.AutodiffError, match="modified in place"):
        loss.backward()                          # the old graph would read the updated weight


def test_changes_the_backward_rule_does_not_read_are_not_an_error(ad):
    # add's rule needs only shapes; mul's gradient for w reads x, which did not change
    w = burn.tensor([1.0, 2.0], device=ad).require_grad()
    x = burn.tensor([3.0, 4.0], device=ad)
    loss = (w + x).sum() + (w * x).sum()
    w.assign_(burn.tensor([-7.0, 9.0], device=ad))
    g = loss.backward()
    tw = torch.tensor([1.0, 2.0], requires_grad=True)
    tx = torch.tensor([3.0, 4.0])
    ((tw + tx).sum() + (tw * tx).sum()).backward()
    np.testing.assert_allclose(w.grad(g).numpy(), tw.grad.numpy())


def test_a_constant_that_later_takes_a_history_gets_no_gradient_from_the_old_graph(ad):
    w = burn.tensor([1.0, 2.0], device=ad).require_grad()
    c = burn.tensor([5.0, 5.0], device=ad)
    loss = (w + c).sum()
    c.assign_(w * 3)                             # c is now computed from w
    assert w.grad(loss.backward()).tolist() == [1.0, 1.0]    # not 1 + 3 through c's new history


def test_updating_a_computed_tensor_in_place_never_changes_a_saved_output(ad):
    # PyTorch raises here (exp saved its output); burn keeps the output's value by handle
    xn = np.array([0.5, -1.0])
    x = burn.tensor(xn, device=ad).require_grad()
    y = x.exp()
    loss = (y * y).sum()
    y += 1.0
    np.testing.assert_allclose(x.grad(loss.backward()).numpy(), 2 * np.exp(2 * xn), rtol=1e-6)
