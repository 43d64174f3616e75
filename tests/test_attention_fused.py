"""burn::attention / burn::attention_grad: scaled dot-product attention as one node each way.

Against torch.nn.functional.scaled_dot_product_attention (forward, gradients of q, k, v
and of a float mask), on flex with 1 and 3 threads (the batch split into chunks, and the
in-order path taken when the GEMMs count as large enough for BLAS to thread), and on wgpu
(PoCL), which runs the reference definition.
"""
from __future__ import annotations

import sys

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import burn
import burn_flex.kernels.attention as KA
import burn_flex.kernels.conv as KC
from burn.nn import functional as F
from burn_flex import threads
from devices import flex_and_wgpu  # noqa: E402  (tests/ is on sys.path under pytest)

TOL = {np.float32: dict(rtol=2e-4, atol=2e-5), np.float64: dict(rtol=1e-10, atol=1e-12)}


@pytest.fixture
def split(monkeypatch, request):
    """(threads, blas_big): thresholds lowered so the small shapes split; yields the
    parallel_for calls of the attention kernels as chunk counts."""
    n_threads, blas_big = request.param
    calls = []
    real = threads.parallel_for

    def spy(n, work, min_chunk=1, **kw):
        if sys._getframe(1).f_code.co_name == "_split":
            calls.append(min(threads.num_threads(), n // max(1, min_chunk)))
        real(n, work, min_chunk, **kw)
    before = threads.num_threads()
    threads.set_num_threads(n_threads)
    monkeypatch.setattr(threads, "parallel_for", spy)
    # the chunking under test is the one BURN_FLEX_BLAS_CHUNKS=parallel runs on the pool
    monkeypatch.setattr(threads, "BLAS_CHUNKS_PARALLEL", True)
    monkeypatch.setattr(KA, "_TASK_MACS", 1)
    monkeypatch.setattr(KA, "_BLAS_ONE_THREAD", 0 if blas_big else 1 << 62)
    yield calls
    threads.set_num_threads(before)


def _compare(dev, shapes, dtype, mask=None, mask_grad=False, is_causal=False, use_weights=False, scale=None):
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s).astype(dtype) for s in shapes]
    d = burn.Device(dev).autodiff() if isinstance(dev, str) else dev.autodiff()
    bdt = burn.float64 if dtype == np.float64 else burn.float32
    leaves = [burn.tensor(a, device=d, dtype=bdt).require_grad() for a in arrays]
    bm = tm = None
    if mask is not None:
        bm = burn.tensor(mask, device=d, dtype=None if mask.dtype == bool else bdt)
        tm = torch.tensor(mask)
        if mask_grad:
            bm = bm.require_grad()
            tm.requires_grad_()
    cot = rng.standard_normal(shapes[0][:-1] + (shapes[2][-1],)).astype(dtype)
    if use_weights:      # the weights take part in the loss: their gradient flows in too
        mha_out, w = F._attention(*leaves, bm, 0.0, is_causal, scale, True, keep_true=True)
        loss = (mha_out * burn.tensor(cot, device=d, dtype=bdt)).sum() + (w * w).sum()
    else:
        out = F.scaled_dot_product_attention(*leaves, bm, is_causal=is_causal, scale=scale)
        loss = (out * burn.tensor(cot, device=d, dtype=bdt)).sum()
    grads = loss.backward()
    got = [leaf.grad(grads).numpy() for leaf in leaves] + ([bm.grad(grads).numpy()] if mask_grad else [])

    tl = [torch.tensor(a, requires_grad=True) for a in arrays]
    if use_weights:
        sc = 1 / np.sqrt(shapes[0][-1]) if scale is None else scale
        s = tl[0] @ tl[1].transpose(-1, -2) * sc
        if tm is not None:
            s = s.masked_fill(~tm, float("-inf")) if tm.dtype == torch.bool else s + tm
        w = torch.softmax(s, -1)
        tloss = ((w @ tl[2]) * torch.tensor(cot)).sum() + (w * w).sum()
    else:
        t_mask, t_causal = tm, is_causal
        if is_causal and tm is not None:      # torch takes one or the other: add the causal part
            L, S = shapes[0][-2], shapes[1][-2]
            t_mask, t_causal = tm + torch.triu(torch.full((L, S), float("-inf"), dtype=tm.dtype), 1), False
        t_out = TF.scaled_dot_product_attention(*tl, attn_mask=t_mask, is_causal=t_causal, scale=scale)
        np.testing.assert_allclose(out.numpy(), t_out.detach().numpy(), **TOL[dtype])
        tloss = (t_out * torch.tensor(cot)).sum()
    tloss.backward()
    want = [t.grad.numpy() for t in tl] + ([tm.grad.numpy()] if mask_grad else [])
    for i, (b, t) in enumerate(zip(got, want)):
        np.testing.assert_allclose(b, t, err_msg=f"gradient {i} (q, k, v, mask)", **TOL[dtype])


