"""Conformance cases: DLPack follows the Array API's copy rules with one meaning on every
backend (:mod:`burn.dlpack`): ``copy=True`` copies, ``copy=False`` shares or raises
``BufferError``, ``copy=None`` shares only what cannot be written behind burn's back, and
memory written outside burn after it was shared is never read as a silently new value
(:class:`burn.SharedMemoryWritten` instead).
"""
from __future__ import annotations

import ctypes

import numpy as np

import burn
from .._table import _add

_VALUES = np.array([1.0, 2.0, 3.0], np.float32)


def _poke(arr: np.ndarray) -> None:
    """Write into ``arr``'s memory ignoring its read-only flag, as a consumer that ignores
    DLPack's flag does (torch.from_dlpack)."""
    ctypes.memset(arr.__array_interface__["data"][0], 0, arr.nbytes)


def _host_export(dev) -> bool:
    """Whether ``dev``'s exports are CPU memory, which numpy (the consumer here) can import;
    a CUDA export is checked by the GPU run's consumers (tests/test_cuda_*.py)."""
    return burn.zeros((1,), device=dev).__dlpack_device__()[0] == 1


def _export_copy_true(dev):
    t = burn.tensor(_VALUES, device=dev)
    if not _host_export(dev):
        return t.__dlpack__(copy=True, max_version=(1, 0)) is not None
    a = np.from_dlpack(t, copy=True)
    a[:] = 0                                            # a copy of one's own: writable
    return t.tolist() == _VALUES.tolist()


def _shared_export_is_safe(t, a) -> bool:
    """``a``, an export of ``t``, is safe: a copy of its own, or read-only shared memory, or
    shared memory whose writes burn finds at its next read (SharedMemoryWritten)."""
    if not a.flags.writeable:
        with_flag = True
        try:
            a[0] = 0
            with_flag = False
        except ValueError:
            pass
        return with_flag and t.tolist() == _VALUES.tolist()
    a[:] = 0
    try:
        return t.tolist() == _VALUES.tolist()           # a copy: the write did not reach burn
    except burn.SharedMemoryWritten:
        return True                                     # shared and written: found, not read


def _export_copy_none(dev):
    t = burn.tensor(_VALUES, device=dev)
    if not _host_export(dev):
        return t.__dlpack__(max_version=(1, 0)) is not None and t.tolist() == _VALUES.tolist()
    return _shared_export_is_safe(t, np.from_dlpack(t))


def _export_copy_false(dev):
    t = burn.tensor(_VALUES, device=dev)
    if not _host_export(dev):
        return t.__dlpack__(copy=False, max_version=(1, 0)) is not None
    try:
        a = np.from_dlpack(t, copy=False)
    except BufferError as e:
        if dev.backend.dlpack_shares:
            raise AssertionError(f"{dev} shares memory, yet copy=False raised: {e}") from e
        return "copy" in str(e)
    if not dev.backend.dlpack_shares:
        raise AssertionError(f"{dev} says its exports are copies, yet copy=False succeeded")
    return _shared_export_is_safe(t, a)


def _export_written_by_consumer(dev):
    t = burn.tensor(_VALUES, device=dev)
    if not _host_export(dev):
        return True
    y = t * 2                                           # recorded before the consumer's write
    a = np.from_dlpack(t)
    _poke(a)
    try:
        got = y.tolist()
    except burn.SharedMemoryWritten:
        return dev.backend.dlpack_shares               # shared memory written: raised, not new values
    return got == (_VALUES * 2).tolist()


def _import_copy_none(dev):
    a = _VALUES.copy()
    t = burn.from_dlpack(a, device=dev)
    y = t + 0
    a[:] = 0                                            # the owner writes: burn holds a copy
    return t.tolist() == _VALUES.tolist() and y.tolist() == _VALUES.tolist()


def _import_copy_false(dev):
    a = _VALUES.copy()
    try:
        t = burn.from_dlpack(a, device=dev, copy=False)
    except BufferError as e:
        if dev.backend.dlpack_import_shares(a, dev.index):
            raise AssertionError(f"{dev} can share, yet copy=False raised: {e}") from e
        return True
    y = t * 2
    unrelated = burn.ones((2,), device=dev) + 1
    a[0] = 7.0
    try:
        y.tolist()
    except burn.SharedMemoryWritten:
        return unrelated.tolist() == [2.0, 2.0]         # only the dependents fail
    raise AssertionError(f"{dev}: a value recorded before the owner's write read the new memory silently")


def _import_tensor(dev):
    t = burn.tensor(_VALUES, device=dev)
    same = burn.from_dlpack(t, device=dev)
    copied = burn.from_dlpack(t, device=dev, copy=True)
    return same._h is t._h and copied._h is not t._h and copied.tolist() == _VALUES.tolist()


RULES = {"export[copy=True]": _export_copy_true, "export[copy=None]": _export_copy_none,
         "export[copy=False]": _export_copy_false, "export[written-by-consumer]": _export_written_by_consumer,
         "import[copy=None]": _import_copy_none, "import[copy=False]": _import_copy_false,
         "import[burn-tensor]": _import_tensor}


def _is_true(v):
    assert v.all(), "the DLPack rule check returned False"


def _dlpack():
    for name, rule in RULES.items():
        _add(f"dlpack:{name}", "from_dlpack", "forward",
             lambda device, rule=rule: burn.tensor(bool(rule(device.inner())), device=device),
             (), out="bool", needs_device=True, prop=_is_true)
