"""wgpu matmul kernels against numpy: the packed CPU kernel (B packed into panels: wide
row-major B, transposed B, broadcast batches, ragged edges), the row kernel (narrow B) and
the tiled local-memory kernel real GPUs run, selected through ``burn_wgpu.kernels.linear.MATMUL_CPU``."""
import numpy as np
import pytest

import burn
from devices import wgpu_or_skip as _wgpu_or_skip  # noqa: E402  (tests/ is on sys.path)


CASES = [  # batch of a, batch of b, M, K, N, B transposed
    ((), (), 7, 9, 600, False),          # wide B: packed, N not a multiple of 16
    ((), (), 13, 33, 37, True),          # transposed B: packed (B's rows are not contiguous)
    ((3,), (), 6, 20, 530, False),       # B shared by every batch: packed once
    ((2, 1), (1, 3), 5, 8, 520, False),  # broadcast batch dims on both sides
    ((), (), 5, 7, 3, False),            # narrow B: read in place
    ((2,), (2,), 9, 40, 17, True),
    ((), (), 1, 1, 1, False),
]


@pytest.mark.parametrize("variant", ["packed", "rows", "tiled"])
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_matmul_matches_numpy(variant, dtype, monkeypatch):
    dev = _wgpu_or_skip()
    from burn_wgpu.kernels import linear
    monkeypatch.setattr(linear, "MATMUL_CPU", variant)
    rng = np.random.default_rng(0)
    for ba, bb, M, K, N, bt in CASES:
        if dtype == "float32":
            a = rng.standard_normal(ba + (M, K)).astype(np.float32)
            b = rng.standard_normal(bb + (K, N)).astype(np.float32)
        else:
            a = rng.integers(-5, 6, ba + (M, K)).astype(np.int32)
            b = rng.integers(-5, 6, bb + (K, N)).astype(np.int32)
        if bt:
            tb = burn.swapaxes(burn.tensor(np.ascontiguousarray(np.swapaxes(b, -1, -2)), device=dev), -1, -2)
        else:
            tb = burn.tensor(b, device=dev)
        got = (burn.tensor(a, device=dev) @ tb).numpy()
        want = np.matmul(a, b)
        assert got.shape == want.shape and got.dtype == want.dtype
        if dtype == "float32":
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4, err_msg=str((variant, ba, bb, M, K, N, bt)))
        else:
            np.testing.assert_array_equal(got, want, err_msg=str((variant, ba, bb, M, K, N, bt)))


def test_packed_matmul_gradient_matches_numpy():
    """The backward pass multiplies by transposed operands: the packed kernel reads them in place."""
    dev = _wgpu_or_skip().autodiff()
    rng = np.random.default_rng(1)
    a = rng.standard_normal((24, 40)).astype(np.float32)
    b = rng.standard_normal((40, 520)).astype(np.float32)
    g = rng.standard_normal((24, 520)).astype(np.float32)
    ta, tb = burn.tensor(a, device=dev).require_grad(), burn.tensor(b, device=dev).require_grad()
    grads = ((ta @ tb) * burn.tensor(g, device=dev)).sum().backward()
    np.testing.assert_allclose(ta.grad(grads).numpy(), g @ b.T, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(tb.grad(grads).numpy(), a.T @ g, rtol=1e-4, atol=1e-3)
