"""broadcast_to and a complex tensor's .real / .imag are views, as numpy's: broadcast_to is
read-only (a write raises, as numpy's "assignment destination is read-only") and sees later
writes of its base; writes through .real / .imag reach the complex base bit for bit (infinities,
NaN and signed zeros of the other part kept), and a write of the base is seen by them. Each case
runs on numpy and on burn (flex and wgpu) and is compared; gradients are compared with torch."""
import numpy as np
import pytest

import burn
from devices import flex_and_wgpu

DEVS = flex_and_wgpu()
IDS = [d.kind for d in DEVS]


def _same(got, want):
    got = got.numpy()
    assert got.shape == want.shape and got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_array_equal(got, want)
    if want.dtype.kind == "c":      # signed zeros of both parts
        assert (np.signbit(got.real) == np.signbit(want.real)).all() and \
               (np.signbit(got.imag) == np.signbit(want.imag)).all()


@pytest.mark.parametrize("dev", DEVS, ids=IDS)
def test_broadcast_to_is_a_read_only_view_of_its_base(dev):
    base = np.arange(3, dtype=np.float32)
    a = burn.tensor(base, device=dev)
    b = burn.broadcast_to(a, (2, 3))
    c = b[:, 1:].T                      # a view of the read-only view: read-only too
    a += 10                             # the base's update shows through both
    want = np.broadcast_to(base + 10, (2, 3))
    _same(b, want)
    _same(c, want[:, 1:].T)
    for write in (lambda: b.__setitem__(0, 5.0), lambda: b.__iadd__(1.0), lambda: c.assign_(burn.zeros_like(c)),
                  lambda: b.reshape((2, 1, 3)).__setitem__((0, 0, 0), 1.0)):
        with pytest.raises(burn.ReadOnlyError, match="broadcast_to") as e:
            write()
        assert isinstance(e.value, ValueError)
    with pytest.raises(ValueError, match="read-only"):
        np.broadcast_to(base, (2, 3))[0] = 5.0      # numpy refuses the same write
    _same(a, base + 10)                             # nothing was changed by the refused writes
    # a copy is writable, and leaves the base alone
    d = burn.asarray(b, copy=True)
    d += 1
    _same(d, want + 1)
    _same(a, base + 10)


@pytest.mark.parametrize("dev", DEVS, ids=IDS)
def test_broadcast_to_its_own_shape_is_still_a_read_only_view(dev):
    # numpy: np.broadcast_to(x, x.shape) is a new read-only view, never x itself
    base = np.arange(3, dtype=np.float32)
    a = burn.tensor(base, device=dev)
    b = burn.broadcast_to(a, (3,))
    assert b is not a
    with pytest.raises(burn.ReadOnlyError, match="broadcast_to"):
        b += 1.0
    a += 1.0
    _same(b, base + 1)
    _same(a, base + 1)


@pytest.mark.parametrize("dev", DEVS, ids=IDS)
def test_writes_through_real_and_imag_reach_the_complex_base(dev):
    def case(xp, z):
        r, i = z.real, z.imag
        r += 10                         # .real: an in-place op
        i[0] = float("inf")             # .imag: setitem
        z[1] = z[1] * 2                 # a base write, seen by both parts
        r2 = z.real
        r2[2] = -0.0
        return z, r, i
    base = np.array([1 + 2j, 3 - 4j, 5 + np.inf * 1j, np.nan + 0j], dtype=np.complex64)
    want = case(np, base.copy())
    got = case(burn, burn.tensor(base, device=dev))
    for g, w in zip(got, want):
        _same(g, w)


def test_real_of_a_real_tensor_is_itself_and_imag_parts_keep_the_other_part_bit_for_bit():
    z = burn.tensor(np.array([complex(np.inf, -0.0), complex(-0.0, np.nan)], dtype=np.complex128))
    im = z.imag
    im[...] = burn.tensor([-0.0, 2.0], dtype=burn.float64)
    want = np.array([complex(np.inf, -0.0), complex(-0.0, 2.0)])
    _same(z, want)
    x = burn.arange(3.0)
    assert x.real.tolist() == [0.0, 1.0, 2.0]


def test_make_complex_joins_parts_exactly_and_differentiates_as_torch():
    torch = pytest.importorskip("torch")
    re_, im_ = np.array([np.inf, -0.0, 1.5]), np.array([2.0, np.nan, -0.0])
    z = burn.make_complex(burn.tensor(re_, dtype=burn.float64), burn.tensor(im_, dtype=burn.float64))
    assert z.dtype is burn.complex128
    _same(z, torch.complex(torch.tensor(re_), torch.tensor(im_)).numpy())
    with pytest.raises(burn.DTypeError, match="make_complex"):
        burn.make_complex(z, z)
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 3)), rng.standard_normal(3)
    ad = burn.Device.flex().autodiff()
    ba, bb = (burn.tensor(v, dtype=burn.float64, device=ad).require_grad() for v in (a, b))
    ta, tb = (torch.tensor(v, requires_grad=True) for v in (a, b))
    lb = (burn.abs(burn.make_complex(ba, bb) ** 2) * burn.tensor([1.0, 2.0, 3.0], dtype=burn.float64,
                                                                  device=ad)).sum()
    lt = (torch.abs(torch.complex(ta, tb) ** 2) * torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)).sum()
    g = lb.backward()
    lt.backward()
    np.testing.assert_allclose(ba.grad(g).numpy(), ta.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(bb.grad(g).numpy(), tb.grad.numpy(), rtol=1e-12)


def test_grad_through_a_write_into_real_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    zc = rng.standard_normal(4) + 1j * rng.standard_normal(4)
    u = rng.standard_normal(4)

    def f(xp, z, w):
        z2 = z * 1
        r = z2.real
        r += w * w                      # a value needing grad, written into the real part
        return (xp.abs(z2) ** 2).sum()
    ad = burn.Device.flex().autodiff()
    bz = burn.tensor(zc, device=ad).require_grad()
    bw = burn.tensor(u, dtype=burn.float64, device=ad).require_grad()
    tz = torch.tensor(zc, requires_grad=True)
    tw = torch.tensor(u, requires_grad=True)
    lb, lt = f(burn, bz, bw), f(torch, tz, tw)
    g = lb.backward()
    lt.backward()
    np.testing.assert_allclose(lb.item(), lt.item(), rtol=1e-12)
    np.testing.assert_allclose(bz.grad(g).numpy(), tz.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(bw.grad(g).numpy(), tw.grad.numpy(), rtol=1e-12)
