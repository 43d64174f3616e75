"""The backend conformance suite (burn.testing.conformance) on Device.wgpu(), one test per case.

Skipped with the reason when PyOpenCL or an OpenCL device is missing; dtypes
the device lacks (float16 without cl_khr_fp16, float64 and complex128 without
cl_khr_fp64) and those the backend does not store yet (bfloat16) are skipped.
"""
import pytest

import burn
from burn.testing.pytest_plugin import make_conformance_tests


def _wgpu_state():
    try:
        import pyopencl  # noqa: F401
    except Exception as e:  # pragma: no cover - depends on the machine
        return None, f"pyopencl is not importable: {e}"
    try:
        be = burn.Device.wgpu().backend
    except burn.BurnError as e:
        return None, f"no usable wgpu device: {e}"
    from burn_wgpu import runtime
    return runtime.context(0), None


_DC, _WHY = _wgpu_state()
pytestmark = pytest.mark.skipif(_DC is None, reason=_WHY or "")

_SKIP = {"bfloat16"}
if _DC is not None and not _DC.fp16:
    _SKIP.add("float16")
if _DC is not None and not _DC.fp64:
    _SKIP.update({"float64", "complex128"})

test_conformance_wgpu = make_conformance_tests(burn.Device.wgpu, skip_dtypes=_SKIP)
