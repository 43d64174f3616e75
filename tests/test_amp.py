"""Mixed precision: burn.autocast's op lists, burn.amp.GradScaler against torch.amp.GradScaler,
float16 training of a digits MLP, and flex's half-precision kernels (float32 compute, one
rounding) against float32 results rounded with ml_dtypes / numpy."""
from __future__ import annotations

import threading

import ml_dtypes
import numpy as np
import pytest

import burn
import burn.nn.functional as F
from devices import wgpu_or_skip

BF16 = np.dtype(ml_dtypes.bfloat16)
F16 = np.dtype(np.float16)


def _rng(seed=0):
    return np.random.default_rng(seed)


# -- the op lists ------------------------------------------------------------------------

@pytest.mark.parametrize("low", [burn.bfloat16, burn.float16])
def test_lower_list_runs_in_the_low_dtype_and_float32_list_in_float32(low):
    r = _rng()
    x = burn.tensor(r.standard_normal((4, 6)).astype(np.float32))
    w = burn.tensor(r.standard_normal((6, 5)).astype(np.float32))
    b = burn.tensor(r.standard_normal(5).astype(np.float32))
    img = burn.tensor(r.standard_normal((2, 3, 5, 5)).astype(np.float32))
    k = burn.tensor(r.standard_normal((4, 3, 3, 3)).astype(np.float32))
    seq, k1 = burn.tensor(r.standard_normal((2, 3, 7)).astype(np.float32)), burn.tensor(
        r.standard_normal((4, 3, 3)).astype(np.float32))
    y = burn.tensor([0, 1, 2, 4])
    with burn.autocast(low):
        lowered = {"matmul": x @ w, "linear": F.linear(x, w, b), "linear_relu": F.linear_relu(x, w, b),
                   "conv2d": F.conv2d(img, k, padding=1), "conv1d": F.conv1d(seq, k1),
                   "tensordot": burn.tensordot(x, w, axes=1)}
        h = x @ w                                          # a low tensor fed to the float32 list
        f32 = {"sum": h.sum(), "mean": h.mean(axis=0), "var": burn.var(h), "std": burn.std(h),
               "prod": burn.prod(h, axis=1), "cumsum": burn.cumsum(h, axis=1), "logsumexp": burn.logsumexp(h),
               "softmax": F.softmax(h), "log_softmax": F.log_softmax(h),
               "layer_norm": F.layer_norm(h, (5,)), "rms_norm": F.rms_norm(h, (5,)),
               "batch_norm": F.batch_norm(h, training=True),
               "cross_entropy": F.cross_entropy(h, y), "nll_loss": F.nll_loss(F.log_softmax(h), y),
               "mse_loss": F.mse_loss(h, h * 0.5), "bce_with_logits": F.bce_with_logits(h, h * 0 + 1)}
        kept = {"relu": h.relu(), "add": h + h, "max": h.max(), "float64": burn.ones((2, 2), dtype=burn.float64)
                @ burn.ones((2, 2), dtype=burn.float64), "int": burn.arange(4).sum()}
    assert {n: t.dtype for n, t in lowered.items()} == {n: low for n in lowered}
    assert {n: t.dtype for n, t in f32.items()} == {n: burn.float32 for n in f32}
    assert [kept[n].dtype for n in kept] == [low, low, low, burn.float64, burn.int64]
    # outside: nothing changes
    assert (x @ w).dtype is burn.float32 and F.linear(x, w, b).dtype is burn.float32
    # values: the low results are the float32 ones to the low dtype's precision
    tol = 2.0 ** -7 if low is burn.bfloat16 else 2.0 ** -10
    ref = x.numpy() @ w.numpy()
    np.testing.assert_allclose(lowered["matmul"].numpy().astype(np.float32), ref, rtol=2 * tol,
                               atol=2 * tol * np.abs(ref).max())


