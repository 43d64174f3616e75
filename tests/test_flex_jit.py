"""flex's JIT kernels (burn_flex.jit: float32 erf, gelu and the Adam / SGD updates compiled by
LLVM): bit-identical to the numpy kernels they replace, on every input class (NaN, +-inf, -0.0, subnormals, the 2-ulp region
near |x| = 3.3), distinct / in-place / overlapping / strided / broadcast operands; inside fused
groups with one and several flex threads; the disk cache (written, read back, a damaged file
recompiled); the fallback (warned once, reason kept, same results) and its first-use cost."""
from __future__ import annotations

import math
import os

import numpy as np
import pytest
import torch

import burn
from burn_flex import fused, jit, threads
from burn_flex.kernels import elementwise as kernels


def _inputs(n=70_000):
    rng = np.random.default_rng(7)
    specials = np.array([0.0, -0.0, 1e-45, -1e-45, 1e-40, -1e-38, 1e-8, 0.5, -0.5, 3.3, -3.3, 3.9999,
                         4.0, -4.0, 4.0001, 10.0, -10.0, 3.4e38, -3.4e38, np.inf, -np.inf, np.nan], np.float32)
    return np.concatenate([specials, np.linspace(-6, 6, 24001, dtype=np.float32),
                           (rng.standard_normal(n) * 2).astype(np.float32),
                           np.geomspace(1e-45, 1e-30, 50, dtype=np.float32)])


def _same_bits(a, b):
    assert a.dtype == b.dtype == np.float32 and a.shape == b.shape
    np.testing.assert_array_equal(a.view(np.int32), b.view(np.int32))


@pytest.fixture
def k():
    got = jit.kernels()
    if got is None:
        pytest.fail(f"flex's JIT is unavailable here: {jit.status()['reason']}")
    return got


@pytest.mark.parametrize("name", ["erf", "gelu", "relu"])
def test_jit_kernels_are_bit_identical_to_the_numpy_kernels(k, name):
    x = _inputs()
    ref = {"erf": kernels._erf_numpy, "gelu": kernels._gelu_numpy,
           "relu": lambda v: np.maximum(v, np.zeros((), v.dtype))}[name]
    with np.errstate(all="ignore"):
        want = ref(x)
    fn = getattr(k, name)
    _same_bits(fn(x), want)
    out = np.full_like(x, 7.0)
    assert fn(x, out) is out
    _same_bits(out, want)
    y = x.copy()                                   # in place (the fused groups' scratch reuse)
    _same_bits(fn(y, y), want)
    z = np.concatenate([x[:1], x])                 # partially overlapping operands
    _same_bits(fn(z[1:], z[:-1]).copy(), want)
    s = np.repeat(x, 2)[::2]                       # strided input and output
    o2 = np.zeros(2 * x.size, np.float32)
    fn(s, o2[::2])
    _same_bits(o2[::2].copy(), want)
    b = fn(x[:7].reshape(1, 7), np.empty((3, 7), np.float32))      # broadcast into out
    _same_bits(b, np.broadcast_to(want[:7], (3, 7)).copy())
    assert fn(x[:0]).shape == (0,)


def test_jit_kernels_reject_other_dtypes(k):
    with pytest.raises(TypeError, match="erf_f32: expected float32 input, got float64"):
        k.erf(np.zeros(3))
    with pytest.raises(TypeError, match="gelu_f32: expected a writeable float32 out=, got float64"):
        k.gelu(np.zeros(3, np.float32), np.zeros(3))
    ro = np.zeros(3, np.float32)
    ro.flags.writeable = False
    with pytest.raises(TypeError, match=r"erf_f32: expected a writeable float32 out=, got float32 \(read-only\)"):
        k.erf(ro, ro)
    assert k.erf(np.float32(0.5) * np.ones((), np.float32)).shape == ()          # 0-d


@pytest.mark.parametrize("jit_on", [True, False])
def test_burn_erf_is_within_two_ulp_and_keeps_nan_positions_with_and_without_the_jit(monkeypatch, jit_on):
    sps = pytest.importorskip("scipy.special")
    if not jit_on:
        monkeypatch.setitem(jit._state, "kernels", None)
        monkeypatch.setitem(jit._state, "tried", True)
    x = _inputs()
    got = burn.erf(burn.from_numpy(x)).numpy()
    ref = sps.erf(x.astype(np.float64))
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    fin = ~np.isnan(ref)
    ulp = np.spacing(np.abs(ref[fin]).astype(np.float32)).astype(np.float64)
    assert np.max(np.abs(got[fin] - ref[fin]) / ulp) <= 2.0


@pytest.fixture
def restore_threads():
    n = threads.num_threads()
    yield
    threads.set_num_threads(n)


def _gelu_step(xn):
    """The benchmark's custom gelu (erf form, written from elementary ops), forward + backward,
    and flex's own gelu; returns (y, dy/dx, gelu(x))."""
    x = burn.tensor(xn, device=burn.Device.flex().autodiff()).require_grad()
    y = x * 0.5 * (burn.erf(x * float(np.float32(math.sqrt(0.5)))) + 1.0)
    g = y.sum().backward()
    return y.numpy(), x.grad(g).numpy(), burn.nn.functional.gelu(burn.from_numpy(xn)).numpy()


