"""burn.linalg on complex matrices (flex): forward vs numpy/SciPy, gradients vs PyTorch's
complex autograd (same convention: dL = Re tr(G^H dZ)) and vs finite differences along
random complex directions."""
from __future__ import annotations

import numpy as np
import pytest

import burn

pytest.importorskip("burn_linalg")
torch = pytest.importorskip("torch")
L = burn.linalg


def cplx(rng, *shape):
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def wellcond(rng, *shape):
    return 0.4 * cplx(rng, *shape) + 3 * np.eye(shape[-1])


def hpd(rng, *shape):
    x = cplx(rng, *shape)
    return x @ np.conj(np.swapaxes(x, -1, -2)) + shape[-1] * np.eye(shape[-1])


def _weights(rng, outs):
    return [cplx(rng, *np.shape(o)) if np.iscomplexobj(o) else rng.standard_normal(np.shape(o)) for o in outs]


def _loss_burn(outs, ws):
    total = None
    for o, w in zip(outs, ws):
        term = burn.sum(burn.real(o * burn.tensor(w, device=o.device)))
        total = term if total is None else total + term
    return total


def _loss_torch(outs, ws):
    return sum(torch.sum(torch.real(o * torch.as_tensor(w))) for o, w in zip(outs, ws))


def compare(burn_fn, torch_fn, inputs, rng, *, tol=1e-8, project=None):
    """Forward and gradient of Re(sum(W * f(inputs))) for random complex W, burn vs torch."""
    ad = burn.Device.flex().autodiff()
    bx = [burn.tensor(x, device=ad).require_grad() for x in inputs]
    tx = [torch.tensor(x, requires_grad=True) for x in inputs]
    bo, to = burn_fn(*bx), torch_fn(*tx)
    bo = bo if isinstance(bo, tuple) else (bo,)
    to = to if isinstance(to, tuple) else (to,)
    for b, t in zip(bo, to):
        assert b.dtype.name == str(t.dtype).removeprefix("torch."), (b.dtype, t.dtype)
        np.testing.assert_allclose(b.numpy(), t.detach().numpy(), rtol=tol, atol=tol)
    ws = _weights(rng, [t.detach().numpy() for t in to])
    grads = _loss_burn(bo, ws).backward()
    tg = torch.autograd.grad(_loss_torch(to, ws), tx)
    for x, g in zip(bx, tg):
        got = grads.get(x).numpy()
        want = g.numpy()
        if project is not None:
            got, want = project(got), project(want)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    return bx, grads, ws


def fd_check(fn, x, rng, eps=1e-6):
    """Directional finite difference of L(x) = Re(sum(W * fn(x))) against Re<G, dX>."""
    ad = burn.Device.flex().autodiff()
    bx = burn.tensor(x, device=ad).require_grad()
    out = fn(bx)
    outs = out if isinstance(out, tuple) else (out,)
    ws = _weights(rng, [o.numpy() for o in outs])
    g = _loss_burn(outs, ws).backward().get(bx).numpy()

    def val(z):
        with burn.no_grad():
            o = fn(burn.tensor(z))
        o = o if isinstance(o, tuple) else (o,)
        return float(sum(np.sum(np.real(np.asarray(oi.numpy()) * w)) for oi, w in zip(o, ws)))

    d = cplx(rng, *x.shape)
    num = (val(x + eps * d) - val(x - eps * d)) / (2 * eps)
    ana = float(np.real(np.sum(np.conj(g) * d)))
    assert abs(num - ana) <= 1e-5 * max(1.0, abs(num)), (num, ana)


# -- forward dtypes and values -----------------------------------------------------------------------

