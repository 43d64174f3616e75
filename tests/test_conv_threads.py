"""flex convolution and pooling split over threads: every algorithm, forward and backward,
against torch and against the same kernel on one thread.

The kernels choose per shape (burn_flex.kernels.conv's docstring): chunks of images in
parallel when a per-image GEMM is small enough for OpenBLAS to run on one thread, images
in order (BLAS threading each GEMM) above that, the batch-innermost input gradient split
over its row positions, pooling split over images. The size thresholds are lowered here
so that the small test shapes do split, and each case checks which split was taken.
"""
from __future__ import annotations

import sys

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import burn
import burn_flex.kernels.conv as K
import burn_flex.kernels.conv_direct as conv_direct
from burn.nn import functional as F
from burn_flex import threads
from thread_runs import on_one_and_two_threads

DEV = burn.Device.flex().autodiff()
TOL = {np.float32: dict(rtol=2e-4, atol=2e-4), np.float64: dict(rtol=1e-10, atol=1e-10)}


@pytest.fixture
def splits(monkeypatch, request):
    """Run with ``request.param`` = (threads, blas_big): threshold lowered so chunks form;
    ``blas_big`` makes every GEMM count as one OpenBLAS threads itself. Yields the
    parallel_for calls made, as (calling function, n_items, chunks)."""
    n_threads, blas_big = request.param
    calls = []
    real = threads.parallel_for

    def spy(n, work, min_chunk=1, **kw):
        caller = sys._getframe(1).f_code.co_name
        calls.append((caller, n, min(threads.num_threads(), n // max(1, min_chunk))))
        real(n, work, min_chunk, **kw)
    before = threads.num_threads()
    threads.set_num_threads(n_threads)
    monkeypatch.setattr(threads, "parallel_for", spy)
    # the chunking under test is the one BURN_FLEX_BLAS_CHUNKS=parallel runs on the pool
    monkeypatch.setattr(threads, "BLAS_CHUNKS_PARALLEL", True)
    monkeypatch.setattr(K, "_TASK_MACS", 1)
    monkeypatch.setattr(K, "_TASK_ELEMS", 1)
    monkeypatch.setattr(K, "_BLAS_ONE_THREAD", 0 if blas_big else 1 << 62)
    monkeypatch.setattr(K, "_FOLDED", False)         # per-image chunks (the folded path: its own test)
    monkeypatch.setattr(conv_direct, "ENABLED", False)   # the im2col forward (the direct one: its own test)
    yield calls
    threads.set_num_threads(before)


SPLITS = [(1, False), (3, False), (3, True)]


def _run(burn_fn, torch_fn, arrays, seed=0):
    dt = burn.float64 if arrays[0].dtype == np.float64 else burn.float32
    leaves = [burn.tensor(a, device=DEV, dtype=dt).require_grad() for a in arrays]
    out = burn_fn(*leaves)
    cot = np.random.default_rng(seed).standard_normal(out.shape).astype(arrays[0].dtype)
    grads = (out * burn.tensor(cot, device=DEV, dtype=dt)).sum().backward()
    got = [out.numpy()] + [t.grad(grads).numpy() for t in leaves]
    tl = [torch.tensor(a, requires_grad=True) for a in arrays]
    t_out = torch_fn(*tl)
    (t_out * torch.tensor(cot)).sum().backward()
    want = [t_out.detach().numpy()] + [t.grad.numpy() for t in tl]
    for i, (b, t) in enumerate(zip(got, want)):
        assert b.shape == t.shape and b.dtype == t.dtype, i
        np.testing.assert_allclose(b, t, err_msg=f"output {i} (0 = forward, then input gradients)",
                                   **TOL[arrays[0].dtype.type])


CONVS = [
    # (N, C_in, H, W), (C_out, kH, kW), stride, padding, dilation, groups: the path each takes
    ((9, 1, 14, 14), (3, 5, 5), 1, 0, 1, 1),     # LeNet-like: wide im2col, rows input gradient
    ((7, 3, 9, 9), (4, 3, 3), 2, 1, 1, 1),       # strided: im2col straight into y, strided col2im
    ((5, 4, 10, 10), (6, 3, 3), 1, 2, 2, 2),     # dilated, grouped: widened stride-1 col2im
    ((6, 2, 8, 8), (4, 3, 3), 1, 0, 1, 1),       # 3x3 without padding
]


@pytest.mark.parametrize("splits", SPLITS, indirect=True)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, "float32-numpy"])
@pytest.mark.parametrize("xs, ws, stride, padding, dilation, groups", CONVS)
def test_conv_over_threads_matches_torch(xs, ws, stride, padding, dilation, groups, dtype, splits, monkeypatch):
    if dtype == "float32-numpy":                     # float32 without the JIT im2col / col2im
        monkeypatch.setattr(K, "_JIT_COLUMNS", False)
        dtype = np.float32
    rng = np.random.default_rng(1)
    x = rng.standard_normal(xs).astype(dtype)
    w = rng.standard_normal((ws[0], xs[1] // groups) + ws[1:]).astype(dtype)
    b = rng.standard_normal(ws[0]).astype(dtype)
    kw = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
    _run(lambda x, w, b: F.relu(F.conv2d(x, w, b, **kw)), lambda x, w, b: TF.relu(TF.conv2d(x, w, b, **kw)),
         [x, w, b])
    n_threads = threads.num_threads()
    conv_splits = [k for caller, n, k in splits if caller == "_image_chunks"]
    assert len(conv_splits) >= 2 and all(n == xs[0] for c, n, _ in splits if c == "_image_chunks")
    if n_threads == 1:
        assert max(k for _, _, k in splits) <= 1
    elif K._BLAS_ONE_THREAD:
        assert min(conv_splits) == n_threads         # image chunks in parallel
        jit_path = dtype == np.float32 and K._jit_columns(np.dtype(np.float32)) is not None
        if stride == dilation == groups == 1 and not jit_path:   # the rows input gradient splits its rows
            assert max(k for c, _, k in splits if c == "_grad_input_rows") == n_threads
    else:                                            # BLAS threads each GEMM: images in order
        assert max(conv_splits) <= 1


@pytest.mark.parametrize("splits", SPLITS, indirect=True)
def test_conv_in_memory_blocks_over_threads(splits, monkeypatch):
    """Columns too large to keep: each chunk in blocks, no cached columns, the same results."""
    monkeypatch.setattr(K, "_COLS_BYTES", 1)
    monkeypatch.setattr(K, "_COLS_CACHE_MAX_BYTES", 1)
    rng = np.random.default_rng(2)
    x = rng.standard_normal((7, 2, 9, 9)).astype(np.float32)
    w = rng.standard_normal((3, 2, 3, 3)).astype(np.float32)
    _run(lambda x, w: F.conv2d(x, w, padding=1), lambda x, w: TF.conv2d(x, w, padding=1), [x, w])
    _run(lambda x, w: F.conv2d(x, w, stride=2), lambda x, w: TF.conv2d(x, w, stride=2), [x, w])


POOLS = [
    ("max", 2, None, 0),     # tiled windows (LeNet): each input in one window
    ("max", 3, 1, 1),        # overlapping, padded
    ("max", 3, 2, 0),        # overlapping, rows left unread
    ("avg", 2, None, 0),
    ("avg", 3, 2, 1),
]


@pytest.mark.parametrize("splits", SPLITS[:2], indirect=True)
@pytest.mark.parametrize("kind, k, stride, padding", POOLS)
def test_pool_over_threads_matches_torch(kind, k, stride, padding, splits):
    rng = np.random.default_rng(3)
    # relu'd input: all-zero windows make ties, whose gradient goes to the first maximum
    x = np.maximum(rng.standard_normal((9, 3, 11, 11)), 0).astype(np.float32)
    if kind == "max":
        fb = lambda x: F.max_pool2d(x, k, stride, padding)            # noqa: E731
        ft = lambda x: TF.max_pool2d(x, k, stride, padding)           # noqa: E731
    else:
        fb = lambda x: F.avg_pool2d(x, k, stride, padding, count_include_pad=False)   # noqa: E731
        ft = lambda x: TF.avg_pool2d(x, k, stride, padding, count_include_pad=False)  # noqa: E731
    _run(fb, ft, [x])
    assert max(k for c, _, k in splits if c == "_pool_chunks") == threads.num_threads()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_kernels_on_one_and_several_threads_agree(dtype, monkeypatch):
    """The kernels themselves, 1 thread against 3 (and default thresholds against lowered ones)."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((10, 6, 12, 12)).astype(dtype)
    w = rng.standard_normal((16, 6, 5, 5)).astype(dtype)
    attrs = dict(stride=(1, 1), padding=(0, 0, 0, 0), dilation=(1, 1), groups=1)

    def all_kernels():
        y = K.conv2d(x, w, **attrs)
        g = np.cos(y)
        gw = K.conv2d_grad_weight(x, g, kernel_hw=(5, 5), **attrs)
        gx = K.conv2d_grad_input(g, w, input_hw=(12, 12), **attrs)
        pool = dict(kernel=(2, 2), stride=(2, 2), padding=(0, 0, 0, 0), dilation=(1, 1))
        p = K.max_pool2d(y, **pool)
        gp = K.max_pool2d_grad(y, p, np.sin(p), **pool)
        return y, gw, gx, p, gp

    before = threads.num_threads()
    try:
        threads.set_num_threads(1)
        one = all_kernels()
        threads.set_num_threads(3)
        monkeypatch.setattr(K, "_TASK_MACS", 1)
        monkeypatch.setattr(K, "_TASK_ELEMS", 1)
        several = all_kernels()
    finally:
        threads.set_num_threads(before)
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    for a, b in zip(one, several):
        assert a.dtype == b.dtype == dtype
        np.testing.assert_allclose(a, b, **tol)


@pytest.mark.parametrize("xs, ws, stride, padding, dilation", [
    ((16, 6, 12, 12), (16, 5, 5), 1, 0, 1),        # LeNet's second conv
    ((16, 16, 4, 4), (32, 3, 3), 1, 1, 1),         # the digits CNN's second conv: 4 x 4 images, padded
    ((9, 3, 9, 9), (4, 3, 3), 2, 1, 1),            # strided
    ((5, 4, 10, 10), (6, 3, 3), 1, 2, 2),          # dilated
])
def test_batch_folded_convolutions_match_torch_and_the_per_image_path(xs, ws, stride, padding, dilation,
                                                                      monkeypatch):
    """float32 convolutions with small outputs run as one GEMM over the whole batch (conv.ll's folded
    columns): forward and both gradients against torch, against the per-image path, and the same bits
    on one thread and on two."""
    if K._jit_columns(np.dtype(np.float32)) is None:
        pytest.skip("flex's JIT is unavailable: the folded path needs its im2col")
    rng = np.random.default_rng(7)
    x = rng.standard_normal(xs).astype(np.float32)
    w = rng.standard_normal((ws[0], xs[1]) + ws[1:]).astype(np.float32)
    attrs = dict(stride=(stride,) * 2, padding=(padding,) * 4, dilation=(dilation,) * 2, groups=1)
    monkeypatch.setattr(conv_direct, "ENABLED", False)   # the folded im2col forward under test
    folded = []
    real = K._im2col_folded
    monkeypatch.setattr(K, "_im2col_folded", lambda *a: (folded.append(1), real(*a))[1])

    def kernels():
        y = K.conv2d(x, w, **attrs)
        g = np.cos(y)
        return [y, K.conv2d_grad_weight(x, g, kernel_hw=ws[1:], **attrs),
                K.conv2d_grad_input(g, w, input_hw=xs[2:], **attrs)]
    one, two = on_one_and_two_threads(kernels)
    assert folded                                   # the folded path ran
    for a, b in zip(one, two):
        np.testing.assert_array_equal(a, b)
    monkeypatch.setattr(K, "_FOLDED", False)
    per_image = kernels()
    # a float64 reference: against torch's float32 gradient this failed in 2 of ~12 runs on an
    # AVX-512 (bf16) Xeon (up to 5e-4 relative), where burn's matched float64 to 4e-7 in 3,000 runs
    xt = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    wt = torch.tensor(w, dtype=torch.float64, requires_grad=True)
    yt = TF.conv2d(xt, wt, stride=stride, padding=padding, dilation=dilation)
    yt.backward(torch.cos(yt.detach()))
    for got, pi, want in zip(one, per_image, [yt.detach().numpy(), wt.grad.numpy(), xt.grad.numpy()]):
        np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-4)
        np.testing.assert_allclose(got, pi, rtol=2e-4, atol=2e-4)


DIRECT = [
    # (N, C, H, W), (O, kH, kW), stride, padding (top, bottom, left, right), dilation
    ((5, 1, 8, 8), (16, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),      # the digits CNN's first conv: 4 x 16 tiles
    ((4, 16, 4, 4), (32, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),     # its second
    ((3, 1, 28, 28), (6, 5, 5), (1, 1), (0, 0, 0, 0), (1, 1)),     # LeNet's first: 8 x 8 tiles, 2 channels unused
    ((2, 6, 12, 12), (16, 5, 5), (1, 1), (0, 0, 0, 0), (1, 1)),
    ((3, 5, 9, 11), (7, 3, 2), (2, 1), (1, 2, 0, 1), (1, 2)),      # strided, dilated, asymmetric padding
    ((2, 3, 7, 5), (20, 2, 3), (3, 2), (2, 0, 1, 3), (2, 1)),      # 20 channels: a partial 16-channel tile
    ((1, 2, 3, 3), (9, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1)),       # 9 positions, 9 channels: every tile partial
    ((2, 40, 6, 6), (24, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),     # K = 360 taps
]


@pytest.mark.parametrize("xs, ws, stride, padding, dilation", DIRECT)
def test_direct_convolution_matches_float64_and_the_im2col_path_on_one_and_two_threads(xs, ws, stride, padding,
                                                                                      dilation, monkeypatch):
    """conv_direct (kernels/ll/direct.ll): within float32 rounding of a float64 torch convolution,
    of the im2col + GEMM path, bit-identical on one thread and on two (images split), every
    output written (the output starts as NaN-filled memory the kernel must overwrite)."""
    k = K._jit_columns(np.dtype(np.float32))
    if k is None:
        pytest.skip("flex's JIT is unavailable: the direct kernel is one of its kernels")
    rng = np.random.default_rng(31)
    x = rng.standard_normal(xs).astype(np.float32)
    w = rng.standard_normal((ws[0], xs[1]) + ws[1:]).astype(np.float32)
    out_hw = K._out_hw(xs, ws[1:], stride, padding, dilation)
    monkeypatch.setattr(conv_direct, "_SPLIT_MACS", 0)     # chunks of images on the native pool
    monkeypatch.setattr(conv_direct, "_CHUNK_MACS", 1)

    def run():
        out = np.full((xs[0], ws[0]) + out_hw, np.nan, np.float32)
        return conv_direct.direct_conv(k, x, w, stride, padding, dilation, out_hw, out=out)
    one, two = on_one_and_two_threads(run)
    assert not np.isnan(one).any()
    np.testing.assert_array_equal(one, two)
    pt, pb, pl, pr = padding
    want = TF.conv2d(TF.pad(torch.tensor(x, dtype=torch.float64), (pl, pr, pt, pb)), torch.tensor(w, dtype=torch.float64),
                     stride=stride, dilation=dilation).numpy()
    assert one.shape == want.shape
    np.testing.assert_allclose(one, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())
    monkeypatch.setattr(conv_direct, "ENABLED", False)
    im2col = K.conv2d(x, w, stride=stride, padding=padding, dilation=dilation, groups=1)
    np.testing.assert_allclose(one, im2col, rtol=1e-5, atol=1e-5 * np.abs(want).max())


def test_conv2d_takes_the_direct_kernel_for_float32_and_one_group_only(monkeypatch):
    if K._jit_columns(np.dtype(np.float32)) is None:
        pytest.skip("flex's JIT is unavailable")
    taken = []
    real = conv_direct.direct_conv
    monkeypatch.setattr(K, "direct_conv", lambda *a: (taken.append(1), real(*a))[1])
    x, w = np.ones((2, 4, 5, 5), np.float32), np.ones((4, 4, 3, 3), np.float32)
    attrs = dict(stride=(1, 1), padding=(0, 0, 0, 0), dilation=(1, 1))
    assert K.conv2d(x, w, groups=1, **attrs).shape == (2, 4, 3, 3) and taken == [1]
    K.conv2d(x, w[:, :2], groups=2, **attrs)                          # grouped: im2col
    K.conv2d(x.astype(np.float64), w.astype(np.float64), groups=1, **attrs)     # float64: numpy
    assert taken == [1]
    empty = K.conv2d(np.ones((2, 0, 5, 5), np.float32), np.ones((3, 0, 3, 3), np.float32), groups=1, **attrs)
    assert empty.shape == (2, 3, 3, 3) and (empty == 0).all()       # no input channels: a sum of nothing


def test_direct_ll_is_what_its_generator_writes():
    """kernels/ll/direct.ll is generated (plugins/burn-flex/scripts/gen_direct_ll.py): the
    committed file must be the script's output, so an edit to either one is not lost."""
    import subprocess
    from pathlib import Path
    script = Path(__file__).resolve().parents[1] / "plugins" / "burn-flex" / "scripts" / "gen_direct_ll.py"
    r = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, f"direct.ll differs from {script.name}'s output: run the script ({r.stderr})"


@pytest.mark.parametrize("xs, ws, padding, dilation", [
    ((3, 16, 4, 4), (32, 3, 3), (1, 1, 1, 1), (1, 1)),      # the digits CNN's second conv
    ((2, 10, 7, 9), (6, 4, 3), (1, 2, 1, 1), (1, 1)),       # even kernel, "same": asymmetric padding
    ((2, 8, 9, 9), (4, 3, 3), (2, 2, 2, 2), (2, 2)),        # dilated "same"
    ((2, 20, 6, 5), (9, 3, 1), (1, 1, 0, 0), (1, 1)),
])
def test_direct_input_gradient_matches_torch(xs, ws, padding, dilation, monkeypatch):
    """A stride-1 convolution's input gradient as a direct convolution of the gradient with the
    flipped, transposed weights (conv_direct.direct_grad_input), where conv2d_grad_input takes it:
    against torch's autograd in float64 and against the col2im path."""
    k = K._jit_columns(np.dtype(np.float32))
    if k is None:
        pytest.skip("flex's JIT is unavailable: the direct kernel is one of its kernels")
    rng = np.random.default_rng(41)
    x = rng.standard_normal(xs).astype(np.float32)
    w = rng.standard_normal((ws[0], xs[1]) + ws[1:]).astype(np.float32)
    out_hw = K._out_hw(xs, ws[1:], (1, 1), padding, dilation)
    g = rng.standard_normal((xs[0], ws[0]) + out_hw).astype(np.float32)
    assert conv_direct.direct_grad_input_ok(k, np.float32, 1, (1, 1), padding, dilation, ws[1:], xs[2:], out_hw,
                                            xs[1])
    taken = []
    real = conv_direct.direct_grad_input
    monkeypatch.setattr(K, "direct_grad_input", lambda *a: (taken.append(1), real(*a))[1])
    got = K.conv2d_grad_input(g, w, stride=(1, 1), padding=padding, dilation=dilation, groups=1, input_hw=xs[2:])
    assert taken
    pt, pb, pl, pr = padding
    xt = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    yt = TF.conv2d(TF.pad(xt, (pl, pr, pt, pb)), torch.tensor(w, dtype=torch.float64), dilation=dilation)
    yt.backward(torch.tensor(g, dtype=torch.float64))
    want = xt.grad.numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())
    monkeypatch.setattr(conv_direct, "ENABLED", False)
    col2im = K.conv2d_grad_input(g, w, stride=(1, 1), padding=padding, dilation=dilation, groups=1, input_hw=xs[2:])
    np.testing.assert_allclose(got, col2im, rtol=1e-5, atol=1e-5 * np.abs(want).max())


def test_direct_input_gradient_is_not_taken_where_the_full_correlation_grows_or_padding_exceeds_the_reach():
    k = object()
    f32 = np.float32
    ok = conv_direct.direct_grad_input_ok
    assert ok(k, f32, 1, (1, 1), (1, 1, 1, 1), (1, 1), (3, 3), (4, 4), (4, 4), 16)
    assert not ok(k, f32, 1, (1, 1), (0, 0, 0, 0), (1, 1), (5, 5), (12, 12), (8, 8), 16)    # LeNet: 2.25x the work
    assert not ok(k, f32, 1, (1, 1), (3, 3, 3, 3), (1, 1), (3, 3), (4, 4), (8, 8), 16)      # padding past the reach
    assert not ok(k, f32, 1, (2, 2), (1, 1, 1, 1), (1, 1), (3, 3), (8, 8), (4, 4), 16)      # strided
    assert not ok(k, f32, 2, (1, 1), (1, 1, 1, 1), (1, 1), (3, 3), (4, 4), (4, 4), 16)      # grouped
    assert not ok(None, f32, 1, (1, 1), (1, 1, 1, 1), (1, 1), (3, 3), (4, 4), (4, 4), 16)   # no JIT
    assert not ok(k, f32, 1, (1, 1), (1, 1, 1, 1), (1, 1), (3, 3), (4, 4), (4, 4), 4)       # lanes left idle


def _check_weight_gradient(kernel_name, xs, ws, stride, padding, dilation, seed, monkeypatch):
    """conv2d_grad_weight through conv_direct's ``kernel_name`` (it must be taken): against float64
    torch autograd and against the im2col path."""
    if K._jit_columns(np.dtype(np.float32)) is None:
        pytest.skip("flex's JIT is unavailable: the direct kernels are among its kernels")
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(xs).astype(np.float32)
    w = rng.standard_normal((ws[0], xs[1]) + ws[1:]).astype(np.float32)
    out_hw = K._out_hw(xs, ws[1:], stride, padding, dilation)
    g = rng.standard_normal((xs[0], ws[0]) + out_hw).astype(np.float32)
    taken = []
    real = getattr(conv_direct, kernel_name)
    monkeypatch.setattr(K, kernel_name, lambda *a: (taken.append(1), real(*a))[1])
    attrs = dict(stride=stride, padding=padding, dilation=dilation, groups=1, kernel_hw=ws[1:])
    got = K.conv2d_grad_weight(x, g, **attrs)
    assert taken and got.shape == w.shape and got.dtype == np.float32
    pt, pb, pl, pr = padding
    wt = torch.tensor(w, dtype=torch.float64, requires_grad=True)
    yt = TF.conv2d(TF.pad(torch.tensor(x, dtype=torch.float64), (pl, pr, pt, pb)), wt, stride=stride, dilation=dilation)
    yt.backward(torch.tensor(g, dtype=torch.float64))
    want = wt.grad.numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())
    monkeypatch.setattr(conv_direct, "ENABLED", False)
    np.testing.assert_allclose(got, K.conv2d_grad_weight(x, g, **attrs), rtol=1e-5, atol=1e-5 * np.abs(want).max())


@pytest.mark.parametrize("xs, ws, stride, padding, dilation", DIRECT)
def test_direct_weight_gradient_matches_torch_and_the_im2col_path(xs, ws, stride, padding, dilation, monkeypatch):
    """conv2d_grad_weight on the direct kernel with its roles swapped (taps as positions, the
    (image, position) pairs as taps: conv_direct.direct_grad_weight), forced on every geometry."""
    monkeypatch.setattr(conv_direct, "_GRAD_WEIGHT_MIN_OUTPUTS", 1)    # every geometry here, small ones too
    monkeypatch.setattr(conv_direct, "_GRAD_WEIGHT_MIN_TAPS", 1)
    _check_weight_gradient("direct_grad_weight", xs, ws, stride, padding, dilation, 43, monkeypatch)


def test_direct_weight_gradient_is_taken_from_16_outputs_and_32_taps():
    ok, f32, k = conv_direct.direct_grad_weight_ok, np.float32, object()
    assert ok(k, f32, 1, 64 * 16, 32, 144)                  # the digits CNN's second conv
    assert not ok(k, f32, 1, 64 * 64, 16, 9)                # its first: 9 taps
    assert not ok(k, f32, 1, 64 * 576, 6, 25)               # LeNet's first: 6 outputs
    assert not ok(k, f32, 2, 64 * 16, 32, 144)              # grouped
    assert not ok(k, np.float64, 1, 64 * 16, 32, 144)
    assert not ok(k, f32, 1, (1 << 20) + 1, 32, 144)        # too many (image, position) pairs
    assert not ok(None, f32, 1, 64 * 16, 32, 144)


@pytest.mark.parametrize("xs, ws, stride, padding, dilation", [c for c in DIRECT if c[2] == (1, 1)] + [
    ((3, 3, 10, 13), (5, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),     # RGB-like, 13 columns: one full block and a tail
    ((2, 1, 6, 5), (2, 2, 2), (1, 1), (0, 1, 2, 0), (2, 1)),       # rows shorter than a vector only
])
def test_weight_gradient_rows_kernel_matches_torch_and_the_im2col_path(xs, ws, stride, padding, dilation,
                                                                       monkeypatch):
    """conv_direct.grad_weight_rows (direct.ll's tiles of 4 channels x 3 taps over rows of output
    positions, masked row tails), forced on every stride-1 geometry."""
    monkeypatch.setattr(conv_direct, "_GRAD_WEIGHT_MIN_OUTPUTS", 1 << 30)     # never the swapped kernel
    _check_weight_gradient("grad_weight_rows", xs, ws, stride, padding, dilation, 47, monkeypatch)


def test_weight_gradient_rows_kernel_is_taken_for_small_stride_1_layers_only():
    ok, f32, k = conv_direct.grad_weight_rows_ok, np.float32, object()
    assert ok(k, f32, 1, (1, 1), 16, 9)            # the digits CNN's first conv
    assert ok(k, f32, 1, (1, 1), 6, 25)            # LeNet's first
    assert not ok(k, f32, 1, (1, 1), 32, 144)      # the swapped direct kernel's
    assert not ok(k, f32, 1, (2, 2), 6, 25)        # strided
    assert not ok(k, f32, 2, (1, 1), 6, 25)
    assert not ok(None, f32, 1, (1, 1), 6, 25)


@pytest.mark.parametrize("kernel_name, xs, ws, padding", [
    ("direct_grad_weight", (20, 16, 4, 4), (32, 3, 3), (1, 1, 1, 1)),
    ("grad_weight_rows", (19, 1, 10, 13), (6, 3, 3), (1, 1, 0, 2)),
])
def test_large_weight_gradients_sum_fixed_image_blocks_the_same_on_any_thread_count(kernel_name, xs, ws, padding,
                                                                                   monkeypatch):
    """Past _POOL_MACS the weight-gradient kernels sum fixed blocks of images, their calls on the
    native pool: the same bits on one thread and on two, within float32 rounding of the one-call
    sum and of torch."""
    k = K._jit_columns(np.dtype(np.float32))
    if k is None:
        pytest.skip("flex's JIT is unavailable: the direct kernels are among its kernels")
    rng = np.random.default_rng(53)
    x = rng.standard_normal(xs).astype(np.float32)
    out_hw = K._out_hw(xs, ws[1:], (1, 1), padding, (1, 1))
    g = rng.standard_normal((xs[0], ws[0]) + out_hw).astype(np.float32)
    fn = getattr(conv_direct, kernel_name)
    args = (k, x, g, (1, 1), padding, (1, 1), ws[1:]) if kernel_name == "direct_grad_weight" else \
        (k, x, g, padding, (1, 1), ws[1:])
    one_call = fn(*args)
    monkeypatch.setattr(conv_direct, "_POOL_MACS", 1)           # every gradient "large": image blocks
    blocks = []
    real = conv_direct._sum_over_image_blocks
    monkeypatch.setattr(conv_direct, "_sum_over_image_blocks",
                        lambda kern, n, m, f: (blocks.append(n), real(kern, n, m, f))[1])
    one, two = on_one_and_two_threads(lambda: fn(*args))
    assert blocks
    np.testing.assert_array_equal(one, two)
    np.testing.assert_allclose(one, one_call, rtol=1e-5, atol=1e-5 * np.abs(one_call).max())
    pt, pb, pl, pr = padding
    wt = torch.zeros((ws[0], xs[1]) + ws[1:], dtype=torch.float64, requires_grad=True)
    TF.conv2d(TF.pad(torch.tensor(x, dtype=torch.float64), (pl, pr, pt, pb)), wt).backward(
        torch.tensor(g, dtype=torch.float64))
    want = wt.grad.numpy()
    np.testing.assert_allclose(one, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


@pytest.mark.parametrize("xs, ws, stride, padding, dilation", [DIRECT[1], DIRECT[2], DIRECT[5], DIRECT[6]])
@pytest.mark.parametrize("relu", [False, True])
def test_direct_convolution_epilogue_gives_the_bits_of_add_then_relu(xs, ws, stride, padding, dilation, relu):
    """direct.ll's epilogue (bias, then relu, in registers) against the plain direct convolution
    followed by numpy's add and flex's relu: the same bits, NaN, -0.0 and partial tiles included."""
    from burn_flex.kernels.elementwise import _relu
    k = K._jit_columns(np.dtype(np.float32))
    if k is None:
        pytest.skip("flex's JIT is unavailable: the direct kernel is one of its kernels")
    rng = np.random.default_rng(59)
    x = rng.standard_normal(xs).astype(np.float32)
    x.flat[3] = np.nan                                        # NaN outputs keep their place
    w = rng.standard_normal((ws[0], xs[1]) + ws[1:]).astype(np.float32)
    w[0] = 0.0                                                # channel 0: sums of +-0.0 ...
    bias = rng.standard_normal(ws[0]).astype(np.float32)
    bias[0] = -0.0                                            # ... plus -0.0
    out_hw = K._out_hw(xs, ws[1:], stride, padding, dilation)
    got = conv_direct.direct_conv(k, x, w, stride, padding, dilation, out_hw, bias=bias, relu=relu)
    want = conv_direct.direct_conv(k, x, w, stride, padding, dilation, out_hw) + bias.reshape(1, -1, 1, 1)
    if relu:
        want = _relu(want)
    np.testing.assert_array_equal(got.view(np.int32), want.view(np.int32))