def test_fused_erf_and_gelu_groups_match_torch_with_one_and_several_threads(restore_threads, monkeypatch):
    monkeypatch.setattr(fused, "PAR_BLOCKS", 1)
    xn = (np.random.default_rng(5).standard_normal((8, 64, 256)) * 2).astype(np.float32)   # 32 blocks
    xn[0, 0, :4] = [np.nan, np.inf, -np.inf, -0.0]
    runs = []
    for n in (1, 4):
        threads.set_num_threads(n)
        before = threads.stats["regions"]
        runs.append(_gelu_step(xn))
        assert n == 1 or threads.stats["regions"] > before, "nothing ran on the pool"
    for a, b in zip(*runs):                      # element-wise blocks: identical for any thread count
        np.testing.assert_array_equal(a, b)
    xt = torch.from_numpy(xn.copy()).requires_grad_()
    yt = xt * 0.5 * (torch.erf(xt * float(np.float32(math.sqrt(0.5)))) + 1.0)
    yt.sum().backward()
    y, dy, g = runs[0]
    # torch's gelu(inf) is NaN, flex's the limit inf (as before the JIT: the numpy kernel's value):
    # flex's gelu is compared on finite inputs here, bit for bit on every input above
    fx = np.isfinite(xn)
    for got, want in ((y, yt.detach().numpy()), (dy, xt.grad.numpy()),
                      (g[fx], torch.nn.functional.gelu(torch.from_numpy(xn)).numpy()[fx])):
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        fin = np.isfinite(want)
        np.testing.assert_array_equal(got[~fin & ~np.isnan(want)], want[~fin & ~np.isnan(want)])
        # erf(x) + 1 cancels for x << 0 in both (float32 erf near -1 has ulp 6e-8): an absolute
        # bound scaled by |x| there, relative elsewhere
        np.testing.assert_allclose(got[fin], want[fin], rtol=3e-6, atol=2e-6)


@pytest.fixture
def fresh_jit(monkeypatch, tmp_path):
    monkeypatch.setenv("BURN_FLEX_JIT_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("BURN_FLEX_JIT_CACHE", raising=False)
    monkeypatch.delenv("BURN_FLEX_JIT", raising=False)
    saved = dict(jit._state)
    jit.reset()
    yield tmp_path
    jit._state.update(saved)


def test_compiled_kernels_are_cached_on_disk_and_a_damaged_file_is_recompiled(fresh_jit):
    assert jit.kernels() is not None and jit.status()["source"] == "compiled"
    files = [f for f in os.listdir(fresh_jit) if f.endswith(".o")]
    assert len(files) == 1, files
    compiled_s = jit.status()["seconds"]
    jit.reset()
    x = _inputs(1000)
    assert jit.kernels() is not None and jit.status()["source"] == "disk cache"
    _same_bits(jit.kernels().erf(x), kernels._erf_numpy(x))
    # the first-use cost: reading the cache is far cheaper than compiling (llvmlite is imported
    # already in both; what remains is LLVM's codegen against reading ~11 KB)
    assert jit.status()["seconds"] < 0.5 * compiled_s, (jit.status()["seconds"], compiled_s)
    path = os.path.join(fresh_jit, files[0])
    with open(path, "r+b") as f:                   # damage the object code behind the header
        f.seek(-16, os.SEEK_END)
        f.write(b"\0" * 16)
    jit.reset()
    assert jit.kernels() is not None and jit.status()["source"] == "compiled"
    jit.reset()
    assert jit.kernels() is not None and jit.status()["source"] == "disk cache"    # rewritten
    _same_bits(jit.kernels().gelu(x), kernels._gelu_numpy(x))


def test_the_fallback_warns_once_keeps_the_reason_and_gives_the_same_results(fresh_jit, monkeypatch):
    def broken():
        raise ImportError("No module named 'llvmlite'")
    monkeypatch.setattr(jit, "_load", broken)
    x = _inputs(1000)
    want = kernels._erf_numpy(x)
    with pytest.warns(RuntimeWarning, match=r"JIT kernels \(float32 erf, gelu, relu, softmax, layer norm, im2col, col2im, "
                                            r"direct convolutions, max pooling, "
                                            r"optimizer updates\) are unavailable "
                                            r"\(ImportError: No module named 'llvmlite'\)"):
        got = burn.erf(burn.from_numpy(x)).numpy()
    _same_bits(got, want)
    st = jit.status()
    assert st["available"] is False and "llvmlite" in st["reason"]
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")             # once per process: no second warning
        _same_bits(burn.erf(burn.from_numpy(x)).numpy(), want)


def test_burn_flex_jit_0_disables_it_without_a_warning(fresh_jit, monkeypatch):
    monkeypatch.setenv("BURN_FLEX_JIT", "0")
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert jit.kernels() is None
    assert jit.status() == dict(jit.status(), enabled=False, available=False,
                                reason="disabled by BURN_FLEX_JIT=0")
    x = _inputs(1000)
    _same_bits(burn.nn.functional.gelu(burn.from_numpy(x)).numpy(), kernels._gelu_numpy(x))


def _update_operands(n, seed):
    """Parameter, gradient and state arrays of n float32 elements with the special values an
    update meets (NaN / inf gradients, -0.0, subnormals, zero second moments)."""
    r = np.random.default_rng(seed)
    p, g, m = (r.standard_normal(n).astype(np.float32) for _ in range(3))
    v = np.abs(r.standard_normal(n)).astype(np.float32)
    sp = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1e-45, -1e-40, 3.4e38], np.float32)
    k = min(n, sp.size)
    g[:k], p[-k:], m[:k][::-1] = sp[:k], sp[:k], sp[:k]
    v[:k] = np.abs(sp[:k])[::-1]
    return p, g, m, v


class _CountingUpdate:
    """A compiled update (jit._Update) that records the element count of each native call
    (the chunks the pool ran), for the tests below."""

    def __init__(self, real, calls):
        self.real, self.n_hyper, self.n_arrays = real, real.n_hyper, real.n_arrays
        self.fn = lambda *a: (calls.append(a[-1]), real.fn(*a))

    def __call__(self, *arrays):
        return self.real(*arrays)