@pytest.mark.parametrize("dtype,tol", [(burn.complex128, 1e-10), (burn.complex64, 1e-4)])
def test_forward_values_and_real_outputs(rng, dtype, tol):
    a = wellcond(rng, 2, 4, 4)
    h = hpd(rng, 4, 4)
    ta, th = burn.tensor(a, dtype=dtype), burn.tensor(h, dtype=dtype)
    real = burn.dtypes.real_of(dtype)
    np.testing.assert_allclose(L.inv(ta).numpy(), np.linalg.inv(a), rtol=tol, atol=tol)
    np.testing.assert_allclose(L.det(ta).numpy(), np.linalg.det(a), rtol=tol, atol=tol)
    sign, logdet = L.slogdet(ta)
    assert sign.dtype is dtype and logdet.dtype is real
    np.testing.assert_allclose(sign.numpy(), np.linalg.slogdet(a)[0], rtol=tol, atol=tol)
    np.testing.assert_allclose(logdet.numpy(), np.linalg.slogdet(a)[1], rtol=tol, atol=tol)
    s = L.svdvals(ta)
    assert s.dtype is real
    np.testing.assert_allclose(s.numpy(), np.linalg.svd(a, compute_uv=False), rtol=tol, atol=tol)
    w, v = L.eigh(th)
    assert w.dtype is real and v.dtype is dtype
    np.testing.assert_allclose(w.numpy(), np.linalg.eigvalsh(h), rtol=tol, atol=tol * 10)
    rec = (v.numpy() * w.numpy()[None, :]) @ v.numpy().conj().T
    np.testing.assert_allclose(rec, h, rtol=tol * 10, atol=tol * 10)
    np.testing.assert_allclose(L.cholesky(th, upper=True).numpy(), np.linalg.cholesky(h, upper=True),
                               rtol=tol, atol=tol)
    q, r = L.qr(ta)
    np.testing.assert_allclose((q @ r).numpy(), a, rtol=tol * 10, atol=tol * 10)
    assert np.allclose(np.imag(np.diagonal(r.numpy(), axis1=-2, axis2=-1)), 0)   # LAPACK's real diagonal
    x = cplx(rng, 3, 5)
    tx = burn.tensor(x, dtype=dtype)
    for ord_ in (None, 1, 2, np.inf, 0, 3):
        np.testing.assert_allclose(L.norm(tx[0], ord=ord_).numpy(), np.linalg.norm(x[0], ord=ord_),
                                   rtol=tol, atol=tol)
    for ord_ in (None, "fro", "nuc", 1, 2, np.inf):
        got = L.norm(tx, ord=ord_)
        assert got.dtype is real
        np.testing.assert_allclose(got.numpy(), np.linalg.norm(x, ord=ord_), rtol=tol, atol=tol)
    assert L.matrix_rank(tx).item() == 3


@pytest.mark.parametrize("trans", [0, 1, 2])
def test_triangular_and_lu_solves_with_conjugate_transpose(rng, trans):
    import scipy.linalg as sl
    a = np.triu(wellcond(rng, 4, 4))
    b = cplx(rng, 4, 2)
    got = L.solve_triangular(burn.tensor(a), burn.tensor(b), trans=trans)
    np.testing.assert_allclose(got.numpy(), sl.solve_triangular(a, b, trans=trans), rtol=1e-10, atol=1e-10)
    m = wellcond(rng, 4, 4)
    lu, piv = L.lu_factor(burn.tensor(m))
    got = L.lu_solve((lu, piv), burn.tensor(b), trans=trans)
    np.testing.assert_allclose(got.numpy(), sl.lu_solve(sl.lu_factor(m), b, trans=trans), rtol=1e-10, atol=1e-10)


# -- gradients vs torch --------------------------------------------------------------------------------

def test_solve_inv_det_grad(rng):
    a, b = wellcond(rng, 2, 4, 4), cplx(rng, 2, 4, 3)
    compare(L.solve, torch.linalg.solve, [a, b], rng)
    compare(L.inv, torch.linalg.inv, [a], rng)
    compare(L.det, torch.linalg.det, [a], rng)


def test_slogdet_grad_of_both_outputs(rng):
    a = wellcond(rng, 3, 3)
    compare(lambda x: tuple(L.slogdet(x)), lambda x: tuple(torch.linalg.slogdet(x)), [a], rng)


