"""Indexing, gather/scatter and shape ops: numpy semantics, gradients against PyTorch."""
import numpy as np
import pytest

import burn

torch = pytest.importorskip("torch")


def test_mixed_basic_and_advanced_index_matches_numpy_and_torch_gradient(grads_vs_torch, rng):
    x = rng.normal(size=(3, 4))
    idx = np.array([0, 3, 3])
    got = burn.tensor(x, dtype=burn.float64)[1:, None, burn.tensor(idx)]
    np.testing.assert_array_equal(got.numpy(), x[1:, None, idx])
    grads_vs_torch(lambda t, i: t[1:, None, i] * 2, lambda t, i: t[1:, None, i] * 2, x, idx)


def test_repeated_indices_accumulate_in_the_gradient(grads_vs_torch, rng):
    x = rng.normal(size=(4, 2))
    idx = np.array([1, 1, 1, 3, 0])
    grads_vs_torch(lambda t, i: t[i] ** 2, lambda t, i: t[i] ** 2, x, idx)
    grads_vs_torch(lambda t, i: burn.take(t, i, axis=0), lambda t, i: torch.index_select(t, 0, i), x, idx)


def test_negative_step_slices_and_their_gradient(grads_vs_torch, rng):
    x = rng.normal(size=(5, 6))
    b = burn.tensor(x, dtype=burn.float64)
    np.testing.assert_array_equal(b[::-2, 4:0:-3].numpy(), x[::-2, 4:0:-3])
    np.testing.assert_array_equal(b[::-1].numpy(), x[::-1])
    grads_vs_torch(lambda t: burn.flip(t, axis=0)[::2, 1:] * t[:3, :5],
                   lambda t: torch.flip(t, (0,))[::2, 1:] * t[:3, :5], x)


def test_boolean_mask_index_and_mask_assignment():
    x = np.array([[1.0, -2.0, 3.0], [-4.0, 5.0, -6.0]])
    b = burn.tensor(x, dtype=burn.float64)
    np.testing.assert_array_equal(b[b > 0].numpy(), x[x > 0])
    b[b < 0] = 0.0
    np.testing.assert_array_equal(b.numpy(), np.maximum(x, 0))


def test_setitem_is_seen_by_later_reads_only(dev):
    x = burn.tensor([[1.0, 2.0], [3.0, 4.0]], device=dev)
    before = x * 10          # recorded before the update, read after it
    x[0] = burn.tensor([-1.0, -2.0], device=dev)
    x[:, 1] += 100
    assert before.tolist() == [[10.0, 20.0], [30.0, 40.0]]
    assert x.tolist() == [[-1.0, 98.0], [3.0, 104.0]]


def test_setitem_with_repeated_indices_writes_the_value_once():
    x = burn.zeros((4,))
    x[burn.tensor([1, 1, 3])] = 5.0
    y = burn.zeros((3,), dtype=burn.int32)
    y[[0, 0]] = -3
    assert x.tolist() == [0.0, 5.0, 0.0, 5.0] and y.tolist() == [-3, 0, 0]


def test_setitem_with_repeated_indices_and_distinct_values_matches_numpy():
    x = burn.zeros((4,))
    x[burn.tensor([1, 1, 3])] = burn.tensor([2.0, 5.0, 7.0])
    ref = np.zeros(4, np.float32)
    ref[[1, 1, 3]] = [2.0, 5.0, 7.0]
    np.testing.assert_array_equal(x.numpy(), ref)
    with pytest.raises(burn.ShapeError, match="setitem"):
        x[burn.tensor([0, 1])] = burn.ones((3,))


def test_setitem_gradient_flows_to_value_and_unassigned_positions(grads_vs_torch, rng):
    def b_fn(x, v):
        y = x * 1
        y[1, :2] = v
        return y * y

    def t_fn(x, v):
        y = x * 1
        y[1, :2] = v
        return y * y
    grads_vs_torch(b_fn, t_fn, rng.normal(size=(2, 3)), rng.normal(size=(2,)))


def test_take_along_axis_and_scatter_add_match_torch_gather_and_scatter_add(grads_vs_torch, rng):
    x = rng.normal(size=(3, 4))
    idx = np.array([[0, 0, 3], [1, 2, 1], [3, 3, 3]])
    grads_vs_torch(lambda t, i: burn.take_along_axis(t, i, axis=1), lambda t, i: torch.gather(t, 1, i), x, idx)
    src = rng.normal(size=(3, 3))
    grads_vs_torch(lambda t, i, s: burn.scatter_add(t, i, s, axis=1),
                   lambda t, i, s: torch.scatter_add(t, 1, i, s), x, idx, src)


def test_pad_matches_torch_constant_pad(grads_vs_torch, rng):
    x = rng.normal(size=(2, 3))
    # torch lists (left, right) pairs from the last axis backwards
    grads_vs_torch(lambda t: burn.pad(t, ((1, 0), (2, 1)), value=0.5) ** 2,
                   lambda t: torch.nn.functional.pad(t, (2, 1, 1, 0), value=0.5) ** 2, x)


def test_shape_ops_match_torch(grads_vs_torch, rng):
    x = rng.normal(size=(2, 3, 4))
    grads_vs_torch(lambda t: burn.roll(t, 2, axis=2) * t, lambda t: torch.roll(t, 2, 2) * t, x)
    grads_vs_torch(lambda t: burn.tile(t, (2, 1, 1)), lambda t: torch.tile(t, (2, 1, 1)), x)
    grads_vs_torch(lambda t: burn.repeat(t, 3, axis=1), lambda t: torch.repeat_interleave(t, 3, 1), x)
    grads_vs_torch(lambda t: burn.moveaxis(t, 0, -1).reshape((12, 2)),
                   lambda t: torch.movedim(t, 0, -1).reshape(12, 2), x)
    grads_vs_torch(lambda t: burn.tril(t, k=1), lambda t: torch.tril(t, 1), x)
    grads_vs_torch(lambda t: burn.expand_dims(t, 1).squeeze(), lambda t: t.unsqueeze(1).squeeze(), x)


def test_split_concat_stack_round_trip_and_gradients(grads_vs_torch, rng):
    x = rng.normal(size=(4, 3))

    def b_fn(t):
        a, b, c = burn.split(t, [1, 3], axis=0)
        return burn.concat([c * 3, a, b * 2], axis=0) + burn.stack([t[0], t[1], t[2], t[3]])

    def t_fn(t):
        a, b, c = torch.split(t, [1, 2, 1], dim=0)
        return torch.cat([c * 3, a, b * 2], dim=0) + torch.stack([t[0], t[1], t[2], t[3]])
    grads_vs_torch(b_fn, t_fn, x)


def test_concat_promotes_mixed_dtypes():
    out = burn.concat([burn.tensor([1, 2], dtype=burn.int32), burn.tensor([0.5], dtype=burn.float16)])
    assert out.dtype is burn.float16 and out.tolist() == [1.0, 2.0, 0.5]


def test_broadcast_to_gradient_sums_over_the_broadcast_axes(grads_vs_torch, rng):
    grads_vs_torch(lambda t: burn.broadcast_to(t, (2, 3, 4)) ** 2, lambda t: t.expand(2, 3, 4) ** 2,
                   rng.normal(size=(3, 1)))


def test_indexing_errors_name_the_op_and_the_tensor():
    x = burn.zeros((2, 3))
    with pytest.raises(burn.ShapeError, match=r"getitem: index 5 is out of bounds.*shape=\(2, 3\)"):
        x[5]
    with pytest.raises(burn.DTypeError, match="getitem"):
        x[burn.tensor([0.5])]