def _updates_both_ways(monkeypatch, fn):
    """fn() through the JIT update and through the ufunc path (koptim._JIT_UPDATES off)."""
    from burn_flex.kernels import optim as koptim
    monkeypatch.setattr(koptim, "_JIT_UPDATES", True)
    with np.errstate(all="ignore"):
        fast = fn()
        monkeypatch.setattr(koptim, "_JIT_UPDATES", False)
        slow = fn()
    return fast, slow


@pytest.mark.parametrize("n", [1, 13, 70_001])
@pytest.mark.parametrize("mode", ["none", "l2", "decoupled"])
def test_jit_adam_update_is_bit_identical_to_the_ufunc_path(k, monkeypatch, restore_threads, n, mode):
    from burn_flex.kernels import optim as koptim
    monkeypatch.setattr(koptim, "PAR_OPTIM", 1024)          # several chunks on the pool at 70,001
    threads.set_num_threads(2)
    p, g, m, v = _update_operands(n, n)
    h = np.array([0.01, 0.8, 0.2, 0.99, 0.01, 1 / (1 - 0.8 ** 3), 1 / (1 - 0.99 ** 3), 1e-8, 0.1, 0.999])
    calls = []
    monkeypatch.setitem(k.adam, mode, _CountingUpdate(k.adam[mode], calls))
    fast, slow = _updates_both_ways(monkeypatch, lambda: koptim.adam_update(p, g, m, v, h, mode))
    assert calls and sum(calls) == n and (n < 2048 or len(calls) > 1), calls     # the JIT ran, chunked
    for a, b in zip(fast, slow):
        assert a.shape == b.shape == p.shape
        _same_bits(a, b)
    if n > 1:          # against float64 math on the ordinary elements (not a tautology of the two paths)
        p64, g64, m64, v64 = (x[8:-8].astype(np.float64) for x in (p, g, m, v))
        if mode == "l2":
            g64 = g64 + p64 * 0.1
        m2 = 0.8 * m64 + 0.2 * g64
        v2 = 0.99 * v64 + 0.01 * g64 * g64
        step = 0.01 * (m2 * h[5]) / (np.sqrt(v2 * h[6]) + 1e-8)
        p2 = (p64 * 0.999 if mode == "decoupled" else p64) - step
        np.testing.assert_allclose(fast[0][8:-8], p2, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(fast[1][8:-8], m2, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mode", [(f, d, nv) for f in ("first", "next") for d in (False, True) for nv in (False, True)])
def test_jit_sgd_update_is_bit_identical_to_the_ufunc_path(k, monkeypatch, restore_threads, mode):
    from burn_flex.kernels import optim as koptim
    monkeypatch.setattr(koptim, "PAR_OPTIM", 1024)
    threads.set_num_threads(2)
    p, g, buf, _ = _update_operands(50_003, 3)
    h = np.array([0.05, 0.01, 0.9, 0.75])
    fast, slow = _updates_both_ways(monkeypatch, lambda: koptim.sgd_update(p, g, buf, h, mode))
    for a, b in zip(fast, slow):
        _same_bits(a, b)
    ref_g = g[8:-8] + (p[8:-8] * np.float32(0.01) if mode[1] else 0)
    ref_b = ref_g if mode[0] == "first" else buf[8:-8] * np.float32(0.9) + ref_g * np.float32(0.75)
    np.testing.assert_allclose(fast[1][8:-8], ref_b, rtol=1e-6, atol=1e-7)


def test_jit_updates_reject_bad_operands(k):
    x = np.zeros(4, np.float32)
    h = np.zeros(10, np.float32)
    with pytest.raises(TypeError, match="adam_f32_none: expected C-contiguous float32 arrays, got float64"):
        k.adam["none"](x, x, x, np.zeros(4), x.copy(), x.copy(), x.copy(), h)
    with pytest.raises(TypeError, match="contiguous: False"):
        k.adam["none"](x, x, x, np.zeros(8, np.float32)[::2], x.copy(), x.copy(), x.copy(), h)
    with pytest.raises(ValueError, match="sgd_f32_0: every array needs 4 elements, got 3"):
        k.sgd[0](x, x, x, x.copy(), np.zeros(3, np.float32), h[:4])
    with pytest.raises(TypeError, match="expected 7 arrays and h, got 6"):
        k.adam["l2"](x, x, x, x, x.copy(), x.copy(), h)
    with pytest.raises(ValueError, match="adam_f32_none: needs 10 hyper-parameters, got 4"):
        k.adam["none"](x, x, x, x, x.copy(), x.copy(), x.copy(), h[:4])


def test_array_addresses_match_the_array_interface():
    base = np.arange(24, dtype=np.float64).reshape(4, 6)
    for a in (base, base[1:], base[:, 2], base.T, base[::-1], np.empty(0, np.float32), np.zeros((), np.int8),
              np.asfortranarray(base), base.view(np.int64), np.float32(1.5), np.int64(3)):
        assert jit._addr(a) == a.__array_interface__["data"][0]


def _pool_input(shape, seed):
    """float32 input with ties (zeros, repeated values), NaN and -inf windows, +-0.0."""
    r = np.random.default_rng(seed)
    x = r.standard_normal(shape).astype(np.float32)
    x.flat[::7] = 0.0
    x.flat[1::9] = -0.0
    x.flat[2::11] = x.flat[3::11][: x.flat[2::11].size]      # equal neighbours
    x.flat[5] = np.nan
    x.flat[40:44] = np.nan                                    # a window of NaNs (or most of one)
    x.flat[60:62] = -np.inf
    return x


@pytest.mark.parametrize("shape", [(3, 2, 9, 7), (4, 3, 8, 8), (64, 6, 24, 24), (2, 5, 2, 3), (2, 3, 10, 13),
                                   # planes 4 or 8 wide (pool.ll's flat paths): a tail of outputs, an odd
                                   # number of output rows per plane, only a tail; an odd height (the row path)
                                   (3, 5, 4, 4), (2, 3, 6, 8), (1, 1, 2, 4), (2, 3, 7, 8)])
def test_jit_max_pool_2x2_matches_the_numpy_path_and_torch(k, monkeypatch, restore_threads, shape):
    from burn_flex.kernels import conv as kconv
    x = _pool_input(shape, sum(shape))
    kw = dict(kernel=(2, 2), stride=(2, 2), padding=(0, 0, 0, 0), dilation=(1, 1))
    calls = []
    for name in ("maxpool2", "maxpool2_grad"):
        real = getattr(k, name)
        monkeypatch.setattr(k, name, lambda *a, _r=real, _n=name: (calls.append(_n), _r(*a))[1])
    runs = []
    for n in (1, 2):
        threads.set_num_threads(n)
        out = kconv.max_pool2d(x, **kw)
        g = np.random.default_rng(1).standard_normal(out.shape).astype(np.float32)
        g.flat[:3] = [np.inf, np.nan, -0.0]                   # stays in its own window
        runs.append((out, kconv.max_pool2d_grad(x, out, g, **kw)))
    assert {"maxpool2", "maxpool2_grad"} <= set(calls)
    for a, b in zip(*runs):                                   # the same bits for any thread count
        np.testing.assert_array_equal(a.view(np.int32), b.view(np.int32))
    out, gx = runs[0]
    monkeypatch.setattr(kconv, "_JIT_POOL", False)
    _same_bits(out, kconv.max_pool2d(x, **kw))                # the numpy path's maxima, bit for bit
    xt = torch.from_numpy(x.copy()).requires_grad_()
    ot = torch.nn.functional.max_pool2d(xt, 2, 2)
    ot.backward(torch.from_numpy(g.copy()))
    np.testing.assert_array_equal(out, ot.detach().numpy())
    # PyTorch's index rule: the first maximum, the last NaN; everything else +0.0 (also where g is inf)
    np.testing.assert_array_equal(gx, xt.grad.numpy())


def test_jit_max_pool_is_used_only_for_2x2_stride_2(k, monkeypatch):
    from burn_flex.kernels import conv as kconv
    calls = []
    monkeypatch.setattr(k, "maxpool2", lambda *a: calls.append(a))
    x = np.ones((1, 1, 6, 6), np.float32)
    for kw in (dict(kernel=(3, 3), stride=(2, 2), padding=(0, 0, 0, 0), dilation=(1, 1)),
               dict(kernel=(2, 2), stride=(2, 2), padding=(1, 1, 1, 1), dilation=(1, 1)),
               dict(kernel=(2, 2), stride=(1, 1), padding=(0, 0, 0, 0), dilation=(1, 1))):
        kconv.max_pool2d(x, **kw)
    kconv.max_pool2d(x.astype(np.float64), kernel=(2, 2), stride=(2, 2), padding=(0, 0, 0, 0), dilation=(1, 1))
    assert calls == []


def test_jit_exp_is_within_one_ulp_with_exact_specials(k):
    x = np.concatenate([np.linspace(-104, 88.72, 2_000_001, dtype=np.float32),
                        np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 88.7228, 88.72284, 89.0, -103.98, -200.0,
                                  1e-30, -1e-45], np.float32)]).reshape(1, -1)
    got = k.exp(x, np.empty_like(x))[0]
    x = x[0]
    with np.errstate(over="ignore"):
        ref = np.exp(x.astype(np.float64))
    np.testing.assert_array_equal(np.isnan(got), np.isnan(x))
    normal = (ref > np.finfo(np.float32).tiny) & (ref < float(np.finfo(np.float32).max))
    ulp = np.spacing(ref[normal].astype(np.float32)).astype(np.float64)
    assert np.max(np.abs(got[normal] - ref[normal]) / ulp) <= 1.0
    sub = ref <= np.finfo(np.float32).tiny                       # subnormal results: within 2^-149
    assert np.max(np.abs(got[sub] - ref[sub])) <= float(np.float32(1e-45))
    big = ref >= float(np.finfo(np.float32).max)
    assert np.all(np.isposinf(got[big] if big.any() else np.array([np.inf])))
    assert got[x == -np.inf][0] == 0.0 and got[x == np.inf][0] == np.inf and got[x == 0][0] == 1.0