def test_cholesky_grad(rng):
    h = hpd(rng, 4, 4)
    # the input is Hermitian: compare the Hermitian part of the gradients (torch projects too)
    herm = lambda g: (g + g.conj().T) / 2   # noqa: E731
    compare(L.cholesky, torch.linalg.cholesky, [h], rng, project=herm)
    compare(lambda x: L.cholesky(x, upper=True), lambda x: torch.linalg.cholesky(x, upper=True), [h], rng,
            project=herm)


@pytest.mark.parametrize("shape", [(5, 3), (4, 4), (3, 5)])
def test_qr_grad(rng, shape):
    a = cplx(rng, *shape)
    compare(lambda x: tuple(L.qr(x)), lambda x: tuple(torch.linalg.qr(x)), [a], rng)


@pytest.mark.parametrize("shape", [(5, 3), (4, 4), (3, 5)])
def test_svd_grad_of_phase_invariant_losses(rng, shape):
    a = cplx(rng, *shape)
    k = min(shape)
    c = rng.standard_normal(k)
    W = cplx(rng, *shape)
    wu, wv = rng.standard_normal((shape[0], k)), rng.standard_normal((k, shape[1]))

    # U diag(c) V^H and |U|, |V| do not depend on the phase of each (u_i, v_i) pair
    def f_burn(x):
        u, s, vh = L.svd(x, full_matrices=False)
        y = (u * burn.tensor(c, device=x.device)) @ vh
        return (burn.sum(burn.real(y * burn.tensor(W, device=x.device))) + burn.sum(burn.abs(u) * burn.tensor(wu, device=x.device))
                + burn.sum(burn.abs(vh) * burn.tensor(wv, device=x.device)) + burn.sum(s * s))

    def f_torch(x):
        u, s, vh = torch.linalg.svd(x, full_matrices=False)
        y = (u * torch.as_tensor(c)) @ vh
        return (torch.sum(torch.real(y * torch.as_tensor(W))) + torch.sum(torch.abs(u) * torch.as_tensor(wu))
                + torch.sum(torch.abs(vh) * torch.as_tensor(wv)) + torch.sum(s * s))

    ad = burn.Device.flex().autodiff()
    bx = burn.tensor(a, device=ad).require_grad()
    tx = torch.tensor(a, requires_grad=True)
    got = f_burn(bx).backward().get(bx).numpy()
    (want,) = torch.autograd.grad(f_torch(tx), tx)
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-6, atol=1e-6)
    compare(L.svdvals, torch.linalg.svdvals, [a], rng)


def test_eigh_grad_of_phase_invariant_losses(rng):
    h = hpd(rng, 4, 4)
    c = rng.standard_normal(4)
    W = cplx(rng, 4, 4)

    def f_burn(x):
        w, v = L.eigh(x)
        return burn.sum(burn.real(((v * burn.tensor(c, device=x.device)) @ burn.conj(v).mT) * burn.tensor(W, device=x.device))) + burn.sum(w * w)

    def f_torch(x):
        w, v = torch.linalg.eigh(x)
        return torch.sum(torch.real(((v * torch.as_tensor(c)) @ v.mH) * torch.as_tensor(W))) + torch.sum(w * w)

    ad = burn.Device.flex().autodiff()
    bx = burn.tensor(h, device=ad).require_grad()
    tx = torch.tensor(h, requires_grad=True)
    got = f_burn(bx).backward().get(bx).numpy()
    (want,) = torch.autograd.grad(f_torch(tx), tx)
    herm = lambda g: (g + g.conj().T) / 2   # noqa: E731
    np.testing.assert_allclose(herm(got), herm(want.numpy()), rtol=1e-6, atol=1e-6)
    compare(L.eigvalsh, torch.linalg.eigvalsh, [h], rng, project=herm)


def test_pinv_lstsq_grad(rng):
    a, b = cplx(rng, 5, 3), cplx(rng, 5, 2)
    compare(L.pinv, torch.linalg.pinv, [a], rng)
    compare(lambda x, y: L.lstsq(x, y)[0], lambda x, y: torch.linalg.lstsq(x, y).solution, [a, b], rng)


