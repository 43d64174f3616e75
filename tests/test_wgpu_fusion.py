"""Fusion on wgpu: a fused element-wise group is ONE kernel launch (counted by the
backend), whatever its inputs' layouts; results match numpy; the generator is
backend-neutral (the CUDA dialect renders the same chain)."""
import numpy as np
import pytest

import burn
from devices import wgpu_or_skip as _wgpu_or_skip  # noqa: E402  (tests/ is on sys.path)


def _launches(dev):
    return dev.backend.stats(dev.index)["launches"]


def _chain(x):
    # 8 element-wise ops, transcendental ones included
    return ((x * 0.5).exp().log1p().tanh() * 3.0 - 0.25).abs().sqrt()


def _chain_np(x):
    return np.sqrt(np.abs(np.tanh(np.log1p(np.exp(x * np.float32(0.5)))) * np.float32(3.0)
                          - np.float32(0.25)))


def test_large_eight_op_chain_is_one_launch():
    dev = _wgpu_or_skip()
    a = np.random.default_rng(0).standard_normal(1 << 17).astype(np.float32)
    x = burn.tensor(a, device=dev)
    dev.sync()
    before = _launches(dev)
    y = _chain(x)
    dev.sync()
    assert _launches(dev) - before == 1
    np.testing.assert_allclose(y.numpy(), _chain_np(a), rtol=2e-5, atol=2e-6)


def test_small_group_runs_op_by_op_once_then_fused():
    dev = _wgpu_or_skip()
    a = np.random.default_rng(1).standard_normal((7, 9)).astype(np.float32)
    counts = []
    for _ in range(3):
        x = burn.tensor(a, device=dev)
        dev.sync()
        before = _launches(dev)
        y = _chain(x)
        dev.sync()
        counts.append(_launches(dev) - before)
        np.testing.assert_allclose(y.numpy(), _chain_np(a), rtol=2e-5, atol=2e-6)
    assert counts == [8, 1, 1]


def test_fused_group_reads_transposed_and_broadcast_inputs():
    dev = _wgpu_or_skip()
    rng = np.random.default_rng(2)
    a = rng.standard_normal((300, 400)).astype(np.float32)      # 120k elements: fused on the first call
    b = rng.standard_normal((400,)).astype(np.float32)
    x, bias = burn.tensor(a, device=dev), burn.tensor(b, device=dev)
    xt = x.T                                                    # a strided view, no copy
    dev.sync()
    before = _launches(dev)
    y = ((xt.T + bias) * 2.0).relu() - bias
    dev.sync()
    assert _launches(dev) - before == 1
    np.testing.assert_allclose(y.numpy(), np.maximum((a + b) * 2, 0) - b, rtol=1e-6, atol=1e-6)


def test_matmul_epilogue_runs_inside_the_matmul_kernel():
    dev = _wgpu_or_skip()
    rng = np.random.default_rng(3)
    a = rng.standard_normal((256, 64)).astype(np.float32)
    w = rng.standard_normal((64, 300)).astype(np.float32)
    b = rng.standard_normal((300,)).astype(np.float32)
    x, wt, bt = (burn.tensor(v, device=dev) for v in (a, w, b))
    dev.sync()
    before = _launches(dev)
    (x @ wt).numpy()
    mm = _launches(dev) - before            # the matmul alone (a CPU device may pack B first)
    assert 1 <= mm <= 2
    dev.sync()
    before = _launches(dev)
    y = ((x @ wt) + bt).relu() * 0.5
    dev.sync()
    assert _launches(dev) - before == mm          # was mm + 1 (a separate epilogue kernel)
    np.testing.assert_allclose(y.numpy(), np.maximum(a @ w + b, 0) * 0.5, rtol=1e-4, atol=1e-4)


def test_codegen_renders_the_same_chain_for_opencl_and_cuda():
    from burn.codegen import CUDA, OPENCL, program_source, render_group
    ops = [("mul", {}, [("in", 0), ("in", 1)]), ("exp", {}, [("op", 0)]), ("clip", {"min": 0.0, "max": None},
                                                                             [("op", 1)])]
    for dialect, marker in ((OPENCL, "__kernel void"), (CUDA, '__global__ void')):
        k = render_group("chain", ops, ["float32", "float32"], [2], dialect)
        src = program_source([k], dialect)
        assert marker in src and "exp(" in src and k.param_dtypes == ("float32", "float32")