def _softmax64(s):
    with np.errstate(invalid="ignore"):
        s = s.astype(np.float64)
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)


@pytest.mark.parametrize("n", [1, 7, 8, 13, 64, 100])
def test_jit_softmax_rows_match_float64_with_numpy_nan_rows(k, n):
    r = np.random.default_rng(n)
    s = (r.standard_normal((40, n)) * 6).astype(np.float32)
    s[3] = -np.inf                                               # all masked: NaN, as numpy and torch
    s[4, 0] = np.nan
    s[5, -1] = np.inf
    s[6, :] = 0.0
    s[7, ::2] = -np.inf
    y = k.softmax_rows(s, np.empty_like(s))
    ref = _softmax64(s)
    np.testing.assert_array_equal(np.isnan(y), np.isnan(ref))
    ok = ~np.isnan(ref)
    np.testing.assert_allclose(y[ok], ref[ok], rtol=2e-6, atol=1e-7)
    assert n == 1 or np.all(y[7, ::2] == 0.0)                     # (n = 1: the row is all -inf)
    t = s.copy()
    _same_bits(k.softmax_rows(t, t), y)                          # in place: the same bits
    g = r.standard_normal(s.shape).astype(np.float32)
    yf = np.nan_to_num(y)
    d = k.softmax_grad_rows(yf, g, np.empty_like(g))
    want = (g.astype(np.float64) - (g.astype(np.float64) * yf).sum(axis=1, keepdims=True)) * yf
    np.testing.assert_allclose(d, want, rtol=1e-5, atol=2e-7)
    g2 = g.copy()
    _same_bits(k.softmax_grad_rows(yf, g2, g2), d)