def test_lu_grad(rng):
    import scipy.linalg as sl
    a = wellcond(rng, 4, 4)
    # torch.linalg.lu follows scipy's A = P L U
    compare(lambda x: tuple(L.lu(x)), lambda x: tuple(torch.linalg.lu(x)), [a], rng)
    p, _, _ = sl.lu(a)
    assert np.allclose(L.lu(burn.tensor(a))[0].numpy(), p)


@pytest.mark.parametrize("trans", [0, 1, 2])
@pytest.mark.parametrize("lower", [False, True])
def test_solve_triangular_grad_by_finite_differences(rng, trans, lower):
    a = wellcond(rng, 4, 4)
    a = np.tril(a) if lower else np.triu(a)
    b = cplx(rng, 4, 2)
    fd_check(lambda x: L.solve_triangular(x, burn.tensor(b, device=x.device), trans=trans, lower=lower), a, rng)
    fd_check(lambda y: L.solve_triangular(burn.tensor(a, device=y.device), y, trans=trans, lower=lower), b, rng)


@pytest.mark.parametrize("trans", [0, 1, 2])
def test_lu_solve_grad_by_finite_differences(rng, trans):
    m = wellcond(rng, 4, 4)
    b = cplx(rng, 4, 3)
    lu, piv = L.lu_factor(burn.tensor(m))
    lu_np = lu.numpy()
    fd_check(lambda x: L.lu_solve((x, piv.to_device(x.device)), burn.tensor(b, device=x.device), trans=trans), lu_np, rng)
    fd_check(lambda y: L.lu_solve((burn.tensor(lu_np, device=y.device), piv.to_device(y.device)), y, trans=trans), b, rng)


def test_norm_grad(rng):
    x = cplx(rng, 3, 4)
    compare(lambda t: L.norm(t), lambda t: torch.linalg.norm(t), [x], rng)
    compare(lambda t: L.norm(t, ord="nuc"), lambda t: torch.linalg.norm(t, ord="nuc"), [x], rng)
    compare(lambda t: L.vector_norm(t, axis=1, ord=3), lambda t: torch.linalg.vector_norm(t, dim=1, ord=3),
            [x], rng)


def test_complex_linalg_on_wgpu_matches_flex(rng):
    try:
        dev = burn.Device.wgpu()
    except burn.BurnError as e:
        pytest.skip(f"no wgpu device: {e}")
    a, h = wellcond(rng, 2, 4, 4), hpd(rng, 4, 4)
    cases = [(lambda x: L.solve(x, x[..., :2]), a), (L.inv, a), (L.det, a), (L.cholesky, h),
             (lambda x: L.qr(x)[1], a), (L.svdvals, a), (lambda x: L.eigh(x)[0], h),
             (lambda x: L.solve_triangular(x, x, lower=True, trans=2), np.tril(a))]
    for fn, x in cases:
        np.testing.assert_allclose(fn(burn.tensor(x, device=dev)).numpy(), fn(burn.tensor(x)).numpy(),
                                   rtol=1e-9, atol=1e-9)
    # and a gradient computed on wgpu
    ad = dev.autodiff()
    x = burn.tensor(a[0], device=ad).require_grad()
    g = burn.sum(burn.real(L.inv(x))).backward().get(x).numpy()
    tx = torch.tensor(a[0], requires_grad=True)
    (tg,) = torch.autograd.grad(torch.sum(torch.real(torch.linalg.inv(tx))), tx)
    np.testing.assert_allclose(g, tg.numpy(), rtol=1e-8, atol=1e-10)


def test_complex_lstsq_matches_numpy_including_real_residuals(rng):
    a, b = cplx(rng, 5, 3), cplx(rng, 5, 2)
    x, res, rank, s = L.lstsq(burn.tensor(a), burn.tensor(b))
    xn, rn, kn, sn = np.linalg.lstsq(a, b, rcond=None)
    assert res.dtype is burn.float64 and s.dtype is burn.float64
    np.testing.assert_allclose(x.numpy(), xn, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(res.numpy(), rn, rtol=1e-10)
    np.testing.assert_allclose(s.numpy(), sn, rtol=1e-10)
    assert rank.item() == kn
