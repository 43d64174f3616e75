"""flex's 16-lane direct convolution tiles (kernels/ll/direct.ll's *w16 kernels, taken by
``conv_direct.DirectCall`` where the CPU has 512-bit vectors): the same bits as the 8-lane tiles
for every epilogue (bias, relu, 2 x 2 max pooling), partial tiles of positions and channels,
NaN and infinities, on one thread and split over images; within float32 rounding of a float64
reference. They run on any x86 or ARM host (LLVM splits a 16-lane vector where the CPU has no
512-bit registers), so CI checks them whatever its CPU; which tile a call takes is tested apart."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import burn_flex.kernels.conv as K
import burn_flex.kernels.conv_direct as conv_direct
from thread_runs import on_one_and_two_threads


def _kernels():
    k = K._jit_columns(np.dtype(np.float32))
    if k is None:
        pytest.skip("flex's JIT is unavailable: the direct kernels are JIT kernels")
    return k


def _calls(k, monkeypatch, *args, **kw):
    """The DirectCall of these arguments with 8-lane tiles and with the 16-lane ones."""
    out = {}
    for bits in (256, 512):
        monkeypatch.setattr(k, "vector_bits", bits)
        conv_direct._direct_call.cache_clear()
        out[bits] = conv_direct.prepared_direct_conv(k, *args, **kw)
    conv_direct._direct_call.cache_clear()
    return out


def _same_bits(a, b):
    assert a.shape == b.shape and a.dtype == b.dtype == np.float32
    np.testing.assert_array_equal(a.view(np.int32), b.view(np.int32))


CASES = [
    # x, w, stride, padding, dilation
    ((8, 16, 4, 4), (32, 16, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),     # the digits CNN's second conv
    ((8, 1, 8, 8), (16, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),       # its first
    ((3, 5, 9, 7), (37, 5, 3, 2), (1, 2), (0, 1, 2, 0), (1, 1)),       # 37 channels: a partial block of 16
    ((2, 3, 11, 10), (70, 3, 3, 3), (2, 1), (1, 1, 1, 1), (2, 1)),     # strided, dilated, 3 tiles of 32
    ((5, 16, 6, 6), (17, 16, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),     # one channel past a tile of 16
    ((4, 3, 9, 9), (11, 3, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),       # 9-16 channels: 4 x 16 tiles
    ((4, 3, 9, 9), (5, 3, 3, 3), (1, 1), (0, 0, 0, 0), (1, 1)),        # 7 x 7 positions: a partial tile
]


@pytest.mark.parametrize("pool2", [False, True])
@pytest.mark.parametrize("xs, ws, stride, padding, dilation", CASES)
def test_wide_tiles_give_the_bits_of_the_8_lane_tiles(xs, ws, stride, padding, dilation, pool2, monkeypatch):
    k = _kernels()
    out_hw = K._out_hw(xs, ws[2:], stride, padding, dilation)
    if pool2 and min(out_hw) < 2:
        pytest.skip("no 2 x 2 window")
    rng = np.random.default_rng(7)
    x = rng.standard_normal(xs).astype(np.float32)
    x[0, 0, 0, :2] = (np.nan, np.inf)             # NaN and inf go where the 8-lane kernels put them
    w = rng.standard_normal(ws).astype(np.float32)
    bias = rng.standard_normal(ws[0]).astype(np.float32)
    for relu in (False, True):
        calls = _calls(k, monkeypatch, xs, ws, stride, padding, dilation, out_hw, relu=relu, pool2=pool2)
        assert calls[256].width == 8 and calls[512].width == (16 if ws[0] > 8 or pool2 else 8)
        for b in (None, bias):
            _same_bits(calls[512](x, w, bias=b), calls[256](x, w, bias=b))


@pytest.mark.parametrize("xs, ws, stride, padding, dilation", CASES[:4])
def test_wide_tiles_match_float64_on_one_and_two_threads(xs, ws, stride, padding, dilation, monkeypatch):
    """Within float32 rounding of a float64 torch convolution, every output written, the same bits
    with the images split over the native pool."""
    k = _kernels()
    monkeypatch.setattr(k, "vector_bits", 512)
    conv_direct._direct_call.cache_clear()
    monkeypatch.setattr(conv_direct, "_SPLIT_MACS", 0)
    monkeypatch.setattr(conv_direct, "_CHUNK_MACS", 1)
    rng = np.random.default_rng(3)
    x = rng.standard_normal(xs).astype(np.float32)
    w = rng.standard_normal(ws).astype(np.float32)
    out_hw = K._out_hw(xs, ws[2:], stride, padding, dilation)

    def run():
        out = np.full((xs[0], ws[0]) + out_hw, np.nan, np.float32)
        return conv_direct.direct_conv(k, x, w, stride, padding, dilation, out_hw, out=out)
    try:
        one, two = on_one_and_two_threads(run)
    finally:
        conv_direct._direct_call.cache_clear()
    assert not np.isnan(one).any()
    _same_bits(one, two)
    pt, pb, pl, pr = padding
    want = TF.conv2d(TF.pad(torch.tensor(x, dtype=torch.float64), (pl, pr, pt, pb)),
                     torch.tensor(w, dtype=torch.float64), stride=stride, dilation=dilation).numpy()
    np.testing.assert_allclose(one, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


def test_a_call_takes_16_lane_tiles_only_with_512_bit_vectors(monkeypatch):
    k = _kernels()
    monkeypatch.setattr(k, "vector_bits", 512)
    assert conv_direct._call_tile(k, 32, False) == (4, 2, 16)
    assert conv_direct._call_tile(k, 17, True) == (4, 2, 16)
    assert conv_direct._call_tile(k, 16, False) == (4, 1, 16)
    assert conv_direct._call_tile(k, 9, False) == (4, 1, 16)
    assert conv_direct._call_tile(k, 6, True) == (4, 1, 16)       # a pooled call's tile is one window
    assert conv_direct._call_tile(k, 8, False) == (8, 1, 8)       # 8 positions x 8 channels stays
    monkeypatch.setattr(k, "vector_bits", 256)
    assert conv_direct._call_tile(k, 32, False) == (4, 2, 8)
    assert conv_direct._call_tile(k, 6, True) == (4, 2, 8)
    assert conv_direct._call_tile(k, 6, False) == (8, 1, 8)


def test_vector_bits_is_the_hosts():
    import llvmlite.binding as llvm
    k = _kernels()
    assert k.vector_bits == (512 if llvm.get_host_cpu_features().get("avx512f", False) else 256)


def test_weights_pack_in_blocks_of_16_lanes():
    w = np.arange(20 * 3, dtype=np.float32).reshape(20, 3)
    wt = conv_direct._packed_weights(w, 2, 16)        # one tile of 2 blocks of 16: 32 rows, zeros past 20
    assert wt.shape == (2, 3, 16)
    assert wt[0, 2, 5] == w[5, 2] and wt[1, 1, 3] == w[19, 1] and (wt[1, :, 4:] == 0).all()


@pytest.mark.parametrize("xs, ws, stride, padding, dilation", [
    ((4, 6, 12, 12), (16, 6, 5, 5), (1, 1), (0, 0, 0, 0), (1, 1)),      # LeNet's second conv
    ((6, 16, 4, 4), (32, 16, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),      # the digits CNN's second
    ((3, 5, 9, 7), (37, 5, 3, 2), (1, 2), (0, 1, 2, 0), (1, 1)),        # a partial block of 16
])
def test_wide_weight_gradient_gives_the_bits_of_the_8_lane_one(xs, ws, stride, padding, dilation, monkeypatch):
    """The weight gradient on the direct kernel with its roles swapped (g as the weights, packed in
    blocks of 16 channels where the CPU has 512-bit vectors): the same bits, and float64's values."""
    k = _kernels()
    rng = np.random.default_rng(11)
    x = rng.standard_normal(xs).astype(np.float32)
    out_hw = K._out_hw(xs, ws[2:], stride, padding, dilation)
    g = rng.standard_normal((xs[0], ws[0]) + out_hw).astype(np.float32)
    got = {}
    for bits in (256, 512):
        monkeypatch.setattr(k, "vector_bits", bits)
        got[bits] = conv_direct.direct_grad_weight(k, x, g, stride, padding, dilation, ws[2:])
    _same_bits(got[512], got[256])
    pt, pb, pl, pr = padding
    xt = TF.pad(torch.tensor(x, dtype=torch.float64), (pl, pr, pt, pb)).requires_grad_(False)
    wt = torch.zeros(ws, dtype=torch.float64, requires_grad=True)
    TF.conv2d(xt, wt, stride=stride, dilation=dilation).backward(torch.tensor(g, dtype=torch.float64))
    want = wt.grad.numpy()
    np.testing.assert_allclose(got[512], want, rtol=1e-4, atol=1e-4 * np.abs(want).max())