@pytest.mark.parametrize("n", [1, 7, 8, 9, 1000, 70_001])
def test_vector_variant_of_contiguous_float32_chains_matches_numpy(n):
    """CPU devices run contiguous float32 chains as float8 vectors (scalar loop for the tail):
    same values as numpy, NaN propagation of relu / maximum included."""
    dev = _wgpu_or_skip()
    from burn_wgpu import runtime
    rng = np.random.default_rng(n)
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    a[::5] = np.nan
    ta, tb = burn.tensor(a, device=dev), burn.tensor(b, device=dev)
    dev.sync()
    dc = runtime.context(0)
    names = []
    orig = dc.launch

    def spy(kernel, n_items, args, local=None):
        names.append(kernel.function_name)
        return orig(kernel, n_items, args, local)
    dc.launch = spy
    try:
        for _ in range(2):                      # small groups are fused from their second call
            names.clear()
            y = (burn.maximum((ta * 0.5 + tb).relu(), tb.tanh()) + ta.exp().log1p()).sqrt()
            got = y.numpy()
    finally:
        del dc.launch
    h = a * 0.5 + b
    with np.errstate(invalid="ignore"):
        want = np.sqrt(np.maximum(np.where(np.isnan(h) | (h > 0), h, 0), np.tanh(b)) + np.log1p(np.exp(a)))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    if dc.is_cpu:
        assert names and all(nm.startswith("fused_v") for nm in names), names


def test_chains_outside_the_vector_subset_keep_the_scalar_kernel():
    from burn_wgpu.fused import vector_variant
    from burn.codegen import OPENCL, program_source, render_group
    ops = [("gt", {}, [("in", 0), ("in", 1)])]
    k = render_group("fused", ops, ["float32", "float32"], [0], OPENCL, patterns=(0,), general=False)
    assert vector_variant(program_source([k], OPENCL), "fused_c0", ops, ["float32"] * 2, ["bool"]) is None
    ops = [("exp", {}, [("in", 0)])]
    k = render_group("fused", ops, ["float64"], [0], OPENCL, patterns=(0,), general=False)
    assert vector_variant(program_source([k], OPENCL), "fused_c0", ops, ["float64"], ["float64"]) is None
    k = render_group("fused", ops, ["float32"], [0], OPENCL, patterns=(0,), general=False)
    src = vector_variant(program_source([k], OPENCL), "fused_c0", ops, ["float32"], ["float32"])
    assert "vload8" in src and "vstore8" in src and "__kernel void fused_v0(" in src


# -- reductions with their prologue, matmul epilogues, row-wise extensions: one launch each ----

@pytest.mark.parametrize("op", ["sum", "max", "min", "prod", "argmax", "argmin"])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_reduce_group_is_one_launch_with_strided_and_broadcast_prologue(op, axis):
    dev = _wgpu_or_skip()
    rng = np.random.default_rng(11)
    a = rng.standard_normal((400, 300)).astype(np.float32)      # 120k elements: fused on the first call
    b = rng.standard_normal((400, 1)).astype(np.float32)
    x, bias = burn.tensor(a.T.copy(), device=dev).T, burn.tensor(b, device=dev)   # x: a transposed view
    dev.sync()
    before = _launches(dev)
    h = ((x - bias) * 0.01).exp()
    y = getattr(h, op)(axis=axis)
    dev.sync()
    assert _launches(dev) - before == 1
    want = getattr(np, op)(np.exp((a - b) * np.float32(0.01)), axis=axis)
    if op.startswith("arg"):
        np.testing.assert_array_equal(y.numpy(), want)
    else:
        np.testing.assert_allclose(y.numpy(), want, rtol=1e-4)


