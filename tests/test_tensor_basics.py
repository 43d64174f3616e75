"""Tensor creation, dtype inference, transfer, DLPack and the Array API hook."""
import numpy as np
import pytest

import burn


def test_python_scalars_default_to_float32_and_int64():
    assert burn.tensor([1.0, 2.0]).dtype is burn.float32
    assert burn.tensor([1, 2]).dtype is burn.int64
    assert burn.tensor([True]).dtype is burn.bool
    assert burn.tensor(np.ones(2, np.float64), dtype=burn.float64).dtype is burn.float64


def test_scalar_operand_takes_the_tensor_dtype():
    x = burn.tensor([1.0], dtype=burn.float16)
    assert (x * 2.5).dtype is burn.float16
    assert (burn.tensor([1, 2], dtype=burn.int32) + 1).dtype is burn.int32
    assert (burn.tensor([1, 2]) * 0.5).dtype is burn.float32


def test_tensor_copies_its_input_and_from_numpy_keeps_dtype():
    a = np.arange(3.0)
    t = burn.tensor(a)
    a[0] = 99
    assert t.tolist() == [0.0, 1.0, 2.0]
    assert burn.from_numpy(np.arange(3, dtype=np.int32)).dtype is burn.int32


def test_numpy_interop_item_tolist_array():
    x = burn.tensor([[1.0, 2.0]])
    np.testing.assert_array_equal(np.asarray(x), [[1.0, 2.0]])
    assert x.sum().item() == 3.0 and isinstance(x.sum().item(), float)
    assert x.tolist() == [[1.0, 2.0]]
    with pytest.raises(burn.ShapeError, match="item"):
        x.item()


def test_dlpack_round_trip_with_numpy_and_torch():
    torch = pytest.importorskip("torch")
    x = burn.arange(6, dtype=burn.float32).reshape((2, 3))
    np.testing.assert_array_equal(np.from_dlpack(x), x.numpy())
    t = torch.from_dlpack(x)
    assert t.shape == (2, 3) and float(t.sum()) == 15.0
    back = burn.from_dlpack(torch.ones(2, 2))
    assert back.dtype is burn.float32 and back.sum().item() == 4.0


def test_to_device_autodiff_twin_shares_values():
    x = burn.tensor([1.0, 2.0])
    ad = x.to_device(burn.Device.flex().autodiff())
    assert ad.device.is_autodiff and ad.tolist() == [1.0, 2.0]
    assert x.to_device(burn.Device.flex()) is x


def test_array_namespace_is_burn_and_repr_is_readable():
    x = burn.ones((2,))
    assert x.__array_namespace__() is burn
    r = repr(x)
    assert "tensor(" in r and "float32" in r and "flex:0" in r


def test_astype_and_dtype_names():
    x = burn.tensor([1.7, -1.2])
    assert x.astype(burn.int32).tolist() == [1, -1]
    assert burn.as_dtype("bfloat16") is burn.bfloat16
    b = x.astype(burn.bfloat16)
    assert b.dtype is burn.bfloat16
    np.testing.assert_allclose(b.astype(burn.float32).numpy(), [1.703125, -1.203125])
    with pytest.raises(burn.DTypeError):
        burn.as_dtype("float8")


def test_creation_functions_match_numpy():
    np.testing.assert_array_equal(burn.arange(2, 9, 3).numpy(), np.arange(2, 9, 3))
    np.testing.assert_allclose(burn.linspace(0, 1, 5).numpy(), np.linspace(0, 1, 5).astype(np.float32))
    np.testing.assert_array_equal(burn.eye(3, 4, k=1).numpy(), np.eye(3, 4, k=1))
    np.testing.assert_array_equal(burn.full((2, 2), 7).numpy(), np.full((2, 2), 7))
    assert burn.zeros_like(burn.ones((2, 3), dtype=burn.int8)).dtype is burn.int8


def test_scalar_operands_keep_the_sign_of_zero_and_nan():
    x = burn.ones((2,))
    _ = (x * 0.0).numpy()              # warms the scalar cache with +0.0
    assert np.signbit((x * -0.0).numpy()).all()
    assert np.isnan((x + float("nan")).numpy()).all()
    assert not np.signbit(burn.ops.creation.scalar(0.0, burn.float32, x.device).numpy())