def test_nesting_disabling_decorator_and_threads():
    a = burn.ones((2, 2))
    seen = {}

    def other():
        seen["thread"] = (a @ a).dtype

    with burn.autocast(burn.bfloat16):
        t = threading.Thread(target=other)
        t.start()
        t.join()
        with burn.autocast(burn.float16):
            inner = (a @ a).dtype
            with burn.autocast(enabled=False):
                off = (a @ a).dtype
            back = (a @ a).dtype
        outer = (a @ a).dtype

    @burn.autocast(burn.float16)
    def f(x):
        return x @ x
    assert (inner, off, back, outer) == (burn.float16, burn.float32, burn.float16, burn.bfloat16)
    assert seen["thread"] is burn.float32                    # the state is per thread
    assert f(a).dtype is burn.float16 and (a @ a).dtype is burn.float32
    assert not burn.amp.is_autocast_enabled()
    with pytest.raises(burn.DTypeError, match="autocast: dtype must be"):
        burn.autocast(burn.float32)


def test_parameters_and_their_gradients_stay_float32():
    dev = burn.Device.flex().autodiff()
    model = burn.nn.Sequential(burn.nn.Conv2d(1, 4, 3, padding=1, device=dev), burn.nn.ReLU(), burn.nn.Flatten(),
                               burn.nn.Linear(4 * 6 * 6, 10, device=dev))
    x = burn.tensor(_rng().standard_normal((3, 1, 6, 6)).astype(np.float32), device=dev)
    with burn.autocast(burn.bfloat16):
        logits = model(x)
        loss = F.cross_entropy(logits, burn.tensor([1, 2, 3], device=dev))
        grads = loss.backward()         # backward inside the region: backward ops keep their forward dtypes
    assert logits.dtype is burn.bfloat16 and loss.dtype is burn.float32
    assert {p.dtype for p in model.parameters()} == {burn.float32}
    assert {model.layers[0].weight.grad(grads).dtype, model.layers[3].bias.grad(grads).dtype} == {burn.float32}
    assert all(p.grad(grads) is not None and p.grad(grads).dtype is burn.float32 for p in model.parameters())


@pytest.mark.parametrize("low", [burn.bfloat16, burn.float16])
def test_wgpu_without_the_dtype_raises_at_the_call_naming_the_op(low):
    dev = wgpu_or_skip()
    if dev.backend.supports_dtype(low, dev.index):
        pytest.skip(f"this OpenCL device has {low}")
    a = burn.ones((2, 2), device=dev)
    with burn.autocast(low):
        with pytest.raises(burn.DTypeError, match=f"matmul: burn.autocast\\({low}\\) runs it in {low}"):
            a @ a
        with pytest.raises(burn.DTypeError, match="linear: burn.autocast"):
            F.linear(a, a)
        assert F.softmax(a).dtype is burn.float32          # the float32 list needs nothing the device lacks


# -- against torch.autocast (CPU, bfloat16) ----------------------------------------------------

def test_mlp_forward_and_gradients_match_torch_autocast_bfloat16():
    torch = pytest.importorskip("torch")
    r = _rng(1)
    sizes = [(64, 128), (128, 10)]
    ws = [r.uniform(-0.2, 0.2, s).astype(np.float32) for s in sizes]
    bs = [r.uniform(-0.2, 0.2, s[1]).astype(np.float32) for s in sizes]
    x = r.random((32, 64)).astype(np.float32)
    y = r.integers(0, 10, 32)
    dev = burn.Device.flex().autodiff()
    bw = [burn.tensor(w, device=dev).require_grad() for w in ws]
    bb = [burn.tensor(b, device=dev).require_grad() for b in bs]
    with burn.autocast(burn.bfloat16):
        h = F.linear(burn.tensor(x, device=dev), bw[0], bb[0]).relu()
        logits = F.linear(h, bw[1], bb[1])
        loss = F.cross_entropy(logits, burn.tensor(y, device=dev))
    grads = loss.backward()
    tw = [torch.tensor(w.T.copy(), requires_grad=True) for w in ws]
    tb = [torch.tensor(b, requires_grad=True) for b in bs]
    with torch.autocast("cpu", dtype=torch.bfloat16):
        th = torch.nn.functional.linear(torch.tensor(x), tw[0], tb[0]).relu()
        tlogits = torch.nn.functional.linear(th, tw[1], tb[1])
        tloss = torch.nn.functional.cross_entropy(tlogits, torch.tensor(y))
    tloss.backward()
    assert tlogits.dtype == torch.bfloat16 and tloss.dtype == torch.float32
    assert logits.dtype is burn.bfloat16 and loss.dtype is burn.float32
    # both round float32-accumulated products to bfloat16 (8 significant bits): a few elements
    # may land one bfloat16 ulp apart (2^-7 relative), which the next layer carries on
    np.testing.assert_allclose(logits.numpy().astype(np.float32), tlogits.float().detach().numpy(),
                               rtol=2 ** -6, atol=2 ** -6)
    assert abs(loss.item() - tloss.item()) < 2e-3
    for b_, t_ in [(bw[0], tw[0]), (bw[1], tw[1])]:
        g, tg = b_.grad(grads), t_.grad.numpy().T
        assert g.dtype is burn.float32 and t_.grad.dtype == torch.float32
        np.testing.assert_allclose(g.numpy(), tg, atol=2 ** -6 * np.abs(tg).max())
    for b_, t_ in [(bb[0], tb[0]), (bb[1], tb[1])]:
        tg = t_.grad.numpy()
        np.testing.assert_allclose(b_.grad(grads).numpy(), tg, atol=2 ** -6 * np.abs(tg).max())


