"""A wgpu device whose OpenCL compiler cannot build kernels is unavailable, said once with the
compiler's log: `Device.enumerate()` leaves it out, `burn info` shows why, an op on it raises
BackendUnavailable naming the device. Runs wherever PyOpenCL lists a device (the failure is
simulated where the driver works)."""
from __future__ import annotations

import pytest

import burn

cl = pytest.importorskip("pyopencl")


def _fresh_backend(monkeypatch, fail: bool):
    from burn_wgpu import runtime
    from burn_wgpu.backend import WgpuBackend
    if not runtime.list_devices():
        pytest.skip("PyOpenCL lists no OpenCL device here")
    monkeypatch.setattr(runtime, "_CONTEXTS", {})
    if fail:
        def broken(c):
            raise burn.BackendUnavailable(f"wgpu:{c.index} (test): its OpenCL compiler cannot build kernels "
                                          "here: error: unknown target CPU 'generic'")
        monkeypatch.setattr(runtime, "_check_compiler", broken)
    return WgpuBackend()


def test_a_device_that_cannot_compile_is_unavailable_with_the_compiler_log(monkeypatch):
    be = _fresh_backend(monkeypatch, fail=True)
    assert be.device_indices() == list(range(len(be._devices)))     # listing opens nothing
    why = be.unavailable_reason(0)
    assert "cannot build kernels" in why and "unknown target CPU" in why
    assert 0 not in be.device_indices()                              # remembered, not probed again
    assert any("unusable:" in line and "unknown target CPU" in line for line in be.describe_devices())


def test_enumerate_and_ops_agree_with_the_probe(monkeypatch):
    from devices import flex_and_wgpu, wgpu_status
    usable = len(flex_and_wgpu()) == 2
    listed = any(d.kind == "wgpu" for d in burn.Device.enumerate())
    assert listed == usable, wgpu_status()
    if not usable:
        with pytest.raises(burn.BackendUnavailable, match="wgpu:0"):
            burn.ones((2,), device=burn.Device.wgpu()).numpy()
