"""burn.nn.LSTM / GRU / LSTMCell / GRUCell against torch.nn with copied weights (outputs, final
states, the input's, the initial states' and every parameter's gradient), on flex (float64)
and wgpu (float32, small sizes); the ``burn::lstm_layer`` / ``burn::gru_layer`` kernels
against their reference definitions (burn ops) and finite differences; errors; dropout."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import burn
from burn.fused import gru_layer, gru_layer_grad, lstm_layer, lstm_layer_grad

from devices import wgpu_or_skip

F64 = burn.float64


def _copy_from_torch(bm, tm, dev):
    bm.load_state_dict({k: burn.tensor(v.detach().numpy(), device=dev) for k, v in tm.state_dict().items()})


def _compare(kind, kw, dev, dtype, tol, T=4, B=3, I=5, H=6, hx=False, unbatched=False):
    """Run torch's and burn's ``kind`` on one input and loss; compare values and gradients."""
    ndt = np.float64 if dtype is F64 else np.float32
    tdt = torch.float64 if dtype is F64 else torch.float32
    torch.manual_seed(0)
    tm = getattr(torch.nn, kind)(I, H, **kw).to(tdt)
    ad = dev.autodiff()
    bm = getattr(burn.nn, kind)(I, H, device=ad, dtype=dtype, **kw)
    _copy_from_torch(bm, tm, ad)
    rng = np.random.default_rng(1)
    shape = (T, I) if unbatched else ((B, T, I) if kw.get("batch_first") else (T, B, I))
    x = rng.standard_normal(shape).astype(ndt)
    L = kw.get("num_layers", 1) * (2 if kw.get("bidirectional") else 1)
    sshape = (L, H) if unbatched else (L, B, H)
    n_states = 2 if kind == "LSTM" else 1
    states = [rng.standard_normal(sshape).astype(ndt) for _ in range(n_states)] if hx else []
    xt = torch.tensor(x, requires_grad=True)
    st = [torch.tensor(s, requires_grad=True) for s in states]
    xb = burn.tensor(x, device=ad).require_grad()
    sb = [burn.tensor(s, device=ad).require_grad() for s in states]

    def arg(ss):
        if not ss:
            return None
        return tuple(ss) if kind == "LSTM" else ss[0]
    ot, ft = tm(xt, arg(st))
    ob, fb = bm(xb, arg(sb))
    ft, fb = (list(ft), list(fb)) if kind == "LSTM" else ([ft], [fb])
    r = rng.standard_normal(ot.shape).astype(ndt)
    q = [rng.standard_normal(f.shape).astype(ndt) for f in ft]
    lt = (ot * torch.tensor(r)).sum() + sum((f * torch.tensor(w)).sum() for f, w in zip(ft, q))
    lb = (ob * burn.tensor(r, device=ad)).sum() + sum((f * burn.tensor(w, device=ad)).sum() for f, w in zip(fb, q))
    lt.backward()
    g = lb.backward()
    assert ob.shape == tuple(ot.shape) and [f.shape for f in fb] == [tuple(f.shape) for f in ft]
    np.testing.assert_allclose(ob.numpy(), ot.detach().numpy(), rtol=tol, atol=tol)
    for a, b in zip(fb, ft):
        np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=tol, atol=tol)
    np.testing.assert_allclose(xb.grad(g).numpy(), xt.grad.numpy(), rtol=tol, atol=tol)
    for a, b in zip(sb, st):
        np.testing.assert_allclose(a.grad(g).numpy(), b.grad.numpy(), rtol=tol, atol=tol)
    tp = dict(tm.named_parameters())
    names = [n for n, _ in bm.named_parameters()]
    assert names == list(tp)
    for n, p in bm.named_parameters():
        np.testing.assert_allclose(p.grad(g).numpy(), tp[n].grad.numpy(), rtol=tol, atol=tol, err_msg=n)


CONFIGS = [
    ("two_layers", dict(num_layers=2), {}),
    ("bidirectional_batch_first", dict(num_layers=2, bidirectional=True, batch_first=True), {}),
    ("given_hx", dict(num_layers=2), dict(hx=True)),
    ("unbatched_bidirectional_hx", dict(bidirectional=True), dict(unbatched=True, hx=True)),
    ("no_bias_one_step", dict(bias=False), dict(T=1)),
]


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
@pytest.mark.parametrize("name,kw,extra", CONFIGS, ids=[c[0] for c in CONFIGS])
def test_matches_torch_on_flex(kind, name, kw, extra):
    _compare(kind, kw, burn.Device.flex(), F64, 1e-10, **extra)


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_matches_torch_on_wgpu(kind):
    dev = wgpu_or_skip()
    _compare(kind, dict(num_layers=2, bidirectional=True), dev, burn.float32, 2e-5, hx=True)
    _compare(kind, dict(batch_first=True, bias=False), dev, burn.float32, 2e-5, T=3)


@pytest.mark.parametrize("kind", ["LSTMCell", "GRUCell"])
@pytest.mark.parametrize("unbatched", [False, True])
def test_cells_match_torch(kind, unbatched):
    torch.manual_seed(0)
    tm = getattr(torch.nn, kind)(4, 5).double()
    ad = burn.Device.flex().autodiff()
    bm = getattr(burn.nn, kind)(4, 5, device=ad, dtype=F64)
    _copy_from_torch(bm, tm, ad)
    rng = np.random.default_rng(0)
    lead = () if unbatched else (3,)
    xs = [rng.standard_normal(lead + (4,)) for _ in range(3)]
    h0 = [rng.standard_normal(lead + (5,)) for _ in range(2 if kind == "LSTMCell" else 1)]
    ht = [torch.tensor(h, requires_grad=True) for h in h0]
    hb = [burn.tensor(h, device=ad).require_grad() for h in h0]
    st, sb = (tuple(ht) if kind == "LSTMCell" else ht[0]), (tuple(hb) if kind == "LSTMCell" else hb[0])
    for x in xs:              # three steps, each from the last one's state
        st = tm(torch.tensor(x), st)
        sb = bm(burn.tensor(x, device=ad), sb)
    outs_t, outs_b = (st, sb) if kind == "LSTMCell" else ((st,), (sb,))
    lt = sum((o * (k + 1)).sum() for k, o in enumerate(outs_t))
    lb = sum((o * (k + 1)).sum() for k, o in enumerate(outs_b))
    lt.backward()
    g = lb.backward()
    for a, b in zip(outs_b, outs_t):
        np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=1e-12, atol=1e-12)
    for a, b in zip(hb, ht):
        np.testing.assert_allclose(a.grad(g).numpy(), b.grad.numpy(), rtol=1e-10, atol=1e-12)
    tp = dict(tm.named_parameters())
    assert [n for n, _ in bm.named_parameters()] == list(tp)
    for n, p in bm.named_parameters():
        np.testing.assert_allclose(p.grad(g).numpy(), tp[n].grad.numpy(), rtol=1e-10, atol=1e-12, err_msg=n)


# -- the ops: kernels against the reference definitions and finite differences ------------------

def _lstm_args(rng, T=3, B=2, H=3, dtype=np.float64):
    return [rng.standard_normal(s).astype(dtype) for s in ((T, B, 4 * H), (4 * H, H), (B, H), (B, H))]


@pytest.mark.parametrize("reverse", [False, True])
def test_layer_kernels_match_their_reference_definitions(reverse):
    rng = np.random.default_rng(3)
    dev = burn.Device.flex()
    xp, w, h0, c0 = (burn.tensor(a, device=dev) for a in _lstm_args(rng))
    got = lstm_layer(xp, w, h0, c0, reverse)
    want = lstm_layer.reference(xp, w, h0, c0, reverse)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-13, atol=1e-14)
    out, _, _, gates, cells = got
    g = [burn.tensor(rng.standard_normal(s), device=dev) for s in ((3, 2, 3), (2, 3), (2, 3))]
    for grads in (g, [g[0], None, None], [None, g[1], None]):
        a = lstm_layer_grad(w, h0, c0, out, gates, cells, *grads, reverse)
        b = lstm_layer_grad.reference(w, h0, c0, out, gates, cells, *grads, reverse)
        for x, y in zip(a, b):
            np.testing.assert_allclose(x.numpy(), y.numpy(), rtol=1e-12, atol=1e-13)
    gx, gw, gb, gh = (burn.tensor(rng.standard_normal(s), device=dev) for s in ((3, 2, 9), (9, 3), (9,), (2, 3)))
    for bias in (gb, None):
        got = gru_layer(gx, gw, bias, gh, reverse)
        want = gru_layer.reference(gx, gw, bias, gh, reverse)
        for a, b in zip(got, want):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-13, atol=1e-14)
        a = gru_layer_grad(gw, gh, got[0], got[2], g[0], g[1], reverse)
        b = gru_layer_grad.reference(gw, gh, got[0], got[2], g[0], g[1], reverse)
        for x, y in zip(a, b):
            np.testing.assert_allclose(x.numpy(), y.numpy(), rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("reverse", [False, True])
def test_layer_gradients_match_finite_differences(reverse):
    rng = np.random.default_rng(4)
    args = _lstm_args(rng)
    assert burn.testing.gradcheck(lambda *a: burn.concat([lstm_layer(*a, reverse)[k].reshape((-1,))
                                                          for k in range(3)]), *args)
    g_args = [rng.standard_normal(s) for s in ((3, 2, 9), (9, 3), (9,), (2, 3))]
    assert burn.testing.gradcheck(lambda *a: burn.concat([gru_layer(*a, reverse)[k].reshape((-1,))
                                                          for k in range(2)]), *g_args)


def test_gradients_of_the_gradient_ops_flow_through_their_references():
    # second order: the _grad ops have no backward rule of their own; autodiff runs their references
    ad = burn.Device.flex().autodiff()
    rng = np.random.default_rng(5)
    xp, w, h0, c0 = (burn.tensor(a, device=ad).require_grad() for a in _lstm_args(rng, T=2, H=2))
    out = lstm_layer(xp, w, h0, c0)[0]
    (gx,) = burn.autodiff.grad(out.sum(), [xp], create_graph=True)
    gg = gx.sum().backward()
    wt = torch.tensor(w.numpy(), requires_grad=True)
    ht, ct = torch.tensor(h0.numpy()), torch.tensor(c0.numpy())
    xt = torch.tensor(xp.numpy(), requires_grad=True)

    def run(xt, wt):
        h, c, outs = ht, ct, []
        for t in range(2):
            a = xt[t] + h @ wt.T
            i, f, g, o = a.chunk(4, -1)
            c = f.sigmoid() * c + i.sigmoid() * g.tanh()
            h = o.sigmoid() * c.tanh()
            outs.append(h)
        return torch.stack(outs)
    (gxt,) = torch.autograd.grad(run(xt, wt).sum(), [xt], create_graph=True)
    gxt.sum().backward()
    np.testing.assert_allclose(gx.numpy(), gxt.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(w.grad(gg).numpy(), wt.grad.numpy(), rtol=1e-9, atol=1e-11)


def test_one_layer_records_the_same_few_ops_for_any_length():
    from burn.graph import graph_for
    ad = burn.Device.flex().autodiff()
    lstm = burn.nn.LSTM(3, 4, num_layers=2, device=ad)
    counts = []
    for T in (2, 17):
        pending = graph_for(ad).pending
        x = burn.ones((T, 2, 3), device=ad)
        before = len(pending)
        out, _ = lstm(x)
        names = [n.prim.name for n in pending[before:]]
        assert names.count("burn::lstm_layer") == 2, names
        counts.append(len(names))
        before = len(pending)
        out.sum().backward()
        names = [n.prim.name for n in pending[before:]]
        assert names.count("burn::lstm_layer_grad") == 2, names
        counts.append(len(names))
    assert counts[0] == counts[2] and counts[1] == counts[3] and counts[0] <= 24 and counts[1] <= 30, counts


def test_gradient_through_saved_outputs_runs_the_reference():
    ad = burn.Device.flex().autodiff()
    rng = np.random.default_rng(6)
    args = [burn.tensor(a, device=ad).require_grad() for a in _lstm_args(rng)]
    w = burn.tensor(rng.standard_normal((3, 4, 2, 3)), device=ad)
    g1 = (lstm_layer(*args)[3] * w).sum().backward()
    g2 = (lstm_layer.reference(*args)[3] * w).sum().backward()
    for a in args:
        np.testing.assert_allclose(a.grad(g1).numpy(), a.grad(g2).numpy(), rtol=1e-12, atol=1e-14)


# -- modules: dropout, arguments, errors ------------------------------------------------------

def test_dropout_between_layers_in_training_mode_only():
    ad = burn.Device.flex().autodiff()
    x = burn.tensor(np.random.default_rng(0).standard_normal((5, 3, 4)), device=ad, dtype=burn.float32)
    m = burn.nn.LSTM(4, 8, num_layers=2, dropout=0.5, device=ad)
    plain = burn.nn.LSTM(4, 8, num_layers=2, device=ad)
    plain.load_state_dict(m.state_dict())
    a, b = m(x)[0].numpy(), m(x)[0].numpy()
    assert not np.allclose(a, b)                        # fresh masks per call
    m.eval()
    np.testing.assert_array_equal(m(x)[0].numpy(), plain(x)[0].numpy())
    with pytest.warns(UserWarning, match="no effect with num_layers=1"):
        burn.nn.GRU(4, 8, dropout=0.2)


def test_parameters_have_torchs_names_shapes_and_init():
    torch.manual_seed(0)
    tm = torch.nn.LSTM(3, 16, num_layers=2, bidirectional=True)
    bm = burn.nn.LSTM(3, 16, num_layers=2, bidirectional=True)
    assert [(n, p.shape) for n, p in bm.named_parameters()] == [(n, tuple(p.shape)) for n, p in tm.named_parameters()]
    w = np.concatenate([p.numpy().ravel() for p in bm.parameters()])
    assert np.abs(w).max() <= 0.25 and np.abs(w).max() > 0.24 and abs(w.mean()) < 0.01
    assert repr(bm).startswith("LSTM(3, 16, num_layers=2, bidirectional=True)")


def test_bad_arguments_raise_at_the_call():
    lstm = burn.nn.LSTM(4, 8, num_layers=2)
    with pytest.raises(burn.BurnError, match="proj_size=3 is not supported"):
        burn.nn.LSTM(4, 8, proj_size=3)
    with pytest.raises(burn.ShapeError, match=r"LSTM: expected input \[T, B, input_size\].*input_size=4"):
        lstm(burn.ones((5, 2, 3)))
    with pytest.raises(burn.ShapeError, match=r"LSTM: expected h0 of shape \(2, 2, 8\)"):
        lstm(burn.ones((5, 2, 4)), (burn.zeros((1, 2, 8)), burn.zeros((2, 2, 8))))
    with pytest.raises(burn.BurnError, match="hx must be a tuple"):
        lstm(burn.ones((5, 2, 4)), burn.zeros((2, 2, 8)))
    with pytest.raises(burn.DTypeError, match="differ in dtype"):
        lstm(burn.ones((5, 2, 4), dtype=F64))
    with pytest.raises(burn.ShapeError, match="GRUCell: expected input"):
        burn.nn.GRUCell(4, 8)(burn.ones((2, 5)))
    with pytest.raises(burn.ShapeError, match="lstm_layer: expected"):
        lstm_layer(burn.ones((3, 2, 8)), burn.ones((8, 3)), burn.zeros((2, 2)), burn.zeros((2, 2)))
    with pytest.raises(burn.DTypeError, match="lstm_layer: needs float32 or float64"):
        lstm_layer(burn.ones((3, 2, 8), dtype=burn.float16), burn.ones((8, 2), dtype=burn.float16),
                   burn.zeros((2, 2), dtype=burn.float16), burn.zeros((2, 2), dtype=burn.float16))


def test_other_float_dtypes_run_the_reference_definition():
    torch.manual_seed(0)
    tm = torch.nn.GRU(3, 4)
    bm = burn.nn.GRU(3, 4, dtype=burn.float16)
    bm.load_state_dict({k: burn.tensor(v.detach().numpy(), dtype=burn.float16) for k, v in tm.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((4, 2, 3)).astype(np.float32)
    out, h = bm(burn.tensor(x, dtype=burn.float16))
    assert out.dtype is burn.float16
    np.testing.assert_allclose(out.astype(burn.float32).numpy(), tm(torch.tensor(x))[0].detach().numpy(), atol=1e-2)
