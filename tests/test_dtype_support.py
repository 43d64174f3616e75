"""A dtype a device cannot hold is refused at the user's call (issue 17 part 7), asked of the
backend once per device and dtype. The per-path agreement on every backend is the
conformance suite's ``dtype-support:*`` cases (burn.testing._cases.dtype_support)."""
from __future__ import annotations

import numpy as np
import pytest

import burn
from burn.graph import graph_for
from devices import wgpu_or_skip
from fakecupy import run_probe  # (tests/ is on sys.path under pytest)


def test_bfloat16_on_wgpu_is_refused_at_creation_not_when_printed():
    dev = wgpu_or_skip()
    with pytest.raises(burn.DTypeError) as e:
        burn.ones((2,), dtype=burn.bfloat16, device=dev)
    msg = str(e.value)
    assert "wgpu:0" in msg and "bfloat16" in msg and "use float32" in msg, msg
    # nothing was recorded: the device's next flush and reads are unaffected
    assert burn.ones((2,), device=dev).tolist() == [1.0, 1.0]


def test_ops_with_a_new_result_dtype_are_checked():
    dev = wgpu_or_skip()
    x = burn.ones((3,), device=dev)
    with pytest.raises(burn.DTypeError, match="cast: device wgpu:0 cannot hold bfloat16"):
        x.astype(burn.bfloat16)
    assert (x > 0).tolist() == [True] * 3        # bool: a new dtype the device holds


def test_the_backend_is_asked_once_per_device_and_dtype(monkeypatch):
    dev = burn.Device.flex()
    be = dev.backend
    asked = []
    real = type(be).dtype_unavailable_reason
    monkeypatch.setattr(type(be), "dtype_unavailable_reason",
                        lambda self, d, i: asked.append(d) or real(self, d, i))
    monkeypatch.setattr(graph_for(dev), "dtypes", set())
    for _ in range(3):
        burn.zeros((2,), dtype=burn.int8, device=dev).astype(burn.float16) + 1
    assert asked == [burn.int8, burn.float16], asked


def test_the_default_answer_comes_from_native_dtype():
    class Partial(burn.Backend):
        name = "partial"

        def native_dtype(self, dtype):
            if dtype is burn.float64:
                raise burn.DTypeError("partial: no float64 here; use float32")
            return np.dtype(dtype.name)

    be = Partial()
    assert be.supports_dtype(burn.float32, 0)
    assert be.dtype_unavailable_reason(burn.float64, 0) == "partial: no float64 here; use float32"


def test_wgpu_answers_from_the_device_extensions():
    dev = wgpu_or_skip()
    from burn_wgpu import runtime
    dc = runtime.context(dev.index)
    be = dev.backend
    assert be.supports_dtype(burn.float16, 0) is dc.fp16
    assert be.supports_dtype(burn.float64, 0) is dc.fp64
    assert not be.supports_dtype(burn.bfloat16, 0)
    assert all(be.supports_dtype(d, 0) for d in (burn.bool_, burn.uint8, burn.int32, burn.int64, burn.float32))


CUDA_SUPPORT = r'''
import json, burn
from burn.testing.conformance import cases, run_case
dev = burn.Device.cuda(0)
res = {"bf16": dev.backend.supports_dtype(burn.bfloat16, 0), "f16": dev.backend.supports_dtype(burn.float16, 0),
       "failed": [], "ran": 0}
for c in cases():
    if c.op == "dtype_support":
        res["ran"] += 1
        try:
            run_case(c, dev)
        except Exception as e:
            res["failed"].append(f"{c.name}: {e}")
try:
    burn.zeros((2,), dtype=burn.bfloat16, device=dev)
    res["zeros"] = "no error"
except burn.DTypeError as e:
    res["zeros"] = str(e)
print(json.dumps(res))
'''


@pytest.mark.parametrize("version", ["13.6.0+fake", "14.0.0+fake"])
def test_cuda_bfloat16_support_follows_the_installed_cupy(tmp_path, version):
    pytest.importorskip("burn_cuda")
    res = run_probe(tmp_path, CUDA_SUPPORT, version=version, without_flex=True)
    assert res["failed"] == [] and res["ran"] >= 80, res
    assert res["f16"] is True and res["bf16"] is (version.startswith("14"))
    if version.startswith("13"):
        assert "cuda:0" in res["zeros"] and "CuPy >= 14" in res["zeros"] and "pip install" in res["zeros"], res
    else:
        assert res["zeros"] == "no error"


NEW_INTS = (burn.int16, burn.uint16, burn.uint32, burn.uint64)


def test_the_standards_integer_dtypes_are_held_by_flex_and_wgpu_and_listed():
    for dev in (burn.Device.flex(), wgpu_or_skip()):
        info = burn.__array_namespace_info__().dtypes(device=dev)
        for d in NEW_INTS:
            assert dev.backend.supports_dtype(d, dev.index), (dev, d)
            assert info[d.name] is d
            x = burn.full((2,), np.iinfo(d.name).max, dtype=d, device=dev)
            assert x.dtype is d and x.numpy().dtype == np.dtype(d.name)
            assert x.tolist() == [int(np.iinfo(d.name).max)] * 2
            assert burn.iinfo(x).max == np.iinfo(d.name).max and burn.iinfo(d).bits == 8 * d.itemsize


def test_a_backend_that_cannot_hold_uint32_refuses_it_at_the_call(monkeypatch):
    dev = burn.Device.flex()
    be = dev.backend
    real = type(be).dtype_unavailable_reason

    def reason(self, d, i):
        return "flex(test): no uint32 here; use int64" if d is burn.uint32 else real(self, d, i)
    monkeypatch.setattr(type(be), "dtype_unavailable_reason", reason)
    monkeypatch.setattr(graph_for(dev), "dtypes", set())
    x = burn.arange(3, device=dev)
    for make in (lambda: burn.zeros((2,), dtype=burn.uint32, device=dev), lambda: x.astype(burn.uint32),
                 lambda: burn.tensor(np.zeros(2, np.uint32), device=dev)):
        with pytest.raises(burn.DTypeError, match="uint32") as e:
            make()
        assert "flex:0" in str(e.value) and "use int64" in str(e.value)
    assert "uint32" not in burn.__array_namespace_info__().dtypes(device=dev)
    assert (x.astype(burn.uint16) + 1).tolist() == [1, 2, 3]       # the others still work


def test_promotion_of_the_new_integer_dtypes_follows_the_standard():
    rt = burn.result_type
    assert rt(burn.uint8, burn.int8) is burn.int16 and rt(burn.uint16, burn.int16) is burn.int32
    assert rt(burn.uint32, burn.int8) is burn.int64 and rt(burn.uint16, burn.uint64) is burn.uint64
    assert rt(burn.int16, burn.int8) is burn.int16 and rt(burn.uint32, 7) is burn.uint32
    with pytest.raises(burn.DTypeError, match="uint64 and int64|int64 and uint64"):
        rt(burn.uint64, burn.int64)
    with pytest.raises(burn.DTypeError, match="result_type"):
        burn.ones((2,), dtype=burn.uint64) + burn.ones((2,), dtype=burn.int8)
    # sums: unsigned accumulate in uint64, signed in int64 (numpy and the standard)
    assert burn.sum(burn.ones((3,), dtype=burn.uint16)).dtype is burn.uint64
    assert burn.sum(burn.ones((3,), dtype=burn.int16)).dtype is burn.int64
    assert burn.can_cast(burn.uint16, burn.int32) and not burn.can_cast(burn.uint64, burn.int64)
