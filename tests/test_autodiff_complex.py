"""Gradients of element-wise ops on complex tensors against torch.autograd (the same
convention: for a real loss L, dL = Re(conj(G) dz)), on flex and wgpu."""
from __future__ import annotations

import numpy as np
import pytest

import burn
from devices import flex_and_wgpu  # noqa: E402  (tests/ is on sys.path under pytest)

torch = pytest.importorskip("torch")

UNARY = ["exp", "expm1", "log", "log1p", "log2", "log10", "sqrt", "rsqrt", "square", "sin", "cos", "tan",
         "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "sigmoid", "reciprocal",
         "abs", "angle", "conj", "real", "imag", "neg"]
TORCH_NAME = {"neg": "neg", "conj": "conj_physical"}
BINARY = ["add", "subtract", "multiply", "divide", "pow"]
TORCH_BINARY = {"subtract": "sub", "multiply": "mul", "divide": "div"}


DEVICES = flex_and_wgpu()


def _z(rng, *shape):
    # away from the branch cuts and poles of log/sqrt/atanh/acosh...: |z| in (0.3, 0.8), Re z > 0
    r = rng.uniform(0.3, 0.8, shape)
    t = rng.uniform(-1.2, 1.2, shape)
    return r * np.exp(1j * t)


def _check(dev, burn_fn, torch_fn, inputs, rng, tol=1e-9):
    ad = dev.autodiff()
    bx = [burn.tensor(x, dtype=burn.complex128, device=ad).require_grad() for x in inputs]
    tx = [torch.tensor(x, dtype=torch.complex128, requires_grad=True) for x in inputs]
    bo, to = burn_fn(*bx), torch_fn(*tx)
    want = to.detach().resolve_conj().numpy()
    np.testing.assert_allclose(bo.numpy(), want, rtol=tol, atol=tol)
    w = rng.standard_normal(want.shape) + (1j * rng.standard_normal(want.shape) if np.iscomplexobj(want) else 0)
    loss_b = burn.sum(burn.real(bo * burn.tensor(w, device=ad))) if bo.dtype.is_complex else \
        burn.sum(bo * burn.tensor(np.real(w), device=ad))
    loss_t = torch.sum(torch.real(to * torch.tensor(w))) if to.is_complex() else \
        torch.sum(to * torch.tensor(np.real(w)))
    grads = loss_b.backward()
    tg = torch.autograd.grad(loss_t, tx)
    for b, t in zip(bx, tg):
        np.testing.assert_allclose(grads.get(b).numpy(), t.resolve_conj().numpy(), rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("dev", DEVICES, ids=lambda d: d.kind)
@pytest.mark.parametrize("name", UNARY)
def test_unary_complex_gradients_match_torch(dev, name, rng):
    tfn = getattr(torch, TORCH_NAME.get(name, name))
    _check(dev, getattr(burn, name), tfn, [_z(rng, 3, 4)], rng)


@pytest.mark.parametrize("dev", DEVICES, ids=lambda d: d.kind)
@pytest.mark.parametrize("name", BINARY)
def test_binary_complex_gradients_match_torch(dev, name, rng):
    tfn = getattr(torch, TORCH_BINARY.get(name, name))
    _check(dev, getattr(burn, name), tfn, [_z(rng, 3, 4), _z(rng, 4)], rng)


def test_mixed_real_and_complex_operands_get_real_and_complex_gradients(rng):
    ad = burn.Device.flex().autodiff()
    x = rng.standard_normal(4)
    z = _z(rng, 4)
    bx = burn.tensor(x, device=ad).require_grad()
    bz = burn.tensor(z, device=ad).require_grad()
    tx = torch.tensor(x, requires_grad=True)
    tz = torch.tensor(z, requires_grad=True)
    g = burn.sum(burn.abs(burn.exp(bx / bz))).backward()
    gx, gz = torch.autograd.grad(torch.sum(torch.abs(torch.exp(tx / tz))), (tx, tz))
    assert g.get(bx).dtype is burn.float64
    np.testing.assert_allclose(g.get(bx).numpy(), gx.numpy(), rtol=1e-9)
    np.testing.assert_allclose(g.get(bz).numpy(), gz.numpy(), rtol=1e-9)


REAL_ONLY = [("floor", burn.floor), ("ceil", burn.ceil), ("round", burn.round), ("trunc", burn.trunc),
             ("relu", burn.relu), ("gelu", burn.gelu), ("silu", burn.silu), ("softplus", burn.softplus),
             ("erf", burn.erf), ("signbit", burn.signbit), ("clip", lambda z: burn.clip(z, 0, 1)),
             ("atan2", lambda z: burn.atan2(z, z)), ("hypot", lambda z: burn.hypot(z, z)),
             ("logaddexp", lambda z: burn.logaddexp(z, z)), ("copysign", lambda z: burn.copysign(z, z)),
             ("remainder", lambda z: z % 2.0), ("floor_divide", lambda z: z // z)]


@pytest.mark.parametrize("dev", DEVICES, ids=lambda d: d.kind)
@pytest.mark.parametrize("name,fn", REAL_ONLY, ids=[n for n, _ in REAL_ONLY])
def test_ops_without_a_complex_definition_fail_at_the_call(dev, name, fn):
    z = burn.tensor([1 + 2j, -0.5j], device=dev)
    with pytest.raises(burn.DTypeError, match=rf"^{name}: not defined for complex tensors \(shape=\(2,\) "
                                              rf"dtype=complex64"):
        fn(z)          # no .numpy(): raised when the op is recorded, not at a flush


@pytest.mark.parametrize("dev", DEVICES, ids=lambda d: d.kind)
def test_complex_linspace_sigmoid_and_nan_to_num_match_numpy_and_torch(dev):
    np.testing.assert_array_equal(burn.linspace(1, 2 + 1j, 4, endpoint=False, dtype=burn.complex128,
                                                device=dev).numpy(), np.linspace(1, 2 + 1j, 4, endpoint=False))
    z = np.array([0.3 - 1.2j, 2 + 0.5j, -1j])
    np.testing.assert_allclose(burn.sigmoid(burn.tensor(z, device=dev)).numpy(),
                               torch.sigmoid(torch.tensor(z)).numpy(), rtol=1e-12)
    w = np.array([complex(np.nan, np.inf), complex(1, np.nan)])
    np.testing.assert_array_equal(burn.nan_to_num(burn.tensor(w, device=dev)).numpy(), np.nan_to_num(w))


@pytest.mark.parametrize("name", ["prod", "cumprod", "cumsum", "mean", "logsumexp"])
def test_reductions_and_scans_of_complex_match_torch(name, rng):
    axis_ops = {"prod": (burn.prod, torch.prod), "cumprod": (burn.cumprod, torch.cumprod),
                "cumsum": (burn.cumsum, torch.cumsum), "mean": (burn.mean, torch.mean),
                "logsumexp": (burn.logsumexp, torch.logsumexp)}
    bf, tf = axis_ops[name]
    z = _z(rng, 3, 4)
    z[1, 2] = 0                                     # prod/cumprod's zero handling, in complex
    _check(DEVICES[0], lambda t: bf(t, axis=1), lambda t: tf(t, 1), [z], rng)