CASES = [
    # (q, k, v shapes), mask factory, mask requires grad, is_causal
    (((4, 3, 6, 8), (4, 3, 7, 8), (4, 3, 7, 5)), None, False, False),
    (((5, 6, 4), (5, 6, 4), (5, 6, 4)), None, False, True),
    (((4, 2, 5, 8), (4, 2, 5, 8), (4, 2, 5, 8)), lambda r: r.random((4, 1, 1, 5)) > 0.3, False, False),
    (((3, 2, 5, 4), (3, 2, 6, 4), (3, 2, 6, 4)), lambda r: r.standard_normal((2, 5, 6)), True, False),
    (((6, 5, 4), (6, 5, 4), (6, 5, 4)), lambda r: r.standard_normal((6, 5, 5)), True, True),
]


@pytest.mark.parametrize("split", [(1, False), (3, False), (3, True)], indirect=True)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shapes, make_mask, mask_grad, causal", CASES)
def test_fused_attention_on_flex_matches_torch(shapes, make_mask, mask_grad, causal, dtype, split):
    mask = None
    if make_mask is not None:
        mask = make_mask(np.random.default_rng(1))
        mask[..., 0] = True if mask.dtype == bool else mask[..., 0]      # no fully hidden rows
        mask = mask if mask.dtype == bool else mask.astype(dtype)
    _compare(burn.Device.flex(), shapes, dtype, mask, mask_grad, causal)
    assert len(split) >= 2, "forward and backward ran burn_flex.kernels.attention"
    n_threads, big = threads.num_threads(), KA._BLAS_ONE_THREAD == 0
    assert max(split) == (1 if n_threads == 1 or big else n_threads)


@pytest.mark.parametrize("split", [(1, False), (3, False)], indirect=True)
def test_fused_attention_weights_gradient(split):
    """The weights returned (MultiHeadAttention's need_weights) carry their own gradient."""
    m = np.random.default_rng(2).random((1, 6)) > 0.4
    m[:, 0] = True
    _compare(burn.Device.flex(), ((3, 4, 8), (3, 6, 8), (3, 6, 8)), np.float64, m, use_weights=True, scale=0.3)


@pytest.mark.parametrize("device", flex_and_wgpu(), ids=str)
def test_attention_on_each_device_matches_torch(device):
    """wgpu has no burn::attention kernel: its reference definition (burn ops) runs there."""
    m = np.random.default_rng(3).standard_normal((2, 5, 7)).astype(np.float32)
    _compare(device, ((2, 5, 4), (2, 7, 4), (2, 7, 3)), np.float32, m, True)
    _compare(device, ((2, 2, 5, 4), (2, 2, 5, 4), (2, 2, 5, 4)), np.float32, None, False, True)


def test_kernel_on_one_and_several_threads_agrees(monkeypatch):
    rng = np.random.default_rng(4)
    q, k, v = (rng.standard_normal((8, 4, 16, 8)).astype(np.float32) for _ in range(3))
    mask = rng.standard_normal((8, 1, 16, 16)).astype(np.float32)
    g = rng.standard_normal((8, 4, 16, 8)).astype(np.float32)
    before = threads.num_threads()
    try:
        threads.set_num_threads(1)
        one = KA.attention(q, k, v, mask, 0.35)
        one += KA.attention_grad(q, k, v, one[1], g, None, 0.35)
        threads.set_num_threads(3)
        monkeypatch.setattr(KA, "_TASK_MACS", 1)
        several = KA.attention(q, k, v, mask, 0.35)
        several += KA.attention_grad(q, k, v, several[1], g, None, 0.35)
    finally:
        threads.set_num_threads(before)
    for a, b in zip(one, several):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
    assert KC._BLAS_ONE_THREAD == KA._BLAS_ONE_THREAD      # one rule for conv and attention


def test_mask_that_does_not_broadcast_is_an_error_at_the_call():
    q = burn.ones((2, 3, 4))
    with pytest.raises(burn.ShapeError, match="does not broadcast"):
        F.scaled_dot_product_attention(q, q, q, burn.ones((4, 3)))
    with pytest.raises(burn.DTypeError, match="bool or floating"):
        F.scaled_dot_product_attention(q, q, q, burn.ones((3, 3), dtype=burn.int32))