def test_reduce_group_over_several_axes_and_int_and_any():
    dev = _wgpu_or_skip()
    rng = np.random.default_rng(12)
    a = rng.integers(-5, 5, (4, 50, 60, 7)).astype(np.int32)
    x = burn.tensor(a, device=dev)
    for _ in range(2):                           # small: op by op first, then one launch
        dev.sync()
        before = _launches(dev)
        s = (x * 3 + 1).sum(axis=(0, 2), keepdims=True)
        t = (x > 3).any(axis=(1, 3))
        dev.sync()
        n = _launches(dev) - before
        np.testing.assert_array_equal(s.numpy(), (a * 3 + 1).sum(axis=(0, 2), keepdims=True))
        np.testing.assert_array_equal(t.numpy(), (a > 3).any(axis=(1, 3)))
    assert n == 2


def test_reduce_group_propagates_nan_like_numpy():
    dev = _wgpu_or_skip()
    a = np.random.default_rng(13).standard_normal((300, 300)).astype(np.float32)
    a[7, 3] = np.nan
    x = burn.tensor(a, device=dev)
    np.testing.assert_array_equal((x * 2).max(axis=1).numpy(), (a * 2).max(axis=1))
    np.testing.assert_array_equal((x * 2).argmin(axis=1).numpy(), (a * 2).argmin(axis=1))


@pytest.mark.parametrize("mode", ["packed", "rows", "tiled"])
def test_matmul_epilogue_with_bias_residual_and_batches_is_one_matmul(mode, monkeypatch):
    dev = _wgpu_or_skip()
    import burn_wgpu.kernels.linear as wk
    monkeypatch.setattr(wk, "MATMUL_CPU", mode)
    rng = np.random.default_rng(14)
    a = rng.standard_normal((3, 70, 40)).astype(np.float32)
    w = rng.standard_normal((40, 600)).astype(np.float32)
    b = rng.standard_normal((600,)).astype(np.float32)
    r = rng.standard_normal((3, 1, 600)).astype(np.float32)
    x, wt, bt, rt = (burn.tensor(v, device=dev) for v in (a, w, b, r))
    (x @ wt).numpy()
    dev.sync()
    before = _launches(dev)
    (x @ wt).numpy()
    mm = _launches(dev) - before
    before = _launches(dev)
    y = burn.maximum((x @ wt) * 2.0 - rt, bt).sigmoid()
    dev.sync()
    assert _launches(dev) - before == mm
    want = 1 / (1 + np.exp(-np.maximum(a @ w * 2 - r, b)))
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-4, atol=1e-5)


