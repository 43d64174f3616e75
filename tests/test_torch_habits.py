"""PyTorch habits that do not conflict with numpy's meaning (issue 17 part 6), each against torch."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import burn


def test_to_takes_a_device_a_dtype_or_both_like_torch():
    x = np.array([1.5, -2.25, 3.0], np.float32)
    b, t = burn.tensor(x), torch.tensor(x)
    assert b.to(burn.float64).dtype == burn.float64 and t.to(torch.float64).dtype == torch.float64
    assert b.to("float64").dtype == burn.float64                           # a dtype name is a dtype
    assert b.to(burn.Device.flex(), burn.int32).tolist() == t.to("cpu", torch.int32).tolist()
    assert b.to(dtype=burn.int64, device="flex").tolist() == t.to(dtype=torch.int64).tolist()
    assert b.to(burn.float32) is b and t.to(torch.float32) is t             # nothing to do: itself
    c = b.to(burn.float32, copy=True)
    assert c is not b and c.tolist() == b.tolist()
    with pytest.raises(TypeError, match="two dtypes"):
        b.to(burn.float64, burn.int32)
    with pytest.raises(burn.BurnError):
        b.to("nosuchdevice").numpy()


@pytest.mark.parametrize("method, tdtype", [("float", torch.float32), ("double", torch.float64),
                                            ("half", torch.float16), ("bfloat16", torch.bfloat16),
                                            ("long", torch.int64), ("int", torch.int32), ("bool", torch.bool)])
def test_cast_methods_match_torch(method, tdtype):
    x = np.array([0.0, 1.7, -2.2, 3.0])
    got = getattr(burn.tensor(x), method)()
    want = getattr(torch.tensor(x), method)()
    assert str(got.dtype).replace("bool_", "bool") == str(want.dtype).removeprefix("torch.")
    np.testing.assert_array_equal(np.asarray(got.astype(burn.float64)), want.to(torch.float64).numpy())


def test_cpu_numel_dim_and_format_like_torch():
    dev = burn.Device.flex().autodiff()
    b, t = burn.zeros((2, 3, 4), device=dev), torch.zeros((2, 3, 4))
    assert b.cpu().device == dev and b.cpu().shape == tuple(t.cpu().shape)
    assert b.numel() == t.numel() == 24 and b.dim() == t.dim() == 3
    s = burn.tensor(2.0 / 3.0)
    assert f"{s:.3f}" == f"{torch.tensor(2.0 / 3.0):.3f}" == "0.667"
    assert f"{burn.tensor(7):>4}" == f"{torch.tensor(7):>4}"
    assert f"{b}" == str(b)
    with pytest.raises(TypeError, match="only 0-d tensors"):
        f"{b:.2f}"
    with pytest.raises(TypeError):
        f"{t:.2f}"                                                          # torch refuses it too


def test_integer_powers_follow_torch_on_every_backend_here():
    """flex raised at the flush (numpy) and wgpu returned 0 for (-1) ** -3: now torch's meaning on
    both, and a negative scalar exponent is an error at the call, as in torch and numpy."""
    a, b = torch.randint(-3, 4, (40,), generator=torch.Generator().manual_seed(0)), \
        torch.randint(-3, 4, (40,), generator=torch.Generator().manual_seed(1))
    want = torch.pow(a, b).tolist()
    for dev in (burn.Device.flex(), burn.Device.wgpu()):
        got = (burn.tensor(a.numpy(), device=dev) ** burn.tensor(b.numpy(), device=dev)).tolist()
        assert got == want, dev
        with pytest.raises(burn.DTypeError, match="pow: integers to negative integer powers"):
            burn.tensor([2, 3], device=dev) ** -1
    with pytest.raises(RuntimeError, match="Integers to negative integer powers"):
        torch.tensor([2, 3]) ** -1
