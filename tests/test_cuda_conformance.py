"""The backend conformance suite (burn.testing.conformance) on Device.cuda(), one test per case.

Skipped with the reason when CuPy or a usable NVIDIA GPU is missing (the CI
machines have neither; plugins/burn-cuda/scripts/gpu_check.sh runs this on a
GPU). bfloat16 runs with CuPy >= 14 and ml_dtypes; with an older CuPy it is refused
by design (a DTypeError saying what to upgrade) and its cases are skipped.
"""
import pytest

import burn
from burn.testing.pytest_plugin import make_conformance_tests


def _cuda_state():
    try:
        import cupy  # noqa: F401
    except Exception as e:  # pragma: no cover - depends on the machine
        return False, f"CuPy is not importable ({e}); pip install burn-cuda[cuda12] on a machine with a GPU"
    try:
        burn.Device.cuda(0).backend
    except burn.BurnError as e:
        return False, f"no usable CUDA device: {e}"
    return True, ""


def _bf16_ok():
    if not _OK:
        return False
    try:
        burn.zeros((1,), dtype=burn.bfloat16, device=burn.Device.cuda(0)).numpy()
    except burn.DTypeError:
        return False
    return True


_OK, _WHY = _cuda_state()
pytestmark = pytest.mark.skipif(not _OK, reason=_WHY)

test_conformance_cuda = make_conformance_tests(burn.Device.cuda, skip_dtypes=set() if _bf16_ok() else {"bfloat16"})


def test_dlpack_round_trip_shares_memory():
    """cupy -> burn -> cupy without a copy: writing through one is seen by the other."""
    import cupy
    import numpy as np
    a = cupy.arange(6, dtype=cupy.float32).reshape(2, 3)
    t = burn.from_dlpack(a, device=burn.Device.cuda(0))
    b = cupy.from_dlpack(t)
    assert b.data.ptr == a.data.ptr
    a[0, 0] = 42
    np.testing.assert_array_equal(b.get(), a.get())


def test_pool_is_scoped_to_burn_kernels():
    """CuPy calls outside burn keep CuPy's own allocator; burn's kernels use the adaptive pool."""
    import cupy
    dev = burn.Device.cuda(0)
    before = dev.memory_stats()["alloc_count"]
    x = burn.ones((1024, 1024), device=dev)
    y = (x * 2 + 1).sum()
    y.item()
    assert dev.memory_stats()["alloc_count"] > before
    n = dev.memory_stats()["alloc_count"]
    cupy.ones((1024, 1024), cupy.float32).sum()
    assert dev.memory_stats()["alloc_count"] == n