def test_matmul_epilogue_keeps_the_product_when_it_is_used_elsewhere():
    dev = _wgpu_or_skip()
    rng = np.random.default_rng(15)
    a = rng.standard_normal((300, 30)).astype(np.float32)
    w = rng.standard_normal((30, 500)).astype(np.float32)
    x, wt = burn.tensor(a, device=dev), burn.tensor(w, device=dev)
    p = x @ wt
    q = (p * 0.5).tanh()
    np.testing.assert_allclose(p.numpy(), a @ w, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(q.numpy(), np.tanh(a @ w * 0.5), rtol=1e-4, atol=1e-5)


def test_linear_relu_is_one_matmul_launch():
    dev = _wgpu_or_skip()
    import burn.nn.functional as F
    rng = np.random.default_rng(16)
    a = rng.standard_normal((2, 33, 20)).astype(np.float32)
    w = rng.standard_normal((20, 48)).astype(np.float32)
    b = rng.standard_normal((48,)).astype(np.float32)
    x, wt, bt = (burn.tensor(v, device=dev) for v in (a, w, b))
    F.linear_relu(x, wt, bt).numpy()
    before = _launches(dev)
    y = F.linear_relu(x, wt, bt).numpy()
    assert _launches(dev) - before == 1
    np.testing.assert_allclose(y, np.maximum(a @ w + b, 0), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_softmax_forward_and_backward_run_one_row_kernel_each(axis):
    dev = _wgpu_or_skip()
    torch = pytest.importorskip("torch")
    import burn.nn.functional as F
    rng = np.random.default_rng(17)
    a = rng.standard_normal((4, 33, 7)).astype(np.float32) * 5
    gy = rng.standard_normal(a.shape).astype(np.float32)
    dev.sync()
    before = _launches(dev)
    F.softmax(burn.tensor(a, device=dev), axis=axis).numpy()
    assert _launches(dev) - before == 1
    ad = dev.autodiff()
    x = burn.tensor(a, device=ad).require_grad()
    y = F.softmax(x, axis=axis)
    grads = (y * burn.tensor(gy, device=ad)).sum().backward()
    t = torch.tensor(a, requires_grad=True)
    ty = torch.softmax(t, dim=axis)
    (ty * torch.tensor(gy)).sum().backward()
    np.testing.assert_allclose(y.numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(x.grad(grads).numpy(), t.grad.numpy(), rtol=1e-4, atol=1e-6)


def test_softmax_row_kernel_matches_flex_on_extreme_rows():
    dev = _wgpu_or_skip()
    import burn.nn.functional as F
    a = np.array([[1000.0, 1000.0, -1000.0], [-np.inf, -np.inf, -np.inf], [np.nan, 0.0, 1.0]], np.float32)
    got = F.softmax(burn.tensor(a, device=dev), axis=1).numpy()
    want = F.softmax(burn.tensor(a, device=burn.Device.flex()), axis=1).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_layer_norm_forward_and_backward_match_torch(dtype):
    dev = _wgpu_or_skip()
    torch = pytest.importorskip("torch")
    import burn.nn.functional as F
    from burn_wgpu import runtime
    if dtype == np.float64 and not runtime.context(dev.index).fp64:
        pytest.skip("the device has no float64")
    rng = np.random.default_rng(18)
    a = (rng.standard_normal((6, 5, 40)) * 3 + 1).astype(dtype)
    w, b = rng.standard_normal(40).astype(dtype), rng.standard_normal(40).astype(dtype)
    gy = rng.standard_normal(a.shape).astype(dtype)
    dev.sync()
    before = _launches(dev)
    F.layer_norm(burn.tensor(a, device=dev), (40,), burn.tensor(w, device=dev), burn.tensor(b, device=dev)).numpy()
    assert _launches(dev) - before == 1
    ad = dev.autodiff()
    xs = [burn.tensor(v, device=ad).require_grad() for v in (a, w, b)]
    y = F.layer_norm(xs[0], (40,), xs[1], xs[2], eps=1e-5)
    grads = (y * burn.tensor(gy, device=ad)).sum().backward()
    ts = [torch.tensor(v, requires_grad=True) for v in (a, w, b)]
    ty = torch.nn.functional.layer_norm(ts[0], (40,), ts[1], ts[2], eps=1e-5)
    (ty * torch.tensor(gy)).sum().backward()
    tol = 1e-4 if dtype == np.float32 else 1e-10
    np.testing.assert_allclose(y.numpy(), ty.detach().numpy(), rtol=tol, atol=tol)
    for xb, tt in zip(xs, ts):
        np.testing.assert_allclose(xb.grad(grads).numpy(), tt.grad.numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("axis,keepdims", [(None, False), (1, False), ((0, 2), True), (-1, False)])
def test_segmented_run_of_multi_pass_reduce_groups_matches_numpy(axis, keepdims, monkeypatch):
    # the fallback every backend shares (burn.codegen.segments) for reduce groups the one-kernel
    # analysis declines: a run of element-wise ops writes one shape, so the ops on the reduced
    # shape and the next pass over the full one are separate runs
    import scipy.special as sp
    import burn_wgpu.kernels.reduce.generated as rf
    dev = _wgpu_or_skip()
    monkeypatch.setattr(rf, "_analyze", lambda *a, **k: None)
    monkeypatch.setenv("BURN_WGPU_FUSE_AFTER", "0")
    x = np.random.default_rng(7).standard_normal((2, 3, 4)).astype(np.float32)
    got = burn.logsumexp(burn.tensor(x, device=dev), axis=axis, keepdims=keepdims).numpy()
    want = sp.logsumexp(x, axis=axis, keepdims=keepdims)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    got = burn.var(burn.tensor(x, device=dev), axis=axis, keepdims=keepdims).numpy()
    want = np.var(x, axis=axis, keepdims=keepdims)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
