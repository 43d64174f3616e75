"""Suite-wide pytest hooks (the fixtures of tests/ are in tests/conftest.py)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
from _pytest.doctest import DoctestItem

# tests/devices.py holds the one wgpu probe; a run of plugin doctests alone loads no tests/ conftest
sys.path.insert(0, str(Path(__file__).resolve().parent / "tests"))


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
    from devices import wgpu_status
    reason = wgpu_status()
    if reason is None:
        return
    for it in needing:
        it.add_marker(pytest.mark.skip(reason=f"no usable wgpu device: {reason[:300]}"))