def test_flex_softmax_and_attention_take_the_jit_rows_and_match_torch(k, monkeypatch, restore_threads):
    from burn_flex.kernels import attention as katt
    from burn_flex.kernels import nn as knn
    calls = []
    for name in ("softmax_rows", "softmax_grad_rows"):
        real = getattr(k, name)
        monkeypatch.setattr(k, name, lambda *a, _r=real, _n=name: (calls.append(_n), _r(*a))[1])
    r = np.random.default_rng(3)
    x = (r.standard_normal((6, 33, 20)) * 4).astype(np.float32)
    g = r.standard_normal(x.shape).astype(np.float32)
    q, kk, v = (r.standard_normal((3, 2, 10, 8)).astype(np.float32) for _ in range(3))
    go = r.standard_normal(q.shape).astype(np.float32)
    mask = np.where(r.random((10, 10)) < 0.2, -np.inf, 0.0).astype(np.float32)
    mask[:, 0] = 0.0
    runs = []
    for n in (1, 2):
        threads.set_num_threads(n)
        y = knn.softmax(x, 1)
        out, w = katt.attention(q, kk, v, mask, 0.3)
        grads = katt.attention_grad(q, kk, v, w, go, None, 0.3)
        runs.append([y, knn.softmax_grad(y, g, 1), out, w, *grads])
    assert {"softmax_rows", "softmax_grad_rows"} <= set(calls)
    for a, b in zip(*runs):
        np.testing.assert_array_equal(a, b)
    xt = torch.from_numpy(x.copy()).requires_grad_()
    yt = torch.softmax(xt, 1)
    yt.backward(torch.from_numpy(g))
    np.testing.assert_allclose(runs[0][0], yt.detach().numpy(), rtol=2e-6, atol=1e-7)
    np.testing.assert_allclose(runs[0][1], xt.grad.numpy(), rtol=1e-5, atol=1e-6)
    qt, kt, vt = (torch.from_numpy(a.copy()).requires_grad_() for a in (q, kk, v))
    ot = torch.nn.functional.scaled_dot_product_attention(qt, kt, vt, attn_mask=torch.from_numpy(mask), scale=0.3)
    ot.backward(torch.from_numpy(go.copy()))
    np.testing.assert_allclose(runs[0][2], ot.detach().numpy(), rtol=1e-5, atol=1e-6)
    for got, want in zip(runs[0][4:7], (qt.grad, kt.grad, vt.grad)):
        np.testing.assert_allclose(got, want.numpy(), rtol=1e-4, atol=1e-5)
    monkeypatch.setattr(knn, "_JIT_ROWS", False)                 # the numpy path: same values
    np.testing.assert_allclose(knn.softmax(x, 1), runs[0][0], rtol=2e-6, atol=1e-7)


@pytest.mark.parametrize("n", [8, 128, 20])
def test_flex_layer_norm_jit_rows_match_torch_and_the_numpy_path(k, monkeypatch, restore_threads, n):
    from burn_flex.kernels import nn as knn
    calls = []
    for name in ("layer_norm_rows", "layer_norm_grad_rows"):
        real = getattr(k, name)
        monkeypatch.setattr(k, name, lambda *a, _r=real, _n=name: (calls.append(_n), _r(*a))[1])
    monkeypatch.setattr(knn, "PAR_ROWS", 256)                    # several chunks on the pool
    r = np.random.default_rng(n)
    x = (r.standard_normal((3, 70, n)) * 4 + 2).astype(np.float32)
    x[0, 0] = 5.0                                                # a constant row: var 0, r = 1/sqrt(eps)
    w, b = (r.standard_normal(n).astype(np.float32) for _ in range(2))
    g = r.standard_normal(x.shape).astype(np.float32)
    runs = []
    for threads_n in (1, 2):
        threads.set_num_threads(threads_n)
        runs.append([knn.layer_norm(x, w, b, 1e-5), *knn.layer_norm_grad(x, w, g, 1e-5)])
    assert (n % 8 == 0) == ({"layer_norm_rows", "layer_norm_grad_rows"} <= set(calls))
    for a, c in zip(*runs):
        np.testing.assert_array_equal(a, c)                      # any thread count, the same bits
    xt, wt, bt = (torch.from_numpy(a.copy()).requires_grad_() for a in (x, w, b))
    yt = torch.nn.functional.layer_norm(xt, (n,), wt, bt, 1e-5)
    yt.backward(torch.from_numpy(g))
    want = [yt.detach().numpy(), xt.grad.numpy(), wt.grad.numpy(), bt.grad.numpy()]
    for got, ref, tol in zip(runs[0], want, (2e-5, 2e-4, 2e-4, 2e-5)):
        np.testing.assert_allclose(got, ref, rtol=tol, atol=tol)
    monkeypatch.setattr(knn, "_JIT_ROWS", False)
    slow = [knn.layer_norm(x, w, b, 1e-5), *knn.layer_norm_grad(x, w, g, 1e-5)]
    for got, ref in zip(runs[0], slow):
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


