"""DLPack with one meaning on every backend (burn.dlpack): the Array API's copy rules, numpy and
torch as consumers and producers, and memory written outside burn after it was shared is found
(SharedMemoryWritten) instead of being read as silently new values — a recorded backward included."""
import numpy as np
import pytest
import torch

import burn
from devices import flex_and_wgpu

DEVS = flex_and_wgpu()
IDS = [d.kind for d in DEVS]
V = [1.0, 2.0, 3.0]


# -- export: numpy and torch consume burn tensors -------------------------------------------------

@pytest.mark.parametrize("dev", DEVS, ids=IDS)
def test_export_copy_true_is_the_consumer_s_own(dev):
    t = burn.tensor(V, device=dev)
    for a in (np.from_dlpack(t, copy=True), torch.from_dlpack(t, copy=True).numpy()):
        a[:] = 0
        assert t.tolist() == V


def test_export_shares_read_only_with_numpy_on_flex():
    t = burn.tensor(V)
    a = np.from_dlpack(t)                               # numpy asks DLPack 1: the read-only flag
    assert np.shares_memory(a, t.numpy()) and not a.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        a[0] = 100
    b = np.from_dlpack(t, copy=False)
    assert np.shares_memory(b, t.numpy()) and not b.flags.writeable


def test_export_to_an_old_consumer_copies_or_refuses_on_flex():
    t = burn.tensor(V)
    assert np.from_dlpack(_Legacy(t)).tolist() == V     # copy=None: a copy (0.x cannot say read-only)
    with pytest.raises(BufferError, match="before 1.0"):
        t.__dlpack__(copy=False)


def test_export_copy_false_from_wgpu_raises_buffer_error():
    dev = next((d for d in DEVS if d.kind == "wgpu"), None)
    if dev is None:
        pytest.skip("no wgpu device")
    t = burn.tensor(V, device=dev)
    assert t.__dlpack_device__() == (1, 0)
    with pytest.raises(BufferError, match="copy=None"):
        np.from_dlpack(t, copy=False)
    a = np.from_dlpack(t)                               # a download: writable, one's own
    a[:] = 0
    assert t.tolist() == V


@pytest.mark.parametrize("dev", DEVS, ids=IDS)
def test_torch_writing_an_export_never_changes_a_recorded_backward(dev):
    """torch ignores DLPack's read-only flag: its write reaches flex's memory, and the backward
    that needs the old value raises; on wgpu torch wrote its own copy and the gradient is right."""
    ad = dev.autodiff()
    a = burn.tensor([1.0, 1.0, 1.0], device=ad).require_grad()
    w = burn.tensor([2.0, 2.0, 2.0], device=ad)
    loss = (a * w).sum()
    tw = torch.from_dlpack(w)
    tw[:] = 10                                          # torch writes its view of w
    if dev.backend.dlpack_shares:
        with pytest.raises(burn.SharedMemoryWritten, match="consumer of its DLPack export"):
            a.grad(loss.backward()).tolist()
        with pytest.raises(burn.SharedMemoryWritten):
            w.tolist()
    else:
        assert a.grad(loss.backward()).tolist() == [2.0, 2.0, 2.0]
        assert w.tolist() == [2.0, 2.0, 2.0]


# -- import: numpy and torch produce ---------------------------------------------------------------

@pytest.mark.parametrize("dev", DEVS, ids=IDS)
@pytest.mark.parametrize("make", [np.array, torch.tensor], ids=["numpy", "torch"])
@pytest.mark.parametrize("copy", [None, True])
def test_import_copies_by_default_and_with_copy_true(dev, make, copy):
    src = make([1.0, 2.0, 3.0])
    t = burn.from_dlpack(src, device=dev, copy=copy)
    y = t * 2
    src[0] = 100.0                                      # the owner writes: burn holds a copy
    assert t.tolist() == V and y.tolist() == [2.0, 4.0, 6.0]
    want = np.from_dlpack(np.array(V), copy=copy)       # numpy's values under the same rule
    np.testing.assert_array_equal(t.numpy(), want)


