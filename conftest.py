"""Suite-wide pytest hooks (the fixtures of tests/ are in tests/conftest.py)."""
from __future__ import annotations

import pytest
from _pytest.doctest import DoctestItem


def _wgpu_unusable_reason() -> str | None:
    """None when a wgpu device builds and runs a kernel here, else why not."""
    try:
        import burn
        burn.zeros((1,), device=burn.Device.wgpu()).numpy()
        return None
    except Exception as e:      # no pyopencl, no OpenCL device, a compiler that cannot build
        return f"{type(e).__name__}: {e}"


def _needs_wgpu(item) -> bool:
    # the wgpu kernels' doctests (burn_linalg._wgpu, burn_signal._wgpu), tests named for wgpu,
    # and tests that mark themselves with @pytest.mark.wgpu
    if isinstance(item, DoctestItem):
        return "._wgpu." in item.name
    return "wgpu" in item.name or item.get_closest_marker("wgpu") is not None


def pytest_configure(config):
    config.addinivalue_line("markers", "wgpu: needs a usable wgpu (OpenCL) device; skipped with the "
                                       "reason where there is none")


def pytest_collection_modifyitems(config, items):
    # where no wgpu device builds kernels (no OpenCL driver, or PoCL on a virtual CPU that LLVM
    # does not know), what needs one is skipped with the reason, as the cross-backend tests
    # leave wgpu out (tests/devices.py); the report header says which applies
    needing = [it for it in items if _needs_wgpu(it)]
    if not needing:
        return
    reason = _wgpu_unusable_reason()
    if reason is None:
        return
    for it in needing:
        it.add_marker(pytest.mark.skip(reason=f"no usable wgpu device: {reason[:300]}"))