def test_flex_log_softmax_grad_keeps_its_own_formula_with_minus_inf_inputs():
    # log_softmax_grad is g - exp(y) * sum(g), not the softmax gradient: the JIT softmax rows must
    # not take it (found by the wgpu suite, which also runs it on flex; this runs without wgpu)
    import burn.nn.functional as F
    inf = np.inf
    a = np.array([[0.0, -inf, 1.0, -inf], [3.0, 3.0, -inf, 2.0], [0.5, 1.5, -2.0, 4.0]], np.float32)
    gy = np.array([[1.0, 2.0, -1.0, 0.5]] * 3, np.float32)
    x = burn.tensor(a, device=burn.Device.flex().autodiff()).require_grad()
    y = F.log_softmax(x, axis=1)
    gx = x.grad((y * burn.tensor(gy, device=burn.Device.flex().autodiff())).sum().backward()).numpy()
    xt = torch.from_numpy(a.copy()).requires_grad_()
    yt = torch.log_softmax(xt, 1)
    (yt * torch.from_numpy(gy)).sum().backward()
    np.testing.assert_allclose(y.numpy(), yt.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(gx, xt.grad.numpy(), rtol=1e-6, atol=1e-7)


def test_jit_row_kernels_reject_bad_operands(k):
    x = np.zeros((4, 8), np.float32)
    ro = np.zeros((4, 8), np.float32)
    ro.flags.writeable = False
    with pytest.raises(TypeError, match="softmax_rows_f32: expected C-contiguous float32 arrays, got float64"):
        k.softmax_rows(np.zeros((4, 8)), x.copy())
    with pytest.raises(TypeError, match="softmax_rows_f32: expected 2-D arrays of one shape"):
        k.softmax_rows(np.zeros((4, 16), np.float32), x.copy())
    with pytest.raises(TypeError, match="softmax_grad_rows_f32: the output array is read-only"):
        k.softmax_grad_rows(x, x, ro)
    w = np.ones(8, np.float32)
    with pytest.raises(TypeError, match="layer_norm_grad_rows_f32: an output array is read-only"):
        k.layer_norm_grad_rows(x, w, x, ro, x.copy(), 1e-5)
    with pytest.raises(TypeError, match=r"layer_norm_rows_f32: argument 1 must have shape \(8,\)"):
        k.layer_norm_rows(x, np.ones(4, np.float32), w, x.copy(), 1e-5)
    with pytest.raises(ValueError, match="n a multiple of 8"):
        k.layer_norm_rows(np.zeros((4, 6), np.float32), w[:6], w[:6], np.zeros((4, 6), np.float32), 1e-5)


def _log_softmax64(s):
    s64 = s.astype(np.float64)
    with np.errstate(all="ignore"):
        m = s64.max(axis=1, keepdims=True)
        m = np.where(m == -np.inf, 0.0, m)
        z = s64 - m
        return z - np.log(np.exp(z).sum(axis=1, keepdims=True))


def _ce_logits(n, rows=40, seed=0):
    r = np.random.default_rng(seed + n)
    s = (r.standard_normal((rows, n)) * 6).astype(np.float32)
    s[3] = -np.inf                                               # all masked: NaN, as torch
    s[4, 0] = np.nan
    s[5, -1] = np.inf
    s[6, :] = 0.0
    s[7, ::2] = -np.inf
    s[8, 0] = 80.0                                               # a class far below the row's max
    return s, r.integers(0, n, rows)


@pytest.mark.parametrize("n", [1, 7, 8, 10, 13, 64, 100])
def test_jit_log_softmax_and_cross_entropy_rows_match_float64(k, n):
    s, t = _ce_logits(n)
    t[8] = n - 1 if n > 1 else 0
    ref = _log_softmax64(s)
    y = k.log_softmax_rows(s, np.empty_like(s))
    np.testing.assert_array_equal(np.isnan(y), np.isnan(ref))
    np.testing.assert_array_equal(np.isinf(y), np.isinf(ref))
    ok = np.isfinite(ref)
    np.testing.assert_allclose(y[ok], ref[ok], rtol=2e-6, atol=2e-6)
    loss = np.full(len(t), 7.0, np.float32)
    assert k.ce_loss_rows(s, t, loss) == 0
    want = -ref[np.arange(len(t)), t]
    np.testing.assert_array_equal(np.isnan(loss), np.isnan(want))
    fin = np.isfinite(want)
    np.testing.assert_allclose(loss[fin], want[fin], rtol=2e-6, atol=2e-6)
    assert n == 1 or loss[8] > 70                                 # -log p of a tiny p stays finite
    scale = np.random.default_rng(n).standard_normal(len(t)).astype(np.float32)
    for sc in (scale, scale[:1]):
        out = np.empty_like(s)
        assert k.ce_grad_rows(s, t, sc, out) == 0
        p = np.exp(ref)
        p[np.arange(len(t)), t] -= 1.0
        p *= sc[:, None] if sc.size > 1 else sc[0]
        np.testing.assert_array_equal(np.isnan(out), np.isnan(p))
        fin = np.isfinite(p)
        np.testing.assert_allclose(out[fin], p[fin], rtol=1e-5, atol=1e-6)
    bad = t.copy()
    bad[[2, 9]] = [-1, n]
    loss[:] = 7.0
    assert k.ce_loss_rows(s, bad, loss) == 2 and loss[2] == loss[9] == 7.0      # skipped, counted
    assert k.ce_grad_rows(s, bad, scale, np.empty_like(s)) == 2


def test_jit_cross_entropy_rows_reject_bad_operands(k):
    x = np.zeros((4, 10), np.float32)
    t = np.zeros(4, np.int64)
    with pytest.raises(TypeError, match="ce_loss_rows_f32: expected \\[rows, n\\] logits and \\[rows\\] contiguous int64"):
        k.ce_loss_rows(x, t.astype(np.int32), np.zeros(4, np.float32))
    with pytest.raises(TypeError, match="ce_loss_rows_f32: output shape \\(3,\\) does not fit logits \\(4, 10\\)"):
        k.ce_loss_rows(x, t, np.zeros(3, np.float32))
    with pytest.raises(TypeError, match="ce_grad_rows_f32: scale needs 1 or 4 values, got 2"):
        k.ce_grad_rows(x, t, np.ones(2, np.float32), np.zeros_like(x))
    with pytest.raises(TypeError, match="ce_grad_rows_f32: expected C-contiguous float32"):
        k.ce_grad_rows(x, t, np.ones(1), np.zeros_like(x))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_flex_cross_entropy_and_log_softmax_take_the_jit_rows_and_match_torch(k, monkeypatch, restore_threads,
                                                                               reduction):
    from burn_flex.kernels import nn as knn
    calls = []
    for name in ("ce_loss_rows", "ce_grad_rows", "log_softmax_rows"):
        real = getattr(k, name)
        monkeypatch.setattr(k, name, lambda *a, _r=real, _n=name: (calls.append(_n), _r(*a))[1])
    monkeypatch.setattr(knn, "PAR_ROWS", 256)                    # several chunks on the pool
    r = np.random.default_rng(5)
    x = (r.standard_normal((300, 13)) * 4).astype(np.float32)
    x[7] = -np.inf
    x[9, 3] = np.inf
    t = r.integers(0, 13, 300)
    g = (r.standard_normal(300) if reduction == "none" else np.array(0.7)).astype(np.float32)
    runs = []
    with np.errstate(all="ignore"):
        for n in (1, 2):
            threads.set_num_threads(n)
            runs.append([knn.softmax_cross_entropy(x, t, reduction), knn.softmax_cross_entropy_grad(x, t, g, reduction),
                         knn.log_softmax(x, 1)])
        assert {"ce_loss_rows", "ce_grad_rows", "log_softmax_rows"} <= set(calls)
        for a, b in zip(*runs):
            np.testing.assert_array_equal(a, b)                  # any thread count, the same bits
        xt = torch.from_numpy(x.copy()).requires_grad_()
        lt = torch.nn.functional.cross_entropy(xt, torch.from_numpy(t), reduction=reduction)
        lt.backward(torch.from_numpy(g))
        np.testing.assert_allclose(runs[0][0], lt.detach().numpy(), rtol=2e-6, atol=1e-6, equal_nan=True)
        np.testing.assert_allclose(runs[0][1], xt.grad.numpy(), rtol=1e-5, atol=1e-6, equal_nan=True)
        np.testing.assert_allclose(runs[0][2], torch.log_softmax(torch.from_numpy(x), 1).numpy(), rtol=2e-6,
                                   atol=2e-6, equal_nan=True)
        monkeypatch.setattr(knn, "_JIT_ROWS", False)             # the numpy path: the same values
        slow = [knn.softmax_cross_entropy(x, t, reduction), knn.softmax_cross_entropy_grad(x, t, g, reduction),
                knn.log_softmax(x, 1)]
    for a, b in zip(runs[0], slow):
        np.testing.assert_allclose(a, b, rtol=2e-6, atol=2e-6, equal_nan=True)
    monkeypatch.setattr(knn, "_JIT_ROWS", True)
    bad = t.copy()
    bad[290] = 13
    for fn in (lambda: knn.softmax_cross_entropy(x, bad, reduction), lambda: knn.softmax_cross_entropy_grad(x, bad, g, reduction)):
        with pytest.raises(IndexError, match=r"target class indices must lie in \[0, 13\), got values from 0 to 13"):
            fn()


@pytest.mark.parametrize("kind", ["adam", "sgd"])
def test_batched_updates_are_bit_identical_to_one_call_each(k, monkeypatch, restore_threads, kind):
    from burn_flex.kernels import optim as koptim
    monkeypatch.setattr(koptim, "PAR_OPTIM", 1024)               # the large one chunked on the pool
    threads.set_num_threads(2)
    sizes = [(3,), (64, 10), (70_001,), (1,)]
    ops = [_update_operands(int(np.prod(s)), i) for i, s in enumerate(sizes)]
    ops = [tuple(a.reshape(s) for a in o) for o, s in zip(ops, sizes)]
    if kind == "adam":
        h = np.array([0.01, 0.8, 0.2, 0.99, 0.01, 1 / (1 - 0.8 ** 3), 1 / (1 - 0.99 ** 3), 1e-8, 0.1, 0.999])
        items, single, many, modes = [(*o, h) for o in ops], koptim.adam_update, koptim.adam_update_many, \
            ["none", "l2", "decoupled"]
    else:
        h = np.array([0.05, 0.01, 0.9, 0.75])
        items, single, many, modes = [(o[0], o[1], o[2], h) for o in ops], koptim.sgd_update, \
            koptim.sgd_update_many, [(f, d, nv) for f in ("first", "next") for d in (False, True) for nv in (False, True)]
    with np.errstate(all="ignore"):
        for mode in modes:
            got = many(items, mode)
            for it, res in zip(items, got):
                for a, b in zip(res, single(*it, mode)):
                    _same_bits(a, b)
        # items the batch cannot take (float64, another h) run one call each: the same results
        mixed = [items[0], tuple(a.astype(np.float64) if isinstance(a, np.ndarray) and a.dtype == np.float32
                                 else a for a in items[1])]
        for it, res in zip(mixed, many(mixed, modes[0])):
            for a, b in zip(res, single(*it, modes[0])):
                np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("n, o, kk, p", [(5, 6, 25, 576), (3, 2, 5, 13), (2, 3, 4, 40), (1, 1, 1, 1), (0, 2, 3, 4)])
def test_jit_dot_nt_sum_matches_float64(k, n, o, kk, p):
    r = np.random.default_rng(p)
    a = r.standard_normal((n, o, p)).astype(np.float32)
    b = r.standard_normal((n, kk, p)).astype(np.float32)
    out = np.full((o, kk), np.nan, np.float32)
    k.dot_nt_sum(a, b, out)
    ref = np.einsum("nop,nkp->ok", a.astype(np.float64), b.astype(np.float64))
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5 * max(1.0, np.sqrt(n * p)))
    with pytest.raises(TypeError, match="dot_nt_sum_f32: expected a \\[N, O, P\\], b \\[N, K, P\\] and out \\[O, K\\]"):
        k.dot_nt_sum(a, b, np.empty((o + 1, kk), np.float32))


