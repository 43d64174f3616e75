"""PyTorch habits that do not conflict with numpy's meaning (issue 17 part 6), each against torch."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import burn
from devices import flex_and_wgpu


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
    for dev in flex_and_wgpu():
        got = (burn.tensor(a.numpy(), device=dev) ** burn.tensor(b.numpy(), device=dev)).tolist()
        assert got == want, dev
        with pytest.raises(burn.DTypeError, match="pow: integers to negative integer powers"):
            burn.tensor([2, 3], device=dev) ** -1
    with pytest.raises(RuntimeError, match="Integers to negative integer powers"):
        torch.tensor([2, 3]) ** -1


# -- dim= (torch's name for axis=), numpy's positional method arguments, np.sum(t) ----------------

_X = np.arange(24, dtype=np.float32).reshape(2, 3, 4) * 0.5 - 3.0


@pytest.mark.parametrize("name", ["sum", "mean", "prod", "amax", "amin", "argmax", "argmin", "std", "var",
                                  "logsumexp", "cumsum", "cumprod", "any", "all", "count_nonzero"])
def test_dim_is_an_alias_of_axis_on_functions_and_methods(name):
    b, t = burn.tensor(_X), torch.tensor(_X)
    bname = {"amax": "max", "amin": "min"}.get(name, name)
    tfn = getattr(torch, name)
    kw = {"correction": 0} if name in ("std", "var") else {}
    want = tfn(t, dim=1, **kw) if name != "count_nonzero" else tfn(t, dim=1)
    for got in (getattr(burn, bname)(b, dim=1, **kw), getattr(b, bname)(dim=1, **kw)):
        np.testing.assert_allclose(np.asarray(got.astype(burn.float64)), want.double().numpy(), rtol=1e-6)
    with pytest.raises(TypeError, match="both axis=1 and dim=1"):
        getattr(burn, bname)(b, axis=1, dim=1)
    with pytest.raises(TypeError, match="both axis=1 and dim=1"):
        getattr(b, bname)(1, dim=1)


def test_dim_on_movement_and_nn_functional_like_torch():
    import burn.nn.functional as F
    b, t = burn.tensor(_X), torch.tensor(_X)
    pairs = [
        (burn.concat([b, b], dim=1), torch.cat([t, t], dim=1)),
        (burn.stack([b, b], dim=2), torch.stack([t, t], dim=2)),
        (b[:, :1].squeeze(dim=1), t[:, :1].squeeze(dim=1)),
        (b.unsqueeze(dim=0), t.unsqueeze(dim=0)),
        (burn.flatten(b, start_dim=1), torch.flatten(t, start_dim=1)),
        (b.flatten(start_dim=0, end_dim=1), t.flatten(start_dim=0, end_dim=1)),
        (burn.take_along_axis(b, burn.tensor(np.zeros((2, 1, 4), np.int64)), dim=1),
         torch.take_along_dim(t, torch.zeros((2, 1, 4), dtype=torch.int64), dim=1)),
        (F.softmax(b, dim=1), torch.nn.functional.softmax(t, dim=1)),
        (F.log_softmax(b, dim=0), torch.nn.functional.log_softmax(t, dim=0)),
        (burn.softmax(b, dim=-1), torch.softmax(t, dim=-1)),
        (burn.topk(b, 2, dim=1).values, torch.topk(t, 2, dim=1).values),
    ]
    for i, (got, want) in enumerate(pairs):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-7, err_msg=str(i))
    with pytest.raises(TypeError, match="both start_axis=1 and start_dim=1"):
        burn.flatten(b, start_axis=1, start_dim=1)


@pytest.mark.parametrize("call", [
    lambda a: a.mean(1), lambda a: a.sum(0), lambda a: a.max(1), lambda a: a.min(-1), lambda a: a.argmax(2),
    lambda a: a.sum(1, None, None, True), lambda a: a.var(1, None, None, 1), lambda a: a.std(0, None, None, 0, True),
    lambda a: a.cumsum(1), lambda a: a.prod(2), lambda a: a.any(1), lambda a: a.all(0, keepdims=True),
    lambda a: a.take(np.array([2, 0]) if isinstance(a, np.ndarray) else burn.tensor([2, 0]), 1),
    lambda a: a.repeat(2, 1), lambda a: a.mean(axis=(0, 2), keepdims=True), lambda a: a.sum(1, np.float64),
])
def test_positional_axis_on_methods_means_what_numpy_s_methods_mean(call):
    a = _X.copy()
    a[0, 1, 2] = 0.0
    want, got = call(a), call(burn.tensor(a))
    assert isinstance(got, burn.Tensor) and got.shape == np.shape(want)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)
    assert np.dtype(got.numpy().dtype) == np.asarray(want).dtype


@pytest.mark.parametrize("fn, kw", [(np.sum, {}), (np.sum, {"axis": 1}), (np.mean, {"axis": 0, "keepdims": True}),
                                    (np.max, {}), (np.min, {"axis": 2}), (np.prod, {"axis": 1}),
                                    (np.argmax, {"axis": 1}), (np.argmin, {}), (np.any, {"axis": 0}),
                                    (np.all, {}), (np.std, {"ddof": 1}), (np.var, {"axis": 1}),
                                    (np.cumsum, {"axis": 2}), (np.cumprod, {"axis": 0}),
                                    (np.mean, {"dtype": np.float64}), (np.amax, {"axis": 1})])
def test_numpy_functions_call_burn_methods_and_return_burn_tensors(fn, kw):
    a = _X.copy()
    a[1, 2, 3] = 0.0
    got, want = fn(burn.tensor(a), **kw), fn(a, **kw)
    assert isinstance(got, burn.Tensor)                 # numpy called the method: no host round trip
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)
    assert got.numpy().dtype == np.asarray(want).dtype


def test_numpy_keywords_burn_cannot_honour_are_clear_errors():
    b = burn.tensor(_X)
    with pytest.raises(TypeError, match="out= is not supported"):
        np.sum(b, axis=0, out=np.zeros((3, 4), np.float32))
    with pytest.raises(TypeError, match="where"):
        np.sum(b, where=np.ones(_X.shape, bool))
    with pytest.raises(TypeError, match="both correction=1 and ddof=0"):
        b.var(correction=1, ddof=0)
    with pytest.raises(TypeError, match="positional arguments"):
        b.max(1, None, True, 4)


def test_saving_into_a_missing_directory_names_the_users_path(tmp_path):
    import burn.nn as nn
    import burn.optim as optim
    m = nn.Linear(2, 2)
    path = tmp_path / "no" / "such" / "model.safetensors"
    with pytest.raises(burn.BurnError, match=f"cannot save '{path}': its directory does not exist"):
        m.save(str(path))
    with pytest.raises(burn.BurnError, match="o.safetensors': its directory does not exist"):
        optim.save(optim.Adam(m.parameters()), str(tmp_path / "no" / "o.safetensors"))
    assert not any(tmp_path.rglob("*burn-tmp*"))