@pytest.mark.parametrize("dev", DEVS, ids=IDS)
@pytest.mark.parametrize("make", [np.array, torch.tensor], ids=["numpy", "torch"])
def test_import_copy_false_shares_or_raises_buffer_error(dev, make):
    src = make([1.0, 2.0, 3.0])
    if not dev.backend.dlpack_import_shares(src, dev.index):
        with pytest.raises(BufferError, match="copy=None"):
            burn.from_dlpack(src, device=dev, copy=False)
        return
    t = burn.from_dlpack(src, device=dev, copy=False)
    assert np.shares_memory(t.numpy(), np.from_dlpack(src))
    assert t.tolist() == V                              # read as often as wanted while unwritten
    assert (t + 1).tolist() == [2.0, 3.0, 4.0]


@pytest.mark.parametrize("make", [np.array, torch.tensor], ids=["numpy", "torch"])
def test_owner_write_after_a_shared_import_raises_where_the_old_value_is_needed(make):
    """The issue's case: a shared import written by its owner while a backward needs its value."""
    ad = burn.Device.flex().autodiff()
    src = make([2.0, 2.0, 2.0])
    w = burn.from_dlpack(src, device=ad, copy=False)
    a = burn.tensor([1.0, 1.0, 1.0], device=ad).require_grad()
    loss = (a * w).sum()
    y = w * 3                                           # recorded before the write
    src[:] = 10
    unrelated = burn.ones((2,), device=ad) + 1
    with pytest.raises(burn.SharedMemoryWritten, match="from_dlpack\\(copy=False\\) at .*test_dlpack.py"):
        a.grad(loss.backward()).tolist()
    with pytest.raises(burn.SharedMemoryWritten):
        y.tolist()
    assert unrelated.tolist() == [2.0, 2.0]             # values that do not read it are computed
    with pytest.raises(burn.SharedMemoryWritten):
        w.numpy()
    fresh = burn.from_dlpack(src, device=ad, copy=False)    # importing again sees the new value
    assert fresh.tolist() == [10.0, 10.0, 10.0]


def test_views_a_kernel_made_of_a_shared_import_are_checked_too():
    src = np.arange(6.0)
    t = burn.from_dlpack(src, copy=False)
    r = t.reshape((2, 3))[1]                            # flex computes numpy views of src's memory
    assert r.tolist() == [3.0, 4.0, 5.0]
    src[4] = -1
    with pytest.raises(burn.SharedMemoryWritten):
        r.tolist()


@pytest.mark.parametrize("dev", DEVS, ids=IDS)
def test_import_of_a_burn_tensor_shares_its_immutable_value(dev):
    t = burn.tensor(V, device=dev)
    assert burn.from_dlpack(t, device=dev)._h is t._h
    c = burn.from_dlpack(t, device=dev, copy=True)
    assert c._h is not t._h and c.tolist() == V
    other = burn.Device.flex() if dev.kind != "flex" else next((d for d in DEVS if d.kind != "flex"), None)
    if other is not None:
        assert burn.from_dlpack(t, device=other).tolist() == V
        with pytest.raises(BufferError, match="copy=None"):
            burn.from_dlpack(t, device=other, copy=False)


@pytest.mark.parametrize("dev", DEVS, ids=IDS)
def test_round_trip_through_torch_keeps_values_and_dtype(dev):
    for d in (burn.float32, burn.int64, burn.float64 if dev.backend.supports_dtype(burn.float64, 0) else burn.int32):
        t = burn.arange(6, dtype=d, device=dev).reshape((2, 3))
        back = burn.from_dlpack(torch.from_dlpack(t), device=dev)
        assert back.dtype is d and back.tolist() == t.tolist()


class _Legacy:
    """A producer wrapper whose consumer side speaks DLPack 0.x only (no max_version)."""

    def __init__(self, t):
        self.t = t

    def __dlpack__(self, **kw):
        kw.pop("max_version", None)
        return self.t.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self.t.__dlpack_device__()