def test_conv_weight_gradient_takes_the_dot_products_on_long_rows(k, monkeypatch):
    from burn_flex.kernels import conv as kconv
    from burn_flex.kernels import conv_direct
    # the im2col path's weight gradient (strided first layers take it; stride-1 ones the rows kernel)
    monkeypatch.setattr(conv_direct, "ENABLED", False)
    calls = []
    real = k.dot_nt_sum
    monkeypatch.setattr(k, "dot_nt_sum", lambda *a: (calls.append(a[0].shape), real(*a))[1])
    r = np.random.default_rng(3)
    x = r.standard_normal((6, 1, 21, 21)).astype(np.float32)         # 17 x 17 positions: per image, dot path
    w = r.standard_normal((4, 1, 5, 5)).astype(np.float32)
    attrs = dict(stride=(1, 1), padding=(0, 0, 0, 0), dilation=(1, 1), groups=1)
    y = kconv.conv2d(x, w, **attrs)
    g = np.cos(y)
    gw = kconv.conv2d_grad_weight(x, g, kernel_hw=(5, 5), **attrs)
    assert calls                                                     # the JIT dot products ran
    xt, wt = torch.tensor(x), torch.tensor(w, requires_grad=True)
    torch.nn.functional.conv2d(xt, wt).backward(torch.tensor(g))
    np.testing.assert_allclose(gw, wt.grad.numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("xs, ws, pad, stride, dil", [
    ((6, 6, 12, 12), (16, 6, 5, 5), 0, 1, 1),      # rows of 8, no padding: im2col's vector fast path
    ((4, 1, 28, 28), (6, 1, 5, 5), 0, 1, 1),       # rows of 24
    ((5, 16, 4, 4), (32, 16, 3, 3), 1, 1, 1),      # 4 x 4 images, padded
    ((3, 1, 8, 8), (16, 1, 3, 3), 1, 1, 1),        # rows of 8 with padded rows and columns
    ((5, 3, 9, 9), (4, 3, 3, 3), 1, 2, 1),         # strided
    ((4, 2, 10, 10), (3, 2, 3, 3), 2, 1, 2),       # dilated
])
def test_jit_columns_per_image_and_folded_stay_in_bounds_and_match_numpy(k, xs, ws, pad, stride, dil):
    from burn_flex.kernels import conv as kconv
    x = np.random.default_rng(sum(xs)).standard_normal(xs).astype(np.float32)
    oh = (xs[2] + 2 * pad - dil * (ws[2] - 1) - 1) // stride + 1
    ow = (xs[3] + 2 * pad - dil * (ws[3] - 1) - 1) // stride + 1
    n, c = xs[:2]
    kk, p = c * ws[2] * ws[3], oh * ow
    geo = kconv._geometry(xs[2:], ws[2:], (stride,) * 2, (pad,) * 4, (dil,) * 2, (oh, ow))
    ref = kconv._im2col(x, ws[2:], (stride,) * 2, (pad,) * 4, (dil,) * 2, 1, (oh, ow))       # [N, 1, K, P]
    gref = np.zeros((n, c, xs[2] + 2 * pad, xs[3] + 2 * pad), np.float32)                      # col2im by hand
    cr = ref.reshape(n, c, ws[2], ws[3], oh, ow)
    for i in range(ws[2]):
        for j in range(ws[3]):
            gref[:, :, i * dil:i * dil + stride * oh:stride, j * dil:j * dil + stride * ow:stride] += cr[:, :, i, j]
    gref = gref[:, :, pad:pad + xs[2], pad:pad + xs[3]]
    for folded in (0, n):
        buf = np.full(kk * n * p + 64, 7.5, np.float32)                # a guard past the columns
        cols = buf[:kk * n * p].reshape((kk, n * p) if folded else (n, 1, kk, p))
        kconv._run_columns(k.im2col, (x, cols), n * c, geo, channels=c, folded_images=folded)
        assert (buf[kk * n * p:] == 7.5).all()
        want = ref[:, 0].transpose(1, 0, 2).reshape(kk, n * p) if folded else ref
        np.testing.assert_array_equal(cols, want)
        gbuf = np.zeros(x.size + 64, np.float32)
        gbuf[x.size:] = 7.5
        kconv._run_columns(k.col2im, (cols.copy(), gbuf[:x.size].reshape(xs)), n * c, geo, channels=c,
                           folded_images=folded)
        assert (gbuf[x.size:] == 7.5).all()
        np.testing.assert_allclose(gbuf[:x.size].reshape(xs), gref, rtol=1e-5, atol=1e-5)