# -- GradScaler ----------------------------------------------------------------------------------

def test_grad_scaler_scale_sequence_matches_torch():
    torch = pytest.importorskip("torch")
    pattern = [1, 1, 1, 0, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 1, 1, 1]        # 0: this step's loss is inf
    kw = dict(init_scale=1024.0, growth_factor=4.0, backoff_factor=0.25, growth_interval=3)
    dev = burn.Device.flex().autodiff()
    w = burn.nn.Parameter(burn.tensor([0.5, -1.5, 2.0], device=dev))
    v = burn.nn.Parameter(burn.tensor([1.0], device=dev))
    opt = burn.optim.SGD([w, v], lr=0.1)
    scaler = burn.amp.GradScaler(**kw)
    tw = torch.tensor([0.5, -1.5, 2.0], requires_grad=True)
    tv = torch.tensor([1.0], requires_grad=True)
    topt = torch.optim.SGD([tw, tv], lr=0.1)
    tscaler = torch.amp.GradScaler("cpu", **kw)
    mine, theirs = [], []
    for ok in pattern:
        k = 1.0 if ok else float("inf")
        loss = (w * w).sum() * 0.5 + (v * k).sum()
        grads = scaler.scale(loss).backward()
        ret = scaler.step(opt, grads)
        scaler.update()
        mine.append((scaler.get_scale(), ret is None))
        topt.zero_grad()
        tloss = (tw * tw).sum() * 0.5 + (tv * k).sum()
        tscaler.scale(tloss).backward()
        tret = tscaler.step(topt)
        tscaler.update()
        theirs.append((tscaler.get_scale(), tret is None))
    assert [s for s, _ in mine] == [s for s, _ in theirs]
    np.testing.assert_allclose(w.numpy(), tw.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(v.numpy(), tv.detach().numpy(), rtol=1e-6)
    assert scaler.state_dict() == {k2: (float(v2) if k2 != "growth_interval" and k2 != "_growth_tracker" else v2)
                                   for k2, v2 in tscaler.state_dict().items()}
    fresh = burn.amp.GradScaler()
    fresh.load_state_dict(tscaler.state_dict())
    assert fresh.state_dict() == scaler.state_dict()


def test_grad_scaler_unscale_once_and_misuse_errors():
    dev = burn.Device.flex().autodiff()
    w = burn.nn.Parameter(burn.tensor([3.0, 4.0], device=dev))
    opt = burn.optim.SGD([w], lr=1.0, grad_clip=burn.optim.GradClip.norm(1.0))
    scaler = burn.amp.GradScaler(init_scale=256.0)
    grads = scaler.scale((w * w).sum()).backward()        # gradient 256 * [6, 8]
    scaler.unscale_(opt, grads)
    np.testing.assert_allclose(w.grad(grads).numpy(), [6.0, 8.0])
    with pytest.raises(burn.BurnError, match="already called"):
        scaler.unscale_(opt, grads)
    scaler.step(opt, grads)                               # clipped to norm 1 after unscaling
    np.testing.assert_allclose(w.numpy(), [3.0 - 0.6, 4.0 - 0.8], rtol=1e-5)
    with pytest.raises(burn.BurnError, match="already called"):
        scaler.step(opt, grads)
    scaler.update()
    with pytest.raises(burn.BurnError, match="no inf checks"):
        scaler.update()
    off = burn.amp.GradScaler(enabled=False)
    loss = (w * 2).sum()
    assert off.scale(loss) is loss and off.get_scale() == 1.0 and off.state_dict() == {}


# -- float16 training of the digits MLP ------------------------------------------------------------

def _digits():
    from sklearn.datasets import load_digits
    d = load_digits()
    x = (d.data / 16.0).astype(np.float32)
    order = _rng(0).permutation(len(x))
    te, tr = order[:360], order[360:]
    return x[tr], d.target[tr], x[te], d.target[te]


def _train_digits(mode, epochs=6):
    xtr, ytr, xte, yte = _digits()
    dev = burn.Device.flex().autodiff()
    dev.seed(0)
    model = burn.nn.Sequential(burn.nn.Linear(64, 128, device=dev), burn.nn.ReLU(),
                               burn.nn.Linear(128, 10, device=dev))
    opt = burn.optim.Adam(model, lr=3e-3)
    scaler = burn.amp.GradScaler(enabled=mode != "float32")
    cast = burn.autocast(burn.float16, enabled=mode != "float32")
    order = _rng(1)
    losses = []
    for _ in range(epochs):
        perm = order.permutation(len(xtr))
        for i in range(0, len(perm), 64):
            idx = perm[i:i + 64]
            xb, yb = burn.tensor(xtr[idx], device=dev), burn.tensor(ytr[idx], device=dev)
            with cast:
                loss = F.cross_entropy(model(xb), yb)
            scaler.step(opt, scaler.scale(loss).backward())
            scaler.update()
            losses.append(loss)
    with burn.no_grad(), cast:
        pred = model(burn.tensor(xte, device=dev)).argmax(axis=1).numpy()
    return float((pred == yte).mean() * 100), np.array([v.item() for v in losses]), scaler.get_scale()


def test_float16_autocast_with_grad_scaler_trains_digits_to_float32_accuracy():
    pytest.importorskip("sklearn")
    acc32, losses32, _ = _train_digits("float32")
    acc16, losses16, scale = _train_digits("float16")
    assert np.isfinite(losses16).all() and scale >= 1.0
    assert acc32 > 90.0
    assert abs(acc16 - acc32) <= 0.5, (acc16, acc32)
    assert abs(losses16[-20:].mean() - losses32[-20:].mean()) < 0.02


# -- flex's half kernels: float32 compute, one round-to-nearest-even ---------------------------------

def _round(a, nd):
    return np.asarray(a, np.float32).astype(nd)


@pytest.mark.parametrize("nd,dtype", [(BF16, burn.bfloat16), (F16, burn.float16)])
def test_flex_half_kernels_equal_float32_results_rounded_once(nd, dtype):
    r = _rng(3)
    a32 = r.standard_normal((64, 48)).astype(np.float32)
    b32 = r.standard_normal((48, 40)).astype(np.float32)
    a, b = a32.astype(nd), b32.astype(nd)          # the inputs, exactly representable in float32
    fa, fb = a.astype(np.float32), b.astype(np.float32)
    ta, tb = burn.tensor(a, dtype=dtype), burn.tensor(b, dtype=dtype)
    cases = {
        "matmul": (ta @ tb, fa @ fb),
        "exp": (burn.exp(ta), np.exp(fa)),
        "tanh": (burn.tanh(ta), np.tanh(fa)),
        "div": (ta / (burn.abs(ta) + 1), fa / (np.abs(fa) + 1)),        # two ops, fused: one rounding
        "sum": (ta.sum(axis=0), fa.sum(axis=0)),
        "softmax": (F.softmax(ta, axis=-1), None),
    }
    for name, (got, want) in cases.items():
        g = got.numpy()
        assert g.dtype == nd, name
        if want is None:
            continue
        if name in ("matmul", "sum"):     # BLAS / pairwise order may differ from numpy's by float32 ulps
            np.testing.assert_array_equal(np.abs(g.astype(np.float32) - _round(want, nd).astype(np.float32))
                                          <= np.abs(_round(want, nd).astype(np.float32)) * 2.0 ** -7 + 1e-30,
                                          True, err_msg=name)
        else:
            np.testing.assert_array_equal(g.view(np.uint16), _round(want, nd).view(np.uint16), err_msg=name)
    p = cases["softmax"][0].numpy().astype(np.float32)
    np.testing.assert_allclose(p.sum(axis=-1), 1.0, atol=2e-2)


def test_flex_bfloat16_rounds_to_nearest_even():
    # 1 + 2^-8 is halfway between 1 and 1 + 2^-7: the even mantissa (1.0) wins; 1 + 3 * 2^-8 -> 1 + 2^-6
    x = burn.tensor(np.array([1.0, 1.0 + 2 ** -7, 1.0, 1.0 + 2 ** -7], np.float32).astype(BF16),
                    dtype=burn.bfloat16)
    d = burn.tensor(np.full(4, 2 ** -8, np.float32).astype(BF16), dtype=burn.bfloat16)
    got = (x + d).numpy().astype(np.float32)
    assert got.tolist() == [1.0, 1.0 + 2 ** -6, 1.0, 1.0 + 2 ** -6]
    nan = burn.tensor(np.array([np.nan, np.inf, -np.inf], np.float32)).astype(burn.bfloat16)
    got = (nan * 1.0).numpy().astype(np.float32)
    assert np.isnan(got[0]) and got[1] == np.inf and got[2] == -np.inf


def test_flex_bfloat16_fused_group_rounds_once_and_casts_inside_round():
    r = _rng(4)
    x = r.standard_normal(200_000).astype(np.float32).astype(BF16)   # large: the blocked fused path
    fx = x.astype(np.float32)
    t = burn.tensor(x, dtype=burn.bfloat16)
    y = ((t * 1.5).exp() + 1).sqrt()
    want = np.sqrt(np.exp(fx * np.float32(1.5)) + np.float32(1))
    np.testing.assert_array_equal(y.numpy().view(np.uint16), want.astype(BF16).view(np.uint16))
    # a cast to bfloat16 inside a float32 chain still rounds there
    f = burn.tensor(fx * np.float32(1.001))
    z = f.astype(burn.bfloat16).astype(burn.float32) - f
    want = (fx * np.float32(1.001)).astype(BF16).astype(np.float32) - fx * np.float32(1.001)
    np.testing.assert_array_equal(z.numpy(), want)


def test_learner_trains_under_autocast_with_a_grad_scaler_and_checkpoints_its_state(tmp_path):
    r = _rng(5)
    X = r.standard_normal((64, 4)).astype(np.float32)
    y = (X[:, 0] > X[:, 1]).astype(np.int64)
    dev = burn.Device.flex().autodiff()
    dev.seed(0)
    dl = burn.data.DataLoader(burn.data.ArrayDataset(X, y), batch_size=16, shuffle=True, seed=0, device=dev)
    model = burn.nn.Linear(4, 2, device=dev)
    seen = []

    def loss_fn(out, t):
        seen.append(out.dtype)
        return F.cross_entropy(out, t)
    scaler = burn.amp.GradScaler(init_scale=1024.0, growth_interval=3)
    learner = burn.train.Learner(model, burn.optim.Adam(model, lr=0.05), loss_fn, autocast=burn.float16,
                                 grad_scaler=scaler, checkpoint_dir=tmp_path, progress=False)
    history = learner.fit(dl, epochs=3)
    assert set(seen) == {burn.float16} and model.weight.dtype is burn.float32
    assert history["train_loss"][-1] < history["train_loss"][0]
    assert scaler.get_scale() == 1024.0 * 2 ** 4          # 12 clean steps, growth every 3
    other = burn.amp.GradScaler()
    burn.train.Learner(model, burn.optim.Adam(model, lr=0.05), loss_fn, grad_scaler=other,
                       progress=False).resume(tmp_path)
    assert other.state_dict() == scaler.state_dict()
